"""Start-up of a daskgraph process worker (a Dask preload): wait until its name is free.

(Its close is :func:`daskgraph.cluster.shutdown.dask_teardown`'s, re-exported here as the preload's
teardown hook: the closing worker's process logs nothing more to the user's stderr.)

A worker stands for one device and is named by it. When a nanny restarts a worker that died,
the new worker may come up before the scheduler has finished removing the dead one; it would
then be refused ("name taken") and fail to start. This preload, run before the worker
registers, waits until the scheduler no longer lists a worker of that name. (The worker's
allocator and BLAS threads are set by its environment: see
:func:`daskgraph.cluster.local.process_environment`.)
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from daskgraph.cluster.shutdown import dask_teardown

__all__ = ["dask_setup", "dask_teardown", "name_is_free"]

logger = logging.getLogger("daskgraph.cluster.worker_preload")

#: seconds to wait for the scheduler to let go of a dead worker's name
NAME_WAIT = 30.0


def name_is_free(identity: dict[str, Any], name: str) -> bool:
    """Whether no worker in a scheduler ``identity()`` answer carries ``name``.

    >>> name_is_free({"workers": {"tcp://a:1": {"name": "/job:x/replica:0/task:0/device:CPU:0"}}},
    ...              "/job:x/replica:0/task:0/device:GPU:0")
    True
    """
    return all(str(w.get("name")) != name for w in identity.get("workers", {}).values())


async def dask_setup(worker: Any) -> None:
    """Dask's preload hook: wait (up to ``NAME_WAIT`` seconds) until the scheduler no longer
    lists a worker of this worker's name, so that a restarted worker can register under it."""
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
