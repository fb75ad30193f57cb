"""Learning-rate schedules: TensorFlow 1's ``tf.train.*_decay`` functions, built from graph ops.

Each function returns a scalar tensor computed from ``global_step`` (usually the global step
variable) by ordinary ops, so every run reads the step's value then and the rate follows it as
training advances. The formulas, dtypes (the learning rate's: ``float32`` for a Python float)
and errors are TensorFlow's (``legacy_learning_rate_decay`` over the Keras schedules); the last
op of each schedule is named after its name scope (``ExponentialDecay``, ...), as there.

>>> import daskgraph as dg
>>> with dg.Graph().as_default():
...     step = dg.Variable(0, dtype=dg.int64, name="step")
...     lr = exponential_decay(0.1, step, decay_steps=10, decay_rate=0.5, staircase=True)
...     advance = step.assign_add(10)
...     with dg.Session() as sess:
...         _ = sess.run(step.initializer)
...         first = float(sess.run(lr))
...         _ = sess.run(advance)
...         first, float(sess.run(lr)), lr.op.name
(0.10000000149011612, 0.05000000074505806, 'ExponentialDecay')
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from daskgraph.framework import dtypes
from daskgraph.framework.graph import Tensor, get_default_graph
from daskgraph.ops.array import cast, constant, convert_to_tensor
from daskgraph.ops.elementwise import ceil, cos, floor, log, minimum, pow
from daskgraph.ops.logic import equal, less_equal, where
from daskgraph.ops.math import add, broadcast_shape, divide, exp, multiply, negative

__all__ = [
    "cosine_decay",
    "cosine_decay_restarts",
    "exponential_decay",
    "inverse_time_decay",
    "linear_cosine_decay",
    "natural_exp_decay",
    "piecewise_constant",
    "piecewise_constant_decay",
    "polynomial_decay",
]


# -- helpers --------------------------------------------------------------------------------------
def _is_tensor(value: Any) -> bool:
    return isinstance(value, Tensor) or hasattr(value, "_as_tensor")


def _as(value: Any, dtype: dtypes.DType, name: str) -> Tensor:
    """``math_ops.cast(value, dtype)``: a tensor cast to ``dtype``, or a constant of it."""
    if _is_tensor(value):
        tensor = convert_to_tensor(value)
        return tensor if tensor.dtype == dtype else cast(tensor, dtype)
    return constant(value, dtype=dtype, name=name)


def _step(global_step: Any, dtype: dtypes.DType, what: str) -> Tensor:
    if global_step is None:
        raise ValueError(f"global_step is required for {what}.")
    return _as(global_step, dtype, "global_step")


def _rate(learning_rate: Any) -> Tensor:
    rate = convert_to_tensor(learning_rate, name="initial_learning_rate")
    if not rate.dtype.is_floating:
        raise ValueError(
            f"learning_rate must be a float (tensor); {rate.name!r} is {rate.dtype.name}"
        )
    return rate


def _last(op_type: str, x: Tensor, y: Tensor, scope: str) -> Tensor:
    """The schedule's last op, named exactly after its name scope (``ExponentialDecay``)."""
    shape = broadcast_shape(x.shape, y.shape, op_type)
    op = get_default_graph().create_op(
        op_type, [x, y], dtype=x.dtype, shape=shape, exact_name=scope.rstrip("/")
    )
    return op.outputs[0]


def _fraction(step: Tensor, steps: Tensor, staircase: bool) -> Tensor:
    p = divide(step, steps)
    return floor(p) if staircase else p


@contextmanager
def _schedule(name: str | None, default: str, learning_rate: Any) -> Iterator[tuple[str, Tensor]]:
    """The name scope of a schedule (``name``, else ``default``) and, made in it, the
    learning rate as a floating-point tensor."""
    with get_default_graph().name_scope(name or default) as scope:
        yield scope, _rate(learning_rate)


def _decay_and_fraction(
    rate: Tensor, global_step: Any, decay_steps: Any, decay_rate: Any, staircase: bool, what: str
) -> tuple[Tensor, Tensor]:
    """``decay_rate`` and ``global_step / decay_steps`` (floored with ``staircase``), in the
    dtype of ``rate``."""
    dtype = rate.dtype
    steps = _as(decay_steps, dtype, "decay_steps")
    decay = _as(decay_rate, dtype, "decay_rate")
    return decay, _fraction(_step(global_step, dtype, what), steps, staircase)


# -- the schedules --------------------------------------------------------------------------------
def exponential_decay(
    learning_rate: Any,
    global_step: Any,
    decay_steps: Any,
    decay_rate: Any,
    staircase: bool = False,
    name: str | None = None,
) -> Tensor:
    """``learning_rate * decay_rate ** (global_step / decay_steps)`` (the exponent floored
    with ``staircase``)."""
    with _schedule(name, "ExponentialDecay", learning_rate) as (scope, rate):
        decay, p = _decay_and_fraction(
            rate, global_step, decay_steps, decay_rate, staircase, "exponential_decay"
        )
        return _last("Mul", rate, pow(decay, p), scope)


def natural_exp_decay(
    learning_rate: Any,
    global_step: Any,
    decay_steps: Any,
    decay_rate: Any,
    staircase: bool = False,
    name: str | None = None,
) -> Tensor:
    """``learning_rate * exp(-decay_rate * global_step / decay_steps)``, computed as TensorFlow
    does: an exponential decay of rate ``exp(-decay_rate)``."""
    natural = exp(negative(convert_to_tensor(decay_rate, name="decay_rate")))
    return exponential_decay(learning_rate, global_step, decay_steps, natural, staircase, name)


def inverse_time_decay(
    learning_rate: Any,
    global_step: Any,
    decay_steps: Any,
    decay_rate: Any,
    staircase: bool = False,
    name: str | None = None,
) -> Tensor:
    """``learning_rate / (1 + decay_rate * global_step / decay_steps)`` (the fraction floored
    with ``staircase``)."""
    with _schedule(name, "InverseTimeDecay", learning_rate) as (scope, rate):
        decay, p = _decay_and_fraction(
            rate, global_step, decay_steps, decay_rate, staircase, "inverse_time_decay"
        )
        denominator = add(constant(1, dtype=rate.dtype), multiply(decay, p))
        return _last("RealDiv", rate, denominator, scope)


def polynomial_decay(
    learning_rate: Any,
    global_step: Any,
    decay_steps: Any,
    end_learning_rate: Any = 0.0001,
    power: Any = 1.0,
    cycle: bool = False,
    name: str | None = None,
) -> Tensor:
    """``(learning_rate - end_learning_rate) * (1 - step / decay_steps) ** power +
    end_learning_rate``, with ``step`` capped at ``decay_steps``; with ``cycle``,
    ``decay_steps`` grows to the first multiple of itself beyond the step instead."""
    with _schedule(name, "PolynomialDecay", learning_rate) as (scope, rate):
        dtype = rate.dtype
        end = _as(end_learning_rate, dtype, "end_learning_rate")
        exponent = _as(power, dtype, "power")
        step = _step(global_step, dtype, "polynomial_decay")
        steps = _as(decay_steps, dtype, "decay_steps")
        if cycle:
            zero = equal(step, constant(0, dtype=dtype))
            multiplier = where(zero, constant(1, dtype=dtype), ceil(divide(step, steps)))
            steps = multiply(steps, multiplier)
        else:
            step = minimum(step, steps)
        p = divide(step, steps)
        decayed = multiply(rate - end, pow(constant(1, dtype=dtype) - p, exponent))
        return _last("Add", decayed, end, scope)


def cosine_decay(
    learning_rate: Any,
    global_step: Any,
    decay_steps: Any,
    alpha: float = 0.0,
    name: str | None = None,
) -> Tensor:
    """``learning_rate * ((1 - alpha) * 0.5 * (1 + cos(pi * step / decay_steps)) + alpha)``,
    with ``step`` capped at ``decay_steps``."""
    with _schedule(name, "CosineDecay", learning_rate) as (scope, rate):
        dtype = rate.dtype
        steps = _as(decay_steps, dtype, "decay_steps")
        step = minimum(_step(global_step, dtype, "cosine_decay"), steps)
        decayed = _cosine(divide(step, steps), dtype, 1.0 - alpha, alpha)
        return _last("Mul", rate, decayed, scope)


def _cosine(fraction: Tensor, dtype: dtypes.DType, scale: Any, alpha: Any) -> Tensor:
    """``scale * 0.5 * (1 + cos(pi * fraction)) + alpha`` in ``dtype``."""
    pi = constant(math.pi, dtype=dtype)
    half = constant(0.5, dtype=dtype)
    cosine = multiply(half, add(constant(1, dtype=dtype), cos(multiply(pi, fraction))))
    return add(multiply(_as(scale, dtype, "scale"), cosine), _as(alpha, dtype, "alpha"))


def cosine_decay_restarts(
    learning_rate: Any,
    global_step: Any,
    first_decay_steps: Any,
    t_mul: float = 2.0,
    m_mul: float = 1.0,
    alpha: float = 0.0,
    name: str | None = None,
) -> Tensor:
    """Cosine decay with warm restarts (SGDR): the ``i``-th period is ``t_mul ** i`` times
    ``first_decay_steps`` long and starts from ``m_mul ** i`` times the learning rate."""
    with _schedule(name, "SGDRDecay", learning_rate) as (scope, rate):
        dtype = rate.dtype
        first = _as(first_decay_steps, dtype, "first_decay_steps")
        t = _as(t_mul, dtype, "t_mul")
        fraction = divide(_step(global_step, dtype, "cosine_decay_restarts"), first)
        if float(t_mul) == 1.0:
            restart = floor(fraction)
            fraction = fraction - restart
        else:
            one = constant(1, dtype=dtype)
            restart = floor(divide(log(one - fraction * (one - t)), log(t)))
            done = divide(one - pow(t, restart), one - t)
            fraction = divide(fraction - done, pow(t, restart))
        m_fac = pow(_as(m_mul, dtype, "m_mul"), restart)
        low = _as(alpha, dtype, "alpha")
        decayed = add(
            multiply(constant(1, dtype=dtype) - low, _cosine(fraction, dtype, m_fac, 0)), low
        )
        return _last("Mul", rate, decayed, scope)


def linear_cosine_decay(
    learning_rate: Any,
    global_step: Any,
    decay_steps: Any,
    num_periods: float = 0.5,
    alpha: float = 0.0,
    beta: float = 0.001,
    name: str | None = None,
) -> Tensor:
    """``learning_rate * ((alpha + linear) * cosine + beta)``, where ``linear`` falls from 1 to
    0 over ``decay_steps`` and ``cosine`` makes ``num_periods`` periods of a cosine."""
    with _schedule(name, "LinearCosineDecay", learning_rate) as (scope, rate):
        dtype = rate.dtype
        steps = _as(decay_steps, dtype, "decay_steps")
        step = minimum(_step(global_step, dtype, "linear_cosine_decay"), steps)
        linear = divide(steps - step, steps)
        periods = multiply(constant(2, dtype=dtype), _as(num_periods, dtype, "num_periods"))
        cosine = _cosine(multiply(periods, divide(step, steps)), dtype, 1.0, 0.0)
        scaled = add(
            multiply(add(_as(alpha, dtype, "alpha"), linear), cosine), _as(beta, dtype, "beta")
        )
        return _last("Mul", rate, scaled, scope)


def piecewise_constant(
    x: Any, boundaries: Sequence[Any], values: Sequence[Any], name: str | None = None
) -> Tensor:
    """``values[0]`` while ``x <= boundaries[0]``, ``values[i]`` while
    ``boundaries[i-1] < x <= boundaries[i]``, and ``values[-1]`` beyond the last boundary.

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     step = dg.placeholder(dg.int64, [])
    ...     lr = piecewise_constant(step, [5, 15], [1.0, 0.5, 0.1])
    ...     with dg.Session() as sess:
    ...         [float(sess.run(lr, {step: s})) for s in (5, 6, 16)]
    [1.0, 0.5, 0.10000000149011612]
    >>> with dg.Graph().as_default():
    ...     piecewise_constant(dg.constant(1), [5], [1.0])
    Traceback (most recent call last):
    ...
    ValueError: The length of boundaries should be 1 less than the length of values
    """
    if len(boundaries) != len(values) - 1:
        raise ValueError("The length of boundaries should be 1 less than the length of values")
    graph = get_default_graph()
    with graph.name_scope(name or "PiecewiseConstant") as scope:
        step = convert_to_tensor(x)
        limits = [_boundary(b, step) for b in boundaries]
        levels = [convert_to_tensor(v) for v in values]
        for level in levels[1:]:
            if level.dtype != levels[0].dtype:
                raise ValueError(
                    f"Values must have elements all with the same dtype ({levels[0].dtype.name} "
                    f"vs {level.dtype.name})."
                )
        result = levels[-1]
        for limit, level in zip(reversed(limits), reversed(levels[:-1]), strict=True):
            result = where(less_equal(step, limit), level, result)
        return _named(result, scope)


def _boundary(value: Any, step: Tensor) -> Tensor:
    """A boundary as a tensor of the step's dtype (int32 boundaries promoted to int64)."""
    boundary = convert_to_tensor(value)
    if boundary.dtype == step.dtype:
        return boundary
    if boundary.dtype == dtypes.int32 and step.dtype == dtypes.int64:
        return cast(boundary, dtypes.int64)
    raise ValueError(
        f"Boundaries ({boundary.dtype.name}) must have the same dtype as x ({step.dtype.name})."
    )


def _named(tensor: Tensor, scope: str) -> Tensor:
    """An ``Identity`` of ``tensor`` named exactly after the name scope ``scope``."""
    op = get_default_graph().create_op(
        "Identity", [tensor], dtype=tensor.dtype, shape=tensor.shape, exact_name=scope.rstrip("/")
    )
    return op.outputs[0]


#: TF1's other name of :func:`piecewise_constant`
piecewise_constant_decay = piecewise_constant
