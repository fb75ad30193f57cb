"""TensorFlow 1's proximal optimizers: proximal gradient descent, proximal Adagrad and Adagrad
dual averaging, with L1 and L2 regularization strengths.

Each is a :class:`~daskgraph.training.optimizers.Optimizer` whose per-variable update is one op of
:mod:`daskgraph.ops.training_proximal`, with TensorFlow 1's constructor arguments, checks, slot
names and slot initial values: proximal Adagrad's ``"accumulator"`` (``<var>/ProximalAdagrad``,
starting at ``initial_accumulator_value``); Adagrad DA's ``"gradient_accumulator"`` (zeros)
and ``"gradient_squared_accumulator"`` (``<var>/AdagradDA``, ``<var>/AdagradDA_1``, the second
starting at ``initial_gradient_squared_accumulator_value``). Adagrad DA reads the global step
given to its constructor (plus one) in each update.

>>> import daskgraph as dg
>>> with dg.Graph().as_default():
...     w = dg.Variable([1.0, -0.05], name="w")
...     train = ProximalGradientDescentOptimizer(0.5, 0.2).minimize(dg.reduce_sum(w))
...     with dg.Session() as sess:
...         sess.run(w.initializer)
...         sess.run(train)
...         sess.run(w).tolist()
[0.4000000059604645, -0.45000001788139343]
"""

from __future__ import annotations

from typing import Any

from daskgraph.framework import dtypes
from daskgraph.framework.graph import Tensor
from daskgraph.ops.array import cast, constant
from daskgraph.ops.initializers import constant_initializer, zeros_initializer
from daskgraph.ops.state import Variable
from daskgraph.ops.training_proximal import (
    apply_adagrad_da,
    apply_proximal_adagrad,
    apply_proximal_gradient_descent,
)
from daskgraph.training.adaptive_optimizers import _SlotOptimizer
from daskgraph.training.optimizers import Optimizer, _hyper

__all__ = [
    "AdagradDAOptimizer",
    "ProximalAdagradOptimizer",
    "ProximalGradientDescentOptimizer",
]


class ProximalGradientDescentOptimizer(Optimizer):
    """Gradient descent followed by the proximal step of L1 and L2 regularization::

    prox = var - learning_rate * grad
    var = sign(prox) * max(|prox| - learning_rate * l1, 0) / (1 + learning_rate * l2)
    """

    def __init__(
        self,
        learning_rate: Any,
        l1_regularization_strength: Any = 0.0,
        l2_regularization_strength: Any = 0.0,
        use_locking: bool = False,
        name: str = "ProximalGradientDescent",
    ) -> None:
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._l1 = l1_regularization_strength
        self._l2 = l2_regularization_strength

    def _apply_dense(self, grad: Tensor, var: Variable) -> Tensor:
        return apply_proximal_gradient_descent(
            var,
            _hyper(self._learning_rate, var, "learning_rate"),
            _hyper(self._l1, var, "l1_regularization_strength"),
            _hyper(self._l2, var, "l2_regularization_strength"),
            grad,
        )


class ProximalAdagradOptimizer(_SlotOptimizer):
    """Adagrad followed by the proximal step of L1 and L2 regularization::

    accumulator += grad * grad
    rate = learning_rate / sqrt(accumulator)
    prox = var - rate * grad
    var = sign(prox) * max(|prox| - rate * l1, 0) / (1 + rate * l2)
    """

    def __init__(
        self,
        learning_rate: Any,
        initial_accumulator_value: float = 0.1,
        l1_regularization_strength: Any = 0.0,
        l2_regularization_strength: Any = 0.0,
        use_locking: bool = False,
        name: str = "ProximalAdagrad",
    ) -> None:
        if initial_accumulator_value <= 0.0:
            raise ValueError(
                f"initial_accumulator_value must be positive: {initial_accumulator_value}"
            )
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._initial_accumulator_value = initial_accumulator_value
        self._l1 = l1_regularization_strength
        self._l2 = l2_regularization_strength

    def _create_slots(self, var_list: list[Variable]) -> None:
        for var in var_list:
            init = constant_initializer(self._initial_accumulator_value)
            self._slot_with_initializer(var, init, "accumulator", self._name)

    def _apply_dense(self, grad: Tensor, var: Variable) -> Tensor:
        return apply_proximal_adagrad(
            var,
            self.get_slot(var, "accumulator"),
            _hyper(self._learning_rate, var, "learning_rate"),
            _hyper(self._l1, var, "l1_regularization_strength"),
            _hyper(self._l2, var, "l2_regularization_strength"),
            grad,
        )


class AdagradDAOptimizer(_SlotOptimizer):
    """Adagrad dual averaging (Duchi et al.), TensorFlow 1's formulas, ``t`` being the global
    step (given to the constructor) plus one::

        gradient_accumulator += grad
        gradient_squared_accumulator += grad * grad
        var = -learning_rate * sign(g) * max(|g| - l1 * t, 0)
              / (l2 * t * learning_rate + sqrt(gradient_squared_accumulator))

    with ``g`` the gradient accumulator.
    """

    def __init__(
        self,
        learning_rate: Any,
        global_step: Any,
        initial_gradient_squared_accumulator_value: float = 0.1,
        l1_regularization_strength: Any = 0.0,
        l2_regularization_strength: Any = 0.0,
        use_locking: bool = False,
        name: str = "AdagradDA",
    ) -> None:
        if initial_gradient_squared_accumulator_value <= 0.0:
            raise ValueError(
                "initial_gradient_squared_accumulator_value must be positive: "
                f"{initial_gradient_squared_accumulator_value}"
            )
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._initial_gg = initial_gradient_squared_accumulator_value
        self._l1 = l1_regularization_strength
        self._l2 = l2_regularization_strength
        self._global_step = global_step
        self._global_step_on_worker: Tensor | None = None

    def _create_slots(self, var_list: list[Variable]) -> None:
        for var in var_list:
            self._slot_with_initializer(
                var, zeros_initializer(), "gradient_accumulator", self._name
            )
            self._slot_with_initializer(
                var,
                constant_initializer(self._initial_gg),
                "gradient_squared_accumulator",
                self._name,
            )

    def _prepare(self) -> None:
        step = cast(self._global_step, dtypes.int64)
        self._global_step_on_worker = step + constant(1, dtype=dtypes.int64)

    def _apply_dense(self, grad: Tensor, var: Variable) -> Tensor:
        return apply_adagrad_da(
            var,
            self.get_slot(var, "gradient_accumulator"),
            self.get_slot(var, "gradient_squared_accumulator"),
            grad,
            _hyper(self._learning_rate, var, "learning_rate"),
            _hyper(self._l1, var, "l1_regularization_strength"),
            _hyper(self._l2, var, "l2_regularization_strength"),
            self._global_step_on_worker,
        )
