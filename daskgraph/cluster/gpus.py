"""This host's NVIDIA GPUs, found through NVML without creating a CUDA context.

The embedded cluster asks :func:`visible_gpus` how many GPU workers to start. It honours
``CUDA_VISIBLE_DEVICES`` (indices or ``GPU-…`` UUIDs), reads names, memory and PCI bus ids
from NVML (the ``nvidia-ml-py`` package that dask-cuda depends on), and returns plain
:class:`GPUInfo` records. On a machine without the NVIDIA driver it returns ``[]`` without
importing anything GPU-related.

>>> parse_visible_devices("1,0", 4)
['1', '0']
>>> parse_visible_devices(None, 2)
['0', '1']
>>> parse_visible_devices("", 2)
[]
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass

__all__ = ["GPUInfo", "parse_visible_devices", "rotate", "visible_gpus"]


@dataclass(frozen=True, slots=True)
class GPUInfo:
    """One physical GPU: its id as CUDA_VISIBLE_DEVICES names it, and what NVML reports."""

    visible_id: str
    name: str
    total_memory: int
    pci_bus_id: str = ""

    def describe(self) -> str:
        """TensorFlow's one-line description of the GPU (name, memory, bus id)."""
        gib = self.total_memory / 2**30
        bus = f", pci bus id: {self.pci_bus_id}" if self.pci_bus_id else ""
        return f"name: {self.name}, memory: {gib:.1f} GiB{bus}"


def parse_visible_devices(value: str | None, count: int) -> list[str]:
    """The GPU ids a process may use: ``CUDA_VISIBLE_DEVICES`` if set, else all ``count``."""
    if value is None:
        return [str(i) for i in range(count)]
    return [part.strip() for part in value.split(",") if part.strip()]


def rotate(ids: list[str], index: int) -> str:
    """``CUDA_VISIBLE_DEVICES`` for the worker of GPU ``index``: its GPU first, so that inside
    the worker it is device 0, as dask-cuda does (``dask_cuda.utils.cuda_visible_devices``).

    >>> rotate(["0", "1", "2"], 1)
    '1,2,0'
    """
    return ",".join(ids[index:] + ids[:index])


def _driver_present() -> bool:
    return os.path.exists("/proc/driver/nvidia/version") or shutil.which("nvidia-smi") is not None


def visible_gpus() -> list[GPUInfo]:
    """The GPUs this process may use, in ``CUDA_VISIBLE_DEVICES`` order ([] without a driver)."""
    if not _driver_present():
        return []
    try:
        import pynvml  # nvidia-ml-py; imported only where an NVIDIA driver is present
    except ImportError:
        return []
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:
        return []
    try:
        count = pynvml.nvmlDeviceGetCount()
        found = []
        for visible_id in parse_visible_devices(os.environ.get("CUDA_VISIBLE_DEVICES"), count):
            # as CUDA does, the list ends at the first entry that names no device ("-1", ...)
            try:
                if visible_id.startswith(("GPU-", "MIG-")):
                    handle = pynvml.nvmlDeviceGetHandleByUUID(visible_id)
                elif visible_id.isdigit() and int(visible_id) < count:
                    handle = pynvml.nvmlDeviceGetHandleByIndex(int(visible_id))
                else:
                    break
            except pynvml.NVMLError:
                break
            name = pynvml.nvmlDeviceGetName(handle)
            memory = pynvml.nvmlDeviceGetMemoryInfo(handle).total
            bus = pynvml.nvmlDeviceGetPciInfo(handle).busId
            found.append(
                GPUInfo(
                    visible_id,
                    name.decode() if isinstance(name, bytes) else str(name),
                    int(memory),
                    bus.decode() if isinstance(bus, bytes) else str(bus),
                )
            )
        return found
    finally:
        pynvml.nvmlShutdown()
