"""Queue kernels: a TF1 queue's elements on the CPU worker of its ops, and the kernels that
enqueue, dequeue, close and measure it (registered by :mod:`daskgraph.data.queue_ops`).

A queue (:class:`QueueState`) is a resource of the variable store of its device
(:meth:`~daskgraph.runtime.worker.worker_state.VariableStore.resource`): it lives as long as the
session's variables, and sessions that share a container of variables (a server's) share it
too. Each queue has a lock of its own, not the device's: its enqueues and dequeues are
declared blocking (:func:`~daskgraph.framework.op_registry.mark_blocking`), so they apply
holding no lock of the store
(:func:`~daskgraph.runtime.worker.variable_steps.updated_variables`) and take the queue's
lock instead; a kernel that must wait (a dequeue from an empty queue, an enqueue into a full
one) waits on a ``threading.Condition`` of that lock, which releases it meanwhile, so that
other runs (other threads' enqueues, say) go on. It waits until it can go on, until the
queue is closed, or until the run's deadline (``operation_timeout_in_ms``) passes: then
:class:`~daskgraph.errors.DeadlineExceededError`, as TensorFlow's. Their runs never take a
compiled step's thread on a worker of another process.

>>> import threading
>>> q = QueueState(("FIFOQueue", 2, 0, (None, None)), "_0_fifo_queue", threading.RLock())
>>> q.put([(np.float32(1.0),)]); q.put([(np.float32(2.0),)])
>>> q.take(2, "exactly", "deq")
[(np.float32(1.0),), (np.float32(2.0),)]

This module declares the enqueues and dequeues blocking wherever it is imported: in the
client, where the ops are registered, and in a worker that unpickles a queue's kernel.
"""

from __future__ import annotations

import collections
import itertools
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from daskgraph.deadline import raise_if_past, wait_time
from daskgraph.errors import CancelledError, InvalidArgumentError, OutOfRangeError
from daskgraph.framework import dtypes
from daskgraph.framework.op_registry import CPU_ALL, mark_blocking

#: seconds a wait without deadline sleeps between looks at the queue (a notify wakes it sooner)
_TICK = 1.0

_counter = itertools.count()  # TensorFlow names a queue's resource "_<N>_<op name>"

Element = tuple  # one NumPy value per component


class QueueState:
    """A queue's elements and whether it is closed; ``spec`` is (class name, capacity,
    min_after_dequeue, seeds), ``lock`` the queue's own lock (a new one by default)."""

    def __init__(self, spec: tuple, name: str, lock: Any = None) -> None:
        self.kind, self.capacity, self.min_after_dequeue, seeds = spec
        self.name = name
        self.cond = threading.Condition(lock if lock is not None else threading.RLock())
        self.items: collections.deque[Element] = collections.deque()
        self.closed = False
        self.cancelled = False
        entropy = None if seeds[0] is None else [seeds[0], seeds[1] or 0]
        self._rng = np.random.default_rng(entropy) if self.kind == "RandomShuffleQueue" else None

    def _wait(self, ready: Callable[[], bool]) -> None:
        """Wait (the lock released) until ``ready()``; DeadlineExceededError past the run's
        deadline."""
        with self.cond:
            while not ready():
                raise_if_past("notification")
                self.cond.wait(wait_time(_TICK))

    def put(self, elements: Sequence[Element], op: str = "") -> None:
        """Append ``elements`` one by one, each once there is room; CancelledError when the
        queue is (or is closed with ``cancel_pending_enqueues`` while) waiting."""
        with self.cond:
            if self.closed:
                raise CancelledError(f"{self.kind} '{self.name}' is closed.", op=op)
            for element in elements:
                self._wait(lambda: self.cancelled or len(self.items) < self.capacity)
                if self.cancelled:
                    raise CancelledError(f"{self.kind} '{self.name}' is closed.", op=op)
                self.items.append(element)
                self.cond.notify_all()

    def take(self, n: int, how: str, op: str) -> list[Element]:
        """``n`` elements (``how``: ``"exactly"``, or ``"up_to"`` n once the queue is
        closed), waiting for them; OutOfRangeError (TF's words) when a closed queue has too
        few."""
        keep = self.min_after_dequeue if self._rng is not None else 0
        with self.cond:
            self._wait(lambda: self.closed or len(self.items) >= n + keep)
            have = len(self.items)
            if have < n and (how == "exactly" or have == 0):
                raise OutOfRangeError(
                    f"{self.kind} '{self.name}' is closed and has insufficient elements "
                    f"(requested {n}, current size {have})\n\t [[{{{{node {op}}}}}]]",
                    op=op,
                )
            taken = [self._pop() for _ in range(min(n, have))]
            self.cond.notify_all()
        return taken

    def _pop(self) -> Element:
        if self._rng is None:
            return self.items.popleft()
        index = int(self._rng.integers(len(self.items)))
        self.items.rotate(-index)
        element = self.items.popleft()
        self.items.rotate(index)
        return element

    def close(self, cancel_pending_enqueues: bool) -> None:
        """Close the queue: enqueues fail from now on, dequeues take what is left."""
        with self.cond:
            self.closed = True
            self.cancelled = self.cancelled or cancel_pending_enqueues
            self.cond.notify_all()


def _queue(store: Any, handle: str, spec: tuple) -> QueueState:
    return store.resource(
        ("Queue", handle),
        lambda: QueueState(spec, f"_{next(_counter)}_{handle}"),
    )


def _checked(values: Sequence[Any], shapes: Sequence[Any], dtypes_: Sequence[Any], op: str):
    """The components as NumPy values of their dtypes, checked against the queue's shapes."""
    out = []
    for i, (value, shape, dtype) in enumerate(zip(values, shapes, dtypes_, strict=True)):
        array = np.asarray(value, dtype=dtype)
        if shape is not None and (
            array.ndim != len(shape)
            or any(d is not None and d != n for d, n in zip(shape, array.shape, strict=True))
        ):
            raise InvalidArgumentError(
                f"Shape mismatch in tuple component {i}. Expected {list(shape)}, got "
                f"{list(array.shape)}",
                op=op,
            )
        out.append(array.copy())
    return out


def _handle_kernel(xp, *, key):
    return key


def _enqueue_kernel(xp, store, handle, *components, spec, shapes, dtypes, op):
    element = tuple(v[()] for v in _checked(components, shapes, dtypes, op))
    _queue(store, handle, spec).put([element], op)


def _enqueue_many_kernel(xp, store, handle, *components, spec, shapes, dtypes, op):
    arrays = [np.asarray(c) for c in components]
    sizes = {a.shape[0] if a.ndim else -1 for a in arrays}
    if -1 in sizes or len(sizes) > 1:
        raise InvalidArgumentError(
            "EnqueueMany: the components must have rank >= 1 and one size of their first "
            f"dimension; got shapes {[list(a.shape) for a in arrays]}",
            op=op,
        )
    rows = [tuple(a[i] for a in arrays) for i in range(sizes.pop() if sizes else 0)]
    elements = [tuple(v[()] for v in _checked(r, shapes, dtypes, op)) for r in rows]
    _queue(store, handle, spec).put(elements, op)


def _dequeue_kernel(xp, store, handle, *, spec, op):
    return _queue(store, handle, spec).take(1, "exactly", op)[0]


def _dequeue_many_kernel(xp, store, handle, n, *, spec, dtypes, how, op):
    n = int(n)
    if n < 0:
        raise InvalidArgumentError(f"DequeueMany requested {n} < 0 elements", op=op)
    taken = _queue(store, handle, spec).take(n, how, op)
    if not taken:
        return tuple(np.zeros((0,), dtype=d) for d in dtypes)
    return tuple(_stack(column, op) for column in zip(*taken, strict=True))


def _stack(values: Sequence[Any], op: str) -> np.ndarray:
    shapes = {np.shape(v) for v in values}
    if len(shapes) > 1:
        raise InvalidArgumentError(
            f"Cannot batch elements of different shapes {sorted(shapes)} from a queue without "
            "shapes (give the queue shapes, or dequeue one at a time)",
            op=op,
        )
    stacked = np.stack(values)
    if stacked.dtype.kind in "SU":  # strings stay bytes objects, as a string tensor's
        stacked = np.empty(len(values), dtype=object)
        stacked[:] = list(values)
    return stacked


def _close_kernel(xp, store, handle, *, spec, cancel_pending_enqueues, op):
    _queue(store, handle, spec).close(cancel_pending_enqueues)


def _size_kernel(xp, store, handle, *, spec, op):
    return np.int32(len(_queue(store, handle, spec).items))


def _is_closed_kernel(xp, store, handle, *, spec, op):
    return np.bool_(_queue(store, handle, spec).closed)


_CPU_ONLY = {"cpu": CPU_ALL | {dtypes.variant}, "gpu": None}  # TensorFlow: CPU kernels only


#: the queue ops whose kernels may wait for another run (for room, or for elements)
BLOCKING = ("QueueEnqueueV2", "QueueEnqueueManyV2", "QueueDequeueV2", "QueueDequeueManyV2")
for _type in BLOCKING:
    mark_blocking(_type)
