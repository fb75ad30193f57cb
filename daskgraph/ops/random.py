"""Random ops: ``random_normal``, ``random_uniform`` and ``truncated_normal``, seeded as in
TensorFlow 1.

Seeds follow TensorFlow's ``get_seed`` rules: with neither a graph-level seed
(:func:`set_random_seed`, ``Graph.seed``) nor an op's ``seed``, values differ from session to
session; a graph seed alone derives each op's seed from the number of ops built before it, so
a program that builds the same graph draws the same values; an op seed alone pairs with the
default graph seed. As TensorFlow keeps a generator per op kernel, each op keeps a NumPy
``Generator`` per session in the variable store of its device (the kernels are stateful):
same seeds give the same values in a new session, and every run of one session draws new
ones. Values are drawn on the host and moved to the device, so a GPU gives the CPU's values.

>>> import daskgraph as dg
>>> with dg.Graph().as_default() as g:
...     set_random_seed(1)
...     x = random_normal([2], seed=7)
...     with dg.Session() as sess:
...         first, second = sess.run(x), sess.run(x)
...     with dg.Session() as sess:
...         again = sess.run(x)
>>> bool((first == again).all()), bool((first == second).all())
(True, False)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from daskgraph import dtypes
from daskgraph.gradients import no_gradient
from daskgraph.graph import Tensor, get_default_graph
from daskgraph.graph import _name_scope as graph_name_scope
from daskgraph.ops.array import convert_to_tensor
from daskgraph.ops.fill_ops import _static_of, runtime_shape, shape_argument
from daskgraph.ops.math import broadcast_shape, multiply, subtract
from daskgraph.ops.registry import register
from daskgraph.ops.slicing import _static_ints

__all__ = [
    "DEFAULT_GRAPH_SEED",
    "get_seed",
    "random_normal",
    "random_uniform",
    "set_random_seed",
    "truncated_normal",
]

#: the graph seed of an op seeded without a graph seed (TensorFlow's)
DEFAULT_GRAPH_SEED = 87654321
_MAXINT32 = 2**31 - 1
_INDEX = frozenset({dtypes.int32, dtypes.int64})
_FLOAT_OPS = dtypes.FLOATING | _INDEX  # the output, and an optional shape tensor
_BELOW_ONE_FLOAT16 = float(np.nextafter(np.float16(1.0), np.float16(0.0)))


# -- seeds ----------------------------------------------------------------------------------------
def set_random_seed(seed: int | None) -> None:
    """Set the default graph's random seed (``Graph.seed``), as ``tf.set_random_seed``."""
    get_default_graph().seed = None if seed is None else int(seed)


def get_seed(op_seed: int | None) -> tuple[int | None, int | None]:
    """The ``(graph seed, op seed)`` pair of a new random op, by TensorFlow 1's rules.

    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     get_seed(None), get_seed(5)
    ((None, None), (87654321, 5))
    >>> with dg.Graph().as_default():
    ...     set_random_seed(3)
    ...     get_seed(None), get_seed(5)
    ((3, 0), (3, 5))
    """
    graph = get_default_graph()
    if graph.seed is not None:
        if op_seed is None:
            op_seed = graph.version  # TensorFlow's graph._last_id: the ops built so far
        seeds = (int(graph.seed) % _MAXINT32, int(op_seed) % _MAXINT32)
    elif op_seed is not None:
        seeds = (DEFAULT_GRAPH_SEED, int(op_seed) % _MAXINT32)
    else:
        return None, None
    return (0, _MAXINT32) if seeds == (0, 0) else seeds


# -- kernels: ``store`` is the variable store of the session on this device ---------------------
def _generator(store, key, seed, seed2):
    def make():
        entropy = None if seed is None else [seed, seed2]
        return np.random.default_rng(entropy)

    return store.random_generator((key, seed, seed2), make)


def _draw(xp, store, inputs, shape, dtype, seed, seed2, key, draw):
    rng = _generator(store, key, seed, seed2)
    size = runtime_shape(xp, inputs[0], key) if shape is None else shape
    values = draw(rng, size, np.float64 if dtype == np.float64 else np.float32)
    return xp.asarray(values.astype(dtype, copy=False))


def _normal(rng, size, dtype):
    return rng.standard_normal(size, dtype=dtype)


def _uniform(rng, size, dtype):
    return rng.random(size, dtype=dtype)


def _truncated(rng, size, dtype):
    """Standard normal values, those of magnitude 2 or more drawn again (as TensorFlow)."""
    values = rng.standard_normal(size, dtype=dtype)
    outside = np.abs(values) >= 2.0
    while outside.any():
        values[outside] = rng.standard_normal(int(outside.sum()), dtype=dtype)
        outside = np.abs(values) >= 2.0
    return values


def _normal_kernel(xp, store, *inputs, shape, dtype, seed, seed2, key):
    return _draw(xp, store, inputs, shape, dtype, seed, seed2, key, _normal)


def _uniform_kernel(xp, store, *inputs, shape, dtype, seed, seed2, key):
    values = _draw(xp, store, inputs, shape, dtype, seed, seed2, key, _uniform)
    if dtype == np.float16:  # in [0, 1) also after rounding: a float32 near 1 rounds up
        values = xp.minimum(values, _BELOW_ONE_FLOAT16).astype(dtype)
    return values


def _truncated_kernel(xp, store, *inputs, shape, dtype, seed, seed2, key):
    return _draw(xp, store, inputs, shape, dtype, seed, seed2, key, _truncated)


def _uniform_int_kernel(xp, store, *inputs, shape, dtype, seed, seed2, key, minval, maxval):
    def draw(rng, size, _):
        return rng.integers(minval, maxval, size=size, dtype=dtype)

    return _draw(xp, store, inputs, shape, dtype, seed, seed2, key, draw)


_KINDS = {
    "RandomStandardNormal": _normal_kernel,
    "RandomUniform": _uniform_kernel,
    "TruncatedNormal": _truncated_kernel,
}
for _type, _kernel in _KINDS.items():
    register(_type, _kernel, cpu=_FLOAT_OPS, gpu=_FLOAT_OPS, stateful=True)
register("RandomUniformInt", _uniform_int_kernel, cpu=_INDEX, gpu=_INDEX, stateful=True)
for _type in (*_KINDS, "RandomUniformInt"):
    no_gradient(_type)


# -- builders -------------------------------------------------------------------------------------
def _random_op(
    op_type: str, shape: Any, dtype: dtypes.DType, seed: Any, exact_name: str = "", **attrs: Any
) -> Tensor:
    """One random op of ``op_type`` drawing ``shape`` values (named ``exact_name``, else after
    its type in the caller's scope)."""
    graph = get_default_graph()
    static, inputs = shape_argument(shape, op_type)
    seed1, seed2 = get_seed(seed)
    name = exact_name or graph.unique_name(op_type)
    attrs.update(shape=static, dtype=dtype.numpy, seed=seed1, seed2=seed2, key=name)
    op = graph.create_op(
        op_type, inputs, dtype=dtype, shape=_static_of(static, inputs), attrs=attrs,
        exact_name=name,
    )  # fmt: skip
    return op.outputs[0]


def _float_dtype(dtype: Any, where: str) -> dtypes.DType:
    dtype = dtypes.as_dtype(dtype)
    if not dtype.is_floating:
        raise ValueError(f"{where}: dtype must be a floating point type; got {dtype.name}")
    return dtype


def _scaled(
    op_type: str,
    shape: Any,
    dtype: dtypes.DType,
    seed: Any,
    name: str,
    scale_and_offset: Callable[[], tuple[Tensor, Tensor]],
) -> Tensor:
    """``name = <op_type values> * scale + offset``, the other ops under ``name/`` (as in
    TensorFlow); ``scale_and_offset()`` builds the two tensors in that scope."""
    graph = get_default_graph()
    base = graph.unique_name(name)
    with graph_name_scope(graph, base + "/"):
        scale, offset = scale_and_offset()
        values = multiply(_random_op(op_type, shape, dtype, seed), scale, name="mul")
    op = graph.create_op(
        "Add", [values, offset], dtype=dtype,
        shape=broadcast_shape(values.shape, offset.shape, name), exact_name=base,
    )  # fmt: skip
    return op.outputs[0]


def _moments(mean: Any, stddev: Any, dtype: dtypes.DType) -> Callable[[], tuple[Tensor, Tensor]]:
    def make() -> tuple[Tensor, Tensor]:
        mean_t = convert_to_tensor(mean, dtype=dtype, name="mean")
        return convert_to_tensor(stddev, dtype=dtype, name="stddev"), mean_t

    return make


def random_normal(
    shape: Any,
    mean: Any = 0.0,
    stddev: Any = 1.0,
    dtype: Any = dtypes.float32,
    seed: int | None = None,
    name: str | None = None,
) -> Tensor:
    """Values from a normal distribution of ``mean`` and ``stddev``.

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     x = random_normal([2, 3], mean=1.0, seed=1)
    >>> x.op.name, x.shape
    ('random_normal', (2, 3))
    >>> [op.name for op in x.graph.get_operations()][2:]
    ['random_normal/RandomStandardNormal', 'random_normal/mul', 'random_normal']
    """
    dtype = _float_dtype(dtype, "random_normal")
    return _scaled("RandomStandardNormal", shape, dtype, seed, name or "random_normal",
                   _moments(mean, stddev, dtype))  # fmt: skip


def truncated_normal(
    shape: Any,
    mean: Any = 0.0,
    stddev: Any = 1.0,
    dtype: Any = dtypes.float32,
    seed: int | None = None,
    name: str | None = None,
) -> Tensor:
    """Values from a normal distribution of ``mean`` and ``stddev``, those two standard
    deviations or more from the mean drawn again."""
    dtype = _float_dtype(dtype, "truncated_normal")
    return _scaled("TruncatedNormal", shape, dtype, seed, name or "truncated_normal",
                   _moments(mean, stddev, dtype))  # fmt: skip


def random_uniform(
    shape: Any,
    minval: Any = 0,
    maxval: Any = None,
    dtype: Any = dtypes.float32,
    seed: int | None = None,
    name: str | None = None,
) -> Tensor:
    """Values drawn uniformly from ``[minval, maxval)`` (``maxval`` 1 by default for floats;
    integer dtypes need it).

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     dice = random_uniform([4], 1, 7, dtype=dg.int32, seed=3)
    ...     with dg.Session() as sess:
    ...         values = sess.run(dice)
    >>> values.dtype, bool(((values >= 1) & (values < 7)).all())
    (dtype('int32'), True)
    """
    dtype = dtypes.as_dtype(dtype)
    if dtype.is_integer:
        return _uniform_int(shape, minval, maxval, dtype, seed, name or "random_uniform")
    dtype = _float_dtype(dtype, "random_uniform")

    def width_and_low() -> tuple[Tensor, Tensor]:
        low = convert_to_tensor(minval, dtype=dtype, name="min")
        high = convert_to_tensor(1 if maxval is None else maxval, dtype=dtype, name="max")
        return subtract(high, low, name="sub"), low

    return _scaled("RandomUniform", shape, dtype, seed, name or "random_uniform", width_and_low)


def _uniform_int(shape: Any, minval: Any, maxval: Any, dtype: dtypes.DType, seed: Any,
                 name: str) -> Tensor:  # fmt: skip
    if dtype not in _INDEX:
        raise ValueError(f"random_uniform: integer dtype must be int32 or int64; got {dtype}")
    if maxval is None:
        raise ValueError(f"random_uniform: maxval must be given for the integer dtype {dtype}")
    bounds = [_static_ints(v, "random_uniform", "minval/maxval") for v in (minval, maxval)]
    if any(len(b) != 1 for b in bounds):
        raise ValueError(f"random_uniform: minval and maxval must be scalars; got {minval!r} "
                         f"and {maxval!r}")  # fmt: skip
    (low,), (high,) = bounds
    if low >= high:
        raise ValueError(f"random_uniform: minval ({low}) must be less than maxval ({high})")
    base = get_default_graph().unique_name(name)
    return _random_op("RandomUniformInt", shape, dtype, seed, base, minval=low, maxval=high)
