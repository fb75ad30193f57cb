"""TensorFlow 1's ``tf.train.SyncReplicasOptimizer``, for replicas that run in one graph.

In TensorFlow each worker process builds its own graph and calls ``apply_gradients`` once;
its gradients go to accumulators shared through the parameter servers, and the chief's queue
runner applies their mean once ``replicas_to_aggregate`` have arrived, handing out tokens that
keep the workers in step. In daskgraph every replica runs in the one graph and session of the
cluster (see :mod:`daskgraph.training.replicate`), so a step is one ``Session.run`` and nothing has
to
wait across processes: each ``apply_gradients`` call is one replica, and the calls are taken
in groups of ``max(total_num_replicas, replicas_to_aggregate)`` (TensorFlow's tokens per
step). The call that completes a group builds the group's update: the mean of the group's
gradients (per variable, over the calls that have one), applied once by the wrapped optimizer,
which adds one to the global step; then ``variable_averages`` when given. That call's train op
runs it; the others' only compute their replica's gradients. So with one worker
(``replicas_to_aggregate=1``) every run of the train op is one update, and with N towers built
with it (``replicas_to_aggregate=N``) a run of their train ops together is one synchronous
update of their mean gradient, exactly single-device training on the whole batch.

There are no token queues: :meth:`~SyncReplicasOptimizer.get_init_tokens_op` is a no-op and
the chief's queue runner starts no thread; the session-run hook runs the local init op as
TensorFlow's does. A group left incomplete (fewer calls than a step needs, as a program written
for several worker processes run as one) is refused where the program asks for the hook, the
queue runner or the init tokens.

>>> import daskgraph as dg
>>> with dg.Graph().as_default():
...     w = dg.Variable([1.0, 2.0], name="w")
...     step = dg.train.get_or_create_global_step()
...     opt = SyncReplicasOptimizer(dg.train.GradientDescentOptimizer(0.5), 2)
...     trains = [opt.minimize(dg.reduce_sum(w * w) * s, global_step=step) for s in (1.0, 3.0)]
...     with dg.Session() as sess:
...         _ = sess.run([dg.global_variables_initializer(), dg.local_variables_initializer()])
...         sess.run(opt.chief_init_op)
...         _ = sess.run(trains)  # the mean gradient 2 * w * (1 + 3) / 2
...         sess.run(w).tolist(), int(sess.run(step))
([-1.0, -2.0], 1)
"""

from __future__ import annotations

import logging
from typing import Any

from daskgraph.framework import scopes
from daskgraph.framework.graph import Operation, Tensor, get_default_graph
from daskgraph.ops.array import group, identity
from daskgraph.ops.math import add_n, multiply
from daskgraph.ops.state import Variable, assign, global_variables
from daskgraph.ops.variable_scope import new_variable
from daskgraph.ops.variable_status import LOCAL_VARIABLES, report_uninitialized_variables
from daskgraph.training.optimizers import Optimizer
from daskgraph.training.session_hooks import SessionRunHook
from daskgraph.training.session_manager import _ready

__all__ = ["SyncReplicasOptimizer"]

logger = logging.getLogger("tensorflow")


class SyncReplicasOptimizer(Optimizer):
    """Averages the gradients of ``replicas_to_aggregate`` replicas and applies them once
    per step with ``opt`` (see the module's description for how replicas map to calls).

    Parameters
    ----------
    opt
        The optimizer that applies the mean gradients (any daskgraph optimizer).
    replicas_to_aggregate
        How many replicas' gradients make a step.
    total_num_replicas
        How many replicas there are (default: ``replicas_to_aggregate``).
    variable_averages, variables_to_average
        An ``ExponentialMovingAverage`` applied to ``variables_to_average`` after each
        update.
    """

    def __init__(
        self,
        opt: Any,
        replicas_to_aggregate: int,
        total_num_replicas: int | None = None,
        variable_averages: Any = None,
        variables_to_average: Any = None,
        use_locking: bool = False,
        name: str = "sync_replicas",
    ) -> None:
        if total_num_replicas is None:
            total_num_replicas = replicas_to_aggregate
        super().__init__(use_locking, name)
        logger.info(
            "SyncReplicasV2: replicas_to_aggregate=%s; total_num_replicas=%s",
            replicas_to_aggregate,
            total_num_replicas,
        )
        self._opt = opt
        self._replicas_to_aggregate = replicas_to_aggregate
        self._total_num_replicas = total_num_replicas
        self._tokens_per_step = max(total_num_replicas, replicas_to_aggregate)
        self._variable_averages = variable_averages
        self._variables_to_average = variables_to_average
        self._gradients_applied = False
        self._global_step: Any = None
        self._calls: list[list[tuple[Tensor | None, Variable]]] = []  # the open group's
        self._local_steps: list[Variable] = []
        self._local_step_inits: list[Tensor] = []
        self._updates = 0
        self._init_op: tuple[int, Operation] | None = None
        self.ready_for_local_init_op: Tensor | None = None

    # -- what TensorFlow's delegates ----------------------------------------------------------
    def compute_gradients(self, *args: Any, **kwargs: Any) -> Any:
        """The wrapped optimizer's ``compute_gradients``."""
        return self._opt.compute_gradients(*args, **kwargs)

    def get_slot(self, *args: Any, **kwargs: Any) -> Any:
        """The wrapped optimizer's slot."""
        return self._opt.get_slot(*args, **kwargs)

    def get_slot_names(self, *args: Any, **kwargs: Any) -> list[str]:
        """The wrapped optimizer's slot names."""
        return self._opt.get_slot_names(*args, **kwargs)

    def variables(self) -> list[Variable]:
        """The wrapped optimizer's variables."""
        return self._opt.variables()

    # -- one replica's gradients --------------------------------------------------------------
    def apply_gradients(
        self, grads_and_vars: Any, global_step: Any = None, name: str | None = None
    ) -> Tensor:
        """Add one replica's gradients; the call completing a step's replicas also applies
        their mean. Returns the replica's train op (its local step, a Tensor, as TF's)."""
        pairs = list(grads_and_vars or [])
        if not pairs:
            raise ValueError("Must supply at least one variable")
        if global_step is None:
            raise ValueError("Global step is required to check staleness")
        self._global_step = global_step
        self._calls.append(pairs)
        # the replica's device scope does not apply: these ops go with the global step and
        # the variables (TensorFlow's colocate_with ignores device scopes)
        with scopes.device(None):
            local_step = self._make_local_step(global_step)
            if len(self._calls) < self._tokens_per_step:
                with scopes.control_dependencies([g.op for g, _ in pairs if g is not None]):
                    train_op = identity(local_step.value(), name=name)
            else:
                train_op = self._update_and_steps(global_step, local_step, name)
            self.ready_for_local_init_op = report_uninitialized_variables(global_variables())
        self._gradients_applied = True
        return train_op

    def _update_and_steps(self, global_step: Any, local_step: Variable, name: Any) -> Tensor:
        """The group's update, then every replica's local step set to the new global step;
        the last replica's is its train op."""
        update = self._apply_mean(global_step)
        with scopes.control_dependencies([update]), scopes.colocate_with(global_step):
            step = _read(global_step)  # after the update's increment
            others = [assign(s, step) for s in self._local_steps[:-1]]
        with scopes.control_dependencies([t.op for t in others]):
            return assign(local_step, step, name=name)

    def _make_local_step(self, global_step: Any) -> Variable:
        """The replica's ``sync_rep_local_step`` (a local variable), and its init op."""
        with scopes.colocate_with(global_step):
            local_step = new_variable(
                "sync_rep_local_step",
                dtype=global_step.dtype,
                initializer=0,
                trainable=False,
                collections=[LOCAL_VARIABLES],
            )
            self._local_step_inits.append(assign(local_step, global_step))
        self._local_steps.append(local_step)
        return local_step

    def _apply_mean(self, global_step: Any) -> Operation:
        """The update of the completed group: the mean gradients applied by the wrapped
        optimizer (then the moving averages); the next call opens a new group."""
        calls, self._calls = self._calls, []
        by_var: dict[Variable, list[Tensor]] = {}
        for pairs in calls:
            for grad, var in pairs:
                grads = by_var.setdefault(var, [])
                if grad is not None:
                    grads.append(grad)
        graph = get_default_graph()
        mean = []
        with graph.name_scope(self._name):
            for var, grads in by_var.items():
                mean.append((_mean(grads, var), var))
        update = self._opt.apply_gradients(mean, global_step=global_step)
        if self._variable_averages is not None:
            if self._updates:
                raise ValueError(
                    "SyncReplicasOptimizer: variable_averages are applied by one update; this "
                    "optimizer was given more replicas than one step takes"
                )
            with scopes.control_dependencies([update]):
                update = self._variable_averages.apply(self._variables_to_average)
        self._updates += 1
        return update

    # -- the chief's and the workers' setup ---------------------------------------------------
    @property
    def local_step_init_op(self) -> Operation:
        """Sets every replica's local step to the global step (a worker's local init op)."""
        return self._init_group("local_step_init_op")

    @property
    def chief_init_op(self) -> Operation:
        """The chief's local init op: as :attr:`local_step_init_op` (there are no
        accumulators to set up)."""
        return self._init_group("chief_init_op")

    def _init_group(self, what: str) -> Operation:
        """One op grouping the local steps' init ops, made again only when replicas came."""
        if not self._gradients_applied:
            raise AttributeError(f"{what} is made by apply_gradients(); call it first")
        made = self._init_op
        if made is None or made[0] != len(self._local_step_inits):
            made = (len(self._local_step_inits), group(*self._local_step_inits))
            self._init_op = made
        return made[1]

    def get_chief_queue_runner(self) -> _NoQueueRunner:
        """The chief's queue runner: daskgraph needs none (a step's update runs in the step),
        so its ``create_threads`` starts nothing."""
        if not self._gradients_applied:
            raise ValueError("Should be called after apply_gradients().")
        self._check_complete()
        return _NoQueueRunner(f"{self._name}/sync_token_q")

    def get_init_tokens_op(self, num_tokens: int = -1) -> Operation:
        """A no-op (no token queue), with TensorFlow's check of ``num_tokens``."""
        if not self._gradients_applied:
            raise ValueError("get_init_tokens_op() should be called after apply_gradients().")
        self._check_complete()
        tokens_needed = self._replicas_to_aggregate - self._total_num_replicas
        if num_tokens != -1 and num_tokens < tokens_needed:
            raise ValueError(
                f"Too few tokens to finish the first step: {num_tokens} (given) vs "
                f"{tokens_needed} (needed)"
            )
        return get_default_graph().create_op("NoOp", [], dtype=None, name="no_init_tokens")

    def make_session_run_hook(self, is_chief: bool, num_tokens: int = -1) -> SessionRunHook:
        """A hook that runs the local init op when the session is made (TensorFlow's hook)."""
        return _SyncReplicasOptimizerHook(self, is_chief, num_tokens)

    def _check_complete(self) -> None:
        """Refuse a group whose replicas were not all built: its update would never run."""
        if self._calls:
            raise ValueError(
                f"SyncReplicasOptimizer: a step takes the gradients of "
                f"{self._tokens_per_step} replicas (replicas_to_aggregate="
                f"{self._replicas_to_aggregate}, total_num_replicas="
                f"{self._total_num_replicas}) but {len(self._calls)} apply_gradients call(s) "
                "are waiting for the others. In daskgraph every replica is built in the one "
                "graph (one apply_gradients call each, e.g. a tower per device) and their "
                "train ops run together; with a single replica use replicas_to_aggregate=1."
            )


def _read(value: Any) -> Tensor:
    """A new read of ``value`` (a variable), made under the control dependencies in force."""
    read_value = getattr(value, "read_value", None)
    return read_value() if callable(read_value) else identity(value)


def _mean(grads: list[Tensor], var: Variable) -> Tensor:
    """The mean of one variable's gradients, next to the variable."""
    if not grads:
        raise ValueError(f"SyncReplicasOptimizer: no replica has a gradient for {var.op.name}")
    with scopes.colocate_with(var):
        total = grads[0] if len(grads) == 1 else add_n(grads)
        return total if len(grads) == 1 else multiply(total, 1.0 / len(grads))


class _NoQueueRunner:
    """Stands for TensorFlow's chief queue runner: no thread to start."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.queue = None
        self.enqueue_ops: list[Any] = []

    def create_threads(
        self, sess: Any, coord: Any = None, daemon: bool = False, start: bool = False
    ) -> list[Any]:
        """No threads: daskgraph applies each step's update in the step."""
        return []


class _SyncReplicasOptimizerHook(SessionRunHook):
    """Runs the optimizer's local init op once the model is ready (TensorFlow's hook)."""

    def __init__(self, sync_optimizer: SyncReplicasOptimizer, is_chief: bool, num_tokens: int):
        self._sync_optimizer = sync_optimizer
        self._is_chief = is_chief
        self._num_tokens = num_tokens

    def begin(self) -> None:
        """Take the init ops (the graph may still grow)."""
        opt = self._sync_optimizer
        if not opt._gradients_applied:
            raise ValueError(
                "SyncReplicasOptimizer.apply_gradient should be called before using the hook."
            )
        opt._check_complete()
        self._local_init_op = opt.chief_init_op if self._is_chief else opt.local_step_init_op
        self._ready_for_local_init_op = opt.ready_for_local_init_op
        self._init_tokens_op = opt.get_init_tokens_op(self._num_tokens) if self._is_chief else None

    def after_create_session(self, session: Any, coord: Any) -> None:
        """Run the local init op once the global variables are initialized."""
        ready, message = _ready(self._ready_for_local_init_op, session)
        if not ready:
            raise RuntimeError(
                "Init operations did not make model ready for SyncReplicasOptimizer local_init. "
                f"Init op: {self._local_init_op.name}, error: {message}"
            )
        session.run(self._local_init_op)
        if self._init_tokens_op is not None:
            session.run(self._init_tokens_op)
