"""TensorFlow 1's queue ops registered with their kernels (:mod:`daskgraph.kernels.queues`),
which run on the CPU worker of the ops and have no gradient.

>>> from daskgraph.framework.op_registry import is_blocking, lookup
>>> is_blocking("QueueDequeueV2"), lookup("QueueDequeueV2").stateful
(True, True)
"""

from __future__ import annotations

from daskgraph.framework.gradient_registry import no_gradient
from daskgraph.framework.op_registry import register
from daskgraph.kernels.queues import (
    _CPU_ONLY,
    QueueState,
    _close_kernel,
    _dequeue_kernel,
    _dequeue_many_kernel,
    _enqueue_kernel,
    _enqueue_many_kernel,
    _handle_kernel,
    _is_closed_kernel,
    _size_kernel,
)

__all__ = ["QUEUE_TYPES", "QueueState"]

#: the op types of the queues' handles, by queue class name
QUEUE_TYPES = {
    "FIFOQueue": "FIFOQueueV2",
    "RandomShuffleQueue": "RandomShuffleQueueV2",
    "PaddingFIFOQueue": "PaddingFIFOQueueV2",
}
for _handle_type in QUEUE_TYPES.values():
    register(_handle_type, _handle_kernel, **_CPU_ONLY)
    no_gradient(_handle_type)
for _type, _kernel in (
    ("QueueEnqueueV2", _enqueue_kernel),
    ("QueueEnqueueManyV2", _enqueue_many_kernel),
    ("QueueDequeueV2", _dequeue_kernel),
    ("QueueDequeueManyV2", _dequeue_many_kernel),
    ("QueueCloseV2", _close_kernel),
    ("QueueSizeV2", _size_kernel),
    ("QueueIsClosedV2", _is_closed_kernel),
):
    register(_type, _kernel, stateful=True, **_CPU_ONLY)
    no_gradient(_type)
