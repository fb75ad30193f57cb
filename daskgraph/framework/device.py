"""Parse, print and merge TensorFlow device specifications.

Strings such as ``/job:worker/replica:0/task:1/device:GPU:0`` become immutable, normalised
:class:`DeviceSpec` values that print canonically, merge and match partial patterns.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from typing import Any

from daskgraph.errors import DeviceSpecError, quote

__all__ = ["CPU", "GPU", "DeviceSpec", "parse"]

CPU = "CPU"
GPU = "GPU"

_EXAMPLE = "/job:worker/replica:0/task:1/device:GPU:0"
_JOB_RE = re.compile(r"[A-Za-z][A-Za-z0-9_-]*\Z")
_TYPE_RE = re.compile(r"[A-Za-z][A-Za-z0-9_]*\Z")
_INT_RE = re.compile(r"[0-9]+\Z")
_PY_INT_RE = re.compile(r"\s*[+-]?[0-9]+(_[0-9]+)*\s*\Z")  # what int() reads (TF's parser)
_MAX_INDEX = 2**63 - 1  # indices are int64 (task numbers of deployments are hashes)
_SHORT_TYPES = frozenset({"cpu", "gpu"})
_FIELD_NAMES = ("job", "replica", "task", "device_type", "device_index")

_Fields = tuple[str | None, int | None, int | None, str | None, int | None]


def _normalise_type(device_type: str) -> str:
    """Upper-case ``cpu``/``gpu``; keep any other device type as written."""
    return device_type.upper() if device_type.lower() in _SHORT_TYPES else device_type


def _malformed(spec: str, reason: str, attribute: str) -> DeviceSpecError:
    return DeviceSpecError(
        f"Malformed device specification {quote(spec)}: {reason}. "
        f"Expected a string like {_EXAMPLE!r}",
        spec=spec,
        attribute=attribute,
        reason=reason,
    )


def _multiple_types(spec: str, first: str, second: str) -> DeviceSpecError:
    """TensorFlow's words (TF 1's, then TF 2's) for a second device type in ``spec``.

    >>> print(_multiple_types("/gpu:0/cpu:0", "GPU", "CPU"))
    Cannot specify multiple device types: '/gpu:0/cpu:0'. Multiple device types are not allowed \
while parsing the device spec: it names 'GPU' and 'CPU'; keep one, as in \
'/job:worker/replica:0/task:1/device:GPU:0'
    """
    return DeviceSpecError(
        f"Cannot specify multiple device types: {quote(spec)}. Multiple device types are not "
        f"allowed while parsing the device spec: it names {quote(first)} and {quote(second)}; "
        f"keep one, as in {_EXAMPLE!r}",
        spec=spec,
        attribute=second,
        reason="multiple device types",
    )


def _unknown_attribute(spec: str, key: str) -> DeviceSpecError:
    """TensorFlow 1's words for a component of ``spec`` that names no field.

    >>> print(_unknown_attribute("/bar:muu", "bar"))
    Unknown attribute: 'bar' in '/bar:muu'; a device spec names job, replica, task, device, \
cpu or gpu, as in '/job:worker/replica:0/task:1/device:GPU:0'
    """
    return DeviceSpecError(
        f"Unknown attribute: {quote(key)} in {quote(spec)}; a device spec names job, replica, "
        f"task, device, cpu or gpu, as in {_EXAMPLE!r}",
        spec=spec,
        attribute=key,
        reason="unknown attribute",
    )


def _parse_int(spec: str, name: str, text: str, allow_star: bool) -> int | None:
    if allow_star and text == "*":
        return None
    if not _INT_RE.match(text) or len(text) > 19 or int(text) > _MAX_INDEX:
        wanted = "a non-negative integer" + (" or '*'" if allow_star else "") + " below 2**63"
        reason = f"{name} must be {wanted}, got {quote(text)}"
        if not _PY_INT_RE.match(text):  # what int() says, and TensorFlow's message with it
            reason += f" (invalid literal for int() with base 10: {quote(text)})"
        raise _malformed(spec, reason, name)
    return int(text)


@functools.lru_cache(maxsize=4096)
def _parse_fields(spec: str) -> _Fields:
    """Parse ``spec`` into ``(job, replica, task, device_type, device_index)``."""
    named: dict[str, Any] = {}
    device_type: str | None = None
    device_index: int | None = None
    for piece in spec.split("/"):
        key, *values = piece.split(":")
        if not key:
            continue  # as TensorFlow: empty components ('//', ':0') are skipped
        if key in ("job", "replica", "task"):
            if key in named:
                raise _malformed(spec, f"field {key!r} given twice", key)
            if len(values) != 1 or not values[0]:
                raise _malformed(spec, f"{key!r} needs exactly one value, as in '{key}:VALUE'", key)
            if key == "job":
                if not _JOB_RE.match(values[0]):
                    raise _malformed(spec, f"invalid job name {quote(values[0])}", key)
                named[key] = values[0]
            else:
                named[key] = _parse_int(spec, key, values[0], allow_star=False)
        elif key == "device" or key.lower() in _SHORT_TYPES:
            if key == "device":
                if not 1 <= len(values) <= 2:
                    raise _malformed(spec, "'device' takes the form 'device:TYPE[:INDEX]'", key)
                name, index_text = values[0], values[1] if len(values) == 2 else "*"
                if not _TYPE_RE.match(name):
                    raise _malformed(spec, f"invalid device type {quote(name)}", key)
            else:
                if len(values) > 1:
                    raise _malformed(spec, f"{key!r} takes the form '{key}[:INDEX]'", key)
                name, index_text = key, values[0] if values else "*"
            name = _normalise_type(name)
            if device_type is not None:
                raise _multiple_types(spec, device_type, name)
            device_type = name
            device_index = _parse_int(spec, "device index", index_text, allow_star=True)
        else:
            raise _unknown_attribute(spec, key)
    return (named.get("job"), named.get("replica"), named.get("task"), device_type, device_index)


@dataclasses.dataclass(frozen=True, slots=True, repr=False)
class DeviceSpec:
    """An immutable, normalised TensorFlow device specification.

    Every field is optional; ``None`` means "not specified". ``cpu``/``gpu`` device
    types are upper-cased, so equal specs compare and hash equal whatever their
    spelling. A ``device_index`` without a ``device_type`` is kept (TensorFlow 1's mutable
    spec sets them in any order) but written only with one.

    Examples
    --------
    >>> spec = DeviceSpec(job="worker", task=1, device_type="gpu", device_index=0)
    >>> spec
    DeviceSpec('/job:worker/task:1/device:GPU:0')
    >>> spec == DeviceSpec.from_string("/job:worker/task:1/gpu:0")
    True
    """

    job: str | None = None
    replica: int | None = None
    task: int | None = None
    device_type: str | None = None
    device_index: int | None = None

    def __post_init__(self) -> None:
        if self.job is not None and not (isinstance(self.job, str) and _JOB_RE.match(self.job)):
            raise ValueError(f"DeviceSpec.job must be a name like 'worker', got {quote(self.job)}")
        for name in ("replica", "task", "device_index"):
            value = getattr(self, name)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"DeviceSpec.{name} must be an int, got {type(value).__name__}")
            if not 0 <= value <= _MAX_INDEX:
                raise ValueError(
                    f"DeviceSpec.{name} must be a non-negative integer below 2**63, got "
                    f"{quote(str(value))}"
                )
        if self.device_type is None:
            pass  # (an index without a type is kept, and written only with one: TensorFlow's)
        elif isinstance(self.device_type, str) and _TYPE_RE.match(self.device_type):
            object.__setattr__(self, "device_type", _normalise_type(self.device_type))
        else:
            raise ValueError(
                f"DeviceSpec.device_type must be a name like 'GPU', got {quote(self.device_type)}"
            )

    @classmethod
    def from_string(cls, spec: str) -> DeviceSpec:
        """Parse a TensorFlow device string.

        Parameters
        ----------
        spec : str
            A device string such as ``"/job:worker/task:1/device:GPU:0"``, ``"/gpu:1"``,
            ``"cpu:0"`` or ``""``. Fields may come in any order. As in TensorFlow, empty
            components are skipped, and so is one with nothing before its colon:
            ``"cpu/:0"`` is ``/device:CPU:*``.

        Returns
        -------
        DeviceSpec
            The parsed, normalised specification.

        Raises
        ------
        TypeError
            If ``spec`` is not a string.
        DeviceSpecError
            A ``ValueError``, if ``spec`` is malformed: the message quotes it, in TensorFlow's
            words where TensorFlow has some (``Cannot specify multiple device types``,
            ``Unknown attribute``, ``invalid literal for int()``); the fields ``spec``,
            ``attribute`` and ``reason`` say what is wrong.

        Examples
        --------
        >>> DeviceSpec.from_string("/replica:1/task:0/gpu:*")
        DeviceSpec('/replica:1/task:0/device:GPU:*')
        >>> DeviceSpec.from_string("/gpu:0/cpu:0")
        Traceback (most recent call last):
        ...
        daskgraph.errors.DeviceSpecError: Cannot specify multiple device types: '/gpu:0/cpu:0'. Multiple device types are not allowed while parsing the device spec: it names 'GPU' and 'CPU'; keep one, as in '/job:worker/replica:0/task:1/device:GPU:0'
        """  # noqa: E501
        if not isinstance(spec, str):
            raise TypeError(f"device specification must be a str, got {type(spec).__name__}")
        return cls(*_parse_fields(spec))

    def to_string(self) -> str:
        """Return the canonical string, ``/job:J/replica:R/task:T/device:TYPE:N``.

        Examples
        --------
        >>> DeviceSpec.from_string("gpu:1/job:worker").to_string()
        '/job:worker/device:GPU:1'
        >>> DeviceSpec(device_type="TPU").to_string()
        '/device:TPU:*'
        >>> DeviceSpec().to_string()
        ''
        """
        parts = []
        if self.job is not None:
            parts.append(f"/job:{self.job}")
        if self.replica is not None:
            parts.append(f"/replica:{self.replica}")
        if self.task is not None:
            parts.append(f"/task:{self.task}")
        if self.device_type is not None:
            index = "*" if self.device_index is None else self.device_index
            parts.append(f"/device:{self.device_type}:{index}")
        return "".join(parts)

    def __str__(self) -> str:
        return self.to_string()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.to_string()!r})"

    def __reduce__(self) -> tuple[type[DeviceSpec], _Fields]:
        return (type(self), self._fields())

    def _fields(self) -> _Fields:
        return (self.job, self.replica, self.task, self.device_type, self.device_index)

    @property
    def is_empty(self) -> bool:
        """Whether no field is set.

        Examples
        --------
        >>> DeviceSpec.from_string("").is_empty, DeviceSpec.from_string("/cpu:0").is_empty
        (True, False)
        """
        return all(value is None for value in self._fields())

    @property
    def is_fully_specified(self) -> bool:
        """Whether all five fields are set.

        Examples
        --------
        >>> DeviceSpec.from_string("/job:w/replica:0/task:1/gpu:0").is_fully_specified
        True
        >>> DeviceSpec.from_string("/job:w/gpu:0").is_fully_specified
        False
        """
        return all(value is not None for value in self._fields())

    def make_merged_spec(self, other: DeviceSpec) -> DeviceSpec:
        """Return ``self`` overridden by the fields ``other`` sets.

        Device type and index merge as a unit: when ``other`` sets a device type, its
        index (even ``None``) replaces ours.

        Parameters
        ----------
        other : DeviceSpec
            The inner (more specific) specification.

        Examples
        --------
        >>> outer = DeviceSpec.from_string("/job:worker/task:1/gpu:0")
        >>> outer.make_merged_spec(DeviceSpec.from_string("/task:2"))
        DeviceSpec('/job:worker/task:2/device:GPU:0')
        >>> outer.make_merged_spec(DeviceSpec.from_string("/device:CPU:*"))
        DeviceSpec('/job:worker/task:1/device:CPU:*')
        """
        if not isinstance(other, DeviceSpec):
            raise TypeError(f"can only merge a DeviceSpec, got {type(other).__name__}")
        merged = {
            name: value
            for name, value in zip(_FIELD_NAMES[:3], other._fields()[:3], strict=True)
            if value is not None
        }
        if other.device_type is not None:
            merged.update(device_type=other.device_type, device_index=other.device_index)
        elif other.device_index is not None:
            merged.update(device_index=other.device_index)
        return dataclasses.replace(self, **merged)

    def replace(self, **fields: Any) -> DeviceSpec:
        """Return a copy with the given fields replaced (and validated).

        Raises
        ------
        TypeError
            If a field name is unknown or a value has the wrong type.
        ValueError
            If a value is invalid, such as a negative task.

        Examples
        --------
        >>> DeviceSpec.from_string("/job:worker/cpu:0").replace(device_type="gpu", task=3)
        DeviceSpec('/job:worker/task:3/device:GPU:0')
        """
        unknown = sorted(set(fields) - set(_FIELD_NAMES))
        if unknown:
            raise TypeError(
                f"DeviceSpec has no field {quote(unknown[0])}; fields are {_FIELD_NAMES}"
            )
        return dataclasses.replace(self, **fields)

    def matches(self, other: DeviceSpec) -> bool:
        """Whether ``other`` has every field that this (partial) pattern sets.

        Examples
        --------
        >>> pattern = DeviceSpec.from_string("/job:worker/device:GPU:*")
        >>> pattern.matches(DeviceSpec.from_string("/job:worker/task:1/device:GPU:3"))
        True
        >>> pattern.matches(DeviceSpec.from_string("/job:worker/task:1/device:CPU:0"))
        False
        """
        if not isinstance(other, DeviceSpec):
            raise TypeError(f"can only match a DeviceSpec, got {type(other).__name__}")
        return all(
            mine is None or mine == theirs
            for mine, theirs in zip(self._fields(), other._fields(), strict=True)
        )


def parse(spec: str | DeviceSpec | None) -> DeviceSpec:
    """Coerce ``spec`` to a :class:`DeviceSpec`.

    Parameters
    ----------
    spec : str, DeviceSpec or None
        ``None`` or ``""`` give the empty spec, a ``DeviceSpec`` is returned as is and a
        string is parsed with :meth:`DeviceSpec.from_string`, as is the ``to_string()`` of
        another object that has one (TF1's mutable ``tf.DeviceSpec``).

    Raises
    ------
    TypeError
        For any other type.

    Examples
    --------
    >>> parse(None).is_empty
    True
    >>> parse("/GPU:1") == parse(DeviceSpec(device_type="GPU", device_index=1))
    True
    """
    if spec is None:
        return DeviceSpec()
    if isinstance(spec, DeviceSpec):
        return spec
    if isinstance(spec, str):
        return DeviceSpec.from_string(spec)
    to_string = getattr(spec, "to_string", None)  # TF1's mutable DeviceSpec, and the like
    if callable(to_string):
        return DeviceSpec.from_string(to_string())
    raise TypeError(f"expected a device string, DeviceSpec or None, got {type(spec).__name__}")
