"""TensorFlow 1's top-level data-flow names: queues, and partitioning and stitching tensors.

Its one job is to name ``tf.FIFOQueue`` and its kin, ``tf.dynamic_partition`` and
``tf.dynamic_stitch``, as TensorFlow's ``data_flow_ops`` has them.
"""

from daskgraph.data.queues import (
    FIFOQueue,
    PaddingFIFOQueue,
    QueueBase,
    RandomShuffleQueue,
)
from daskgraph.ops import (
    dynamic_partition,
    dynamic_stitch,
)

__all__ = [
    "FIFOQueue",
    "PaddingFIFOQueue",
    "QueueBase",
    "RandomShuffleQueue",
    "dynamic_partition",
    "dynamic_stitch",
]
