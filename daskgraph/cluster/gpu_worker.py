"""Set-up of a GPU worker's memory without dask-cuda, run in the worker process when it starts
(a Dask preload).

Where dask-cuda is installed (the ``cuda12``/``cuda13`` extras) the embedded cluster's GPU
workers are dask-cuda workers, whose ``RMMSetup`` plugin does this
(:mod:`daskgraph.cluster.cuda_specs`). Without it, and for workers started by hand with
``--preload daskgraph.cluster.gpu_worker`` (the ``deploy/`` recipes), a GPU worker gets
``preload=["daskgraph.cluster.gpu_worker"]`` and environment variables derived from the session's
:class:`~daskgraph.config.GPUOptions` (:func:`daskgraph.cluster.local.gpu_worker_env`):

``DASKGRAPH_GPU_MEMORY_LIMIT``
    bytes this worker may use on its GPU (0: no cap) — ``per_process_gpu_memory_fraction``
    times the device's memory, or a logical GPU's ``virtual_devices`` limit;
``DASKGRAPH_GPU_ALLOW_GROWTH``
    ``1`` to grow the memory pool on demand; ``0`` to reserve the capped size up front, as
    TensorFlow does without ``allow_growth`` (with no cap, the pool grows on demand all the
    same: daskgraph never grabs a whole GPU by default);
``DASKGRAPH_GPU_DESCRIPTION``
    what the device mapping prints for this GPU.

With RMM installed, the worker gets an RMM pool bounded by the limit and CuPy allocates from
it; otherwise CuPy's own pool is capped. Exceeding the cap raises an out-of-memory error in
the kernel, which the executor turns into
:class:`~daskgraph.errors.ResourceExhaustedError`; the worker keeps working.
"""

from __future__ import annotations

import logging
import os
from typing import Any

__all__ = ["configure_memory", "dask_setup", "describe", "memory_settings"]

logger = logging.getLogger("daskgraph.cluster.gpu_worker")

_INITIAL_GROWTH_POOL = 256 * 2**20


def memory_settings(environ: dict[str, str] | None = None) -> tuple[int, bool]:
    """(limit in bytes, allow_growth) from the worker's environment.

    >>> memory_settings({"DASKGRAPH_GPU_MEMORY_LIMIT": "1024", "DASKGRAPH_GPU_ALLOW_GROWTH": "1"})
    (1024, True)
    >>> memory_settings({})
    (0, False)
    """
    environ = os.environ if environ is None else environ
    limit = int(environ.get("DASKGRAPH_GPU_MEMORY_LIMIT", "0") or 0)
    growth = environ.get("DASKGRAPH_GPU_ALLOW_GROWTH", "0") == "1"
    return limit, growth


def configure_memory(limit: int, allow_growth: bool) -> str:
    """Set up this process's GPU memory pool; returns which allocator was set up."""
    try:
        import rmm
        from rmm.allocators.cupy import rmm_cupy_allocator
    except ImportError:
        rmm = None
    import cupy

    if rmm is not None:
        if limit:
            initial = min(_INITIAL_GROWTH_POOL, limit) if allow_growth else limit
            rmm.reinitialize(
                pool_allocator=True, initial_pool_size=initial, maximum_pool_size=limit
            )
        else:
            rmm.reinitialize(pool_allocator=True, initial_pool_size=_INITIAL_GROWTH_POOL)
        cupy.cuda.set_allocator(rmm_cupy_allocator)
        return "rmm"
    pool = cupy.get_default_memory_pool()
    if limit:
        pool.set_limit(size=limit)
        if not allow_growth:  # reserve the capped size now, then hand it back to the pool
            block = pool.malloc(limit)
            del block
    return "cupy"


def describe() -> str:
    """What the device mapping prints for this worker's GPU."""
    return os.environ.get("DASKGRAPH_GPU_DESCRIPTION", "")


def dask_setup(worker: Any) -> None:
    """Dask preload hook: set up the GPU memory of this worker before it runs anything."""
    limit, growth = memory_settings()
    allocator = configure_memory(limit, growth)
    logger.info(
        "GPU worker %s: %s pool, limit %s, allow_growth=%s",
        worker.name,
        allocator,
        limit or "none",
        growth,
    )
