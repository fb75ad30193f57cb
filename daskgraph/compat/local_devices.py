"""What ``tf.test`` says of this machine's GPUs: ``is_gpu_available``, ``gpu_device_name``,
``is_built_with_cuda`` and their kin.

Its one job is to answer those questions as a ``Session()`` on the embedded cluster would
see the machine, without starting it: the NVIDIA GPUs NVML finds (``CUDA_VISIBLE_DEVICES``
honoured, :mod:`daskgraph.cluster.gpus`) and the virtual GPUs the ``daskgraph.virtual-gpus`` Dask
config key asks for (``DASK_DASKGRAPH__VIRTUAL_GPUS``). A virtual GPU runs the GPU kernels
over NumPy: it counts as a GPU, but not as a CUDA one (``cuda_only=True``), and it has no
compute capability (TensorFlow's ``(0, 0)`` for a device that reports none).

>>> import dask
>>> with dask.config.set({"daskgraph.virtual-gpus": 2}):
...     is_gpu_available(), gpu_device_name()
(True, '/device:GPU:0')
>>> with dask.config.set({"daskgraph.virtual-gpus": 2}):
...     is_gpu_available(min_cuda_compute_capability=(3, 5)) == bool(visible_gpus())
True
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence

from daskgraph.cluster.gpus import GPUInfo, visible_gpus
from daskgraph.config import virtual_gpu_count

__all__ = [
    "compute_capability",
    "gpu_device_name",
    "is_built_with_cuda",
    "is_built_with_gpu_support",
    "is_built_with_rocm",
    "is_built_with_xla",
    "is_gpu_available",
]


def compute_capability(gpu: GPUInfo) -> tuple[int, int]:
    """The CUDA compute capability of a GPU NVML found, ``(0, 0)`` where NVML cannot say."""
    try:
        import pynvml  # nvidia-ml-py; only reached where visible_gpus() found a GPU
    except ImportError:
        return (0, 0)
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:
        return (0, 0)
    try:
        if gpu.visible_id.startswith(("GPU-", "MIG-")):
            handle = pynvml.nvmlDeviceGetHandleByUUID(gpu.visible_id)
        else:
            handle = pynvml.nvmlDeviceGetHandleByIndex(int(gpu.visible_id))
        major, minor = pynvml.nvmlDeviceGetCudaComputeCapability(handle)
        return (int(major), int(minor))
    except (pynvml.NVMLError, ValueError):
        return (0, 0)
    finally:
        pynvml.nvmlShutdown()


def is_gpu_available(
    cuda_only: bool = False, min_cuda_compute_capability: Sequence[int] | None = None
) -> bool:
    """Whether a session would have a GPU: an NVIDIA GPU, or (unless ``cuda_only``) a virtual
    one; with ``min_cuda_compute_capability`` ``(major, minor)``, one of at least that."""
    wanted = tuple(min_cuda_compute_capability or ())
    gpus = visible_gpus()
    if any(not wanted or compute_capability(g) >= wanted for g in gpus):
        return True
    return not cuda_only and virtual_gpu_count() > 0 and (0, 0) >= wanted


def gpu_device_name() -> str:
    """``'/device:GPU:0'`` where a session would have a (real or virtual) GPU, else ``''``."""
    return "/device:GPU:0" if visible_gpus() or virtual_gpu_count() > 0 else ""


def is_built_with_cuda() -> bool:
    """Whether CuPy, which daskgraph's kernels run on NVIDIA GPUs, is installed."""
    return importlib.util.find_spec("cupy") is not None


def is_built_with_gpu_support() -> bool:
    """Whether GPU kernels can run here: CuPy is installed, or virtual GPUs are configured."""
    return is_built_with_cuda() or virtual_gpu_count() > 0


def is_built_with_rocm() -> bool:
    """False: daskgraph has no ROCm kernels."""
    return False


def is_built_with_xla() -> bool:
    """False: daskgraph does not compile graphs with XLA."""
    return False
