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

import asyncio
import importlib.util
import logging
import os
from collections.abc import Sequence
from typing import Any

import dask.config
from dask.utils import parse_timedelta
from distributed import Scheduler, SpecCluster, Worker
from distributed.deploy.cluster import Cluster
from distributed.deploy.subprocess import SubprocessWorker

from daskgraph.config import GPUOptions, virtual_gpu_count
from daskgraph.device import CPU, GPU, DeviceSpec
from daskgraph.gpus import GPUInfo, rotate, visible_gpus
from daskgraph.topology import VIRTUAL_GPU_RESOURCE

__all__ = [
    "DeviceCluster",
    "gpu_worker_envs",
    "local_cluster",
    "scheduler_spec",
    "worker_options",
    "worker_specs",
]

LOOPBACK = "127.0.0.1"


def _device_name(job: str, task: int, device_type: str, index: int) -> str:
    return DeviceSpec(job, 0, task, device_type, index).to_string()


def worker_specs(
    *,
    virtual_gpus: int = 0,
    gpus: Sequence[GPUInfo] = (),
    gpu_options: GPUOptions | None = None,
    cpu_threads: int | None = None,
    processes: bool = True,
    job: str = "localhost",
    task: int = 0,
    host: str = LOOPBACK,
    memory_limit: str | int = "auto",
) -> dict[str, dict[str, Any]]:
    """Worker specs for one task of a cluster: a CPU worker, one worker per (logical) GPU, and
    one per virtual GPU.

    Parameters
    ----------
    virtual_gpus
        Number of virtual GPU workers (the GPU code path over NumPy).
    gpus
        The physical GPUs to give workers to (see :func:`daskgraph.gpus.visible_gpus`). Each
        GPU worker is a process of its own whatever ``processes`` says, sees its GPU as device
        0 (``CUDA_VISIBLE_DEVICES`` rotated, as dask-cuda does), and sets up its memory from
        ``gpu_options`` when it starts (:mod:`daskgraph.gpu_worker`, a Dask preload).
        ``gpu_options.virtual_devices`` splits each GPU into logical GPUs, one worker each.
    gpu_options
        TensorFlow's GPU memory options (:class:`~daskgraph.config.GPUOptions`).
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
    specs = {
        _device_name(job, task, CPU, 0): _worker_spec(
            _device_name(job, task, CPU, 0), threads, {CPU: 1}, processes, host, memory_limit
        )
    }
    index = 0
    for env in gpu_worker_envs(gpus, gpu_options or GPUOptions()):
        name = _device_name(job, task, GPU, index)
        specs[name] = _worker_spec(name, 1, {GPU: 1}, True, host, memory_limit, env=env)
        index += 1
    for _ in range(virtual_gpus):
        name = _device_name(job, task, GPU, index)
        resources = {GPU: 1, VIRTUAL_GPU_RESOURCE: 1}
        specs[name] = _worker_spec(name, 1, resources, processes, host, memory_limit)
        index += 1
    return specs


def gpu_worker_envs(gpus: Sequence[GPUInfo], options: GPUOptions) -> list[dict[str, str]]:
    """The environment of each GPU worker, in device order: which GPU it sees and how it sets
    up its memory. One entry per physical GPU, or per logical GPU with ``virtual_devices``.

    >>> from daskgraph.gpus import GPUInfo
    >>> h100 = GPUInfo("0", "H100", 80 * 2**30)
    >>> envs = gpu_worker_envs([h100], GPUOptions(virtual_devices=[1024, 2048]))
    >>> [(e["CUDA_VISIBLE_DEVICES"], e["DASKGRAPH_GPU_MEMORY_LIMIT"]) for e in envs]
    [('0', '1073741824'), ('0', '2147483648')]
    """
    ids = [g.visible_id for g in gpus]
    allowed = [s.strip() for s in options.visible_device_list.split(",") if s.strip()]
    # TensorFlow's visible_device_list maps GPU:0, GPU:1, ... to the listed GPUs, in order
    order = [int(a) for a in allowed if int(a) < len(gpus)] if allowed else range(len(gpus))
    envs = []
    for position in order:
        gpu = gpus[position]
        if options.virtual_devices:
            limits = [mb * 2**20 for mb in options.virtual_devices]
        else:
            fraction = options.per_process_gpu_memory_fraction
            # pools take sizes in whole 512-byte blocks (RMM: 256, CuPy: 512): round down
            limits = [int(fraction * gpu.total_memory) // 512 * 512 if fraction else 0]
        for limit in limits:
            envs.append(
                {
                    "CUDA_VISIBLE_DEVICES": rotate(ids, position),
                    "DASKGRAPH_GPU_MEMORY_LIMIT": str(limit),
                    "DASKGRAPH_GPU_ALLOW_GROWTH": "1" if options.allow_growth else "0",
                    "DASKGRAPH_GPU_DESCRIPTION": gpu.describe(),
                }
            )
    return envs


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
    env: dict[str, str] | None = None,
) -> dict[str, Any]:
    """One worker's spec. A process worker is a Nanny started in a fresh interpreter
    (``SubprocessWorker``), so that scripts without an ``if __name__ == "__main__":`` guard
    (every TF1 program) can start the embedded cluster: nothing re-imports the user's script.
    A GPU worker (``env`` given) also gets its environment and the GPU set-up preload.
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
    kwargs = {**options, "silence_logs": logging.ERROR, "preload": ["daskgraph.worker_preload"]}
    if env is not None:
        kwargs.update(env=env, preload=["daskgraph.worker_preload", "daskgraph.gpu_worker"])
    return {
        "cls": SubprocessWorker,
        "options": {"worker_class": "distributed.Nanny", "name": name, "worker_kwargs": kwargs},
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
    gpus: Sequence[GPUInfo] | None = None,
    gpu_options: GPUOptions | None = None,
    cpu_threads: int | None = None,
    processes: bool | None = None,
    asynchronous: bool = False,
) -> SpecCluster:
    """Start the embedded cluster; unset arguments come from the ``daskgraph`` Dask config,
    and ``gpus`` from NVML (:func:`daskgraph.gpus.visible_gpus`: none without a driver)."""
    if virtual_gpus is None:
        virtual_gpus = virtual_gpu_count()
    if gpus is None:
        gpus = visible_gpus()
    if cpu_threads is None:
        cpu_threads = dask.config.get("daskgraph.local.cpu-threads")
    if processes is None:
        processes = bool(dask.config.get("daskgraph.local.processes"))
    workers = worker_specs(
        virtual_gpus=virtual_gpus,
        gpus=gpus,
        gpu_options=gpu_options,
        cpu_threads=cpu_threads,
        processes=processes,
    )
    return DeviceCluster(
        workers=workers,
        scheduler=scheduler_spec(),
        asynchronous=asynchronous,
        silence_logs="error",
        name="daskgraph-local",
    )


class DeviceCluster(SpecCluster):
    """The embedded cluster: a ``SpecCluster`` that leaves a restarting worker to its nanny.

    ``SpecCluster`` closes a worker whose name has been missing from the scheduler for
    ``distributed.deploy.lost-worker-timeout`` (15 s), checked once, 15 s after each removal.
    With process workers that die and are restarted by their nanny, that one check sooner or
    later lands in the half second a restart takes, and the cluster then kills the nanny
    (``SubprocessWorker.close``), so the device never comes back. Here the check repeats
    instead while the worker's nanny process is alive; a worker whose process is gone (or an
    in-process worker, which nothing restarts) is closed as ``SpecCluster`` closes it.
    """

    def _update_worker_status(self, op: str, msg: Any) -> None:
        if op != "remove":
            super()._update_worker_status(op, msg)
            return
        name = self.scheduler_info["workers"][msg]["name"]
        delay = parse_timedelta(dask.config.get("distributed.deploy.lost-worker-timeout"))
        loop = asyncio.get_running_loop()

        def check() -> None:
            if name not in self.workers or _listed(self.scheduler_info, name):
                return  # closed already, or back
            if _nanny_alive(self.workers[name]):
                loop.call_later(delay, check)  # restarting: look again later
                return
            self._futures.add(asyncio.ensure_future(self.workers[name].close()))
            del self.workers[name]

        loop.call_later(delay, check)
        Cluster._update_worker_status(self, op, msg)  # SpecCluster's own check is replaced


def _listed(scheduler_info: dict[str, Any], name: Any) -> bool:
    return any(w["name"] == name for w in scheduler_info.get("workers", {}).values())


def _nanny_alive(worker: Any) -> bool:
    """Whether ``worker`` (a spec worker object) is a subprocess that still runs: a nanny
    process, which restarts the Dask worker it watches."""
    process = getattr(worker, "process", None) if isinstance(worker, SubprocessWorker) else None
    return process is not None and process.returncode is None
