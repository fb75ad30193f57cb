"""The devices of a Dask cluster: which worker stands for which TensorFlow device.

A worker started by daskgraph stands for one device: its Dask ``name`` is the device's full
name (``/job:localhost/replica:0/task:0/device:GPU:1``) and it carries a resource (``GPU: 1``
or ``CPU: 1``); a virtual GPU also carries ``VIRTUAL_GPU: 1``. Workers of a plain Dask cluster
that daskgraph did not start are mapped by their resources, in a stable order (host, then
name, then address): a worker with ``GPU: n`` gives ``n`` GPU devices, a GPU worker of a
cluster started with dask-cuda's ``LocalCUDACluster`` or ``dask cuda worker`` (which carries no
resource) one GPU device, ordered by the CUDA device it owns
(:func:`daskgraph.cluster.cuda_specs.is_cuda_worker`), and any other a CPU device, all in
``/job:localhost/replica:0/task:0``.

This module is pure: it reads the worker records of ``Client.scheduler_info()``, and what the
workers said of themselves when asked (:func:`daskgraph.cluster.cuda_specs.cuda_worker_probe`).

>>> workers = {
...     "tcp://127.0.0.1:4001": {"name": "/job:localhost/replica:0/task:0/device:CPU:0",
...                              "resources": {"CPU": 1}, "host": "127.0.0.1"},
...     "tcp://127.0.0.1:4002": {"name": "/job:localhost/replica:0/task:0/device:GPU:0",
...                              "resources": {"GPU": 1, "VIRTUAL_GPU": 1},
...                              "host": "127.0.0.1"},
... }
>>> for d in devices_from_workers(workers):
...     print(d.name, d.kind, d.worker)
/job:localhost/replica:0/task:0/device:CPU:0 cpu tcp://127.0.0.1:4001
/job:localhost/replica:0/task:0/device:GPU:0 virtual-gpu tcp://127.0.0.1:4002
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from daskgraph.cluster.cuda_specs import cuda_worker_description, cuda_worker_device, is_cuda_worker
from daskgraph.errors import InvalidArgumentError
from daskgraph.framework.device import CPU, GPU, DeviceSpec

__all__ = [
    "VIRTUAL_GPU_RESOURCE",
    "Device",
    "claims_gpu",
    "devices_from_workers",
    "format_device_mapping",
]

#: resource a daskgraph worker carries when it is a virtual GPU (GPU code path over NumPy)
VIRTUAL_GPU_RESOURCE = "VIRTUAL_GPU"
DEFAULT_JOB = "localhost"


@dataclass(frozen=True, slots=True)
class Device:
    """One device of the cluster, as the placer and the lowering see it.

    Attributes
    ----------
    name
        Full canonical name, ``/job:J/replica:R/task:T/device:TYPE:N``.
    worker
        Address of the Dask worker that owns the device.
    kind
        ``"cpu"``, ``"gpu"`` (CuPy on a real GPU) or ``"virtual-gpu"`` (GPU kernels over NumPy).
    description
        What the device mapping prints after the name.
    worker_name
        The Dask name of that worker, which tasks are restricted to: the scheduler resolves it
        to the worker's current address, so a worker restarted under the same name takes the
        device's work again. ``None`` when the worker is known by its address only.
    memory_limit_bytes
        The memory limit of the device's worker (Dask's ``memory_limit``; 0: none known), as
        TensorFlow's ``list_devices`` reports one per device.
    """

    name: str
    worker: str
    kind: str
    description: str = ""
    worker_name: Any = None
    unusable: str = ""
    memory_limit_bytes: int = 0

    @property
    def restriction(self) -> Any:
        """What a task for this device is restricted to: the worker's name, else its address."""
        return self.worker if self.worker_name is None else self.worker_name

    @property
    def spec(self) -> DeviceSpec:
        """The device's name parsed as a :class:`~daskgraph.framework.device.DeviceSpec`."""
        return DeviceSpec.from_string(self.name)

    @property
    def device_type(self) -> str:
        """``"GPU"`` for a (virtual) GPU, else ``"CPU"``."""
        return GPU if self.kind in ("gpu", "virtual-gpu") else CPU

    @property
    def incarnation(self) -> int:
        """A number that changes when the device's worker is replaced (from its address), as
        TensorFlow's device incarnation."""
        return int.from_bytes(hashlib.sha1(self.worker.encode()).digest()[:8], "big", signed=True)

    @property
    def array_backend(self) -> str:
        """The array module its kernels run on: ``"cupy"`` or ``"numpy"``."""
        return "cupy" if self.kind == "gpu" else "numpy"


#: worker statuses (``distributed.core.Status`` names) of a worker that is leaving the cluster
_LEAVING = frozenset({"closing", "closing_gracefully", "closed", "failed"})


def devices_from_workers(
    workers: Mapping[str, Mapping[str, Any]],
    probes: Mapping[str, Mapping[str, Any]] | None = None,
) -> list[Device]:
    """Map Dask worker records (address -> info) to devices, sorted by name.

    Parameters
    ----------
    workers
        ``Client.scheduler_info()["workers"]``.
    probes
        Address -> what the worker's :func:`~daskgraph.cluster.cuda_specs.cuda_worker_probe` said,
        for the workers that were asked and answered: it tells dask-cuda's GPU workers apart
        exactly; a worker without an answer is judged by its record.

    Raises
    ------
    InvalidArgumentError
        When two workers claim the same device name.
    """
    probes = probes or {}
    devices = _list_devices(workers, probes)
    devices = [_check_kernels(d, workers[d.worker], probes.get(d.worker)) for d in devices]
    _check_distinct(devices)
    return sorted(devices, key=_device_order)


def _list_devices(
    workers: Mapping[str, Mapping[str, Any]], probes: Mapping[str, Mapping[str, Any]]
) -> list[Device]:
    devices: list[Device] = []
    plain: list[tuple[str, Mapping[str, Any]]] = []
    for address, info in workers.items():
        if info.get("status") in _LEAVING:
            continue  # a worker on its way out serves no device (its successor may be starting)
        name = str(info.get("name", ""))
        if name.startswith("/job:"):
            devices.append(_named_device(address, name, info))
        else:
            plain.append((address, info))
    plain.sort(key=lambda item: _plain_order(item, probes.get(item[0])))
    counts = {CPU: 0, GPU: 0}
    for address, info in plain:
        probe = probes.get(address)
        n_gpus = int((info.get("resources") or {}).get(GPU, 0))
        if is_cuda_worker(info, probe):  # no GPU resource: one GPU, the CUDA device it owns
            devices.append(_cuda_device(address, info, probe, counts[GPU]))
            counts[GPU] += 1
            continue
        for _ in range(n_gpus):
            devices.append(_plain_device(address, info, GPU, counts[GPU]))
            counts[GPU] += 1
        if not n_gpus:
            devices.append(_plain_device(address, info, CPU, counts[CPU]))
            counts[CPU] += 1
    return devices


def claims_gpu(info: Mapping[str, Any]) -> bool:
    """Whether a worker record claims a real GPU through its resources (a virtual GPU does
    not count): such a worker is asked whether it can run GPU kernels.

    >>> claims_gpu({"resources": {"GPU": 1}})
    True
    >>> claims_gpu({"resources": {"GPU": 1, "VIRTUAL_GPU": 1}})
    False
    """
    resources = info.get("resources") or {}
    return bool(resources.get(GPU)) and not resources.get(VIRTUAL_GPU_RESOURCE)


def _check_kernels(
    device: Device, info: Mapping[str, Any], probe: Mapping[str, Any] | None
) -> Device:
    """``device``, marked unusable when it is a real GPU whose worker said it has no CuPy."""
    if device.kind != "gpu" or probe is None or probe.get("cupy", True):
        return device
    resources = ", ".join(f"{k}={v}" for k, v in (info.get("resources") or {}).items())
    why = (
        f"its worker {info.get('name', device.worker)!r} ({device.worker}, resources: "
        f"{resources or 'none'}) cannot run GPU kernels: CuPy is not installed there. Install "
        "CuPy on that worker (daskgraph's cuda12/cuda13 extra), or start it without a GPU "
        "resource"
    )
    return replace(device, unusable=why)


def _check_distinct(devices: list[Device]) -> None:
    seen: dict[str, str] = {}
    for d in devices:
        if d.name in seen:
            raise InvalidArgumentError(
                f"Two workers claim device {d.name}: {seen[d.name]} and {d.worker}. "
                "Give every daskgraph worker a distinct device name.",
                device=d.name,
            )
        seen[d.name] = d.worker


def _plain_order(item: tuple[str, Mapping[str, Any]], probe: Mapping[str, Any] | None) -> tuple:
    """Host, then name (numbers in numeric order, as LocalCluster names workers 0, 1, ...);
    a dask-cuda GPU worker by the CUDA device it owns where that is known."""
    address, info = item
    name = str(info.get("name", ""))
    by_name = (0, int(name), "") if name.isdigit() else (1, 0, name)
    device = cuda_worker_device(info, probe) if is_cuda_worker(info, probe) else None
    if device is not None:
        by_name = (0, device, "")
    return (str(info.get("host", "")), by_name, address)


def _named_device(address: str, name: str, info: Mapping[str, Any]) -> Device:
    spec = DeviceSpec.from_string(name)
    resources = info.get("resources") or {}
    if spec.device_type == GPU:
        kind = "virtual-gpu" if resources.get(VIRTUAL_GPU_RESOURCE) else "gpu"
    else:
        kind = "cpu"
    return Device(
        spec.to_string(), address, kind, _describe(kind, spec, info), info.get("name"),
        memory_limit_bytes=_memory_limit(info),
    )  # fmt: skip


def _plain_device(address: str, info: Mapping[str, Any], device_type: str, index: int) -> Device:
    spec = DeviceSpec(DEFAULT_JOB, 0, 0, device_type, index)
    kind = "gpu" if device_type == GPU else "cpu"
    return Device(
        spec.to_string(), address, kind, _describe(kind, spec, info), info.get("name", address),
        memory_limit_bytes=_memory_limit(info),
    )  # fmt: skip


def _cuda_device(
    address: str, info: Mapping[str, Any], probe: Mapping[str, Any] | None, index: int
) -> Device:
    """The GPU device of a dask-cuda worker, described by its GPU as far as it is known."""
    spec = DeviceSpec(DEFAULT_JOB, 0, 0, GPU, index)
    description = _describe("gpu", spec, info, cuda_worker_description(info, probe))
    return Device(
        spec.to_string(), address, "gpu", description, info.get("name", address),
        memory_limit_bytes=_memory_limit(info),
    )  # fmt: skip


def _memory_limit(info: Mapping[str, Any]) -> int:
    limit = info.get("memory_limit")
    return int(limit) if isinstance(limit, (int, float)) and limit > 0 else 0


def _describe(kind: str, spec: DeviceSpec, info: Mapping[str, Any], gpu: str = "") -> str:
    threads = info.get("nthreads")
    where = f"worker: {info.get('name')}" if not str(info.get("name", "")).startswith("/") else ""
    parts = {
        "cpu": [f"threads: {threads}"] if threads else [],
        "gpu": [f"device: {spec.device_index}", *([gpu] if gpu else [])],
        "virtual-gpu": [f"device: {spec.device_index}", "name: virtual GPU (NumPy)"],
    }[kind]
    return ", ".join([*parts, where] if where else parts)


def _device_order(device: Device) -> tuple:
    spec = device.spec
    return (
        spec.job or "",
        spec.replica or 0,
        spec.task or 0,
        spec.device_type or "",
        spec.device_index or 0,
    )


def format_device_mapping(devices: list[Device]) -> str:
    """The ``Device mapping:`` block TensorFlow prints when logging placement.

    >>> print(format_device_mapping([Device("/job:localhost/replica:0/task:0/device:CPU:0",
    ...                                     "tcp://127.0.0.1:1", "cpu", "threads: 2")]))
    Device mapping:
    /job:localhost/replica:0/task:0/device:CPU:0 -> threads: 2, address: tcp://127.0.0.1:1
    """
    lines = ["Device mapping:"]
    for d in devices:
        detail = f"{d.description}, address: {d.worker}" if d.description else d.worker
        lines.append(f"{d.name} -> {detail}")
    return "\n".join(lines)
