"""Optimizers: TensorFlow 1's ``tf.train.*Optimizer``, from gradients to in-place updates.

``minimize(loss)`` is ``compute_gradients`` (with :func:`daskgraph.ops.gradients.gradients`)
followed by ``apply_gradients``, which adds, per variable and colocated with it, one update
op of :mod:`daskgraph.ops.training` (``ApplyGradientDescent``, ``ApplyMomentum``,
``ApplyAdam``), then, once every update has run, adds one to the global step. Slot variables
(momentum accumulators, Adam's moments) are made once per variable, zero-initialized, next to
it (``<var>/Momentum``, ``<var>/Adam``, ``<var>/Adam_1``), not trainable and in
``GLOBAL_VARIABLES``, so ``global_variables_initializer()`` initializes them.

>>> import daskgraph as dg
>>> with dg.Graph().as_default():
...     w = dg.Variable(3.0, name="w")
...     step = dg.train.get_or_create_global_step()
...     train = GradientDescentOptimizer(0.25).minimize(w * w, global_step=step)
...     with dg.Session() as sess:
...         sess.run(dg.global_variables_initializer())
...         for _ in range(2):
...             sess.run(train)
...         float(sess.run(w)), int(sess.run(step)), train.name
(0.75, 2, 'GradientDescent')
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from daskgraph.framework import scopes
from daskgraph.framework.graph import TRAIN_OP, Graph, Operation, Tensor
from daskgraph.ops.array import cast, constant, convert_to_tensor, identity
from daskgraph.ops.gradients import gradients
from daskgraph.ops.initializers import zeros_initializer
from daskgraph.ops.state import Variable, trainable_variables
from daskgraph.ops.training import apply_adam, apply_gradient_descent, apply_momentum
from daskgraph.ops.variable_scope import new_variable

__all__ = [
    "AdamOptimizer",
    "GradientDescentOptimizer",
    "MomentumOptimizer",
    "Optimizer",
]

GradsAndVars = list[tuple[Tensor | None, Variable]]


class Optimizer:
    """The base of optimizers: subclasses define how one variable is updated.

    Subclasses implement ``_apply_dense(grad, var)`` (the update op, built under
    ``colocate_with(var)``), and may implement ``_create_slots(var_list)``,
    ``_prepare()`` and ``_finish(update_ops, name)``, as in TensorFlow.
    """

    GATE_NONE = 0
    GATE_OP = 1
    GATE_GRAPH = 2

    def __init__(self, use_locking: bool, name: str) -> None:
        if not name:
            raise ValueError("Must specify the optimizer name")
        self._use_locking = use_locking  # updates are always serialized per variable store
        self._name = name
        self._slots: dict[str, dict[Variable, Variable]] = {}
        self._non_slots: dict[tuple[str, Graph], Variable] = {}

    def get_name(self) -> str:
        """The optimizer's name (the name scope of its ops)."""
        return self._name

    # -- the public steps ---------------------------------------------------------------------
    def compute_gradients(
        self,
        loss: Any,
        var_list: Iterable[Variable] | None = None,
        gate_gradients: int = GATE_OP,
        aggregation_method: Any = None,
        colocate_gradients_with_ops: bool = False,
        grad_loss: Any = None,
    ) -> GradsAndVars:
        """The gradients of ``loss`` with respect to ``var_list`` (default: the trainable
        variables), as ``[(gradient or None, variable), ...]``."""
        loss = convert_to_tensor(loss)
        if not loss.dtype.is_floating:
            raise ValueError(
                f"Invalid type {loss.dtype.name} for {loss.name}, expected a float type"
            )
        if gate_gradients not in (self.GATE_NONE, self.GATE_OP, self.GATE_GRAPH):
            raise ValueError(
                f"gate_gradients must be one of: Optimizer.GATE_NONE, Optimizer.GATE_OP, "
                f"Optimizer.GATE_GRAPH. Not {gate_gradients}"
            )
        variables = list(trainable_variables(loss.graph) if var_list is None else var_list)
        if not variables:
            raise ValueError("No variables to optimize.")
        for var in variables:
            _check_variable(var)
        grads = gradients(
            loss,
            variables,
            grad_ys=grad_loss,
            colocate_gradients_with_ops=colocate_gradients_with_ops,
        )
        if gate_gradients == self.GATE_GRAPH:
            grads = _gated(grads)
        return list(zip(grads, variables, strict=True))

    def apply_gradients(
        self,
        grads_and_vars: Iterable[tuple[Any, Variable]],
        global_step: Variable | None = None,
        name: str | None = None,
    ) -> Operation:
        """An op that applies every gradient to its variable, then adds one to
        ``global_step`` (when given). Named ``name`` (default: the optimizer's name)."""
        pairs = _checked_pairs(grads_and_vars)
        var_list = [v for g, v in pairs if g is not None]
        if not var_list:
            raise ValueError(
                "No gradients provided for any variable: "
                f"{[(None if g is None else g.name, v.op.name) for g, v in pairs]}."
            )
        graph = var_list[0].graph
        self._create_slots(var_list)
        with graph.name_scope(name or self._name) as scope:
            self._prepare()
            update_ops = []
            for grad, var in pairs:
                if grad is None:
                    continue
                with graph.name_scope(f"update_{var.op.name}"), scopes.colocate_with(var):
                    update_ops.append(_as_op(self._apply_dense(grad, var)))
            if global_step is None:
                train_op = self._finish(update_ops, scope)
            else:
                finished = self._finish(update_ops, "update")
                train_op = _increment(global_step, finished, scope)
        if train_op not in graph.get_collection(TRAIN_OP):
            graph.add_to_collection(TRAIN_OP, train_op)
        return train_op

    def minimize(
        self,
        loss: Any,
        global_step: Variable | None = None,
        var_list: Iterable[Variable] | None = None,
        gate_gradients: int = GATE_OP,
        aggregation_method: Any = None,
        colocate_gradients_with_ops: bool = False,
        name: str | None = None,
        grad_loss: Any = None,
    ) -> Operation:
        """``apply_gradients(compute_gradients(loss, var_list), global_step)``."""
        pairs = self.compute_gradients(
            loss,
            var_list=var_list,
            gate_gradients=gate_gradients,
            colocate_gradients_with_ops=colocate_gradients_with_ops,
            grad_loss=grad_loss,
        )
        if all(g is None for g, _ in pairs):
            raise ValueError(
                "No gradients provided for any variable, check your graph for ops that do not "
                f"support gradients, between variables {[v.op.name for _, v in pairs]} and "
                f"loss {convert_to_tensor(loss).name}."
            )
        return self.apply_gradients(pairs, global_step=global_step, name=name)

    # -- slots --------------------------------------------------------------------------------
    def get_slot_names(self) -> list[str]:
        """The names of the slots this optimizer makes (``["momentum"]``, ``["m", "v"]``)."""
        return sorted(self._slots)

    def get_slot(self, var: Variable, name: str) -> Variable | None:
        """The slot variable ``name`` of ``var``, or None."""
        return self._slots.get(name, {}).get(var)

    def variables(self) -> list[Variable]:
        """The variables the optimizer made (slots and others like Adam's beta powers)."""
        made = [v for slots in self._slots.values() for v in slots.values()]
        made += list(self._non_slots.values())
        return sorted(made, key=lambda v: v.op.name)

    def _zeros_slot(self, var: Variable, slot_name: str, op_name: str) -> Variable:
        """The slot ``slot_name`` of ``var``: a zero variable ``<var>/<op_name>`` made once,
        colocated with ``var``."""
        slots = self._slots.setdefault(slot_name, {})
        slot = slots.get(var)
        if slot is None:
            with scopes.colocate_with(var):
                slot = new_variable(
                    f"{var.op.name}/{op_name}",
                    shape=_full_shape(var),
                    dtype=var.dtype,
                    initializer=zeros_initializer(),
                    trainable=False,
                )
            slots[var] = slot
        return slot

    def _non_slot(self, name: str, initial_value: Any, colocate: Variable) -> Variable:
        """A variable of the optimizer itself (not per variable), made once per graph and
        colocated with ``colocate``."""
        key = (name, colocate.graph)
        found = self._non_slots.get(key)
        if found is None:
            with scopes.colocate_with(colocate):
                found = new_variable(name, initializer=initial_value, trainable=False)
            self._non_slots[key] = found
        return found

    # -- what subclasses define ---------------------------------------------------------------
    def _create_slots(self, var_list: list[Variable]) -> None:
        """Make the slot variables of ``var_list`` (none by default)."""

    def _prepare(self) -> None:
        """Prepare the hyperparameters before the updates are built (nothing by default)."""

    def _apply_dense(self, grad: Tensor, var: Variable) -> Any:
        raise NotImplementedError(f"{type(self).__name__} does not define _apply_dense")

    def _finish(self, update_ops: list[Operation], name: str) -> Operation:
        """The op that groups the updates, named ``name``."""
        return _group(update_ops, name)


# -- helpers shared by the optimizers -------------------------------------------------------------
def _check_variable(var: Any) -> None:
    if not isinstance(var, Variable):
        raise TypeError(f"Optimizers update Variables; got {var!r}")
    if not var.dtype.is_floating:
        raise ValueError(
            f"Invalid type {var.dtype.name} for variable {var.op.name!r}, expected a float type"
        )


def _checked_pairs(grads_and_vars: Iterable[tuple[Any, Variable]]) -> GradsAndVars:
    pairs: GradsAndVars = []
    for pair in grads_and_vars:
        try:
            grad, var = pair
        except (TypeError, ValueError):
            raise TypeError(
                f"grads_and_vars must be (gradient, variable) pairs; got {pair!r}"
            ) from None
        _check_variable(var)
        pairs.append((None if grad is None else convert_to_tensor(grad), var))
    if not pairs:
        raise ValueError("No variables provided.")
    return pairs


def _gated(grads: list[Tensor | None]) -> list[Tensor | None]:
    """``GATE_GRAPH``: every gradient is computed before any is used."""
    done = [g.op for g in grads if g is not None]
    with scopes.control_dependencies(done):
        return [None if g is None else identity(g) for g in grads]


def _full_shape(var: Variable) -> tuple:
    if var.shape is None or None in var.shape:
        raise ValueError(
            f"The slot variables of {var.op.name!r} need its shape fully defined; it is {var.shape}"
        )
    return var.shape


def _as_op(value: Any) -> Operation:
    return value if isinstance(value, Operation) else value.op


def _exact_name(scope: str) -> str:
    """The op name that a name scope string (``"GradientDescent/"``) stands for."""
    return scope.rstrip("/")


def _group(ops: list[Operation], name: str) -> Operation:
    """A NoOp that runs after ``ops``; named exactly ``name`` when it is a scope string."""
    graph = ops[0].graph
    if name.endswith("/"):
        return graph.create_op("NoOp", [], dtype=None, control_inputs=ops, exact_name=name[:-1])
    return graph.create_op("NoOp", [], dtype=None, control_inputs=ops, name=name)


def _increment(global_step: Any, after: Operation, scope: str) -> Operation:
    """``global_step += 1`` once ``after`` has run, colocated with the global step; the op
    takes the name of the scope ``scope`` (``GradientDescent``), as in TensorFlow."""
    if not isinstance(global_step, Variable):
        raise TypeError(f"global_step must be a Variable; got {global_step!r}")
    ref = global_step._ref()
    with scopes.control_dependencies([after]), scopes.colocate_with(global_step):
        one = constant(1, dtype=global_step.dtype, name="one")
        op = ref.graph.create_op(
            "AssignAdd",
            [ref, one],
            dtype=ref.dtype,
            shape=ref.shape,
            colocate_with=ref.op,
            exact_name=_exact_name(scope),
        )
    return op


def _hyper(value: Any, var: Variable, name: str) -> Tensor:
    """A hyperparameter (float, tensor or callable) as a tensor of ``var``'s dtype, made in
    the update's ``colocate_with(var)`` block, so on ``var``'s device."""
    if callable(value) and not isinstance(value, (Tensor, Variable)):
        value = value()
    if isinstance(value, (Tensor, Variable)):
        tensor = convert_to_tensor(value)
        return tensor if tensor.dtype == var.dtype else cast(tensor, var.dtype)
    return constant(value, dtype=var.dtype, name=name)


class GradientDescentOptimizer(Optimizer):
    """Plain gradient descent: ``var -= learning_rate * grad``.

    Parameters
    ----------
    learning_rate
        A float, a scalar tensor, or a callable returning one.
    """

    def __init__(
        self, learning_rate: Any, use_locking: bool = False, name: str = "GradientDescent"
    ) -> None:
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate

    def _apply_dense(self, grad: Tensor, var: Variable) -> Tensor:
        lr = _hyper(self._learning_rate, var, "learning_rate")
        return apply_gradient_descent(var, lr, grad)


class MomentumOptimizer(Optimizer):
    """Momentum: ``accum = accum * momentum + grad; var -= learning_rate * accum``.

    With ``use_nesterov``, ``var -= learning_rate * (grad + momentum * accum)``. The slot
    ``"momentum"`` is the variable ``<var>/Momentum``.
    """

    def __init__(
        self,
        learning_rate: Any,
        momentum: Any,
        use_locking: bool = False,
        name: str = "Momentum",
        use_nesterov: bool = False,
    ) -> None:
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._momentum = momentum
        self._use_nesterov = use_nesterov

    def _create_slots(self, var_list: list[Variable]) -> None:
        for var in var_list:
            self._zeros_slot(var, "momentum", self._name)

    def _apply_dense(self, grad: Tensor, var: Variable) -> Tensor:
        return apply_momentum(
            var,
            self.get_slot(var, "momentum"),
            _hyper(self._learning_rate, var, "learning_rate"),
            grad,
            _hyper(self._momentum, var, "momentum"),
            use_nesterov=self._use_nesterov,
        )


class AdamOptimizer(Optimizer):
    """Adam (Kingma and Ba), with TensorFlow's formulas::

        lr_t = learning_rate * sqrt(1 - beta2^t) / (1 - beta1^t)
        m = beta1 * m + (1 - beta1) * grad
        v = beta2 * v + (1 - beta2) * grad^2
        var -= lr_t * m / (sqrt(v) + epsilon)

    ``beta1^t`` and ``beta2^t`` are the non-trainable variables ``beta1_power`` and
    ``beta2_power``, colocated with the first variable (by name) and multiplied by ``beta1``
    and ``beta2`` after each step's updates. The slots ``"m"`` and ``"v"`` are the variables
    ``<var>/Adam`` and ``<var>/Adam_1``.
    """

    def __init__(
        self,
        learning_rate: Any = 0.001,
        beta1: float = 0.9,
        beta2: float = 0.999,
        epsilon: float = 1e-8,
        use_locking: bool = False,
        name: str = "Adam",
    ) -> None:
        super().__init__(use_locking, name)
        self._lr = learning_rate
        self._beta1 = beta1
        self._beta2 = beta2
        self._epsilon = epsilon

    def _create_slots(self, var_list: list[Variable]) -> None:
        first = min(var_list, key=lambda v: v.op.name)
        self._non_slot("beta1_power", _float(self._beta1, "beta1"), first)
        self._non_slot("beta2_power", _float(self._beta2, "beta2"), first)
        for var in var_list:
            self._zeros_slot(var, "m", self._name)
            self._zeros_slot(var, "v", self._name)

    def _beta_powers(self, graph: Graph) -> tuple[Variable, Variable]:
        return self._non_slots[("beta1_power", graph)], self._non_slots[("beta2_power", graph)]

    def _apply_dense(self, grad: Tensor, var: Variable) -> Tensor:
        beta1_power, beta2_power = self._beta_powers(var.graph)
        return apply_adam(
            var,
            self.get_slot(var, "m"),
            self.get_slot(var, "v"),
            _hyper(beta1_power, var, "beta1_power"),
            _hyper(beta2_power, var, "beta2_power"),
            _hyper(self._lr, var, "learning_rate"),
            _hyper(self._beta1, var, "beta1"),
            _hyper(self._beta2, var, "beta2"),
            _hyper(self._epsilon, var, "epsilon"),
            grad,
        )

    def _finish(self, update_ops: list[Operation], name: str) -> Operation:
        beta1_power, beta2_power = self._beta_powers(update_ops[0].graph)
        with scopes.control_dependencies(update_ops), scopes.colocate_with(beta1_power):
            updated = [
                power.assign(power * _hyper(beta, power, f"beta{i}"))
                for i, (power, beta) in enumerate(
                    ((beta1_power, self._beta1), (beta2_power, self._beta2)), start=1
                )
            ]
        return _group([*update_ops, *(t.op for t in updated)], name)


def _float(value: Any, what: str) -> Any:
    """A Python float hyperparameter, or the tensor given."""
    if isinstance(value, (Tensor, Variable)):
        return value
    try:
        return float(value)
    except (TypeError, ValueError):
        raise TypeError(
            f"AdamOptimizer: {what} must be a float or a tensor; got {value!r}"
        ) from None
