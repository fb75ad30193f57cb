"""``tf.config``: this process's devices and their settings, as TensorFlow 1.14+ programs set them.

The physical devices are those the embedded cluster would start workers for, found once
(TensorFlow finds them once too): ``/physical_device:CPU:0``, then the NVIDIA GPUs NVML finds
(``CUDA_VISIBLE_DEVICES`` honoured) and the virtual GPUs of ``daskgraph.virtual-gpus``, as
``/physical_device:GPU:0``, ``GPU:1``, ... The settings do what TensorFlow's do, where
daskgraph has the concept:

* a ``Session`` made without a config takes them (TensorFlow's sessions take the context's
  config): NVIDIA GPUs' memory growth is ``gpu_options.allow_growth``, their visibility
  ``visible_device_list``, their logical devices ``virtual_devices`` (each GPU's worker split
  into one worker per logical GPU, capped at its ``memory_limit``), soft placement
  ``allow_soft_placement``, and hiding every GPU ``device_count={"GPU": 0}``;
* virtual GPUs (workers running the GPU kernels over NumPy) that are hidden or split into
  logical GPUs change how many virtual GPU workers the embedded cluster starts
  (``daskgraph.virtual-gpus`` is set to the count of logical ones), for every session;
* the inter-op thread count is the embedded CPU worker's threads
  (``daskgraph.local.cpu-threads``).

As in TensorFlow, a setting cannot change once the devices are initialized: here once an
embedded cluster runs (a ``Session()`` started it) or :func:`list_logical_devices` was called;
setting it then raises TensorFlow's ``RuntimeError``.

>>> cpu = list_physical_devices("CPU")[0]
>>> cpu.name, cpu.device_type, get_logical_device_configuration(cpu)
('/physical_device:CPU:0', 'CPU', None)
>>> set_memory_growth(cpu, True)
Traceback (most recent call last):
...
ValueError: Cannot set memory growth on non-GPU and non-Pluggable devices
"""

from __future__ import annotations

import threading as _threading
import types
from collections import namedtuple
from dataclasses import dataclass, field
from typing import Any

import dask.config

from daskgraph import config as native_config
from daskgraph.cluster import embedded
from daskgraph.cluster.gpus import GPUInfo, visible_gpus
from daskgraph.compat.local_devices import compute_capability
from daskgraph.compat.sessions import ConfigProto, GPUOptions

__all__ = [
    "LogicalDevice",
    "LogicalDeviceConfiguration",
    "PhysicalDevice",
    "experimental",
    "get_logical_device_configuration",
    "get_soft_device_placement",
    "get_visible_devices",
    "list_logical_devices",
    "list_physical_devices",
    "set_logical_device_configuration",
    "set_soft_device_placement",
    "set_visible_devices",
    "threading",
]


class PhysicalDevice(namedtuple("PhysicalDevice", ["name", "device_type"])):
    """A device of this machine before it is initialized: ``name``
    (``/physical_device:GPU:0``) and ``device_type`` (``CPU``, ``GPU``)."""


class LogicalDevice(namedtuple("LogicalDevice", ["name", "device_type"])):
    """A device sessions place ops on: ``name`` (``/device:GPU:0``) and ``device_type``."""


class LogicalDeviceConfiguration(
    namedtuple(
        "LogicalDeviceConfiguration",
        ["memory_limit", "experimental_priority", "experimental_device_ordinal"],
    )
):
    """One logical device of a physical one: ``memory_limit`` in MiB (required for a GPU);
    TensorFlow's experimental priority and ordinal are refused (None only)."""

    def __new__(
        cls,
        memory_limit: int | None = None,
        experimental_priority: int | None = None,
        experimental_device_ordinal: int | None = None,
    ) -> LogicalDeviceConfiguration:
        return super().__new__(
            cls, memory_limit, experimental_priority, experimental_device_ordinal
        )


@dataclass
class _Settings:
    """The process's device settings (TensorFlow's context) and what they were made of."""

    physical: list[PhysicalDevice] = field(default_factory=list)
    nvidia: list[GPUInfo] = field(default_factory=list)  # the first GPUs: NVIDIA ones
    visible: list[PhysicalDevice] = field(default_factory=list)
    growth: dict[PhysicalDevice, bool | None] = field(default_factory=dict)
    logical: dict[PhysicalDevice, list[LogicalDeviceConfiguration]] = field(default_factory=dict)
    soft_placement: bool | None = None
    intra_op_threads: int = 0
    inter_op_threads: int = 0
    initialized: bool = False  # list_logical_devices was called
    saved: dict[str, Any] = field(default_factory=dict)  # Dask config values replaced


_settings: _Settings | None = None
_lock = _threading.RLock()


def _current() -> _Settings:
    """The settings, the physical devices found on first use."""
    global _settings
    with _lock:
        if _settings is None:
            nvidia = visible_gpus()
            count = len(nvidia) + native_config.virtual_gpu_count()
            physical = [PhysicalDevice("/physical_device:CPU:0", "CPU")]
            physical += [PhysicalDevice(f"/physical_device:GPU:{i}", "GPU") for i in range(count)]
            _settings = _Settings(physical, nvidia, list(physical))
            _settings.growth = {d: None for d in physical if d.device_type == "GPU"}
        return _settings


def _reset() -> None:
    """Forget every setting (and put back the Dask config values they replaced); for tests."""
    global _settings
    with _lock:
        if _settings is not None:
            for key, value in _settings.saved.items():
                dask.config.set({key: value})
        _settings = None
        native_config.set_session_defaults(None)


def _initialized() -> bool:
    """Whether the devices are initialized: an embedded cluster runs, or the logical devices
    were listed."""
    return _current().initialized or bool(embedded.running())


def _known(device: Any) -> PhysicalDevice:
    if device not in _current().physical:
        raise ValueError(f"Unrecognized device: {device!r}")
    return device


# -- listing --------------------------------------------------------------------------------------
def list_physical_devices(device_type: str | None = None) -> list[PhysicalDevice]:
    """The physical devices (of ``device_type`` when given), visible or not.

    >>> [d.name for d in list_physical_devices("CPU")]
    ['/physical_device:CPU:0']
    """
    return [d for d in _current().physical if device_type in (None, d.device_type)]


def get_visible_devices(device_type: str | None = None) -> list[PhysicalDevice]:
    """The physical devices sessions will use (of ``device_type`` when given)."""
    return [d for d in _current().visible if device_type in (None, d.device_type)]


def list_logical_devices(device_type: str | None = None) -> list[LogicalDevice]:
    """The devices a ``Session()`` on the embedded cluster will have with these settings
    (``/device:CPU:0``, ``/device:GPU:0``, ...); after this the settings cannot change, as
    TensorFlow initializes its devices here."""
    settings = _current()
    with _lock:
        settings.initialized = True
    gpus = sum(_logical_count(d) for d in settings.visible if d.device_type == "GPU")
    found = [LogicalDevice(f"/device:CPU:{i}", "CPU") for i in range(_cpu_count(settings))]
    found += [LogicalDevice(f"/device:GPU:{i}", "GPU") for i in range(gpus)]
    return [d for d in found if device_type in (None, d.device_type)]


def _logical_count(device: PhysicalDevice) -> int:
    return len(_current().logical.get(device) or [None])


def _cpu_count(settings: _Settings) -> int:
    """The logical CPUs (TensorFlow splits the CPU into several as ``device_count`` does)."""
    return max([_logical_count(d) for d in settings.physical if d.device_type == "CPU"] or [1])


def _is_virtual(device: PhysicalDevice) -> bool:
    """Whether a GPU is a virtual one (after the NVIDIA GPUs in the list)."""
    index = int(device.name.rsplit(":", 1)[1])
    return device.device_type == "GPU" and index >= len(_current().nvidia)


def get_device_details(device: PhysicalDevice) -> dict[str, Any]:
    """What is known of a physical GPU: ``device_name`` and ``compute_capability`` (``(0, 0)``
    for a virtual GPU); ``{}`` for the CPU, as TensorFlow's."""
    if not isinstance(device, PhysicalDevice):
        raise ValueError(f"device must be a tf.config.PhysicalDevice, but got: {device}")
    _known(device)
    if device.device_type != "GPU":
        return {}
    if _is_virtual(device):
        return {"device_name": "virtual GPU (NumPy)", "compute_capability": (0, 0)}
    gpu = _current().nvidia[int(device.name.rsplit(":", 1)[1])]
    return {"device_name": gpu.name, "compute_capability": compute_capability(gpu)}


# -- settings -------------------------------------------------------------------------------------
def set_visible_devices(devices: Any, device_type: str | None = None) -> None:
    """Make ``devices`` (those of ``device_type``, when given, replacing the visible ones of
    that type) the devices sessions use; the CPU stays visible.

    Raises TensorFlow's ``ValueError`` for a device not listed, and ``RuntimeError`` when the
    devices are initialized already.
    """
    settings = _current()
    devices = list(devices) if isinstance(devices, (list, tuple)) else [devices]
    for d in map(_known, devices):
        if device_type is not None and d.device_type != device_type:
            raise ValueError(f"Unrecognized device: {d!r}")
    keep = [d for d in settings.visible if device_type is not None and d.device_type != device_type]
    visible = [d for d in settings.physical if d in keep + devices]
    if visible == settings.visible:
        return
    if not any(d.device_type == "CPU" for d in visible):
        raise ValueError("daskgraph always uses its CPU device: it cannot be made invisible")
    _check_hiding(settings, visible)
    with _lock:
        if _initialized():
            raise RuntimeError("Visible devices cannot be modified after being initialized")
        settings.visible = visible
        _apply(settings)


def _check_hiding(settings: _Settings, visible: list[PhysicalDevice]) -> None:
    gpus = [d for d in visible if d.device_type == "GPU"]
    if settings.nvidia and gpus and all(_is_virtual(d) for d in gpus):
        raise ValueError(
            "daskgraph cannot hide every NVIDIA GPU and keep a virtual GPU visible (its "
            "sessions' visible_device_list selects NVIDIA GPUs only)"
        )


def get_memory_growth(device: PhysicalDevice) -> bool | None:
    """Whether memory growth was enabled for a GPU (None: never set)."""
    _known(device)
    return _current().growth[device]


def set_memory_growth(device: PhysicalDevice, enable: bool) -> None:
    """Grow a GPU's memory pool on demand instead of reserving it: the ``allow_growth`` of the
    sessions made without a config (every visible GPU must have the same setting, as in
    TensorFlow; a virtual GPU keeps it without effect: it has no GPU memory)."""
    settings = _current()
    _known(device)
    if device in settings.logical:
        raise ValueError("Cannot set memory growth on device when virtual devices configured")
    if device.device_type != "GPU":
        raise ValueError("Cannot set memory growth on non-GPU and non-Pluggable devices")
    if settings.growth.get(device) == enable:
        return
    with _lock:
        if _initialized():
            raise RuntimeError("Physical devices cannot be modified after being initialized")
        settings.growth[device] = enable
        _apply(settings)


def get_logical_device_configuration(device: PhysicalDevice) -> Any:
    """The logical devices configured for a physical one (None: not split)."""
    _known(device)
    return _current().logical.get(device)


def set_logical_device_configuration(device: PhysicalDevice, logical_devices: Any) -> None:
    """Split a physical GPU into logical GPUs, one per :class:`LogicalDeviceConfiguration`
    (``memory_limit`` MiB each): on an NVIDIA GPU one worker each, capped at its limit; a
    virtual GPU becomes that many virtual GPU workers (the limits have nothing to cap). The
    CPU splits into that many CPU devices, as ``device_count={"CPU": n}`` makes them."""
    settings = _current()
    _known(device)
    logical_devices = list(logical_devices)
    _check_logical(device, logical_devices)
    if settings.logical.get(device) == logical_devices:
        return
    with _lock:
        if _initialized():
            raise RuntimeError("Virtual devices cannot be modified after being initialized")
        settings.logical[device] = logical_devices
        _apply(settings)


def _check_logical(device: PhysicalDevice, logical_devices: list) -> None:
    """TensorFlow's checks of a logical device configuration, and daskgraph's limits."""
    if device.device_type == "CPU":
        if any(v.memory_limit is not None for v in logical_devices):
            raise ValueError(
                "Setting memory limit on CPU virtual devices is currently not supported"
            )
        if not logical_devices:
            raise ValueError("the CPU needs at least one logical device")
        return
    for v in logical_devices:
        if v.memory_limit is None:
            raise ValueError("Setting memory limit is required for GPU virtual devices")
        if v.experimental_priority is not None or v.experimental_device_ordinal is not None:
            raise ValueError("daskgraph has no priorities or ordinals of logical GPUs")
    if not logical_devices:
        raise ValueError("a GPU needs at least one logical device")


def get_soft_device_placement() -> bool:
    """Whether sessions made without a config place ops elsewhere when their device cannot
    run them (False unless set, as in TensorFlow's graph mode)."""
    return bool(_current().soft_placement)


def set_soft_device_placement(enabled: bool) -> None:
    """Set ``allow_soft_placement`` of the sessions made without a config from now on."""
    settings = _current()
    with _lock:
        settings.soft_placement = bool(enabled)
        _apply(settings)


def _get_intra_op_parallelism_threads() -> int:
    """The threads an op may use (0: the system picks); kept, not used: daskgraph's kernels are
    NumPy's and CuPy's, with their own threads."""
    return _current().intra_op_threads


def _set_intra_op_parallelism_threads(num_threads: int) -> None:
    """Set the intra-op thread count (kept; RuntimeError once the devices are initialized)."""
    settings = _current()
    if settings.intra_op_threads == num_threads:
        return
    with _lock:
        if _initialized():
            raise RuntimeError("Intra op parallelism cannot be modified after initialization.")
        settings.intra_op_threads = int(num_threads)
        _apply(settings)


def _get_inter_op_parallelism_threads() -> int:
    """The threads running independent ops (0: the system picks): the embedded CPU worker's."""
    return _current().inter_op_threads


def _set_inter_op_parallelism_threads(num_threads: int) -> None:
    """Give the embedded CPU worker ``num_threads`` threads (0: all cores); RuntimeError once
    the devices are initialized."""
    settings = _current()
    if settings.inter_op_threads == num_threads:
        return
    with _lock:
        if _initialized():
            raise RuntimeError("Inter op parallelism cannot be modified after initialization.")
        settings.inter_op_threads = int(num_threads)
        key = "daskgraph.local.cpu-threads"
        settings.saved.setdefault(key, dask.config.get(key))
        dask.config.set({key: int(num_threads) or settings.saved[key]})
        _apply(settings)


# -- what the settings make -----------------------------------------------------------------------
def _apply(settings: _Settings) -> None:
    """Sessions made without a config take :func:`session_config` from now on; the embedded
    cluster starts one virtual GPU worker per visible logical virtual GPU."""
    virtual = [d for d in settings.physical if _is_virtual(d)]
    if virtual:
        key = "daskgraph.virtual-gpus"
        settings.saved.setdefault(key, dask.config.get(key))
        count = sum(_logical_count(d) for d in virtual if d in settings.visible)
        dask.config.set({key: count})
    native_config.set_session_defaults(session_config)


def session_config() -> ConfigProto:
    """The ``tf.ConfigProto`` the settings make: what a ``Session`` made without a config uses.

    Raises ``ValueError`` where the visible NVIDIA GPUs' memory growth differs (as TensorFlow)
    or their logical devices differ (daskgraph splits every GPU alike).

    >>> session_config().allow_soft_placement == get_soft_device_placement()
    True
    """
    settings = _current()
    proto = ConfigProto(
        allow_soft_placement=bool(settings.soft_placement),
        intra_op_parallelism_threads=settings.intra_op_threads,
        inter_op_parallelism_threads=settings.inter_op_threads,
    )
    gpus = [d for d in settings.visible if d.device_type == "GPU"]
    counts = {"CPU": _cpu_count(settings)} if _cpu_count(settings) > 1 else {}
    if not gpus and len(settings.physical) > 1:
        counts["GPU"] = 0
    if counts:
        proto.device_count = counts
    proto.gpu_options = _gpu_options(settings, [d for d in gpus if not _is_virtual(d)])
    return proto


def _gpu_options(settings: _Settings, nvidia: list[PhysicalDevice]) -> GPUOptions:
    """``visible_device_list``, ``virtual_devices`` and ``allow_growth`` of the NVIDIA GPUs."""
    options = GPUOptions()
    if not settings.nvidia or not nvidia:
        return options
    if len(nvidia) != len(settings.nvidia):
        options.visible_device_list = ",".join(d.name.rsplit(":", 1)[1] for d in nvidia)
    splits = {tuple(v.memory_limit for v in settings.logical.get(d) or []) for d in nvidia}
    if len(splits) > 1:
        raise ValueError(
            "daskgraph splits every visible NVIDIA GPU into the same logical GPUs; their "
            f"logical device configurations differ: {sorted(splits)}"
        )
    limits = splits.pop()
    if limits:
        options.virtual_devices = [int(mb) for mb in limits]
        return options
    growth = {settings.growth.get(d) for d in nvidia}
    if len(growth) > 1:
        raise ValueError("Memory growth cannot differ between GPU devices")
    options.allow_growth = bool(growth.pop())
    return options


threading = types.SimpleNamespace(
    get_intra_op_parallelism_threads=_get_intra_op_parallelism_threads,
    set_intra_op_parallelism_threads=_set_intra_op_parallelism_threads,
    get_inter_op_parallelism_threads=_get_inter_op_parallelism_threads,
    set_inter_op_parallelism_threads=_set_inter_op_parallelism_threads,
)
threading.__doc__ = "``tf.config.threading``: the thread counts (see the module's text)."

experimental = types.SimpleNamespace(
    VirtualDeviceConfiguration=LogicalDeviceConfiguration,
    get_device_details=get_device_details,
    get_memory_growth=get_memory_growth,
    get_virtual_device_configuration=get_logical_device_configuration,
    get_visible_devices=get_visible_devices,
    list_logical_devices=list_logical_devices,
    list_physical_devices=list_physical_devices,
    set_memory_growth=set_memory_growth,
    set_virtual_device_configuration=set_logical_device_configuration,
    set_visible_devices=set_visible_devices,
)
experimental.__doc__ = "``tf.config.experimental``: TF 1.14's names of the device settings."


def __getattr__(name: str) -> object:
    """A name tf.config does not have: the AttributeError pointing to docs/compat.md."""
    from daskgraph.errors import missing_name

    raise missing_name("tf.config", name, globals())
