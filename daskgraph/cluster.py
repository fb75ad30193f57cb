"""The embedded local cluster, described as data: one Dask worker spec per device.

As ``distributed.deploy.spec`` and dask-cuda's ``worker_spec`` do it, :func:`worker_specs`
returns plain dictionaries (one per device: the worker's class and options) and
:func:`local_cluster` only fills in defaults and starts a ``SpecCluster`` from them. Every
worker stands for one device: it is named by the device's full name and carries a resource
(``CPU: 1`` or ``GPU: 1``, plus ``VIRTUAL_GPU: 1`` for a virtual GPU). Everything listens on
127.0.0.1 only, the dashboard included.

>>> specs = worker_specs(virtual_gpus=2, cpu_threads=4, processes=False)
>>> for name, spec in specs.items():
...     print(name, spec["options"]["resources"], spec["options"]["nthreads"])
/job:localhost/replica:0/task:0/device:CPU:0 {'CPU': 1} 4
/job:localhost/replica:0/task:0/device:GPU:0 {'GPU': 1, 'VIRTUAL_GPU': 1} 1
/job:localhost/replica:0/task:0/device:GPU:1 {'GPU': 1, 'VIRTUAL_GPU': 1} 1
"""

from __future__ import annotations

import importlib.util
import logging
import os
from typing import Any

import dask.config
from distributed import Scheduler, SpecCluster, Worker
from distributed.deploy.subprocess import SubprocessWorker

from daskgraph.config import virtual_gpu_count
from daskgraph.device import CPU, GPU, DeviceSpec
from daskgraph.topology import VIRTUAL_GPU_RESOURCE

__all__ = ["local_cluster", "scheduler_spec", "worker_options", "worker_specs"]

LOOPBACK = "127.0.0.1"


def _device_name(job: str, task: int, device_type: str, index: int) -> str:
    return DeviceSpec(job, 0, task, device_type, index).to_string()


def worker_specs(
    *,
    virtual_gpus: int = 0,
    cpu_threads: int | None = None,
    processes: bool = True,
    job: str = "localhost",
    task: int = 0,
    host: str = LOOPBACK,
    memory_limit: str | int = "auto",
) -> dict[str, dict[str, Any]]:
    """Worker specs for one task of a cluster: a CPU worker plus one worker per virtual GPU.

    Parameters
    ----------
    virtual_gpus
        Number of virtual GPU workers (the GPU code path over NumPy).
    cpu_threads
        Threads of the CPU worker; all cores by default.
    processes
        Run each worker in its own process (a ``Nanny``) or in this process.
    job, task
        The TensorFlow job and task the devices belong to.
    host
        Interface the workers listen on (loopback by default).
    """
    if virtual_gpus < 0:
        raise ValueError(f"virtual_gpus must be >= 0; got {virtual_gpus}")
    threads = cpu_threads or os.cpu_count() or 1
    devices = [(_device_name(job, task, CPU, 0), threads, {CPU: 1})]
    devices += [
        (_device_name(job, task, GPU, i), 1, {GPU: 1, VIRTUAL_GPU_RESOURCE: 1})
        for i in range(virtual_gpus)
    ]
    return {
        name: _worker_spec(name, nthreads, resources, processes, host, memory_limit)
        for name, nthreads, resources in devices
    }


def worker_options(spec: dict[str, Any]) -> dict[str, Any]:
    """The Dask worker options of a spec from :func:`worker_specs`, whatever runs the worker.

    >>> (spec,) = worker_specs(processes=True, cpu_threads=2).values()
    >>> worker_options(spec)["nthreads"], worker_options(spec)["resources"]
    (2, {'CPU': 1})
    """
    options = spec["options"]
    return options.get("worker_kwargs", options)


def _worker_spec(
    name: str,
    nthreads: int,
    resources: dict[str, int],
    processes: bool,
    host: str,
    memory_limit: str | int,
) -> dict[str, Any]:
    """One worker's spec. A process worker is a Nanny started in a fresh interpreter
    (``SubprocessWorker``), so that scripts without an ``if __name__ == "__main__":`` guard
    (every TF1 program) can start the embedded cluster: nothing re-imports the user's script.
    """
    options = {
        "name": name,
        "nthreads": nthreads,
        "resources": resources,
        "host": host,
        "dashboard_address": f"{host}:0",
        "memory_limit": memory_limit,
    }
    if not processes:
        return {"cls": Worker, "options": options}
    return {
        "cls": SubprocessWorker,
        "options": {
            "worker_class": "distributed.Nanny",
            "name": name,
            "worker_kwargs": {**options, "silence_logs": logging.ERROR},
        },
    }


def scheduler_spec(host: str = LOOPBACK, dashboard_address: str | None = None) -> dict[str, Any]:
    """The scheduler's spec: listening on ``host``, dashboard only where Bokeh is installed."""
    if dashboard_address is None:
        dashboard_address = dask.config.get("daskgraph.local.dashboard-address")
    # the scheduler serves HTTP (health, metrics, and the dashboard where Bokeh is installed)
    options: dict[str, Any] = {"host": host, "port": 0, "dashboard_address": dashboard_address}
    if importlib.util.find_spec("bokeh") is None:
        options["dashboard"] = False
    return {"cls": Scheduler, "options": options}


def local_cluster(
    *,
    virtual_gpus: int | None = None,
    cpu_threads: int | None = None,
    processes: bool | None = None,
    asynchronous: bool = False,
) -> SpecCluster:
    """Start the embedded cluster; unset arguments come from the ``daskgraph`` Dask config."""
    if virtual_gpus is None:
        virtual_gpus = virtual_gpu_count()
    if cpu_threads is None:
        cpu_threads = dask.config.get("daskgraph.local.cpu-threads")
    if processes is None:
        processes = bool(dask.config.get("daskgraph.local.processes"))
    workers = worker_specs(virtual_gpus=virtual_gpus, cpu_threads=cpu_threads, processes=processes)
    return SpecCluster(
        workers=workers,
        scheduler=scheduler_spec(),
        asynchronous=asynchronous,
        silence_logs="error",
        name="daskgraph-local",
    )
