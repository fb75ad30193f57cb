"""TensorFlow 1's mutable ``tf.DeviceSpec`` (``DeviceSpecV1``).

TF1 programs build a spec and change it in place (``spec.job = "ps"``,
``spec.parse_from_string(...)``, ``spec.merge_from(other)``); the native
:class:`daskgraph.framework.device.DeviceSpec` is an immutable value, so this class keeps the five
fields as settable attributes and uses the native parser and printer for everything else.
``tf.device(spec)`` takes it (its string at the time the block is entered). As TF 1's, it is a
plain Python object: an attribute it does not know (``spec.cpu = None``, as TF 1's own tests
set) is kept and changes nothing, and the integer fields take what ``int()`` reads
(``spec.task = "3"``). ``canonical_name`` and ``check_valid`` are the helpers of TF 1's
``tensorflow.python.framework.device``, which TF 1 programs import.

>>> spec = DeviceSpec(job="ps", task=1, device_type="gpu", device_index=0)
>>> spec.to_string()
'/job:ps/task:1/device:GPU:0'
>>> spec.job = "worker"
>>> spec.merge_from(DeviceSpec(replica=2)).to_string()
'/job:worker/replica:2/task:1/device:GPU:0'
>>> spec.parse_from_string("/cpu:1") is spec, spec
(True, <DeviceSpec(job=None, replica=None, task=None, device_type=CPU, device_index=1)>)
>>> spec.cpu = None  # not a field: kept as an attribute, the spec is unchanged
>>> spec.to_string()
'/device:CPU:1'
"""

from __future__ import annotations

import operator
from typing import Any

from daskgraph.framework.device import DeviceSpec as NativeSpec
from daskgraph.framework.device import parse

__all__ = ["DeviceSpec", "canonical_name", "check_valid"]

_FIELDS = ("job", "replica", "task", "device_type", "device_index")


class DeviceSpec:
    """A mutable device specification, as TensorFlow 1's ``tf.DeviceSpec``.

    Parameters
    ----------
    job, replica, task, device_type, device_index
        The fields, each optional (``None``: not specified); ``device_type`` ``"cpu"`` and
        ``"gpu"`` are upper-cased.
    """

    def __init__(
        self,
        job: str | None = None,
        replica: int | None = None,
        task: int | None = None,
        device_type: str | None = None,
        device_index: int | None = None,
    ) -> None:
        fields = (job, replica, task, device_type, device_index)
        self._set(NativeSpec(*(_as_field(n, v) for n, v in zip(_FIELDS, fields, strict=True))))

    def _set(self, spec: NativeSpec) -> DeviceSpec:
        for name in _FIELDS:
            object.__setattr__(self, name, getattr(spec, name))
        return self

    def __setattr__(self, name: str, value: Any) -> None:
        if name not in _FIELDS:  # TF 1's spec is a plain object: the attribute changes nothing
            object.__setattr__(self, name, value)
            return
        self._set(self.native().replace(**{name: _as_field(name, value)}))  # checked there

    def native(self) -> NativeSpec:
        """The same specification as an immutable :class:`daskgraph.framework.device.DeviceSpec`."""
        return NativeSpec(*(getattr(self, name) for name in _FIELDS))

    @classmethod
    def from_string(cls, spec: str) -> DeviceSpec:
        """A new spec parsed from a device string (``"/job:ps/task:0/device:CPU:0"``)."""
        return cls()._set(NativeSpec.from_string(spec))

    def parse_from_string(self, spec: str) -> DeviceSpec:
        """Replace every field by those parsed from ``spec``; returns this spec."""
        return self._set(NativeSpec.from_string(spec))

    def merge_from(self, dev: Any) -> DeviceSpec:
        """Override this spec's fields by those ``dev`` sets (a DeviceSpec or a string);
        returns this spec."""
        return self._set(self.native().make_merged_spec(parse(dev)))

    def make_merged_spec(self, dev: Any) -> DeviceSpec:
        """A new spec: this one's fields overridden by those ``dev`` sets."""
        return DeviceSpec.from_string(self.to_string()).merge_from(dev)

    def replace(self, **fields: Any) -> DeviceSpec:
        """A new spec with ``fields`` replaced."""
        return DeviceSpec()._set(self.native().replace(**fields))

    def to_string(self) -> str:
        """The canonical device string, ``/job:J/replica:R/task:T/device:TYPE:N``."""
        return self.native().to_string()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, (DeviceSpec, NativeSpec)):
            return NotImplemented
        return self.to_string() == other.to_string()

    def __hash__(self) -> int:
        return hash(self.to_string())

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)}" for name in _FIELDS)
        return f"<DeviceSpec({fields})>"


def _as_field(name: str, value: Any) -> Any:
    """``value`` as TF 1's setters take it: the job as ``str``, an index through ``int()``
    (``"3"`` is 3; ``"x"`` raises ``ValueError: invalid literal for int()`` as TensorFlow's);
    anything else is left for the native spec to check and refuse.

    >>> _as_field("task", "3"), _as_field("job", "ps")
    (3, 'ps')
    """
    if value is None or name in ("job", "device_type"):
        return value
    if isinstance(value, str):
        return int(value)
    if not isinstance(value, bool) and hasattr(value, "__index__"):
        return operator.index(value)
    return value


def canonical_name(device: Any) -> str:
    """The canonical string of ``device`` (a string, a spec or ``None``), as TF 1's
    ``tensorflow.python.framework.device.canonical_name``.

    >>> canonical_name("/gpu:0/task:0/job:foo"), canonical_name(None)
    ('/job:foo/task:0/device:GPU:0', '')
    """
    if device is None:
        return ""
    if isinstance(device, (DeviceSpec, NativeSpec)):
        return device.to_string()
    return DeviceSpec.from_string(device).to_string()


def check_valid(spec: str) -> None:
    """Raise the parser's :class:`~daskgraph.errors.DeviceSpecError` (a ``ValueError``, in
    TensorFlow's words) unless ``spec`` is a valid device string, as TF 1's ``check_valid``.

    >>> check_valid("/job:foo/replica:0")
    >>> check_valid("/cpu:0/device:GPU:2")
    Traceback (most recent call last):
    ...
    daskgraph.errors.DeviceSpecError: Cannot specify multiple device types: '/cpu:0/device:GPU:2'...
    """
    DeviceSpec.from_string(spec)
