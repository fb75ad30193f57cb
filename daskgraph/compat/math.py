"""``tf.math``: TensorFlow 1's math namespace over daskgraph's ops, and the TF1 signatures of
the math names whose native ones differ (``count_nonzero``, ``norm``, ``arg_max``,
``arg_min``, the ``reduce_*`` of :mod:`daskgraph.compat._signatures`).

Its one job is to map names: ``tf.math.add`` *is* ``dg.add``, ``tf.math.divide_no_nan`` is
``dg.div_no_nan``, ``tf.math.rint`` is ``dg.round``, and the names TensorFlow shares with
``tf.nn`` (``softmax``, ``top_k``, ...) are :mod:`daskgraph.ops.nn_namespace`'s. What ``tf.math``
has and
daskgraph does not (Bessel functions, ``igamma``, ``zeta``, ``polygamma``, ...) is absent:
using it raises ``AttributeError``.

>>> import daskgraph as dg
>>> import daskgraph.compat.v1 as tf
>>> tf.math.add is dg.add and tf.math.divide_no_nan is dg.div_no_nan
True
"""

from __future__ import annotations

from typing import Any

from daskgraph import ops
from daskgraph.compat._signatures import (
    reduce_all,
    reduce_any,
    reduce_logsumexp,
    reduce_max,
    reduce_mean,
    reduce_min,
    reduce_prod,
    reduce_sum,
)
from daskgraph.framework import dtypes
from daskgraph.framework.graph import Tensor
from daskgraph.ops import (
    abs,
    accumulate_n,
    acos,
    acosh,
    add,
    add_n,
    angle,
    argmax,
    argmin,
    asin,
    asinh,
    atan,
    atan2,
    atanh,
    bincount,
    ceil,
    confusion_matrix,
    conj,
    cos,
    cosh,
    cumprod,
    cumsum,
    digamma,
    divide,
    equal,
    erf,
    erfc,
    exp,
    expm1,
    floor,
    floordiv,
    floormod,
    greater,
    greater_equal,
    imag,
    invert_permutation,
    is_finite,
    is_inf,
    is_nan,
    is_non_decreasing,
    is_strictly_increasing,
    lbeta,
    less,
    less_equal,
    lgamma,
    log,
    log1p,
    log_sigmoid,
    logical_and,
    logical_not,
    logical_or,
    logical_xor,
    maximum,
    minimum,
    mod,
    multiply,
    multiply_no_nan,
    negative,
    nextafter,
    not_equal,
    polyval,
    pow,
    real,
    reciprocal,
    reciprocal_no_nan,
    reduce_euclidean_norm,
    reduce_std,
    reduce_variance,
    round,
    rsqrt,
    scalar_mul,
    segment_max,
    segment_mean,
    segment_min,
    segment_prod,
    segment_sum,
    sigmoid,
    sign,
    sin,
    sinh,
    sqrt,
    square,
    squared_difference,
    subtract,
    tan,
    tanh,
    truediv,
    unsorted_segment_max,
    unsorted_segment_mean,
    unsorted_segment_min,
    unsorted_segment_prod,
    unsorted_segment_sqrt_n,
    unsorted_segment_sum,
    xdivy,
    xlog1py,
    xlogy,
)
from daskgraph.ops import div_no_nan as divide_no_nan
from daskgraph.ops import round as rint
from daskgraph.ops.nn_namespace import (
    in_top_k,
    l2_normalize,
    log_softmax,
    softmax,
    softplus,
    softsign,
    top_k,
    zero_fraction,
)

__all__ = [
    "abs",
    "accumulate_n",
    "acos",
    "acosh",
    "add",
    "add_n",
    "angle",
    "argmax",
    "argmin",
    "asin",
    "asinh",
    "atan",
    "atan2",
    "atanh",
    "bincount",
    "ceil",
    "confusion_matrix",
    "conj",
    "cos",
    "cosh",
    "count_nonzero",
    "cumprod",
    "cumsum",
    "digamma",
    "divide",
    "divide_no_nan",
    "equal",
    "erf",
    "erfc",
    "exp",
    "expm1",
    "floor",
    "floordiv",
    "floormod",
    "greater",
    "greater_equal",
    "imag",
    "in_top_k",
    "invert_permutation",
    "is_finite",
    "is_inf",
    "is_nan",
    "is_non_decreasing",
    "is_strictly_increasing",
    "l2_normalize",
    "lbeta",
    "less",
    "less_equal",
    "lgamma",
    "log",
    "log1p",
    "log_sigmoid",
    "log_softmax",
    "logical_and",
    "logical_not",
    "logical_or",
    "logical_xor",
    "maximum",
    "minimum",
    "mod",
    "multiply",
    "multiply_no_nan",
    "negative",
    "nextafter",
    "not_equal",
    "polyval",
    "pow",
    "real",
    "reciprocal",
    "reciprocal_no_nan",
    "reduce_all",
    "reduce_any",
    "reduce_euclidean_norm",
    "reduce_logsumexp",
    "reduce_max",
    "reduce_mean",
    "reduce_min",
    "reduce_prod",
    "reduce_std",
    "reduce_sum",
    "reduce_variance",
    "rint",
    "round",
    "rsqrt",
    "scalar_mul",
    "segment_max",
    "segment_mean",
    "segment_min",
    "segment_prod",
    "segment_sum",
    "sigmoid",
    "sign",
    "sin",
    "sinh",
    "softmax",
    "softplus",
    "softsign",
    "sqrt",
    "square",
    "squared_difference",
    "subtract",
    "tan",
    "tanh",
    "top_k",
    "truediv",
    "unsorted_segment_max",
    "unsorted_segment_mean",
    "unsorted_segment_min",
    "unsorted_segment_prod",
    "unsorted_segment_sqrt_n",
    "unsorted_segment_sum",
    "xdivy",
    "xlog1py",
    "xlogy",
    "zero_fraction",
]


def _one_of(new: Any, new_name: str, old: Any, old_name: str) -> Any:
    """TensorFlow's deprecated-argument lookup: the value of whichever of the two is given."""
    if new is not None and old is not None:
        raise ValueError(f"Cannot specify both '{new_name}' and '{old_name}'")
    return new if new is not None else old


def count_nonzero(
    input_tensor: Any = None,
    axis: Any = None,
    keepdims: bool | None = None,
    dtype: Any = dtypes.int64,
    name: str | None = None,
    reduction_indices: Any = None,
    keep_dims: bool | None = None,
    input: Any = None,
) -> Tensor:
    """``tf.count_nonzero`` with TF1's arguments (``reduction_indices``, ``keep_dims`` and
    ``input`` are the old names of ``axis``, ``keepdims`` and ``input_tensor``)."""
    input_tensor = _one_of(input_tensor, "input_tensor", input, "input")
    axis = _one_of(axis, "axis", reduction_indices, "reduction_indices")
    keep = bool(_one_of(keepdims, "keepdims", keep_dims, "keep_dims"))
    return ops.count_nonzero(input_tensor, axis=axis, keepdims=keep, dtype=dtype, name=name)


def norm(
    tensor: Any,
    ord: Any = "euclidean",
    axis: Any = None,
    keepdims: bool | None = None,
    name: str | None = None,
    keep_dims: bool | None = None,
) -> Tensor:
    """``tf.norm`` with TF1's arguments (``keep_dims`` is the old name of ``keepdims``)."""
    keep = bool(_one_of(keepdims, "keepdims", keep_dims, "keep_dims"))
    return ops.norm(tensor, ord=ord, axis=axis, keepdims=keep, name=name)


def arg_max(
    input: Any, dimension: Any, output_type: Any = dtypes.int64, name: str | None = None
) -> Tensor:
    """``tf.arg_max(input, dimension, output_type, name)``: TF1's old :func:`argmax`."""
    return argmax(input, axis=dimension, output_type=output_type, name=name)


def arg_min(
    input: Any, dimension: Any, output_type: Any = dtypes.int64, name: str | None = None
) -> Tensor:
    """``tf.arg_min(input, dimension, output_type, name)``: TF1's old :func:`argmin`."""
    return argmin(input, axis=dimension, output_type=output_type, name=name)


def __getattr__(name: str) -> object:
    """A name tf.math does not have: the AttributeError pointing to docs/compat.md."""
    from daskgraph.errors import missing_name

    raise missing_name("tf.math", name, globals())
