"""What integration tests ask of a cluster's workers: start a private cluster and its client,
kill a worker, wait for every device (and its nanny) to run again, read the compiled-step
counters, count the scheduler's transitions."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from typing import Any

from distributed import Client

from daskgraph.cluster.local import local_cluster
from daskgraph.runtime.worker.step_service import EXTENSION

__all__ = ["cluster_client", "kill", "step_counts", "transitions", "wait_for_devices"]


@contextlib.contextmanager
def cluster_client(workers: int, **options: Any) -> Iterator[Client]:
    """A client of a new :func:`~daskgraph.cluster.local.local_cluster` (``options``) once
    its ``workers`` workers have joined; both closed at the end of the block."""
    cluster = local_cluster(**options)
    client = Client(cluster, set_as_default=False)
    try:
        client.wait_for_workers(workers, timeout=60)
        yield client
    finally:
        client.close()
        cluster.close()


def kill(client: Client, address: str) -> None:
    """End the worker process at ``address`` at once (its nanny, if any, restarts it)."""
    try:
        client.run(os._exit, 1, workers=[address])
    except Exception:  # the worker's connection dies with it: expected
        pass


def wait_for_devices(client: Client, devices: int, nannies: int, timeout: float = 60) -> None:
    """Until ``devices`` workers run (counted by name), and so do ``nannies`` nannies.

    After a kill the dead worker may still be listed for a moment, so running workers are
    counted by name. A worker registers before its nanny has finished starting, and a nanny
    that is still starting does not restart a worker that dies (distributed's
    ``Nanny._on_worker_exit``): the next kill must wait for the nannies too.
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        workers = client.scheduler_info(n_workers=-1)["workers"].values()
        if len({w["name"] for w in workers if w.get("status") == "running"}) == devices:
            running = client.run(lambda dask_worker: dask_worker.status.name, nanny=True)
            if len(running) == nannies and set(running.values()) == {"running"}:
                return
        time.sleep(0.1)
    raise AssertionError(f"the workers did not come back within {timeout} s")


def transitions(client: Client) -> int:
    """How many task transitions the scheduler has made (every task makes several)."""
    return client.run_on_scheduler(lambda dask_scheduler: dask_scheduler.transition_counter)


def step_counts(client: Client) -> dict[str, dict[str, int]]:
    """Each worker's compiled-step counters, by device (the end of the worker's name)."""

    def counts(dask_worker):
        service = dask_worker.extensions.get(EXTENSION)
        return {} if service is None else dict(service.counts)

    by_address = client.run(counts)
    names = {w["id"]: a for a, w in client.scheduler_info()["workers"].items()}
    return {str(name)[-5:]: by_address[address] for name, address in names.items()}
