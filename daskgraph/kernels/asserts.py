"""The ``Assert`` kernel: the run fails with its message where the condition is false.

The kernels of :mod:`daskgraph.ops.asserts`'s ops, each ``kernel(xp, *inputs, **attrs)``.
"""

from __future__ import annotations

from daskgraph.errors import InvalidArgumentError
from daskgraph.kernels.control_flow import _host, summarize_value


# -- the kernel -----------------------------------------------------------------------------------
def _assert_kernel(xp, condition, *data, template, summarize, node):
    """Nothing when ``condition`` holds; else fail with the data, as TensorFlow's ``Assert``."""
    if condition.size != 1 or condition.ndim > 1:
        raise InvalidArgumentError(
            f"In[0] should be a scalar: {list(condition.shape)}\n\t [[{{{{node {node}}}}}]]",
            op=node,
        )
    if bool(condition.reshape(())):
        return None
    values = iter(data)
    pieces = [
        summarize_value(_host(next(values)), summarize) if item is None else item
        for item in template
    ]
    text = " ".join(f"[{piece}]" for piece in pieces)
    raise InvalidArgumentError(
        f"assertion failed: {text}\n\t [[{{{{node {node}}}}}]]", op=node, data=pieces
    )
