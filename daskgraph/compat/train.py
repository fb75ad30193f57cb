"""``tf.train``'s names: ``ClusterSpec`` and ``Server`` (from :mod:`daskgraph.compat.server_lib`),
the protocol buffers ``ClusterDef``, ``JobDef`` and ``ServerDef``, and the training names of
:mod:`daskgraph.training.namespace` (optimizers, ``Saver``, the global step)."""

from typing import Any

from daskgraph.compat.protos import ClusterDef, JobDef, ServerDef, is_message  # noqa: F401
from daskgraph.compat.server_lib import ClusterSpec, Server  # noqa: F401 - in __all__
from daskgraph.training import device_setter as _device_setter
from daskgraph.training import namespace as _train
from daskgraph.training.namespace import *  # noqa: F403 - dg.train's names are tf.train's
from daskgraph.training.queue_runner import QueueRunner, add_queue_runner  # noqa: F401 - in __all__


def replica_device_setter(
    ps_tasks: int = 0,
    ps_device: str = "/job:ps",
    worker_device: str = "/job:worker",
    merge_devices: bool = True,
    cluster: Any = None,
    ps_ops: Any = None,
    ps_strategy: Any = None,
) -> Any:
    """TF's ``replica_device_setter`` (round robin over the ps tasks, see
    :func:`daskgraph.training.device_setter.replica_device_setter`), not dg.train's one-device one;
    ``cluster`` may also be a ``ClusterDef`` protocol buffer, as in TensorFlow."""
    if cluster is not None and is_message(cluster, "ClusterDef"):
        cluster = ClusterSpec(cluster)
    return _device_setter.replica_device_setter(
        ps_tasks, ps_device, worker_device, merge_devices, cluster, ps_ops, ps_strategy
    )


__all__ = sorted(
    {*_train.__all__, "ClusterSpec", "Server", "ClusterDef", "JobDef", "ServerDef"}
    | {"QueueRunner", "add_queue_runner"}
)


def __getattr__(name: str) -> object:
    """A name tf.train does not have: the AttributeError pointing to docs/compat.md."""
    from daskgraph.errors import missing_name

    raise missing_name("tf.train", name, globals())
