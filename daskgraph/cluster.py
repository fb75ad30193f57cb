"""The embedded local cluster, described as data: one Dask worker spec per device.

As ``distributed.deploy.spec`` and dask-cuda's ``worker_spec`` do it, :func:`worker_specs`
returns plain dictionaries (one per device: the worker's class and options) and
:func:`local_cluster` only fills in defaults and starts an :class:`EmbeddedCluster`. Every
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
from distributed import Scheduler, SpecCluster, Worker
from distributed.deploy.subprocess import SubprocessWorker
from distributed.system import MEMORY_LIMIT

from daskgraph.config import GPUOptions, virtual_gpu_count
from daskgraph.device import CPU, GPU, DeviceSpec
from daskgraph.gpus import GPUInfo, rotate, visible_gpus
from daskgraph.topology import VIRTUAL_GPU_RESOURCE

__all__ = [
    "EmbeddedCluster",
    "gpu_worker_envs",
    "local_cluster",
    "process_environment",
    "scheduler_spec",
    "worker_options",
    "worker_specs",
]

LOOPBACK = "127.0.0.1"
#: the nanny class of process workers (:mod:`daskgraph.nanny_setup`)
NANNY = "daskgraph.nanny_setup.DeviceNanny"


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
    memory_limit: str | int | None = None,
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
    memory_limit
        Host memory of each worker (Dask's spill/pause/terminate thresholds). By default the
        machine's memory is shared out evenly, so that the limits add up to at most the
        machine's memory (as dask-cuda's ``LocalCUDACluster`` does).
    """
    if virtual_gpus < 0:
        raise ValueError(f"virtual_gpus must be >= 0; got {virtual_gpus}")
    threads = cpu_threads or os.cpu_count() or 1
    if memory_limit is None:
        n_gpus = len(gpu_worker_envs(gpus, gpu_options or GPUOptions()))
        memory_limit = MEMORY_LIMIT // (1 + n_gpus + virtual_gpus)
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


def process_environment(nthreads: int) -> dict[str, str]:
    """The environment of a worker process: BLAS with the worker's threads, and glibc's
    allocator keeping large blocks in the heap.

    Dask's nanny starts workers with one BLAS thread (many small tasks share a worker's
    cores) and ``MALLOC_TRIM_THRESHOLD_=65536``; a daskgraph worker stands for one device and
    runs one partition at a time, which should use the device's threads, as NumPy does in a
    plain process. Dask's trim threshold also switches off glibc's dynamic mmap threshold, so
    every array of more than 128 KiB would be a fresh ``mmap``, page-faulted in as it is
    written (a 2000x2000 MatMul 8-10% slower than in a plain process): here the mmap threshold
    is ``daskgraph.worker-malloc-mmap-threshold`` (32 MiB) and the trim threshold twice that,
    what glibc's dynamic threshold reaches by itself. These variables must be set before the
    worker process starts; the nanny :class:`daskgraph.nanny_setup.DeviceNanny` sees to that.

    >>> env = process_environment(4)
    >>> env["OMP_NUM_THREADS"], env["MALLOC_MMAP_THRESHOLD_"]
    ('4', '33554432')
    """
    env = {var: str(nthreads) for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS")}
    env["MKL_NUM_THREADS"] = str(nthreads)
    threshold = dask.config.get("daskgraph.worker-malloc-mmap-threshold")
    if threshold is not None:
        threshold = min(int(threshold), 32 * 2**20)
        env["MALLOC_MMAP_THRESHOLD_"] = str(threshold)
        env["MALLOC_TRIM_THRESHOLD_"] = str(2 * threshold)
    return env


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
    Its environment is :func:`process_environment`; a GPU worker (``env`` given) also gets
    its GPU's environment and the GPU set-up preload.
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
    preload = ["daskgraph.worker_preload"]
    if env is not None:
        preload.append("daskgraph.gpu_worker")
    kwargs = {
        **options,
        "silence_logs": logging.ERROR,
        "preload": preload,
        "env": {**process_environment(nthreads), **(env or {})},
    }
    return {
        "cls": SubprocessWorker,
        "options": {"worker_class": NANNY, "name": name, "worker_kwargs": kwargs},
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
) -> EmbeddedCluster:
    """Start an embedded cluster; unset arguments come from the ``daskgraph`` Dask config,
    and ``gpus`` from NVML (:func:`daskgraph.gpus.visible_gpus`: none without a driver).
    Sessions share one per process (:mod:`daskgraph.embedded`); this starts a private one."""
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
    return EmbeddedCluster(workers, scheduler_spec())


class EmbeddedCluster:
    """A local cluster described as data: a scheduler, and one worker per device spec.

    The scheduler runs in a ``SpecCluster`` (which gives the event loop, the dashboard link
    and ``Client(cluster)``); the device workers are started from their specs and closed here.
    A process worker is a nanny, which restarts its worker when it dies; the cluster leaves
    that to the nanny. (A ``SpecCluster`` managing the workers itself closes a worker whose
    name has been missing for ``distributed.deploy.lost-worker-timeout``, checked once, 15 s
    after each removal; with a nanny restarting its worker after every kill, that one check
    sooner or later lands in the half second a restart takes, and the device never comes
    back.) A worker whose nanny process died is gone for good, as on a real cluster.

    Parameters
    ----------
    worker_spec
        Device name -> worker spec (:func:`worker_specs`).
    scheduler
        The scheduler's spec (:func:`scheduler_spec`).
    """

    def __init__(self, worker_spec: dict[str, dict[str, Any]], scheduler: dict[str, Any]):
        self.worker_spec = worker_spec
        self.workers: dict[str, Any] = {}
        self._cluster = SpecCluster(
            workers={}, scheduler=scheduler, silence_logs="error", name="daskgraph-local"
        )
        try:
            self.sync(self._start_workers)
        except BaseException:
            self.close()
            raise

    async def _start_workers(self) -> None:
        address = self.scheduler_address
        for name, spec in self.worker_spec.items():
            self.workers[name] = spec["cls"](address, **spec["options"])
        await asyncio.gather(*(_started(w) for w in self.workers.values()))

    @property
    def scheduler_address(self) -> str:
        return self._cluster.scheduler_address

    @property
    def scheduler(self) -> Any:
        """The scheduler (an in-process ``distributed.Scheduler``)."""
        return self._cluster.scheduler

    @property
    def dashboard_link(self) -> str:
        return self._cluster.dashboard_link

    @property
    def loop(self) -> Any:
        return self._cluster.loop

    def sync(self, func: Any, *args: Any, **kwargs: Any) -> Any:
        """Run coroutine function ``func`` on the cluster's event loop and wait for it."""
        return self._cluster.sync(func, *args, **kwargs)

    def close(self, timeout: float | None = None) -> None:
        """Close the device workers, then the scheduler."""
        if self.workers:
            workers, self.workers = list(self.workers.values()), {}
            try:
                self.sync(_close_all, workers, callback_timeout=timeout)
            except Exception:  # closing anyway: the scheduler goes next
                logging.getLogger("daskgraph.cluster").debug("closing workers", exc_info=True)
        self._cluster.close(timeout=timeout)

    def __getattr__(self, name: str) -> Any:
        # everything else (status, asynchronous, ...; what ``Client(cluster)`` reads) is the
        # scheduler's cluster's
        if name.startswith("__") or name == "_cluster":
            raise AttributeError(name)
        return getattr(self._cluster, name)

    def __enter__(self) -> EmbeddedCluster:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<daskgraph.EmbeddedCluster {self.scheduler_address} {list(self.worker_spec)}>"


async def _started(worker: Any) -> Any:
    return await worker


async def _close_all(workers: list[Any]) -> None:
    await asyncio.gather(*(w.close() for w in workers), return_exceptions=True)
