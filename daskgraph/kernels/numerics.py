"""The ``CheckNumerics`` kernel: a float tensor passed on only where it holds no NaN or infinity.

The kernels of :mod:`daskgraph.ops.numerics`'s ops, each ``kernel(xp, *inputs, **attrs)``.
"""

from __future__ import annotations

from daskgraph.errors import InvalidArgumentError


# -- the kernel -----------------------------------------------------------------------------------
def _check_numerics(xp, x, *, message, node):
    """``x`` itself when every element is finite; else fail, saying NaN, Inf or both."""
    if bool(xp.all(xp.isfinite(x))):
        return x
    nan, inf = bool(xp.any(xp.isnan(x))), bool(xp.any(xp.isinf(x)))
    found = "Inf and NaN" if nan and inf else ("Inf" if inf else "NaN")
    raise InvalidArgumentError(
        f"{message} : Tensor had {found} values\n\t [[{{{{node {node}}}}}]]", op=node
    )
