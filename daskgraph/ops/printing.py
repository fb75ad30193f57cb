"""``tf.print``: an op that prints its inputs when it runs, formatted as TensorFlow's
``tf.print`` formats them (NumPy-style brackets, ``...`` in the middle of long dimensions).

Unlike ``tf.Print`` (:mod:`daskgraph.ops.control_flow`, an identity that prints), ``tf.print``
returns an operation without output: run it, or make it a control dependency of what
should print. Plain Python values among the inputs are formatted once, when the op is built.
It prints on the worker that runs it; the embedded cluster's CPU worker is the program's
own process, so by default a program sees the lines on its own standard error.

>>> import contextlib, io
>>> import daskgraph as dg
>>> with dg.Graph().as_default():
...     x = dg.constant([[1.5, 2.0], [3.0, 4.0]])
...     op = print_v2("x:", x, "sum", dg.reduce_sum(x), output_stream="stdout")
...     out = io.StringIO()
...     with dg.Session() as sess, contextlib.redirect_stdout(out):
...         _ = sess.run(op)
>>> print(out.getvalue(), end="")
x: [[1.5 2]
 [3 4]] sum 10.5
"""

from __future__ import annotations

import sys
from typing import Any

from daskgraph.framework.gradient_registry import no_gradient
from daskgraph.framework.graph import Operation, Tensor, get_default_graph
from daskgraph.framework.op_registry import CPU_ALL, GPU_NUMERIC, register
from daskgraph.kernels.printing import _print_v2_kernel, format_value
from daskgraph.ops.array import convert_to_tensor

__all__ = ["format_value", "print_v2"]

_STREAMS = {"stderr": "stderr", "stdout": "stdout"}


register("PrintV2", _print_v2_kernel, stateful=True, cpu=CPU_ALL, gpu=GPU_NUMERIC)
no_gradient("PrintV2")


def _stream_name(output_stream: Any) -> str:
    if output_stream is sys.stdout or output_stream == "stdout":
        return "stdout"
    if output_stream is None or output_stream is sys.stderr or output_stream == "stderr":
        return "stderr"
    raise ValueError(
        f"tf.print: output_stream must be sys.stdout, sys.stderr, 'stdout' or 'stderr'; got "
        f"{output_stream!r}"
    )


def print_v2(
    *inputs: Any,
    output_stream: Any = None,
    summarize: int = 3,
    sep: str = " ",
    end: str = "\n",
    name: str | None = None,
) -> Operation:
    """An op that prints ``inputs`` (tensors and Python values) when it runs (``tf.print``).

    Parameters
    ----------
    *inputs
        Tensors, and Python values printed as ``str`` (strings as they are).
    output_stream : sys.stderr (default), sys.stdout, "stderr" or "stdout"
        Where the worker that runs the op prints.
    summarize : int
        Elements printed at each end of each dimension (``-1``: all).
    sep, end : str
        As Python's ``print``.

    Returns
    -------
    Operation
        The print op, with no output: run it or depend on it.
    """
    template: list[Any] = []
    tensors: list[Tensor] = []
    for item in inputs:
        if isinstance(item, Tensor) or hasattr(item, "_as_tensor"):
            template.append(len(tensors))
            tensors.append(convert_to_tensor(item))
        else:
            template.append(item if isinstance(item, str) else format_value(item, summarize))
    attrs = {
        "template": tuple(template),
        "summarize": int(summarize),
        "stream": _stream_name(output_stream),
        "sep": str(sep),
        "end": str(end),
    }
    return get_default_graph().create_op("PrintV2", tensors, dtype=None, attrs=attrs, name=name)
