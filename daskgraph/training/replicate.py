"""Data-parallel training: one copy of the model (a tower) per device, parameters on one.

The way TensorFlow 1's multi-GPU CIFAR-10 trainer does it, as functions a hand-written loop
over devices can use (:func:`replica_device_setter`, :func:`average_gradients`), and as one
call, :func:`replicate`, that builds the towers:

- every tower runs ``model_fn`` on its shard of the batch, under a device function that puts
  variables on the parameter device and everything else on the tower's device, sharing the
  variables through ``variable_scope`` reuse;
- **sync**: the towers' gradients are averaged on the parameter device and applied once per
  step (with equal shards, exactly single-device training on the whole batch);
- **async**: each tower applies its own gradients as soon as they are computed, without
  waiting for the others; updates are stateful ops of the parameter device's worker, each
  holding the locks of the variables it updates
  (:meth:`~daskgraph.runtime.worker.worker_state.VariableStore.apply_once`), so none is lost.
  :meth:`Replicas.run_async` runs every tower in its own thread, as TF's async trainers do.

Within one ``Session.run`` the towers' partitions are separate tasks on separate devices, so
they run at the same time.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from daskgraph.framework.device import DeviceSpec
from daskgraph.framework.graph import Operation, Tensor, name_scope
from daskgraph.framework.scopes import device
from daskgraph.ops.array import group
from daskgraph.ops.math import add_n, multiply

__all__ = ["Replicas", "average_gradients", "replica_device_setter", "replicate"]

#: op types that hold parameters: they go to the parameter device
VARIABLE_OP_TYPES = frozenset({"VariableV2", "Variable", "VarHandleOp"})
MODES = ("sync", "async")


def replica_device_setter(
    ps_device: str = "/cpu:0", worker_device: str | None = None
) -> Callable[[Operation], str]:
    """A device function: variables on ``ps_device``, every other op on ``worker_device``
    (TensorFlow's ``tf.train.replica_device_setter`` for one parameter device).

    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     with dg.device(replica_device_setter("/cpu:0", "/gpu:1")):
    ...         v = dg.Variable(1.0, name="v")
    ...         y = v * 2.0
    >>> v.device, y.device
    ('/device:CPU:0', '/device:GPU:1')
    """
    ps = DeviceSpec.from_string(ps_device)
    worker = DeviceSpec.from_string(worker_device) if worker_device else None

    def choose(op: Operation) -> str:
        current = DeviceSpec.from_string(op.device) if op.device else DeviceSpec()
        if op.type in VARIABLE_OP_TYPES:
            return ps.make_merged_spec(current).to_string() if not op.device else op.device
        if worker is None:
            return op.device
        return worker.make_merged_spec(current).to_string()

    return choose


def average_gradients(
    tower_grads: Sequence[Sequence[tuple[Tensor | None, Any]]], device_name: str | None = None
) -> list[tuple[Tensor | None, Any]]:
    """The mean of each variable's gradient over the towers (TensorFlow's CIFAR-10 helper).

    ``tower_grads[i]`` is tower ``i``'s ``compute_gradients`` result, a list of
    ``(gradient, variable)`` pairs in the same variable order for every tower. The means are
    computed on ``device_name`` (the parameter device) when given.

    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     v = dg.Variable(0.0)
    ...     (g, var), = average_gradients([[(dg.constant(1.0), v)], [(dg.constant(3.0), v)]])
    ...     with dg.Session() as sess:
    ...         float(sess.run(g)), var is v
    (2.0, True)
    """
    if not tower_grads:
        raise ValueError("average_gradients needs the gradients of at least one tower")
    averaged = []
    with device(device_name), name_scope("average_gradients"):
        for pairs in zip(*tower_grads, strict=True):
            var = pairs[0][1]
            if any(v is not var for _, v in pairs):
                raise ValueError(
                    "average_gradients: the towers list their variables in different orders; "
                    "build every tower with the same model function and variable scope reuse"
                )
            grads = [g for g, _ in pairs if g is not None]
            if not grads:
                averaged.append((None, var))
                continue
            total = grads[0] if len(grads) == 1 else add_n(grads)
            averaged.append((multiply(total, 1.0 / len(grads)), var))
    return averaged


@dataclass
class Replicas:
    """The towers :func:`replicate` built, and how to run them.

    Attributes
    ----------
    train_op
        sync: the one update of a step; async: all towers' updates, each applied as soon as
        its tower is done (one ``Session.run`` of it is one step of every tower).
    tower_train_ops
        The update of each tower (async), or ``[train_op]`` (sync).
    loss
        The mean of the towers' losses.
    tower_losses
        Each tower's loss on its shard.
    """

    mode: str
    devices: list[str]
    train_op: Operation
    tower_train_ops: list[Operation]
    loss: Tensor
    tower_losses: list[Tensor]
    grads_and_vars: list[list[tuple[Tensor | None, Any]]] = field(repr=False)

    def run_async(
        self,
        session: Any,
        steps: int,
        feed_fn: Callable[[int, int], Mapping[Any, Any] | None] | None = None,
        on_step: Callable[[int, int, float], None] | None = None,
    ) -> list[int]:
        """Train asynchronously: one thread per tower runs its own update ``steps`` times,
        none waiting for the others; ``feed_fn(tower, step)`` gives each run's feeds and
        ``on_step(tower, step, loss)`` hears of each step. Returns the steps each tower ran.
        The first failure of any tower stops the others and is raised."""
        if self.mode != "async":
            raise ValueError("run_async is for replicate(..., mode='async')")
        done = [0] * len(self.tower_train_ops)
        failures: list[BaseException] = []
        stop = threading.Event()

        def tower(i: int) -> None:
            try:
                for step in range(steps):
                    if stop.is_set():
                        return
                    feeds = feed_fn(i, step) if feed_fn is not None else None
                    _, loss = session.run([self.tower_train_ops[i], self.tower_losses[i]], feeds)
                    done[i] += 1
                    if on_step is not None:
                        on_step(i, step, float(loss))
            except BaseException as exc:  # raised in the caller's thread below
                failures.append(exc)
                stop.set()

        threads = [threading.Thread(target=tower, args=(i,), name=f"tower-{i}")
                   for i in range(len(self.tower_train_ops))]  # fmt: skip
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if failures:
            raise failures[0]
        return done


def replicate(
    model_fn: Callable[..., Tensor],
    devices: Sequence[str],
    mode: str = "sync",
    parameter_device: str = "/cpu:0",
    *,
    inputs: Sequence[Tensor] = (),
    optimizer: Any,
    global_step: Any = None,
    name: str = "tower",
) -> Replicas:
    """Build one tower of ``model_fn`` per device, training shared parameters.

    Parameters
    ----------
    model_fn
        ``model_fn(*shards) -> loss``: builds one tower's model and scalar loss from its
        shard of ``inputs``, with its variables made by ``get_variable`` (shared by the
        towers through reuse).
    devices
        One device per tower (``["/gpu:0", "/gpu:1"]``).
    mode
        ``"sync"`` (gradients averaged, one update a step) or ``"async"`` (each tower
        updates on its own).
    parameter_device
        Where the variables, their updates and the averaging live.
    inputs
        Batch tensors, split evenly along their first axis into one shard per tower (on the
        parameter device). Make fed placeholders there too (``with dg.device("/cpu:0")``):
        an op with no device request goes to the first GPU, and every tower would then wait
        for its shard from that GPU.
    optimizer
        An optimizer (``compute_gradients``/``apply_gradients``), e.g.
        ``dg.train.GradientDescentOptimizer(0.1)``.
    global_step
        Incremented once per update (sync: once a step; async: once per tower step).
    """
    if mode not in MODES:
        raise ValueError(f"replicate: mode must be 'sync' or 'async'; got {mode!r}")
    devices = list(devices)
    if not devices:
        raise ValueError("replicate: devices must name at least one device")
    shards = _shard(inputs, len(devices), parameter_device)
    losses, tower_grads = _build_towers(model_fn, devices, parameter_device, shards, optimizer,
                                        name)  # fmt: skip
    with device(parameter_device):
        loss = multiply(add_n(losses) if len(losses) > 1 else losses[0], 1.0 / len(losses))
        if mode == "sync":
            averaged = average_gradients(tower_grads, parameter_device)
            train_op = optimizer.apply_gradients(averaged, global_step=global_step)
            tower_ops = [train_op]
        else:
            tower_ops = [
                optimizer.apply_gradients(grads, global_step=global_step) for grads in tower_grads
            ]
            train_op = group(*tower_ops, name="async_train")
    return Replicas(mode, devices, train_op, tower_ops, loss, losses, tower_grads)


def _shard(inputs: Sequence[Tensor], n: int, parameter_device: str) -> list[list[Tensor]]:
    """Each input split into ``n`` equal shards along axis 0 (on the parameter device)."""
    from daskgraph.ops import split  # the slicing ops

    per_input = []
    with device(parameter_device), name_scope("shards"):
        for x in inputs:
            rows = x.shape[0] if x.shape else None
            if rows is not None and rows % n:
                raise ValueError(
                    f"replicate: {x.name!r} has {rows} rows, which do not split evenly into "
                    f"{n} towers; use a batch size that is a multiple of {n}"
                )
            per_input.append(split(x, n, axis=0) if n > 1 else [x])
    return [[pieces[i] for pieces in per_input] for i in range(n)]


def _build_towers(
    model_fn: Callable[..., Tensor],
    devices: list[str],
    parameter_device: str,
    shards: list[list[Tensor]],
    optimizer: Any,
    name: str,
) -> tuple[list[Tensor], list[list[tuple[Tensor | None, Any]]]]:
    from daskgraph.ops.variable_scope import get_variable_scope, variable_scope

    losses, tower_grads = [], []
    with variable_scope(get_variable_scope()):
        for i, dev in enumerate(devices):
            with (
                device(replica_device_setter(parameter_device, dev)),
                name_scope(f"{name}_{i}"),
            ):
                loss = model_fn(*shards[i])
                get_variable_scope().reuse_variables()
                grads = optimizer.compute_gradients(loss)
            losses.append(loss)
            tower_grads.append(grads)
    return losses, tower_grads
