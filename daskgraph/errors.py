"""The exceptions daskgraph raises, one module for all of them.

They follow TensorFlow's names (``InvalidArgumentError``, ``FailedPreconditionError``,
``ResourceExhaustedError``, ...) so that TF1 programs catching ``tf.errors.*`` keep working,
and they carry structured fields (the op, the requested device, the devices found) so that
programs can react without parsing messages. Messages say what was asked, what was found and
how to fix it.

Every exception pickles with its fields intact: errors raised by a kernel on a Dask worker
reach the client unchanged.

>>> err = InvalidArgumentError("bad", op="MatMul", requested="/device:GPU:3")
>>> err.op, err.requested
('MatMul', '/device:GPU:3')
>>> import pickle
>>> pickle.loads(pickle.dumps(err)).requested
'/device:GPU:3'
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "CancelledError",
    "DaskgraphError",
    "DeadlineExceededError",
    "FailedPreconditionError",
    "InternalError",
    "InvalidArgumentError",
    "NotFoundError",
    "OpError",
    "ResourceExhaustedError",
    "UnavailableError",
    "UnreachableError",
    "quote",
]


class DaskgraphError(Exception):
    """Base class of every daskgraph error."""


class OpError(DaskgraphError):
    """An error tied to an operation of a graph, as TensorFlow's ``OpError``.

    Parameters
    ----------
    message
        The full, human readable message.
    op
        Name of the operation the error is about, if any.
    **fields
        Structured details (``requested``, ``available``, ``device``, ``nbytes``, ...),
        exposed as attributes.
    """

    def __init__(self, message: str, op: str | None = None, **fields: Any) -> None:
        super().__init__(message)
        self.message = message
        self.op = op
        self.fields = fields
        for key, value in fields.items():
            setattr(self, key, value)

    def __reduce__(self):  # keep the structured fields across pickling
        return (_rebuild, (type(self), self.message, self.op, self.fields))

    def __str__(self) -> str:
        return self.message


def _rebuild(cls: type[OpError], message: str, op: str | None, fields: dict) -> OpError:
    return cls(message, op=op, **fields)


class InvalidArgumentError(OpError, ValueError):
    """An argument is invalid: a device that cannot be satisfied, a bad feed, a bad fetch."""


class FailedPreconditionError(OpError):
    """The system is not in a state to run the op: e.g. reading an uninitialized Variable."""


class NotFoundError(OpError, KeyError):
    """Something named (a device, a worker, a variable) does not exist."""

    __str__ = OpError.__str__  # KeyError would quote the message


class ResourceExhaustedError(OpError, MemoryError):
    """A resource ran out, e.g. GPU memory beyond ``per_process_gpu_memory_fraction``."""


class UnavailableError(OpError):
    """The cluster cannot serve the request now (a device's worker is gone)."""


class UnreachableError(UnavailableError, ConnectionError):
    """The scheduler a session (or server) targets cannot be reached: nothing listens there,
    or nothing answers in time (fields ``target`` and ``found``). Also a ``ConnectionError``,
    as a refused or unanswered connection is one."""


class DeadlineExceededError(OpError, TimeoutError):
    """A deadline passed before the operation finished: e.g. a session waiting for the tasks of
    its cluster to join (fields ``missing``, the tasks that did not, and ``target``)."""


class CancelledError(OpError):
    """The run was cancelled, e.g. because the session was closed."""


class InternalError(OpError):
    """daskgraph broke one of its own invariants: please report it."""


def quote(value: object, limit: int = 80) -> str:
    """``repr(value)`` for an error message, shortened when long so that the message stays
    readable while still quoting the input.

    >>> quote("/gpu:1")
    "'/gpu:1'"
    >>> quote("/gpu:" + "9" * 5000)
    "'/gpu:99999999999999999999999999999999999'... (5005 characters)"
    """
    text = repr(value)
    if len(text) <= limit:
        return text
    if isinstance(value, str):
        return f"{value[:40]!r}... ({len(value)} characters)"
    return f"{text[:60]}... ({type(value).__name__}, {len(text)} characters as text)"
