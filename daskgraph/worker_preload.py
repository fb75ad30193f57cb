"""Start-up of a daskgraph process worker (a Dask preload): its allocator, and its name.

A worker stands for one device and is named by it. When a nanny restarts a worker that died,
the new worker may come up before the scheduler has finished removing the dead one; it would
then be refused ("name taken") and fail to start. This preload, run before the worker
registers, waits until the scheduler no longer lists a worker of that name.

It also gives back to the worker glibc's handling of large blocks, which Dask's nanny turns
off (see :func:`keep_large_blocks_in_the_heap`).
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import logging
import sys
import time
from typing import Any

import dask.config

__all__ = ["dask_setup", "keep_large_blocks_in_the_heap", "name_is_free"]

logger = logging.getLogger("daskgraph.worker_preload")

#: seconds to wait for the scheduler to let go of a dead worker's name
NAME_WAIT = 30.0


def name_is_free(identity: dict[str, Any], name: str) -> bool:
    """Whether no worker in a scheduler ``identity()`` answer carries ``name``.

    >>> name_is_free({"workers": {"tcp://a:1": {"name": "/job:x/replica:0/task:0/device:CPU:0"}}},
    ...              "/job:x/replica:0/task:0/device:GPU:0")
    True
    """
    return all(str(w.get("name")) != name for w in identity.get("workers", {}).values())


#: ``mallopt`` parameters (glibc's malloc.h)
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3


def keep_large_blocks_in_the_heap(threshold: int | None) -> bool:
    """Serve blocks below ``threshold`` bytes from the heap, and keep up to twice that free.

    Dask's nanny starts workers with ``MALLOC_TRIM_THRESHOLD_=65536``, which also switches off
    glibc's dynamic mmap threshold: every array of more than 128 KiB is then a fresh ``mmap``,
    page-faulted in as it is written and unmapped when freed. A partition making one 16 MB
    array per op paid about 900 page faults per op (a 2000x2000 MatMul 8-10% slower than in a
    plain process, which faults about 60 times). This sets what glibc's dynamic threshold
    would reach by itself in a plain process: mmap threshold ``threshold`` (at most 32 MiB),
    trim threshold twice that. Returns whether it was applied (glibc on Linux only); ``None``
    leaves Dask's setting.
    """
    if threshold is None or not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # not glibc (musl has no mallopt)
        return False
    threshold = min(int(threshold), 32 * 2**20)
    return bool(mallopt(_M_MMAP_THRESHOLD, threshold)) and bool(
        mallopt(_M_TRIM_THRESHOLD, 2 * threshold)
    )


async def dask_setup(worker: Any) -> None:
    keep_large_blocks_in_the_heap(dask.config.get("daskgraph.worker-malloc-mmap-threshold"))
    name = str(worker.name)
    deadline = time.monotonic() + NAME_WAIT
    while time.monotonic() < deadline:
        try:
            identity = await worker.scheduler.identity(n_workers=-1)
        except Exception:  # the scheduler is not up yet: registration will wait for it
            return
        if name_is_free(identity, name):
            return
        await asyncio.sleep(0.1)
    logger.warning("the scheduler still lists a worker named %s; registering anyway", name)
