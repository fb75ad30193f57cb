"""More of TensorFlow 1's optimizers: Adagrad, RMSProp, Adadelta and FTRL.

Each is a :class:`~daskgraph.training.optimizers.Optimizer` whose per-variable update is one op of
:mod:`daskgraph.ops.training`, with TensorFlow 1's constructor arguments, checks, slot
names and slot initial values: Adagrad's ``"accumulator"`` (``<var>/Adagrad``, starting at
``initial_accumulator_value``), RMSProp's ``"rms"`` (``<var>/RMSProp``, starting at ones),
``"mg"`` when centered and ``"momentum"`` (``<var>/RMSProp_1``, ``_2``), Adadelta's ``"accum"``
and ``"accum_update"``, FTRL's ``"accum"`` (starting at ``initial_accumulator_value``) and
``"linear"``.

>>> import daskgraph as dg
>>> with dg.Graph().as_default():
...     w = dg.Variable([1.0, 2.0], name="w")
...     opt = AdagradOptimizer(0.1)
...     train = opt.minimize(dg.reduce_sum(w * w))
...     with dg.Session() as sess:
...         sess.run(dg.global_variables_initializer())
...         sess.run(train)
...         slot = opt.get_slot(w, "accumulator")
...         opt.get_slot_names(), slot.op.name, [round(float(v), 4) for v in sess.run(w)]
(['accumulator'], 'w/Adagrad', [0.9012, 1.9003])
"""

from __future__ import annotations

from typing import Any

from daskgraph.framework import scopes
from daskgraph.framework.graph import Tensor
from daskgraph.ops.array import convert_to_tensor
from daskgraph.ops.initializers import constant_initializer, ones_initializer, zeros_initializer
from daskgraph.ops.math import divide, maximum, multiply
from daskgraph.ops.state import Variable
from daskgraph.ops.training import (
    apply_adadelta,
    apply_adagrad,
    apply_centered_rms_prop,
    apply_ftrl,
    apply_rms_prop,
)
from daskgraph.ops.variable_scope import new_variable
from daskgraph.training.optimizers import Optimizer, _full_shape, _hyper

__all__ = ["AdadeltaOptimizer", "AdagradOptimizer", "FtrlOptimizer", "RMSPropOptimizer"]


class _SlotOptimizer(Optimizer):
    """An optimizer whose slots start at other values than zero."""

    def _slot_with_initializer(
        self, var: Variable, initializer: Any, slot_name: str, op_name: str
    ) -> Variable:
        """The slot ``slot_name`` of ``var``: a variable ``<var>/<op_name>`` made once,
        colocated with ``var``, its initial value from ``initializer``."""
        slots = self._slots.setdefault(slot_name, {})
        slot = slots.get(var)
        if slot is None:
            with scopes.colocate_with(var):
                slot = new_variable(
                    f"{var.op.name}/{op_name}",
                    shape=_full_shape(var),
                    dtype=var.dtype,
                    initializer=initializer,
                    trainable=False,
                )
            slots[var] = slot
        return slot


def _non_negative(value: Any, what: str, message: str) -> None:
    if not isinstance(value, (Tensor, Variable)) and value < 0.0:
        raise ValueError(f"{what} {value:f} {message}")


class AdagradOptimizer(_SlotOptimizer):
    """Adagrad: ``accumulator += grad * grad; var -= learning_rate * grad / sqrt(accumulator)``.

    Parameters
    ----------
    learning_rate
        A float, a scalar tensor, or a callable returning one.
    initial_accumulator_value
        The accumulators' starting value; must be positive.
    """

    def __init__(
        self,
        learning_rate: Any,
        initial_accumulator_value: float = 0.1,
        use_locking: bool = False,
        name: str = "Adagrad",
    ) -> None:
        if initial_accumulator_value <= 0.0:
            raise ValueError(
                f"initial_accumulator_value must be positive: {initial_accumulator_value}"
            )
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._initial_accumulator_value = initial_accumulator_value

    def _create_slots(self, var_list: list[Variable]) -> None:
        for var in var_list:
            init = constant_initializer(self._initial_accumulator_value)
            self._slot_with_initializer(var, init, "accumulator", self._name)

    def _apply_dense(self, grad: Tensor, var: Variable) -> Tensor:
        lr = _hyper(self._learning_rate, var, "learning_rate")
        return apply_adagrad(var, self.get_slot(var, "accumulator"), lr, grad)


class RMSPropOptimizer(_SlotOptimizer):
    """RMSProp, with TensorFlow 1's formulas::

        rms = rms + (grad * grad - rms) * (1 - decay)
        momentum = momentum * momentum_rate + learning_rate * grad / sqrt(rms + epsilon)
        var -= momentum

    With ``centered``, the mean gradient ``mg`` is tracked too and ``rms - mg * mg`` replaces
    ``rms``. As in TensorFlow 1, ``rms`` starts at ones.
    """

    def __init__(
        self,
        learning_rate: Any,
        decay: Any = 0.9,
        momentum: Any = 0.0,
        epsilon: Any = 1e-10,
        use_locking: bool = False,
        centered: bool = False,
        name: str = "RMSProp",
    ) -> None:
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._decay = decay
        self._momentum = momentum
        self._epsilon = epsilon
        self._centered = centered

    def _create_slots(self, var_list: list[Variable]) -> None:
        for var in var_list:
            self._slot_with_initializer(var, ones_initializer(), "rms", self._name)
            if self._centered:
                self._zeros_slot(var, "mg", self._name)
            self._zeros_slot(var, "momentum", self._name)

    def _apply_dense(self, grad: Tensor, var: Variable) -> Tensor:
        lr = _hyper(self._learning_rate, var, "learning_rate")
        decay = _hyper(self._decay, var, "decay")
        momentum = _hyper(self._momentum, var, "momentum")
        epsilon = _hyper(self._epsilon, var, "epsilon")
        rms, mom = self.get_slot(var, "rms"), self.get_slot(var, "momentum")
        if self._centered:
            mg = self.get_slot(var, "mg")
            return apply_centered_rms_prop(var, mg, rms, mom, lr, decay, momentum, epsilon, grad)
        return apply_rms_prop(var, rms, mom, lr, decay, momentum, epsilon, grad)


class AdadeltaOptimizer(_SlotOptimizer):
    """Adadelta (Zeiler), with TensorFlow 1's formulas::

    accum = rho * accum + (1 - rho) * grad^2
    update = sqrt(accum_update + epsilon) / sqrt(accum + epsilon) * grad
    accum_update = rho * accum_update + (1 - rho) * update^2
    var -= learning_rate * update
    """

    def __init__(
        self,
        learning_rate: Any = 0.001,
        rho: Any = 0.95,
        epsilon: Any = 1e-8,
        use_locking: bool = False,
        name: str = "Adadelta",
    ) -> None:
        super().__init__(use_locking, name)
        self._lr = learning_rate
        self._rho = rho
        self._epsilon = epsilon

    def _create_slots(self, var_list: list[Variable]) -> None:
        for var in var_list:
            self._zeros_slot(var, "accum", self._name)
            self._zeros_slot(var, "accum_update", self._name)

    def _apply_dense(self, grad: Tensor, var: Variable) -> Tensor:
        return apply_adadelta(
            var,
            self.get_slot(var, "accum"),
            self.get_slot(var, "accum_update"),
            _hyper(self._lr, var, "learning_rate"),
            _hyper(self._rho, var, "rho"),
            _hyper(self._epsilon, var, "epsilon"),
            grad,
        )


class FtrlOptimizer(_SlotOptimizer):
    """FTRL-proximal (McMahan et al., 2013), with TensorFlow 1's arguments and formulas (see
    :func:`daskgraph.ops.training.apply_ftrl`); ``beta`` adds
    ``beta / (2 * learning_rate)`` to the L2 strength, as there."""

    def __init__(
        self,
        learning_rate: Any,
        learning_rate_power: float = -0.5,
        initial_accumulator_value: float = 0.1,
        l1_regularization_strength: float = 0.0,
        l2_regularization_strength: float = 0.0,
        use_locking: bool = False,
        name: str = "Ftrl",
        accum_name: str | None = None,
        linear_name: str | None = None,
        l2_shrinkage_regularization_strength: float = 0.0,
        beta: float | None = None,
    ) -> None:
        super().__init__(use_locking, name)
        positive = "needs to be positive or zero"
        _non_negative(initial_accumulator_value, "initial_accumulator_value", positive)
        if not isinstance(learning_rate_power, (Tensor, Variable)) and learning_rate_power > 0:
            raise ValueError(
                f"learning_rate_power {learning_rate_power:f} needs to be negative or zero"
            )
        _non_negative(l1_regularization_strength, "l1_regularization_strength", positive)
        _non_negative(l2_regularization_strength, "l2_regularization_strength", positive)
        _non_negative(
            l2_shrinkage_regularization_strength,
            "l2_shrinkage_regularization_strength",
            "needs to be positive or zero",
        )
        self._learning_rate = learning_rate
        self._learning_rate_power = learning_rate_power
        self._initial_accumulator_value = initial_accumulator_value
        self._l1 = l1_regularization_strength
        self._l2 = l2_regularization_strength
        self._l2_shrinkage = l2_shrinkage_regularization_strength
        self._beta = 0.0 if beta is None else beta
        self._accum_name = accum_name
        self._linear_name = linear_name

    def _create_slots(self, var_list: list[Variable]) -> None:
        for var in var_list:
            init = constant_initializer(self._initial_accumulator_value)
            self._slot_with_initializer(var, init, "accum", self._accum_name or self._name)
            self._slot_with_initializer(
                var, zeros_initializer(), "linear", self._linear_name or self._name
            )

    def _apply_dense(self, grad: Tensor, var: Variable) -> Tensor:
        lr = _hyper(self._learning_rate, var, "learning_rate")
        l2 = _hyper(self._l2, var, "l2_regularization_strength")
        if not _is_zero(self._beta):
            floor = convert_to_tensor(1e-36, dtype=var.dtype)
            two_lr = multiply(_hyper(2.0, var, "two"), maximum(lr, floor))
            l2 = l2 + divide(_hyper(self._beta, var, "beta"), two_lr)
        shrinkage = None
        if isinstance(self._l2_shrinkage, (Tensor, Variable)) or self._l2_shrinkage > 0.0:
            shrinkage = _hyper(self._l2_shrinkage, var, "l2_shrinkage_regularization_strength")
        return apply_ftrl(
            var,
            self.get_slot(var, "accum"),
            self.get_slot(var, "linear"),
            grad,
            lr,
            _hyper(self._l1, var, "l1_regularization_strength"),
            l2,
            _hyper(self._learning_rate_power, var, "learning_rate_power"),
            l2_shrinkage=shrinkage,
        )


def _is_zero(value: Any) -> bool:
    return not isinstance(value, (Tensor, Variable)) and float(value) == 0.0
