"""``tf.train``'s names: ``ClusterSpec`` and ``Server`` (from :mod:`daskgraph.compat.server_lib`),
the protocol buffers ``ClusterDef``, ``JobDef`` and ``ServerDef``, and the training names of
:mod:`daskgraph.train` (optimizers, ``Saver``, the global step)."""

from daskgraph import device_setter as _device_setter
from daskgraph import train as _train
from daskgraph.compat.protos import ClusterDef, JobDef, ServerDef  # noqa: F401 - in __all__
from daskgraph.compat.server_lib import ClusterSpec, Server  # noqa: F401 - in __all__
from daskgraph.queue_runner import QueueRunner, add_queue_runner  # noqa: F401 - in __all__
from daskgraph.train import *  # noqa: F403 - dg.train's names are tf.train's

#: TF's replica_device_setter (round robin over ps tasks), not dg.train's one-device one
replica_device_setter = _device_setter.replica_device_setter

__all__ = sorted(
    {*_train.__all__, "ClusterSpec", "Server", "ClusterDef", "JobDef", "ServerDef"}
    | {"QueueRunner", "add_queue_runner"}
)
