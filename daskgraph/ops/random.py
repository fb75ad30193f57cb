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

More random ops, seeded as TensorFlow 1 seeds them: ``random_shuffle``, ``multinomial`` /
``categorical``, ``random_gamma``, ``random_poisson`` and ``random_crop``.

They follow the rules of :mod:`daskgraph.ops.random`: the ``(graph seed, op seed)`` pair of
:func:`~daskgraph.ops.random.get_seed`, one NumPy ``Generator`` per op and session (same seeds,
same values in a new session; every run of one session draws new ones), values drawn on the
host and moved to the op's device. The distributions are TensorFlow's, the values NumPy's.
As in TensorFlow, none of them has a gradient (``random_gamma``'s with respect to ``alpha``
included, which TensorFlow has).

>>> import daskgraph as dg
>>> with dg.Graph().as_default():
...     rows = random_shuffle(dg.constant([[1, 2], [3, 4], [5, 6]]), seed=1)
...     draws = multinomial(dg.constant([[0.0, -float("inf")]]), 3, seed=2)
...     with dg.Session() as sess:
...         shuffled, drawn = sess.run([rows, draws])
>>> sorted(shuffled.tolist()), drawn.tolist(), draws.op.name
([[1, 2], [3, 4], [5, 6]], [[0, 0, 0]], 'multinomial/Multinomial')
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from daskgraph.framework import dtypes
from daskgraph.framework.gradient_registry import no_gradient
from daskgraph.framework.graph import Tensor, get_default_graph, name_scope
from daskgraph.framework.graph import _name_scope as graph_name_scope
from daskgraph.framework.op_registry import CPU_ALL, GPU_NUMERIC, register
from daskgraph.kernels.random import (
    _FLOAT_OPS,
    _KINDS,
    _crop_kernel,
    _gamma_kernel,
    _multinomial_kernel,
    _poisson_kernel,
    _shuffle_kernel,
    _uniform_int_kernel,
)
from daskgraph.ops.array import cast, convert_to_tensor
from daskgraph.ops.fill_ops import _static_of, ones_like, shape_argument
from daskgraph.ops.math import broadcast_shape, divide, maximum, multiply, subtract
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


# -- from random_more ---------------------------------------------------------------------
__all__ += [
    "categorical",
    "multinomial",
    "random_crop",
    "random_gamma",
    "random_poisson",
    "random_shuffle",
]
_POISSON = dtypes.FLOATING | _INDEX


register("RandomShuffle", _shuffle_kernel, cpu=CPU_ALL, gpu=GPU_NUMERIC, stateful=True)
register("Multinomial", _multinomial_kernel, cpu=dtypes.NUMERIC, gpu=dtypes.NUMERIC, stateful=True)
register("RandomGamma", _gamma_kernel, cpu=_POISSON, gpu=_POISSON, stateful=True)
register("RandomPoissonV2", _poisson_kernel, cpu=_POISSON, gpu=_POISSON, stateful=True)
register("RandomCrop", _crop_kernel, cpu=CPU_ALL, gpu=GPU_NUMERIC, stateful=True)
for _type in ("RandomShuffle", "Multinomial", "RandomGamma", "RandomPoissonV2", "RandomCrop"):
    no_gradient(_type)


# -- builders -------------------------------------------------------------------------------------
def _seeded(attrs: dict, seed: Any, key: str) -> dict:
    seed1, seed2 = get_seed(seed)
    return {**attrs, "seed": seed1, "seed2": seed2, "key": key}


def random_shuffle(value: Any, seed: int | None = None, name: str | None = None) -> Tensor:
    """``value`` with its first dimension shuffled (each run a new order), as
    ``tf.random_shuffle``.

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     x = random_shuffle(dg.range(5), seed=3)
    ...     with dg.Session() as sess:
    ...         sorted(sess.run(x).tolist())
    [0, 1, 2, 3, 4]
    """
    value = convert_to_tensor(value, name="value")
    graph = get_default_graph()
    key = graph.unique_name(name or "RandomShuffle")
    op = graph.create_op("RandomShuffle", [value], dtype=value.dtype, shape=value.shape,
                         attrs=_seeded({}, seed, key), exact_name=key)  # fmt: skip
    return op.outputs[0]


def _draws(logits: Any, num_samples: Any, out: Any, seed: Any, scope: str) -> Tensor:
    with name_scope(scope):
        logits = convert_to_tensor(logits, name="logits")
        if not logits.dtype.is_floating and not logits.dtype.is_integer:
            raise TypeError(f"{scope}: logits must be real numbers; got {logits.dtype.name}")
        if logits.shape is not None and len(logits.shape) != 2:
            raise ValueError(f"{scope}: logits must be a matrix; got shape {logits.shape}")
        out = dtypes.as_dtype(out)
        if out not in _INDEX:
            raise TypeError(f"{scope}: the output dtype must be int32 or int64; got {out.name}")
        samples = convert_to_tensor(num_samples, dtype=dtypes.int32, name="num_samples")
        static = _static_count(samples)
        batch = None if logits.shape is None else logits.shape[0]
        graph = get_default_graph()
        key = graph.unique_name("Multinomial")
        op = graph.create_op(
            "Multinomial", [logits, samples], dtype=out, shape=(batch, static),
            attrs=_seeded({"dtype": out.numpy}, seed, key), exact_name=key,
        )  # fmt: skip
        return op.outputs[0]


def _static_count(samples: Tensor) -> int | None:
    if samples.op.type != "Const":
        return None
    (count,) = _static_ints(samples, "multinomial", "num_samples")
    if count < 0:
        raise ValueError(f"num_samples should be nonnegative, got {count}")
    return count


def multinomial(
    logits: Any,
    num_samples: Any,
    seed: int | None = None,
    name: str | None = None,
    output_dtype: Any = None,
) -> Tensor:
    """``num_samples`` class ids per row of ``logits`` (``[batch, classes]``, unnormalized log
    probabilities), drawn with the probabilities ``softmax(logits)``: ``[batch, num_samples]``
    of ``output_dtype`` (int64), as TF1's ``tf.multinomial``."""
    out = dtypes.int64 if output_dtype is None else output_dtype
    return _draws(logits, num_samples, out, seed, name or "multinomial")


def categorical(
    logits: Any,
    num_samples: Any,
    dtype: Any = None,
    seed: int | None = None,
    name: str | None = None,
) -> Tensor:
    """:func:`multinomial` under TensorFlow's newer name and argument order
    (``tf.random.categorical``)."""
    out = dtypes.int64 if dtype is None else dtype
    return _draws(logits, num_samples, out, seed, name or "categorical")


def _parameter_op(op_type: str, shape: Any, parameter: Tensor, dtype: dtypes.DType,
                  seed: Any, where: str) -> Tensor:  # fmt: skip
    """A random op of ``op_type`` drawing ``shape + parameter.shape`` values."""
    static, inputs = shape_argument(shape, where)
    dims = _static_of(static, inputs)
    out_shape = None if dims is None or parameter.shape is None else dims + parameter.shape
    graph = get_default_graph()
    key = graph.unique_name(op_type)
    attrs = _seeded({"shape": static, "dtype": dtype.numpy}, seed, key)
    op = graph.create_op(op_type, [*inputs, parameter], dtype=dtype, shape=out_shape,
                         attrs=attrs, exact_name=key)  # fmt: skip
    return op.outputs[0]


def random_gamma(
    shape: Any,
    alpha: Any,
    beta: Any = None,
    dtype: Any = dtypes.float32,
    seed: int | None = None,
    name: str | None = None,
) -> Tensor:
    """Gamma samples of shape ``shape + broadcast(alpha, beta).shape``: for each shape
    ``alpha`` (concentration) and inverse scale ``beta`` (1 by default), as
    ``tf.random_gamma``; never below the dtype's smallest normal number."""
    dtype = dtypes.as_dtype(dtype)
    if not dtype.is_floating:
        raise TypeError(f"random_gamma: dtype must be a floating point type; got {dtype.name}")
    with name_scope(name or "random_gamma"):
        alpha = convert_to_tensor(alpha, dtype=dtype, name="alpha")
        beta = convert_to_tensor(1 if beta is None else beta, dtype=dtype, name="beta")
        broadcast_shape(alpha.shape, beta.shape, "random_gamma")
        alpha_b = multiply(alpha, ones_like(beta))
        samples = _parameter_op("RandomGamma", shape, alpha_b, dtype, seed, "random_gamma")
        return maximum(divide(samples, beta), float(np.finfo(dtype.numpy).tiny), name="Maximum")


def random_poisson(
    lam: Any,
    shape: Any,
    dtype: Any = dtypes.float32,
    seed: int | None = None,
    name: str | None = None,
) -> Tensor:
    """Poisson samples of shape ``shape + lam.shape`` for each rate ``lam``, of ``dtype``
    (float16/32/64, int32, int64), as TF1's ``tf.random_poisson``."""
    dtype = dtypes.as_dtype(dtype)
    if dtype not in _POISSON:
        raise TypeError(
            "Value passed to parameter 'dtype' has DataType "
            f"{dtype.name} not in list of allowed values: float16, float32, float64, int32, int64"
        )
    with name_scope(name or "random_poisson"):
        lam = convert_to_tensor(lam, name="lam")
        if not lam.dtype.is_floating:
            lam = cast(lam, dtypes.float32)
        return _parameter_op("RandomPoissonV2", shape, lam, dtype, seed, "random_poisson")


def random_crop(value: Any, size: Any, seed: int | None = None, name: str | None = None) -> Tensor:
    """A block of ``value`` of ``size`` (one entry per dimension) at a random offset, each
    offset equally likely, as ``tf.random_crop``; a ``size`` larger than ``value`` fails the
    run with TensorFlow's message.

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     crop = random_crop(dg.reshape(dg.range(12), [3, 4]), [2, 2], seed=1)
    ...     with dg.Session() as sess:
    ...         block = sess.run(crop)
    >>> block.shape, int(block[1, 0] - block[0, 0]), crop.op.name
    ((2, 2), 4, 'random_crop')
    """
    value = convert_to_tensor(value, name="value")
    size = convert_to_tensor(size, dtype=dtypes.int32, name="size")
    static = _static_ints(size, "random_crop", "size") if size.op.type == "Const" else None
    rank = None if value.shape is None else len(value.shape)
    count = None if size.shape is None or not size.shape else size.shape[0]
    if rank is not None and count is not None and rank != count:
        raise ValueError(f"random_crop: size must have {rank} entries (one per dimension of "
                         f"{value.name!r}); got {count}")  # fmt: skip
    out = tuple(static) if static is not None else (None,) * rank if rank is not None else None
    graph = get_default_graph()
    key = graph.unique_name(name or "random_crop")
    op = graph.create_op("RandomCrop", [value, size], dtype=value.dtype, shape=out,
                         attrs=_seeded({}, seed, key), exact_name=key)  # fmt: skip
    return op.outputs[0]
