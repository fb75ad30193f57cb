"""Stateless random ops (``tf.random.stateless_*``): values that are a function of a seed tensor.

The same ``seed`` (a shape ``[2]`` integer tensor) gives the same values in every run and every
session, another seed other values; nothing is kept between runs. The values are drawn by a
NumPy ``Generator`` seeded with the two numbers (not TensorFlow's Philox counters, so they
differ from TensorFlow's), on the host, and moved to the op's device.

>>> import daskgraph as dg
>>> with dg.Graph().as_default():
...     seed = dg.placeholder(dg.int32, [2])
...     x = stateless_normal([3], seed)
...     with dg.Session() as sess:
...         a, b, c = (sess.run(x, {seed: s}) for s in ([1, 2], [1, 2], [1, 3]))
>>> bool((a == b).all()), bool((a == c).all()), x.op.name
(True, False, 'stateless_random_normal')
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from daskgraph.framework import dtypes
from daskgraph.framework.gradient_registry import no_gradient
from daskgraph.framework.graph import Tensor, get_default_graph, name_scope
from daskgraph.framework.op_registry import register
from daskgraph.kernels.stateless_random import _categorical_kernel, _stateless_kernel
from daskgraph.ops.array import convert_to_tensor
from daskgraph.ops.fill_ops import _static_of, shape_argument
from daskgraph.ops.math import multiply, subtract
from daskgraph.ops.slicing import _static_ints

__all__ = [
    "stateless_categorical",
    "stateless_multinomial",
    "stateless_normal",
    "stateless_truncated_normal",
    "stateless_uniform",
]

_INDEX = frozenset({dtypes.int32, dtypes.int64})


register("StatelessRandom", _stateless_kernel, cpu=dtypes.NUMERIC, gpu=dtypes.NUMERIC)
register("StatelessMultinomial", _categorical_kernel, cpu=dtypes.NUMERIC, gpu=dtypes.NUMERIC)
no_gradient("StatelessRandom")
no_gradient("StatelessMultinomial")


# -- builders -------------------------------------------------------------------------------------
def _seed(seed: Any) -> Tensor:
    seed = convert_to_tensor(seed, name="seed")
    if seed.dtype not in _INDEX:
        raise TypeError(f"seed must be int32 or int64; {seed.name!r} is {seed.dtype.name}")
    if seed.shape is not None and tuple(seed.shape) not in ((2,), (None,)):
        raise ValueError(f"seed must have shape [2], not {list(seed.shape)}")
    return seed


def _values(
    kind: str,
    shape: Any,
    seed: Any,
    dtype: dtypes.DType,
    name: str,
    low: int | None = None,
    high: int | None = None,
) -> Tensor:
    """One ``StatelessRandom`` op of ``kind`` named ``name`` (in the current scope)."""
    seed = _seed(seed)
    static, inputs = shape_argument(shape, name)
    attrs = {"kind": kind, "shape": static, "dtype": dtype.numpy, "low": low, "high": high}
    op = get_default_graph().create_op(
        "StatelessRandom",
        [seed, *inputs],
        dtype=dtype,
        shape=_static_of(static, inputs),
        attrs=attrs,
        name=name,
    )
    return op.outputs[0]


def _float_dtype(dtype: Any, where: str) -> dtypes.DType:
    dtype = dtypes.as_dtype(dtype)
    if not dtype.is_floating:
        raise ValueError(f"{where}: dtype must be a floating point type; got {dtype.name}")
    return dtype


def stateless_uniform(
    shape: Any,
    seed: Any,
    minval: Any = 0,
    maxval: Any = None,
    dtype: Any = dtypes.float32,
    name: str | None = None,
    alg: str = "auto_select",
) -> Tensor:
    """Values drawn uniformly from ``[minval, maxval)`` (``maxval`` 1 by default for floats;
    integer dtypes need both bounds, Python ints), a function of ``seed``."""
    dtype = dtypes.as_dtype(dtype)
    name = name or "stateless_random_uniform"
    if dtype.is_integer:
        if dtype not in _INDEX or maxval is None:
            raise ValueError(
                "stateless_uniform: an integer dtype must be int32 or int64, with minval and "
                f"maxval given; got {dtype.name}, maxval={maxval!r}"
            )
        low, high = (_static_ints(v, name, "minval/maxval")[0] for v in (minval, maxval))
        if low >= high:
            raise ValueError(f"stateless_uniform: minval ({low}) must be less than maxval ({high})")
        return _values("uniform_int", shape, seed, dtype, name, low, high)
    dtype = _float_dtype(dtype, "stateless_uniform")

    def width_and_low() -> tuple[Tensor, Tensor]:
        low = convert_to_tensor(minval, dtype=dtype, name="min")
        high = convert_to_tensor(1 if maxval is None else maxval, dtype=dtype, name="max")
        return subtract(high, low, name="sub"), low

    return _affine("uniform", shape, seed, dtype, name, width_and_low)


def _affine(
    kind: str,
    shape: Any,
    seed: Any,
    dtype: dtypes.DType,
    name: str,
    scale_and_offset: Callable[[], tuple[Tensor, Tensor]],
) -> Tensor:
    """``name = <values of kind> * scale + offset``, the other ops under ``name/``."""
    graph = get_default_graph()
    base = graph.unique_name(name)
    with graph.name_scope(base + "/"):
        scale, offset = scale_and_offset()
        scaled = multiply(_values(kind, shape, seed, dtype, "StatelessRandom"), scale, name="mul")
    op = graph.create_op("Add", [scaled, offset], dtype=dtype, shape=scaled.shape, exact_name=base)
    return op.outputs[0]


def _moments(mean: Any, stddev: Any, dtype: dtypes.DType) -> Callable[[], tuple[Tensor, Tensor]]:
    def make() -> tuple[Tensor, Tensor]:
        mean_t = convert_to_tensor(mean, dtype=dtype, name="mean")
        return convert_to_tensor(stddev, dtype=dtype, name="stddev"), mean_t

    return make


def stateless_normal(
    shape: Any,
    seed: Any,
    mean: Any = 0.0,
    stddev: Any = 1.0,
    dtype: Any = dtypes.float32,
    name: str | None = None,
    alg: str = "auto_select",
) -> Tensor:
    """Normal values of ``mean`` and ``stddev``, a function of ``seed``."""
    dtype = _float_dtype(dtype, "stateless_normal")
    name = name or "stateless_random_normal"
    return _affine("normal", shape, seed, dtype, name, _moments(mean, stddev, dtype))


def stateless_truncated_normal(
    shape: Any,
    seed: Any,
    mean: Any = 0.0,
    stddev: Any = 1.0,
    dtype: Any = dtypes.float32,
    name: str | None = None,
    alg: str = "auto_select",
) -> Tensor:
    """Normal values of ``mean`` and ``stddev`` within two standard deviations of the mean,
    a function of ``seed``."""
    dtype = _float_dtype(dtype, "stateless_truncated_normal")
    name = name or "stateless_truncated_normal"
    return _affine("truncated", shape, seed, dtype, name, _moments(mean, stddev, dtype))


def stateless_categorical(
    logits: Any, num_samples: Any, seed: Any, dtype: Any = dtypes.int64, name: str | None = None
) -> Tensor:
    """``num_samples`` class ids per row of ``logits`` drawn with ``softmax(logits)``, a
    function of ``seed`` (``[batch, num_samples]``)."""
    out = dtypes.as_dtype(dtype)
    if out not in _INDEX:
        raise TypeError(f"stateless_categorical: dtype must be int32 or int64; got {out.name}")
    with name_scope(name or "stateless_categorical"):
        seed = _seed(seed)
        logits = convert_to_tensor(logits, name="logits")
        samples = convert_to_tensor(num_samples, dtype=dtypes.int32, name="num_samples")
        count = None
        if samples.op.type == "Const":
            (count,) = _static_ints(samples, "stateless_categorical", "num_samples")
        batch = None if logits.shape is None else logits.shape[0]
        op = get_default_graph().create_op(
            "StatelessMultinomial",
            [seed, logits, samples],
            dtype=out,
            shape=(batch, count),
            attrs={"dtype": out.numpy},
        )
        return op.outputs[0]


def stateless_multinomial(
    logits: Any,
    num_samples: Any,
    seed: Any,
    output_dtype: Any = dtypes.int64,
    name: str | None = None,
) -> Tensor:
    """:func:`stateless_categorical` under TF1's older name and argument order."""
    return stateless_categorical(
        logits, num_samples, seed, output_dtype, name or "stateless_multinomial"
    )
