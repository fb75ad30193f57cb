"""TensorFlow 1's queues on the graph side: ``FIFOQueue``, ``RandomShuffleQueue`` and
``PaddingFIFOQueue`` build the ops that enqueue into, dequeue from, close and measure a queue
kept on the CPU worker for the session (:mod:`daskgraph.data.queue_ops`).

A dequeue of several components is one op whose result is a bundle, picked by one
``BundleGet`` per component (:mod:`daskgraph.ops.bundle`): components fetched together come
from one element. A dequeue from an empty queue waits until another run (another thread's)
enqueues, the queue is closed (``OutOfRangeError``) or the run's deadline passes.

>>> import daskgraph as dg
>>> with dg.Graph().as_default():
...     q = FIFOQueue(3, [dg.float32], shapes=[()])
...     enq, deq = q.enqueue_many([[1.0, 2.0]]), q.dequeue()
...     with dg.Session() as sess:
...         _ = sess.run(enq)
...         float(sess.run(deq)), float(sess.run(deq))
(1.0, 2.0)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from daskgraph.data.queue_ops import QUEUE_TYPES
from daskgraph.framework import dtypes
from daskgraph.framework.graph import Operation, Tensor, get_default_graph
from daskgraph.framework.tensor_shape import TensorShape
from daskgraph.ops.array import convert_to_tensor
from daskgraph.ops.bundle import unbundle
from daskgraph.ops.random import get_seed

__all__ = ["FIFOQueue", "PaddingFIFOQueue", "QueueBase", "RandomShuffleQueue"]


def _shape(shape: Any) -> tuple | None:
    known = TensorShape(shape)
    return None if known.dims is None else tuple(known.as_list())


class QueueBase:
    """A queue of elements of ``dtypes`` (one per component) and ``shapes`` (unknown when
    None), of at most ``capacity`` elements; ``names`` make elements dicts."""

    _kind = "FIFOQueue"

    def __init__(
        self,
        capacity: int,
        dtypes_: Any,
        shapes: Any = None,
        names: Any = None,
        shared_name: str | None = None,
        name: str = "fifo_queue",
        min_after_dequeue: int = 0,
        seed: int | None = None,
    ) -> None:
        single = not isinstance(dtypes_, (list, tuple))
        self._dtypes = [dtypes.as_dtype(d) for d in ([dtypes_] if single else dtypes_)]
        self._shapes = self._shapes_of(shapes, single)
        if names is not None:
            names = [names] if isinstance(names, str) else list(names)
            if len(names) != len(self._dtypes):
                raise ValueError("Queue must have the same number of names as dtypes")
        self._names = names
        graph = get_default_graph()
        exact = graph.unique_name(name)
        self._spec = (self._kind, int(capacity), int(min_after_dequeue), get_seed(seed))
        key = shared_name or exact
        op = graph.create_op(
            QUEUE_TYPES[self._kind], [], dtype=dtypes.variant, shape=(), attrs={"key": key},
            exact_name=exact,
        )  # fmt: skip
        self._queue_ref = op.outputs[0]
        self._name = exact

    def _shapes_of(self, shapes: Any, single: bool) -> list[tuple | None]:
        if shapes is None:
            return [None] * len(self._dtypes)
        shapes = [shapes] if single else list(shapes)
        if len(shapes) != len(self._dtypes):
            raise ValueError("Queue shapes must have the same length as dtypes")
        return [_shape(s) for s in shapes]

    # -- identity -------------------------------------------------------------------------------
    @property
    def name(self) -> str:
        """The name of the queue's op (``fifo_queue``)."""
        return self._name

    @property
    def dtypes(self) -> list[dtypes.DType]:
        """The dtypes of the components."""
        return list(self._dtypes)

    @property
    def shapes(self) -> list[TensorShape]:
        """The static shapes of the components (unknown where the queue has none)."""
        return [TensorShape(s) for s in self._shapes]

    @property
    def names(self) -> list[str] | None:
        """The components' names, or None."""
        return None if self._names is None else list(self._names)

    @property
    def queue_ref(self) -> Tensor:
        """The tensor of the queue's handle."""
        return self._queue_ref

    # -- ops ------------------------------------------------------------------------------------
    def _op(self, op_type: str, inputs: list, suffix: str, name: Any, **kw: Any) -> Operation:
        graph = self._queue_ref.graph
        exact = graph.unique_name(name or f"{self._name}_{suffix}")
        attrs = {"spec": self._spec, "op": exact, **kw.pop("attrs", {})}
        return graph.create_op(
            op_type,
            [self._queue_ref, *inputs],
            attrs=attrs,
            exact_name=exact,
            colocate_with=self._queue_ref.op,
            **kw,
        )

    def _components(self, vals: Any, many: bool) -> list[Tensor]:
        if isinstance(vals, dict):
            if self._names is None:
                raise ValueError("Queue must have names to enqueue a dictionary")
            if sorted(self._names) != sorted(vals):
                raise ValueError(
                    f"Keys in dictionary to enqueue {sorted(vals)} do not match names of "
                    f"Queue {sorted(self._names)}"
                )
            vals = [vals[k] for k in self._names]
        elif not isinstance(vals, (list, tuple)):
            vals = [vals]
        if len(vals) != len(self._dtypes):
            raise ValueError(f"Expected {len(self._dtypes)} components to enqueue, got {len(vals)}")
        tensors = [convert_to_tensor(v, dtype=d) for v, d in zip(vals, self._dtypes, strict=True)]
        for i, (t, shape) in enumerate(zip(tensors, self._shapes, strict=True)):
            self._check_shape(t, shape, many, i)
        return tensors

    @staticmethod
    def _check_shape(tensor: Tensor, shape: tuple | None, many: bool, index: int) -> None:
        if shape is None or tensor.shape is None:
            return
        have = TensorShape(tensor.shape[1:] if many and tensor.shape else tensor.shape)
        if many and not tensor.shape:
            raise ValueError(f"Shape must be at least rank 1 but is rank 0 (component {index})")
        if not have.is_compatible_with(TensorShape(shape)):
            raise ValueError(f"Shapes {have} and {TensorShape(shape)} are incompatible")

    def enqueue(self, vals: Any, name: str | None = None) -> Operation:
        """An op that adds one element (waiting while the queue is full)."""
        tensors = self._components(vals, many=False)
        return self._enqueue("QueueEnqueueV2", tensors, "enqueue", name)

    def enqueue_many(self, vals: Any, name: str | None = None) -> Operation:
        """An op that adds the slices of ``vals`` along their first dimension, in order."""
        tensors = self._components(vals, many=True)
        return self._enqueue("QueueEnqueueManyV2", tensors, "EnqueueMany", name)

    def _enqueue(self, op_type: str, tensors: list, suffix: str, name: Any) -> Operation:
        attrs = {"shapes": tuple(self._shapes), "dtypes": tuple(d.numpy for d in self._dtypes)}
        return self._op(op_type, tensors, suffix, name, dtype=None, attrs=attrs)

    def _unpack(self, op: Operation, shapes: Sequence[Any]) -> Any:
        specs = list(zip(self._dtypes, shapes, strict=True))
        names = [f"component_{i}" for i in range(len(specs))]
        tensors = unbundle(op.outputs[0], specs, names)
        if self._names is not None:
            return dict(zip(self._names, tensors, strict=True))
        return tensors[0] if len(tensors) == 1 else tensors

    def dequeue(self, name: str | None = None) -> Any:
        """The next element (a tensor, a list of them, or a dict with ``names``); a run
        waits while the queue is empty, and raises OutOfRangeError once it is closed."""
        op = self._op("QueueDequeueV2", [], "Dequeue", name, dtype=dtypes.variant, shape=())
        return self._unpack(op, self._shapes)

    def dequeue_many(self, n: Any, name: str | None = None) -> Any:
        """The next ``n`` elements, stacked (waiting for ``n``)."""
        return self._dequeue_n(n, "exactly", "DequeueMany", name)

    def dequeue_up_to(self, n: Any, name: str | None = None) -> Any:
        """The next ``n`` elements, stacked; fewer (at least one) once the queue is closed."""
        return self._dequeue_n(n, "up_to", "DequeueUpTo", name)

    def _dequeue_n(self, n: Any, how: str, suffix: str, name: Any) -> Any:
        count = convert_to_tensor(n, dtype=dtypes.int32)
        static = n if isinstance(n, int) and how == "exactly" else None
        attrs = {"dtypes": tuple(d.numpy for d in self._dtypes), "how": how}
        op = self._op(
            "QueueDequeueManyV2", [count], suffix, name, dtype=dtypes.variant, shape=(), attrs=attrs
        )
        shapes = [None if s is None else (static, *s) for s in self._shapes]
        return self._unpack(op, shapes)

    def close(self, cancel_pending_enqueues: bool = False, name: str | None = None) -> Operation:
        """An op that closes the queue: later enqueues fail (CancelledError), dequeues take
        what is left; ``cancel_pending_enqueues`` also fails enqueues waiting for room."""
        attrs = {"cancel_pending_enqueues": bool(cancel_pending_enqueues)}
        return self._op("QueueCloseV2", [], "Close", name, dtype=None, attrs=attrs)

    def is_closed(self, name: str | None = None) -> Tensor:
        """A boolean tensor: whether the queue is closed."""
        op = self._op("QueueIsClosedV2", [], "Is_Closed", name, dtype=dtypes.bool_, shape=())
        return op.outputs[0]

    def size(self, name: str | None = None) -> Tensor:
        """An int32 tensor: how many elements the queue holds."""
        return self._op("QueueSizeV2", [], "Size", name, dtype=dtypes.int32, shape=()).outputs[0]


class FIFOQueue(QueueBase):
    """A queue that hands out elements in the order they came (TF1's ``tf.FIFOQueue``)."""

    def __init__(
        self,
        capacity: int,
        dtypes: Any,
        shapes: Any = None,
        names: Any = None,
        shared_name: str | None = None,
        name: str = "fifo_queue",
    ) -> None:
        super().__init__(capacity, dtypes, shapes, names, shared_name, name)


class PaddingFIFOQueue(QueueBase):
    """A FIFO queue (TF1's ``tf.PaddingFIFOQueue``); here its ``dequeue_many`` stacks
    elements of one shape only (no padding)."""

    _kind = "PaddingFIFOQueue"

    def __init__(
        self,
        capacity: int,
        dtypes: Any,
        shapes: Any,
        names: Any = None,
        shared_name: str | None = None,
        name: str = "padding_fifo_queue",
    ) -> None:
        super().__init__(capacity, dtypes, shapes, names, shared_name, name)


class RandomShuffleQueue(QueueBase):
    """A queue that hands out elements in a random order, keeping at least
    ``min_after_dequeue`` until it is closed (TF1's ``tf.RandomShuffleQueue``)."""

    _kind = "RandomShuffleQueue"

    def __init__(
        self,
        capacity: int,
        min_after_dequeue: int,
        dtypes: Any,
        shapes: Any = None,
        names: Any = None,
        seed: int | None = None,
        shared_name: str | None = None,
        name: str = "random_shuffle_queue",
    ) -> None:
        super().__init__(
            capacity, dtypes, shapes, names, shared_name, name, int(min_after_dequeue), seed
        )
