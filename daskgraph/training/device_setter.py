"""TensorFlow 1's ``tf.train.replica_device_setter``: a device function putting variables on
the parameter-server tasks, round robin in creation order, and every other op on the worker.

It is TensorFlow's ``_ReplicaDeviceChooser`` with TensorFlow's signature: the number of ps
tasks comes from ``cluster`` (a ``ClusterSpec`` or a dict, job ``ps``) or ``ps_tasks``; with
none the setter is ``None`` (no device function, as in TensorFlow). The device an op already
asked for (from inner scopes) is merged in, field by field, unless ``merge_devices=False``.
(:func:`daskgraph.training.replicate.replica_device_setter` is the one-parameter-device variant that
:func:`~daskgraph.training.replicate.replicate` uses.)

>>> import daskgraph as dg
>>> cluster = {"ps": ["ps0:2222", "ps1:2222"], "worker": ["w0:2222", "w1:2222"]}
>>> with dg.Graph().as_default():
...     with dg.device(replica_device_setter(cluster=cluster)):
...         v1, v2, v3 = (dg.Variable(float(i)) for i in range(3))
...         y = v1 + v2
>>> v1.device, v2.device, v3.device, y.device
('/job:ps/task:0', '/job:ps/task:1', '/job:ps/task:0', '/job:worker')
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from daskgraph.framework.device import DeviceSpec
from daskgraph.framework.graph import Operation

__all__ = ["STANDARD_PS_OPS", "replica_device_setter"]

logger = logging.getLogger(__name__)

#: the op types placed on ps tasks by default (TensorFlow's list; daskgraph makes VariableV2)
STANDARD_PS_OPS = (
    "Variable",
    "VariableV2",
    "AutoReloadVariable",
    "MutableHashTable",
    "MutableHashTableV2",
    "MutableHashTableOfTensors",
    "MutableHashTableOfTensorsV2",
    "MutableDenseHashTable",
    "MutableDenseHashTableV2",
    "VarHandleOp",
    "BoostedTreesEnsembleResourceHandleOp",
    "BoostedTreesQuantileStreamResourceHandleOp",
    "ResourceConditionalAccumulator",
    "DecisionTreeResource",
)


class _RoundRobinStrategy:
    """The next ps task for each ps op, cycling over ``num_tasks`` tasks from 0."""

    def __init__(self, num_tasks: int) -> None:
        self._num_tasks = num_tasks
        self._next_task = 0

    def __call__(self, unused_op: Operation) -> int:
        task = self._next_task
        self._next_task = (self._next_task + 1) % self._num_tasks
        return task


class _ReplicaDeviceChooser:
    """TensorFlow's chooser: ps ops on a ps task (its task chosen by the strategy when the ps
    job is not overridden by the op's own request), the rest on the worker device."""

    def __init__(
        self,
        ps_tasks: int,
        ps_device: str,
        worker_device: str,
        merge_devices: bool,
        ps_ops: Sequence[str],
        ps_strategy: Callable[[Operation], int],
    ) -> None:
        self._ps_tasks = ps_tasks
        self._ps_device = ps_device
        self._worker_device = worker_device
        self._merge_devices = merge_devices
        self._ps_ops = frozenset(ps_ops)
        self._ps_strategy = ps_strategy

    def device_function(self, op: Operation) -> str:
        """The device for ``op``."""
        if not self._merge_devices and op.device:
            return op.device
        current = DeviceSpec.from_string(op.device or "")
        if self._ps_tasks and self._ps_device and op.type in self._ps_ops:
            ps = DeviceSpec.from_string(self._ps_device)
            if ps.job and (not current.job or current.job == ps.job):
                ps = ps.replace(task=int(self._ps_strategy(op)))
            return ps.make_merged_spec(current).to_string()
        worker = DeviceSpec.from_string(self._worker_device or "")
        return worker.make_merged_spec(current).to_string()


def replica_device_setter(
    ps_tasks: int = 0,
    ps_device: str = "/job:ps",
    worker_device: str = "/job:worker",
    merge_devices: bool = True,
    cluster: Any = None,
    ps_ops: Sequence[str] | None = None,
    ps_strategy: Callable[[Operation], int] | None = None,
) -> Callable[[Operation], str] | None:
    """A device function for ``device(...)`` placing a replicated training graph
    (``tf.train.replica_device_setter``).

    Parameters
    ----------
    ps_tasks
        The number of ps tasks; ignored when ``cluster`` is given.
    ps_device
        The ps job's device (``""``: no ps job).
    worker_device
        The device of every op that is not a ps op.
    merge_devices
        Merge the device an op already asked for into the chosen one (else an op that asked
        for a device keeps it unchanged).
    cluster
        A ``ClusterSpec`` (anything with ``as_dict()``) or a dict of job name to task
        addresses; the number of ps tasks is the size of ``ps_device``'s job in it.
    ps_ops
        The op types placed on ps tasks (default :data:`STANDARD_PS_OPS`).
    ps_strategy
        A callable from a ps op to its task index (default: round robin over the tasks).

    Returns
    -------
    callable or None
        The device function; ``None`` when there are no ps tasks.

    Raises
    ------
    TypeError
        ``ps_strategy`` is not callable, or ``cluster`` is neither a ClusterSpec nor a dict.
    """
    if cluster is not None:
        jobs = _cluster_dict(cluster)
        ps_job = DeviceSpec.from_string(ps_device).job
        if ps_job not in jobs or jobs[ps_job] is None:
            return None
        ps_tasks = len(jobs[ps_job])
    if ps_tasks == 0:
        return None
    if ps_ops is None:
        ps_ops = list(STANDARD_PS_OPS)
    if not merge_devices:
        logger.warning(
            "DEPRECATION: It is recommended to set merge_devices=true in replica_device_setter"
        )
    if ps_strategy is None:
        ps_strategy = _RoundRobinStrategy(ps_tasks)
    if not callable(ps_strategy):
        raise TypeError("ps_strategy must be callable")
    chooser = _ReplicaDeviceChooser(
        ps_tasks, ps_device, worker_device, merge_devices, ps_ops, ps_strategy
    )
    return chooser.device_function


def _cluster_dict(cluster: Any) -> dict[str, Any]:
    as_dict = getattr(cluster, "as_dict", None)
    if callable(as_dict):
        return dict(as_dict())
    if isinstance(cluster, dict):
        return cluster
    raise TypeError(
        f"replica_device_setter: cluster must be a ClusterSpec or a dict; got {cluster!r}"
    )
