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

import difflib
import traceback
from collections.abc import Iterable
from typing import Any, TypeVar

__all__ = [
    "ABORTED",
    "ALREADY_EXISTS",
    "CANCELLED",
    "DATA_LOSS",
    "DEADLINE_EXCEEDED",
    "FAILED_PRECONDITION",
    "INTERNAL",
    "INVALID_ARGUMENT",
    "NOT_FOUND",
    "OK",
    "OUT_OF_RANGE",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "UNAUTHENTICATED",
    "UNAVAILABLE",
    "UNIMPLEMENTED",
    "UNKNOWN",
    "AbortedError",
    "AlreadyExistsError",
    "CancelledError",
    "DaskgraphError",
    "DataLossError",
    "DeadlineExceededError",
    "DeviceSpecError",
    "FailedPreconditionError",
    "GraphMismatchError",
    "InternalError",
    "InvalidArgumentError",
    "InvalidTargetError",
    "LossyCastError",
    "LossyIntFeedError",
    "NotFoundError",
    "OpError",
    "OpName",
    "OutOfRangeError",
    "PermissionDeniedError",
    "ResourceExhaustedError",
    "StructuredValueError",
    "UnauthenticatedError",
    "UnavailableError",
    "UnimplementedError",
    "UnknownError",
    "UnreachableError",
    "error_code_from_exception_type",
    "exception_type_from_error_code",
    "mark_message_only",
    "missing_name",
    "quote",
    "unknown_field",
    "without_internal_frames",
]

# TensorFlow's canonical error codes (``tf.errors.OK``, ...), the values of ``error_code``
OK = 0
CANCELLED = 1
UNKNOWN = 2
INVALID_ARGUMENT = 3
DEADLINE_EXCEEDED = 4
NOT_FOUND = 5
ALREADY_EXISTS = 6
PERMISSION_DENIED = 7
RESOURCE_EXHAUSTED = 8
FAILED_PRECONDITION = 9
ABORTED = 10
OUT_OF_RANGE = 11
UNIMPLEMENTED = 12
INTERNAL = 13
UNAVAILABLE = 14
DATA_LOSS = 15
UNAUTHENTICATED = 16


class DaskgraphError(Exception):
    """Base class of every daskgraph error."""


class StructuredValueError(DaskgraphError, ValueError):
    """A ``ValueError`` with structured fields: TensorFlow raises ``ValueError`` (not an
    ``OpError``) for what is wrong when a graph is built or a value converted, before anything
    runs; these subclasses keep that class and add the fields, as attributes.

    >>> err = GraphMismatchError("x must be from the same graph as y", tensor="x:0")
    >>> isinstance(err, ValueError), err.tensor
    (True, 'x:0')
    >>> import pickle
    >>> pickle.loads(pickle.dumps(err)).tensor
    'x:0'
    """

    def __init__(self, message: str, **fields: Any) -> None:
        super().__init__(message)
        self.message = message
        self.fields = fields
        for key, value in fields.items():
            setattr(self, key, value)

    def __reduce__(self):  # keep the structured fields across pickling
        return (_rebuild_value_error, (type(self), self.message, self.fields))

    def __str__(self) -> str:
        return self.message


def _rebuild_value_error(
    cls: type[StructuredValueError], message: str, fields: dict
) -> StructuredValueError:
    return cls(message, **fields)


class GraphMismatchError(StructuredValueError):
    """Tensors or operations of two graphs used together, as TensorFlow's ``ValueError``
    ("... must be from the same graph as ..."). Fields: ``tensor`` (or ``operation``), the
    name of the foreign one, and ``op_type``, the op being built."""


class DeviceSpecError(StructuredValueError):
    """A malformed device specification, worded as TensorFlow's ``ValueError`` (``Cannot
    specify multiple device types``, ``Unknown attribute``). Fields: ``spec``, the string
    parsed; ``attribute``, the component at fault; ``reason``, what is wrong with it."""


class LossyCastError(StructuredValueError):
    """A value that converting to another dtype would change (``3.7`` to an integer, ``2**53 +
    1`` to ``float64``, ``-1`` to ``uint8``). Fields: ``index`` (a tuple, the first offending
    element's), ``value``, ``source`` and ``target`` (dtype names), ``reason``."""


class LossyIntFeedError(LossyCastError, TypeError):
    """A Python ``int`` fed to a tensor whose dtype cannot hold it: TensorFlow 1 raises
    ``TypeError`` for this one case ("Type of feed value ... is not compatible with Tensor
    type ..."), so this is both a :class:`LossyCastError` and a ``TypeError``."""


class OpName(str):
    """The name of the operation an error is about, which also stands for the operation
    itself once a session has found it in its graph: it compares equal to the name and to
    that operation (``err.op == "matmul"`` and, as TensorFlow's tests check,
    ``err.op == c.op``), and reads the operation's attributes (``err.op.type``).

    >>> class Op:
    ...     type = "MatMul"
    >>> op = Op()
    >>> name = OpName("matmul", op)
    >>> name == "matmul", name == op, name.type, str(name)
    (True, True, 'MatMul', 'matmul')
    """

    def __new__(cls, name: str, operation: Any) -> OpName:
        self = super().__new__(cls, name)
        self.operation = operation
        return self

    def __eq__(self, other: Any) -> bool:
        return other is self.operation or str.__eq__(self, other) is True

    def __ne__(self, other: Any) -> bool:
        return not self.__eq__(other)

    __hash__ = str.__hash__

    def __getattr__(self, attr: str) -> Any:
        if attr == "operation":  # not set yet (unpickling)
            raise AttributeError(attr)
        return getattr(self.operation, attr)

    def __reduce__(self) -> tuple[type, tuple[str]]:
        return (str, (str(self),))  # the operation stays in its process


class OpError(DaskgraphError):
    """An error tied to an operation of a graph, as TensorFlow's ``OpError``.

    Parameters
    ----------
    message
        The full, human readable message.
    op
        Name of the operation the error is about, if any.
    *tf_args
        TensorFlow's own order is accepted too, ``OpError(node_def, op, message)`` (and
        ``error_code`` fourth for ``OpError`` itself), as TF1 programs raise these errors.
    **fields
        Structured details (``requested``, ``available``, ``device``, ``nbytes``, ...),
        exposed as attributes.

    >>> err = OutOfRangeError(None, None, "End of sequence")
    >>> str(err), err.error_code == OUT_OF_RANGE, err.node_def
    ('End of sequence', True, None)
    >>> OpError(None, None, "lost", ABORTED).error_code
    10
    """

    error_code = UNKNOWN  #: TensorFlow's error code (``tf.errors.UNKNOWN``, ...)

    def __init__(self, message: Any, op: Any = None, *tf_args: Any, **fields: Any) -> None:
        node_def = None
        if tf_args:  # TensorFlow's order: (node_def, op, message[, error_code])
            node_def, message = message, tf_args[0]
            op = getattr(op, "name", op)
            if len(tf_args) > 1 and type(self) is OpError:
                self.error_code = int(tf_args[1])
        super().__init__(message)
        self.message = message
        self.op = op
        self.node_def = node_def
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

    error_code = INVALID_ARGUMENT


class FailedPreconditionError(OpError):
    """The system is not in a state to run the op: e.g. reading an uninitialized Variable."""

    error_code = FAILED_PRECONDITION


class NotFoundError(OpError, KeyError):
    """Something named (a device, a worker, a variable) does not exist."""

    error_code = NOT_FOUND

    __str__ = OpError.__str__  # KeyError would quote the message


class InvalidTargetError(InvalidArgumentError, NotFoundError):
    """A session target that names no cluster daskgraph can reach: not an address
    (``"INVALID_TARGET"``), or of an unknown scheme. An ``InvalidArgumentError``, and also a
    ``NotFoundError``, which is what TensorFlow raises ("No session factory registered for the
    given session options"); field ``target``."""

    __str__ = OpError.__str__


class ResourceExhaustedError(OpError, MemoryError):
    """A resource ran out, e.g. GPU memory beyond ``per_process_gpu_memory_fraction``."""

    error_code = RESOURCE_EXHAUSTED


class UnavailableError(OpError):
    """The cluster cannot serve the request now (a device's worker is gone)."""

    error_code = UNAVAILABLE


class UnreachableError(UnavailableError, ConnectionError):
    """The scheduler a session (or server) targets cannot be reached: nothing listens there,
    or nothing answers in time (fields ``target`` and ``found``). Also a ``ConnectionError``,
    as a refused or unanswered connection is one."""


class DeadlineExceededError(OpError, TimeoutError):
    """A deadline passed before the operation finished: e.g. a session waiting for the tasks of
    its cluster to join (fields ``missing``, the tasks that did not, and ``target``)."""

    error_code = DEADLINE_EXCEEDED


class CancelledError(OpError):
    """The run was cancelled, e.g. because the session was closed."""

    error_code = CANCELLED


class InternalError(OpError):
    """daskgraph broke one of its own invariants: please report it."""

    error_code = INTERNAL


class UnknownError(OpError):
    """An error of no other kind (TensorFlow's ``UNKNOWN``)."""

    error_code = UNKNOWN


class AlreadyExistsError(OpError):
    """Something to be created already exists."""

    error_code = ALREADY_EXISTS


class PermissionDeniedError(OpError):
    """The caller may not do what it asked."""

    error_code = PERMISSION_DENIED


class UnauthenticatedError(OpError):
    """The request has no valid credentials."""

    error_code = UNAUTHENTICATED


class AbortedError(OpError):
    """The operation was aborted, e.g. by a concurrent action."""

    error_code = ABORTED


class OutOfRangeError(OpError):
    """An operation went past the valid range, e.g. an input read past its end."""

    error_code = OUT_OF_RANGE


class UnimplementedError(OpError, NotImplementedError):
    """The operation is not implemented or not supported."""

    error_code = UNIMPLEMENTED


class DataLossError(OpError):
    """Unrecoverable data loss or corruption."""

    error_code = DATA_LOSS


_BY_CODE: dict[int, type[OpError]] = {
    cls.error_code: cls
    for cls in (
        CancelledError,
        UnknownError,
        InvalidArgumentError,
        DeadlineExceededError,
        NotFoundError,
        AlreadyExistsError,
        PermissionDeniedError,
        ResourceExhaustedError,
        FailedPreconditionError,
        AbortedError,
        OutOfRangeError,
        UnimplementedError,
        InternalError,
        UnavailableError,
        DataLossError,
        UnauthenticatedError,
    )
}


def exception_type_from_error_code(error_code: int) -> type[OpError]:
    """The error class of a TensorFlow error code (``tf.errors.exception_type_from_error_code``).

    >>> exception_type_from_error_code(NOT_FOUND).__name__
    'NotFoundError'
    """
    return _BY_CODE[error_code]


def error_code_from_exception_type(cls: type[OpError]) -> int:
    """The TensorFlow error code of an error class (``UNKNOWN`` for classes of no code).

    >>> error_code_from_exception_type(OutOfRangeError) == OUT_OF_RANGE
    True
    """
    return getattr(cls, "error_code", UNKNOWN)


def quote(value: object, limit: int = 80) -> str:
    """``repr(value)`` for an error message, shortened when longer than ``limit`` characters
    (its first ``limit // 2``, an ellipsis and the original length), so that a message stays
    readable, and small, while still quoting the input. Every message that quotes user input
    (device strings, op names, values) quotes it through here; the full value belongs in the
    error's structured fields.

    >>> quote("/gpu:1")
    "'/gpu:1'"
    >>> quote("/gpu:" + "9" * 5000)
    "'/gpu:99999999999999999999999999999999999'... (5005 characters)"
    >>> quote(list(range(1000)), limit=20)
    '[0, 1, 2, 3, 4,... (list, 4890 characters as text)'
    """
    text = repr(value)
    if len(text) <= limit:
        return text
    keep = max(limit // 2, 1)
    if isinstance(value, str):
        return f"{value[:keep]!r}... ({len(value)} characters)"
    return f"{text[: keep + keep // 2]}... ({type(value).__name__}, {len(text)} characters as text)"


def _did_you_mean(name: str, known: Iterable[str]) -> str | None:
    """The known name closest to ``name`` (difflib's), or None when none is close."""
    close = difflib.get_close_matches(name, list(known), n=1, cutoff=0.75)
    return close[0] if close else None


def unknown_field(
    kind: type[Exception], message_type: str, name: str, known: Iterable[str]
) -> Exception:
    """The error for a field ``name`` that the protocol buffer message ``message_type`` lacks,
    in TensorFlow's words (raise it): ``kind`` is ``AttributeError`` when a program sets or
    reads the field, ``ValueError`` when it passes it to the message's constructor. The
    closest known field, if any, follows TensorFlow's sentence (so that programs matching on
    its start still match). Fields ``message_type``, ``field`` and ``suggestion``.

    >>> error = unknown_field(AttributeError, "GPUOptions", "allow_grwth", ["allow_growth"])
    >>> print(error)
    Protocol message GPUOptions has no "allow_grwth" field. Did you mean "allow_growth"?
    >>> error.field, error.suggestion
    ('allow_grwth', 'allow_growth')
    """
    suggestion = _did_you_mean(name, known)
    text = f'Protocol message {message_type} has no "{name}" field.'
    if suggestion is not None:
        text += f' Did you mean "{suggestion}"?'
    error = kind(text)
    error.message_type, error.field, error.suggestion = message_type, name, suggestion
    return error


#: the TF1 namespaces daskgraph provides only in part: what its missing names' errors say
_PARTLY_PROVIDED = {
    "tf.contrib": "daskgraph provides only tf.contrib's common subset (tf.contrib.layers, "
    "tf.contrib.slim, tf.contrib.framework)",
}


def missing_name(
    module: str, name: str, namespace: dict[str, Any] | None = None, section: str = ""
) -> AttributeError:
    """The ``AttributeError`` for a name ``module.name`` that daskgraph does not provide (raise
    it from the module's ``__getattr__``): it names the name and points to docs/compat.md,
    whose section ``section`` (by default the namespace's: ``tf``, ``tf.train``, ``tf.contrib``
    for ``tf.contrib.slim``) lists the TensorFlow 1 names daskgraph has (those of ``tf.contrib``,
    provided in part, say so). The name of ``namespace`` (the module's globals: its ``__all__``,
    or its public names) closest to ``name`` follows, if any. Fields ``module``, ``missing`` and
    ``suggestion``. A dunder name (``__wrapped__``, ``__path__``: looked up by
    introspection) gets Python's plain message.

    >>> print(missing_name("tf.train", "shuffle_batch", {"__all__": ["shuffle_batch_join"]}))
    ... # doctest: +NORMALIZE_WHITESPACE
    module 'tf.train' has no attribute 'shuffle_batch': daskgraph does not provide
    tf.train.shuffle_batch; docs/compat.md, section 'tf.train', lists the TensorFlow 1 names it
    has. Did you mean 'shuffle_batch_join'?
    >>> missing_name("tf", "image").suggestion is None
    True
    >>> print(missing_name("tf.contrib.slim", "nets"))  # doctest: +ELLIPSIS
    module 'tf.contrib.slim' has no attribute 'nets': daskgraph provides only ... its names.
    """
    text = f"module {module!r} has no attribute {name!r}"
    suggestion = None
    if not (name.startswith("__") and name.endswith("__")):
        scope = _PARTLY_PROVIDED.get(".".join(module.split(".")[:2]), "")
        section = section or ".".join(module.split(".")[:2])
        what = scope or f"daskgraph does not provide {module}.{name}"
        listed = "its names" if scope else "the TensorFlow 1 names it has"
        text += f": {what}; docs/compat.md, section {section!r}, lists {listed}."
        namespace = namespace or {}
        known = namespace.get("__all__") or [k for k in namespace if not k.startswith("_")]
        suggestion = _did_you_mean(name, known)
        if suggestion is not None:
            text += f" Did you mean {suggestion!r}?"
    error = AttributeError(text)
    error.module, error.missing, error.suggestion = module, name, suggestion
    return error


_E = TypeVar("_E", bound=BaseException)


def mark_message_only(error: _E) -> _E:
    """Mark ``error`` as one whose message says all a user needs (a device no placement can
    satisfy): where it reaches a public entry point (``Session.run``), it is raised again
    without the frames of daskgraph's internals (see :func:`without_internal_frames`).
    Returns ``error``.

    >>> mark_message_only(InvalidArgumentError("no such device")).show_message_only
    True
    """
    error.show_message_only = True  # type: ignore[attr-defined]
    return error


def without_internal_frames(error: _E) -> _E:
    """``error`` with its traceback cut, if it was marked by
    :func:`mark_message_only` (raise it ``from None`` at the public entry point:
    the printed traceback then ends there, as TensorFlow's ``Session.run`` raises its errors).
    What was cut stays on the error, as text, in ``internal_traceback``, for debugging.

    >>> try:
    ...     raise mark_message_only(ValueError("no such device"))
    ... except ValueError as caught:
    ...     error = without_internal_frames(caught)
    >>> error.__traceback__ is None, "mark_message_only(" in error.internal_traceback
    (True, True)
    """
    if not getattr(error, "show_message_only", False):
        return error
    frames = traceback.format_exception(type(error), error, error.__traceback__)
    error.internal_traceback = "".join(frames)  # type: ignore[attr-defined]
    return error.with_traceback(None)
