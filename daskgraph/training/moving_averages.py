"""Moving averages: ``tf.train.ExponentialMovingAverage`` and ``assign_moving_average``.

``ExponentialMovingAverage(decay).apply([w, ...])`` makes, per variable, a non-trainable
average variable ``w/ExponentialMovingAverage`` next to it (starting at ``w``'s initial
value) and returns one op that moves every average towards its variable's current value,
``average -= (average - value) * (1 - decay)``. With ``num_updates`` (the global step, say),
the decay is ``min(decay, (1 + num_updates) / (10 + num_updates))``, so that early averages
follow quickly. Tensors (a loss) can be averaged too, from zero, with TensorFlow's bias
correction when ``zero_debias``. ``variables_to_restore()`` maps checkpoint names to
variables so that a :class:`~daskgraph.training.saver.Saver` loads the averages into the variables,
for evaluation. The formulas and names are TensorFlow 1's (``moving_averages.py``).

>>> import daskgraph as dg
>>> with dg.Graph().as_default():
...     w = dg.Variable(0.0, name="w")
...     ema = ExponentialMovingAverage(0.5)
...     update = ema.apply([w])
...     with dg.Session() as sess:
...         sess.run(dg.global_variables_initializer())
...         _ = sess.run(w.assign(4.0))
...         sess.run(update)
...         float(sess.run(ema.average(w))), ema.average_name(w)
(2.0, 'w/ExponentialMovingAverage')
"""

from __future__ import annotations

from collections.abc import Iterable
from contextlib import nullcontext
from typing import Any

from daskgraph.framework import dtypes, scopes
from daskgraph.framework.graph import GLOBAL_VARIABLES, Operation, Tensor, get_default_graph
from daskgraph.ops.array import cast, constant, convert_to_tensor
from daskgraph.ops.elementwise import minimum, pow
from daskgraph.ops.initializers import zeros_initializer
from daskgraph.ops.math import divide, multiply, subtract
from daskgraph.ops.state import Variable, assign, assign_add, assign_sub, trainable_variables
from daskgraph.ops.variable_scope import new_variable

__all__ = [
    "MOVING_AVERAGE_VARIABLES",
    "ExponentialMovingAverage",
    "assign_moving_average",
    "moving_average_variables",
]

#: the collection of the variables that have a moving average (``tf.GraphKeys``'s name)
MOVING_AVERAGE_VARIABLES = "moving_average_variables"


def moving_average_variables(scope: str | None = None) -> list[Variable]:
    """The variables that :meth:`ExponentialMovingAverage.apply` averages (those whose name
    starts with ``scope`` when given)."""
    found = get_default_graph().get_collection(MOVING_AVERAGE_VARIABLES)
    return [v for v in found if scope is None or v.op.name.startswith(scope)]


def assign_moving_average(
    variable: Variable,
    value: Any,
    decay: Any,
    zero_debias: bool = True,
    name: str | None = None,
) -> Tensor:
    """``variable -= (variable - value) * (1 - decay)``; the op outputs the new value.

    With ``zero_debias``, ``variable`` gets the average of a zero-started hidden variable
    ``<variable>/biased`` divided by ``1 - decay ** t`` (``t`` counted in
    ``<variable>/local_step``), TensorFlow's bias correction of averages that start at zero.
    """
    graph = get_default_graph()
    with graph.name_scope(name or "AssignMovingAvg"):
        decay = _one_minus(decay, variable.dtype)
        if isinstance(value, Variable) and scopes.current_control_inputs():
            value = value.read_value()  # after the ops in force (a train op), as TF's ref read
        value = convert_to_tensor(value, dtype=variable.dtype)
        if zero_debias:
            return _zero_debias(variable, value, decay)
        return assign_sub(variable, multiply(subtract(variable, value), decay))


def _one_minus(decay: Any, dtype: dtypes.DType) -> Tensor:
    """``1 - decay`` as a tensor of ``dtype`` (TensorFlow's ``decay`` inside the update)."""
    if isinstance(decay, (Tensor, Variable)):
        decay = convert_to_tensor(decay)
        rest = subtract(constant(1.0, dtype=decay.dtype), decay, name="decay")
    else:
        rest = constant(1.0 - decay, dtype=dtypes.float32, name="decay")
    return rest if rest.dtype == dtype else cast(rest, dtype)


def _zero_debias(average: Variable, value: Tensor, decay: Tensor) -> Tensor:
    """The bias-corrected update of ``average`` (``decay`` is ``1 - decay`` here)."""
    with scopes.colocate_with(average):
        biased = new_variable(
            f"{average.op.name}/biased",
            shape=_shape_of(value, "value"),
            dtype=average.dtype,
            initializer=zeros_initializer(),
            trainable=False,
        )
        local_step = new_variable(
            f"{average.op.name}/local_step",
            shape=(),
            dtype=average.dtype,
            initializer=zeros_initializer(),
            trainable=False,
        )
    new_biased = assign_sub(biased, multiply(subtract(biased, value), decay))
    steps = assign_add(local_step, 1)
    one = constant(1, dtype=average.dtype)
    factor = subtract(one, pow(subtract(one, decay), steps))
    return assign(average, divide(new_biased, factor))


def _shape_of(tensor: Any, what: str) -> tuple:
    shape = tensor.shape
    if shape is None or None in shape:
        raise ValueError(f"The shape of the {what} {tensor.name!r} must be fully defined: {shape}")
    return shape


class ExponentialMovingAverage:
    """Keeps moving averages of variables (and tensors), TensorFlow 1's class.

    Parameters
    ----------
    decay
        The decay, a float (typically close to 1: 0.999, 0.9999).
    num_updates
        Optional count of updates (the global step, say): the decay used is then
        ``min(decay, (1 + num_updates) / (10 + num_updates))``.
    zero_debias
        Correct the averages of *tensors* (which start at zero) for that start.
    name
        The name of the averages (``<var>/<name>``) and of the ops' name scope.
    """

    def __init__(
        self,
        decay: Any,
        num_updates: Any = None,
        zero_debias: bool = False,
        name: str = "ExponentialMovingAverage",
    ) -> None:
        self._decay = decay
        self._num_updates = num_updates
        self._zero_debias = zero_debias
        self._name = name
        self._averages: dict[Any, Variable] = {}
        self._debiased: set[Variable] = set()

    @property
    def name(self) -> str:
        """The name of the averages and of the update's scope."""
        return self._name

    def apply(self, var_list: Iterable[Any] | None = None) -> Operation:
        """Make the averages of ``var_list`` (default: the trainable variables) and return the
        op that updates them all; ValueError for a variable averaged already."""
        graph = get_default_graph()
        items = list(trainable_variables(graph) if var_list is None else var_list)
        for item in items:
            self._make_average(item)
        with graph.name_scope(self._name) as scope:
            decay = self._decay_tensor()
            updates = []
            for item in items:
                average = self._averages[item]
                debias = average in self._debiased
                updates.append(assign_moving_average(average, item, decay, zero_debias=debias))
            return graph.create_op(
                "NoOp",
                [],
                dtype=None,
                control_inputs=[u.op for u in updates] or (),
                exact_name=scope.rstrip("/"),
            )

    def _decay_tensor(self) -> Tensor:
        """The decay as a float32 tensor, capped by ``num_updates`` when given."""
        if isinstance(self._decay, (Tensor, Variable)):
            decay = _as_float32(self._decay, "decay")
        else:
            decay = constant(self._decay, dtype=dtypes.float32, name="decay")
        if self._num_updates is None:
            return decay
        count = _as_float32(self._num_updates, "num_updates")
        return minimum(decay, divide(count + 1.0, count + 10.0))

    def _make_average(self, item: Any) -> None:
        if not isinstance(item, (Tensor, Variable)):
            raise TypeError(f"ExponentialMovingAverage.apply: {item!r} is not a Variable or Tensor")
        if item.dtype not in (dtypes.float16, dtypes.float32, dtypes.float64):
            raise TypeError(f"The variables must be half, float, or double: {item.name}")
        if item in self._averages:
            raise ValueError(f"Moving average already computed for: {item.name}")
        if isinstance(item, Variable):
            with scopes.colocate_with(item):
                average = new_variable(
                    f"{item.op.name}/{self._name}", initializer=item.initial_value, trainable=False
                )
            item.graph.add_to_collection(MOVING_AVERAGE_VARIABLES, item)
        else:
            average = self._tensor_average(item)
        self._averages[item] = average

    def _tensor_average(self, tensor: Tensor) -> Variable:
        """A zero-started average of ``tensor`` (next to it when it reads a variable)."""
        colocate = tensor.op if tensor.op.type == "VariableV2" else None
        with scopes.colocate_with(colocate) if colocate is not None else nullcontext():
            average = new_variable(
                f"{tensor.op.name}/{self._name}",
                shape=_shape_of(tensor, "tensor"),
                dtype=tensor.dtype,
                initializer=zeros_initializer(),
                trainable=False,
            )
        if self._zero_debias:
            self._debiased.add(average)
        return average

    def average(self, var: Any) -> Variable | None:
        """The average variable of ``var``, or None when :meth:`apply` did not average it."""
        return self._averages.get(var)

    def average_name(self, var: Any) -> str:
        """The name of ``var``'s average (what it will be, before :meth:`apply`)."""
        if var in self._averages:
            return self._averages[var].op.name
        return get_default_graph().unique_name(f"{var.op.name}/{self._name}", mark_as_used=False)

    def variables_to_restore(self, moving_avg_variables: Iterable[Any] | None = None) -> dict:
        """Checkpoint name -> variable, so that a ``Saver`` restores each average into its
        variable (and every other global variable under its own name).

        ``moving_avg_variables`` defaults to the trainable variables and those averaged.
        """
        graph = get_default_graph()
        if moving_avg_variables is None:
            moving_avg_variables = trainable_variables(graph) + moving_average_variables()
        averaged = list(dict.fromkeys(moving_avg_variables))
        names = {self.average_name(v): v for v in averaged}
        for var in graph.get_collection(GLOBAL_VARIABLES):
            if var not in averaged and var.op.name not in names:
                names[var.op.name] = var
        return names


def _as_float32(value: Any, name: str) -> Tensor:
    tensor = convert_to_tensor(value, dtype=None if _is_tensor(value) else dtypes.float32)
    return tensor if tensor.dtype == dtypes.float32 else cast(tensor, dtypes.float32, name=name)


def _is_tensor(value: Any) -> bool:
    return isinstance(value, (Tensor, Variable))
