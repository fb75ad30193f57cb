"""``tf.train``'s names: ``ClusterSpec`` and ``Server`` (from :mod:`daskgraph.server`), and the
training names of :mod:`daskgraph.train` (optimizers, ``Saver``, the global step)."""

from daskgraph.device_setter import replica_device_setter
from daskgraph.server import ClusterSpec, Server
from daskgraph.train import (
    AdamOptimizer,
    CheckpointState,
    GradientDescentOptimizer,
    MomentumOptimizer,
    Optimizer,
    Saver,
    checkpoint_exists,
    create_global_step,
    get_checkpoint_state,
    get_global_step,
    get_or_create_global_step,
    global_step,
    latest_checkpoint,
    replicate,
    update_checkpoint_state,
)

__all__ = [
    "AdamOptimizer",
    "CheckpointState",
    "ClusterSpec",
    "GradientDescentOptimizer",
    "MomentumOptimizer",
    "Optimizer",
    "Saver",
    "Server",
    "checkpoint_exists",
    "create_global_step",
    "get_checkpoint_state",
    "get_global_step",
    "get_or_create_global_step",
    "global_step",
    "latest_checkpoint",
    "replica_device_setter",
    "replicate",
    "update_checkpoint_state",
]
