"""The embedded local cluster, described as data: one Dask worker spec per device.

As ``distributed.deploy.spec`` and dask-cuda's ``worker_spec`` do it, :func:`worker_specs`
returns plain dictionaries (one per device: the worker's class and options) and
:func:`local_cluster` only fills in defaults and starts an :class:`EmbeddedCluster`. Every
worker stands for one device: it is named by the device's full name and carries a resource
(``CPU: 1`` or ``GPU: 1``, plus ``VIRTUAL_GPU: 1`` for a virtual GPU). Everything listens on
127.0.0.1 only, the dashboard included, over Dask's TCP (TLS by default) or UCX
(``daskgraph.local.protocol``, :mod:`daskgraph.cluster.protocols`).

A real GPU's worker is a dask-cuda worker where dask-cuda is installed: its options come from
:mod:`daskgraph.cluster.cuda_specs` (``GPUOptions`` as an RMM pool, CPU affinity, the CUDA context
created at start), carried as plain data to a :class:`~daskgraph.cluster.nanny_setup.DeviceNanny`,
which builds dask-cuda's plugins in its own process. Without dask-cuda the worker sets up its
memory itself (:mod:`daskgraph.cluster.gpu_worker`), and the first such spec of a process warns.

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
import warnings
from collections.abc import Sequence
from typing import Any

import dask.config
from distributed import Scheduler, SpecCluster, Worker
from distributed.deploy.subprocess import SubprocessWorker
from distributed.system import MEMORY_LIMIT

from daskgraph.cluster.cuda_specs import (
    CudaWorker,
    cuda_worker_options,
    dask_cuda_installed,
    dask_cuda_worker_options,
)
from daskgraph.cluster.footprint import scheduler_extensions, shorten_dask_logs, worker_settings
from daskgraph.cluster.gpus import GPUInfo, visible_gpus
from daskgraph.cluster.local_security import CONFIG_KEY as SECURITY_KEY
from daskgraph.cluster.local_security import forget, local_security, remember
from daskgraph.cluster.protocols import UCXSwitches, cluster_protocol, transport_settings
from daskgraph.cluster.shutdown import close_workers, quiet_close
from daskgraph.cluster.tls import https_settings, security_fields
from daskgraph.cluster.topology import VIRTUAL_GPU_RESOURCE
from daskgraph.config import GPUOptions, virtual_gpu_count, worker_template
from daskgraph.framework.device import CPU, GPU, DeviceSpec

__all__ = [
    "EmbeddedCluster",
    "gpu_worker_env",
    "gpu_worker_spec",
    "local_cluster",
    "process_environment",
    "scheduler_spec",
    "worker_options",
    "worker_specs",
]

LOOPBACK = "127.0.0.1"
#: the nanny class of process workers (:mod:`daskgraph.cluster.nanny_setup`)
NANNY = "daskgraph.cluster.nanny_setup.DeviceNanny"
#: the preload of every process worker (:mod:`daskgraph.cluster.worker_preload`)
WORKER_PRELOAD = "daskgraph.cluster.worker_preload"
#: the preload of a GPU worker set up without dask-cuda (:mod:`daskgraph.cluster.gpu_worker`)
GPU_PRELOAD = "daskgraph.cluster.gpu_worker"
#: glibc's mmap threshold of process workers (bytes; ``MALLOC_MMAP_THRESHOLD_``), with a trim
#: threshold of twice it: blocks below it come from the heap and are reused, as glibc's dynamic
#: threshold does by itself in a plain process (Dask's nanny turns that off). 32 MiB is the
#: most glibc takes on 64-bit, and where its dynamic threshold ends. None: leave Dask's
#: setting. Read at each call through this module, so a test may patch it.
WORKER_MALLOC_MMAP_THRESHOLD: int | None = 32 * 2**20
#: the variables that size a worker process's thread pools to its threads: OpenMP, BLAS
#: (OpenBLAS, MKL), Numba's (see :func:`process_environment`)
THREAD_VARIABLES = (
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "NUMBA_NUM_THREADS",
)
NO_DASK_CUDA_WARNING = (
    "daskgraph found NVIDIA GPUs but dask-cuda is not installed: its GPU workers set up their "
    "memory without it (no CPU affinity, no CUDA context made at start). Install the extra "
    "of your CUDA major version from daskgraph's clone: pip install -e '.[cuda12]' (or "
    "'.[cuda13]') there."
)
_warned_no_dask_cuda = False


def _device_name(job: str, task: int, device_type: str, index: int) -> str:
    return DeviceSpec(job, 0, task, device_type, index).to_string()


def worker_specs(
    *,
    virtual_gpus: int = 0,
    gpus: Sequence[GPUInfo] = (),
    gpu_options: GPUOptions | None = None,
    cpu_threads: int | None = None,
    cpu_devices: int = 1,
    processes: bool = True,
    cpu_in_process: bool = False,
    job: str = "localhost",
    task: int = 0,
    host: str = LOOPBACK,
    memory_limit: str | int | None = None,
    security: Any = None,
    protocol: str = "tcp",
    ucx: UCXSwitches | None = None,
) -> dict[str, dict[str, Any]]:
    """Worker specs for one task of a cluster: a CPU worker, one worker per (logical) GPU, and
    one per virtual GPU.

    Parameters
    ----------
    virtual_gpus
        Number of virtual GPU workers (the GPU code path over NumPy).
    gpus
        The physical GPUs to give workers to (see :func:`daskgraph.cluster.gpus.visible_gpus`). Each
        GPU worker is a process of its own whatever ``processes`` says and sees its GPU as
        device 0 (``CUDA_VISIBLE_DEVICES`` rotated, as dask-cuda does); a dask-cuda worker
        where dask-cuda is installed (:func:`_gpu_specs` says what otherwise).
    gpu_options
        TensorFlow's GPU options (:class:`~daskgraph.config.GPUOptions`), translated by
        :func:`daskgraph.cluster.cuda_specs.cuda_worker_options`: ``visible_device_list`` picks the
        GPUs, ``virtual_devices`` splits each into logical GPUs (one worker each), and the
        memory options give each worker's pool.
    cpu_threads
        Threads of the CPU worker; all cores by default.
    cpu_devices
        CPU devices (TensorFlow's ``device_count={"CPU": n}``): ``/cpu:0`` ... ``/cpu:n-1``,
        one worker each, living where the CPU worker lives (in this process by default, as
        TensorFlow's logical devices do) and sharing its threads out among them (at least one
        each), so that their partitions run at the same time.
    processes
        Run each worker in its own process (a ``Nanny``) or in this process.
    cpu_in_process
        Run the CPU worker in this process even where ``processes`` puts the GPU workers in
        their own (the embedded cluster's default, ``daskgraph.local.cpu-in-process``): the
        client then runs one-device CPU graphs by a plain call, with no message to send
        (:mod:`daskgraph.runtime.client.inprocess`). GPU workers keep their processes.
    job, task
        The TensorFlow job and task the devices belong to.
    host
        Interface the workers listen on (loopback by default).
    memory_limit
        Host memory of each worker (Dask's spill/pause/terminate thresholds). By default the
        machine's memory is shared out evenly among the workers with processes of their own
        (:func:`_memory_limit` says why).
    security
        A ``distributed.Security`` for a TLS cluster, given to every worker (to a process
        worker as :func:`daskgraph.cluster.tls.security_fields`).
    protocol
        Dask's transport: ``"tcp"`` (TLS where ``security`` says) or ``"ucx"``
        (:mod:`daskgraph.cluster.protocols`).
    ucx
        dask-cuda's UCX switches for ``protocol`` "ucx": each process worker (and its nanny)
        gets them as :func:`daskgraph.cluster.protocols.transport_settings`, with CUDA
        transports for real GPU workers only (thread workers share this process's).
    """
    if virtual_gpus < 0:
        raise ValueError(f"virtual_gpus must be >= 0; got {virtual_gpus}")
    if isinstance(cpu_devices, bool) or not isinstance(cpu_devices, int) or cpu_devices < 1:
        raise ValueError(f"cpu_devices must be an int >= 1; got {cpu_devices!r}")
    threads = cpu_threads or os.cpu_count() or 1
    if cpu_devices > 1:
        threads = max(1, threads // cpu_devices)
    gpu_options = gpu_options or GPUOptions()
    gpu_workers = cuda_worker_options(gpus, gpu_options)
    cpu_process = processes and not cpu_in_process
    own_processes = cpu_devices * int(cpu_process) + len(gpu_workers)
    own_processes += virtual_gpus if processes else 0

    def memory(own_process: bool) -> str | int:
        return _memory_limit(memory_limit, own_process, own_processes)

    common = {"host": host, "security": security, "protocol": protocol}
    common["transport"] = transport_settings(protocol, ucx, gpus=False)
    gpu_common = {**common, "transport": transport_settings(protocol, ucx, gpus=True)}
    specs = {}
    for index in range(cpu_devices):
        cpu = _device_name(job, task, CPU, index)
        specs[cpu] = _worker_spec(
            cpu, threads, {CPU: 1}, cpu_process, memory_limit=memory(cpu_process), **common
        )
    growth = gpu_options.allow_growth
    specs.update(_gpu_specs(gpu_workers, job, task, growth, memory(True), gpu_common))
    for index in range(len(gpu_workers), len(gpu_workers) + virtual_gpus):
        name = _device_name(job, task, GPU, index)
        resources = {GPU: 1, VIRTUAL_GPU_RESOURCE: 1}
        specs[name] = _worker_spec(
            name, 1, resources, processes, memory_limit=memory(processes), **common
        )
    return specs


def _memory_limit(
    memory_limit: str | int | None, own_process: bool, own_processes: int
) -> str | int:
    """A worker's host memory limit: ``memory_limit`` where given, else an even share of the
    machine's memory for a worker with a process of its own (one of ``own_processes``).

    The shares add up to at most the machine's memory (as dask-cuda's ``LocalCUDACluster``
    does), and a worker in this process has none (``0``): Dask would measure the whole
    process, the client's own data included, and pause the worker for it.
    """
    if memory_limit is not None:
        return memory_limit
    return MEMORY_LIMIT // max(1, own_processes) if own_process else 0


def _gpu_specs(
    gpu_workers: Sequence[CudaWorker],
    job: str,
    task: int,
    allow_growth: bool,
    memory_limit: str | int,
    common: dict[str, Any],
) -> dict[str, dict[str, Any]]:
    """Worker specs of a task's physical (logical) GPUs, one process each, named by index.

    Where dask-cuda is installed each is a dask-cuda worker (:func:`gpu_worker_spec`);
    otherwise it sets up its memory itself when it starts (:mod:`daskgraph.cluster.gpu_worker`,
    a Dask preload, configured by :func:`gpu_worker_env`), and the first such spec of the
    process warns that the ``cuda12``/``cuda13`` extra is missing.
    """
    specs: dict[str, dict[str, Any]] = {}
    use_dask_cuda = bool(gpu_workers) and _dask_cuda_or_warn()
    for index, worker in enumerate(gpu_workers):
        name = _device_name(job, task, GPU, index)
        if use_dask_cuda:
            specs[name] = gpu_worker_spec(name, worker, memory_limit=memory_limit, **common)
        else:
            env = gpu_worker_env(worker, allow_growth)
            specs[name] = _worker_spec(
                name, 1, {GPU: 1}, True, env=env, memory_limit=memory_limit, **common
            )
    return specs


def _dask_cuda_or_warn() -> bool:
    """Whether GPU workers can be dask-cuda's; warns (once per process) where they cannot."""
    global _warned_no_dask_cuda
    if dask_cuda_installed():
        return True
    if not _warned_no_dask_cuda:
        _warned_no_dask_cuda = True
        warnings.warn(NO_DASK_CUDA_WARNING, RuntimeWarning, stacklevel=3)
    return False


def gpu_worker_spec(
    name: str,
    worker: CudaWorker,
    *,
    host: str,
    memory_limit: str | int,
    security: Any = None,
    protocol: str = "tcp",
    transport: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The spec of a dask-cuda GPU worker: a :class:`~daskgraph.cluster.nanny_setup.DeviceNanny` in
    a
    fresh interpreter (``SubprocessWorker``), its options all plain data (JSON).

    The options are dask-cuda's (:func:`daskgraph.cluster.cuda_specs.dask_cuda_worker_options`: one
    thread, ``CUDA_VISIBLE_DEVICES``, the ``dask_cuda.initialize`` preload) plus daskgraph's:
    the device's name, a ``GPU`` resource, the process environment
    (:func:`process_environment`) and the GPU's description, the name-waiting preload, and
    ``security`` as :func:`daskgraph.cluster.tls.security_fields`. The nanny builds dask-cuda's
    plugins from ``cuda_worker`` (:meth:`CudaWorker.to_fields
    <daskgraph.cluster.cuda_specs.CudaWorker.to_fields>`) in its own process.

    >>> from daskgraph.cluster.gpus import GPUInfo
    >>> (w,) = cuda_worker_options([GPUInfo("0", "NVIDIA L4", 2**34)], GPUOptions())
    >>> spec = gpu_worker_spec("/job:localhost/replica:0/task:0/device:GPU:0", w,
    ...                        host="127.0.0.1", memory_limit=2**33)
    >>> options = worker_options(spec)
    >>> options["resources"], options["preload"], options["cuda_worker"]["rmm_pool_size"]
    ({'GPU': 1}, ['daskgraph.cluster.worker_preload', 'dask_cuda.initialize'], 268435456)
    """
    env = {**process_environment(1), "DASKGRAPH_GPU_DESCRIPTION": worker.description}
    options = dask_cuda_worker_options(
        worker,
        name=name,
        host=host,
        resources={GPU: 1},
        memory_limit=memory_limit,
        security=None if security is None else security_fields(security),
        preload=[WORKER_PRELOAD],
        env=env,
        dashboard_address=None if security is None else f"{LOOPBACK}:0",
        protocol=protocol,
    )
    options["cuda_worker"] = worker.to_fields()
    options["template"] = worker_template()
    options["config"] = {
        **worker_settings(),
        **https_settings(security, "worker"),
        **(transport or {}),
    }
    return {
        "cls": SubprocessWorker,
        "options": {"worker_class": NANNY, "name": name, "worker_kwargs": options},
    }


def gpu_worker_env(worker: CudaWorker, allow_growth: bool) -> dict[str, str]:
    """The environment of a GPU worker set up without dask-cuda
    (:mod:`daskgraph.cluster.gpu_worker`):
    which GPUs it sees, its memory cap, ``GPUOptions.allow_growth`` and its description, from
    the same translation of ``GPUOptions`` as a dask-cuda worker's.

    The cap is rounded down to CuPy's 512-byte blocks: without RMM, the worker reserves it from
    CuPy's pool, which rounds requests up to 512 bytes.

    >>> from daskgraph.cluster.gpus import GPUInfo
    >>> h100 = GPUInfo("0", "H100", 80 * 2**30)
    >>> workers = cuda_worker_options([h100], GPUOptions(virtual_devices=[1024, 2048]))
    >>> [(e["CUDA_VISIBLE_DEVICES"], e["DASKGRAPH_GPU_MEMORY_LIMIT"])
    ...  for e in (gpu_worker_env(w, False) for w in workers)]
    [('0', '1073741824'), ('0', '2147483648')]
    """
    cap = worker.rmm_maximum_pool_size
    limit = 0 if cap is None else max(cap // 512 * 512, 512)
    return {
        "CUDA_VISIBLE_DEVICES": worker.cuda_visible_devices,
        "DASKGRAPH_GPU_MEMORY_LIMIT": str(limit),
        "DASKGRAPH_GPU_ALLOW_GROWTH": "1" if allow_growth else "0",
        "DASKGRAPH_GPU_DESCRIPTION": worker.description,
    }


def worker_options(spec: dict[str, Any]) -> dict[str, Any]:
    """The Dask worker options of a spec from :func:`worker_specs`, whatever runs the worker.

    >>> (spec,) = worker_specs(processes=True, cpu_threads=2).values()
    >>> worker_options(spec)["nthreads"], worker_options(spec)["resources"]
    (2, {'CPU': 1})
    """
    options = spec["options"]
    return options.get("worker_kwargs", options)


def process_environment(nthreads: int) -> dict[str, str]:
    """The environment of a worker process: BLAS and Numba with the worker's threads, and
    glibc's allocator keeping large blocks in the heap.

    Dask's nanny starts workers with one BLAS thread (many small tasks share a worker's
    cores) and ``MALLOC_TRIM_THRESHOLD_=65536``; a daskgraph worker stands for one device and
    runs one partition at a time, which should use the device's threads, as NumPy does in a
    plain process; so does Numba's thread pool (``NUMBA_NUM_THREADS``: a user's own
    ``parallel=True`` functions in a worker; daskgraph's fused loops take the worker's
    threads anyway, :mod:`daskgraph.kernels.kernel_threads`). Dask's trim threshold also
    switches off glibc's dynamic mmap threshold, so every array of more than 128 KiB would be
    a fresh ``mmap``, page-faulted in as it is written (a 2000x2000 MatMul 8-10% slower than
    in a plain process): here the mmap threshold is :data:`WORKER_MALLOC_MMAP_THRESHOLD`
    (32 MiB) and the trim threshold twice that, what glibc's dynamic threshold reaches by
    itself. These variables must be set before the
    worker process starts; the nanny :class:`daskgraph.cluster.nanny_setup.DeviceNanny` sees to
    that.

    >>> env = process_environment(4)
    >>> env["OMP_NUM_THREADS"], env["NUMBA_NUM_THREADS"], env["MALLOC_MMAP_THRESHOLD_"]
    ('4', '4', '33554432')
    """
    env = {var: str(nthreads) for var in THREAD_VARIABLES}
    threshold = WORKER_MALLOC_MMAP_THRESHOLD
    if threshold is not None:
        env["MALLOC_MMAP_THRESHOLD_"] = str(threshold)
        env["MALLOC_TRIM_THRESHOLD_"] = str(2 * threshold)
    return env


def _worker_spec(
    name: str,
    nthreads: int,
    resources: dict[str, int],
    processes: bool,
    *,
    host: str,
    memory_limit: str | int,
    security: Any = None,
    env: dict[str, str] | None = None,
    protocol: str = "tcp",
    transport: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One worker's spec. A process worker is a Nanny started in a fresh interpreter
    (``SubprocessWorker``), so that scripts without an ``if __name__ == "__main__":`` guard
    (every TF1 program) can start the embedded cluster: nothing re-imports the user's script.
    Its spec travels as JSON (``security`` as :func:`daskgraph.cluster.tls.security_fields`); its
    environment is :func:`process_environment`. A GPU worker set up without dask-cuda (``env``
    given) also gets its GPU's environment and the GPU set-up preload. On ``protocol`` "ucx"
    the worker listens on UCX, and a process worker (and its nanny) applies ``transport``.
    """
    options: dict[str, Any] = {
        "name": name,
        "nthreads": nthreads,
        "resources": resources,
        "host": host,
        "dashboard_address": f"{host}:0",
        "memory_limit": memory_limit,
    }
    if protocol != "tcp":
        options["protocol"] = protocol
    if security is not None:  # its HTTP server in HTTPS, on loopback (see daskgraph.cluster.tls)
        options["dashboard_address"] = f"{LOOPBACK}:0"
    if not processes:
        if security is not None:
            options["security"] = security
        return {"cls": Worker, "options": options}
    kwargs = {
        **options,
        "silence_logs": logging.ERROR,
        "preload": [WORKER_PRELOAD] if env is None else [WORKER_PRELOAD, GPU_PRELOAD],
        "env": {**process_environment(nthreads), **(env or {})},
        "config": {
            **worker_settings(),
            **https_settings(security, "worker"),
            **(transport or {}),
        },
    }
    if security is not None:
        kwargs["security"] = security_fields(security)
    kwargs["template"] = worker_template()
    return {
        "cls": SubprocessWorker,
        "options": {"worker_class": NANNY, "name": name, "worker_kwargs": kwargs},
    }


def scheduler_spec(
    host: str = LOOPBACK,
    dashboard_address: str | None = None,
    security: Any = None,
    protocol: str = "tcp",
) -> dict[str, Any]:
    """The scheduler's spec: listening on ``host`` (``tls://`` where ``security`` requires
    encryption, ``ucx://`` on ``protocol`` "ucx"), dashboard only where Bokeh is installed,
    with the extensions of :func:`daskgraph.cluster.footprint.scheduler_extensions`.

    >>> from daskgraph.cluster.local_security import local_security
    >>> scheduler_spec(security=local_security("temporary"))["options"]["protocol"]
    'tls'
    """
    if dashboard_address is None:
        dashboard_address = dask.config.get("daskgraph.local.dashboard-address")
    # the scheduler serves HTTP (health, metrics, and the dashboard where Bokeh is installed)
    options: dict[str, Any] = {
        "host": host,
        "port": 0,
        "dashboard_address": dashboard_address,
        "extensions": scheduler_extensions(),
    }
    if security is not None:
        options["security"] = security
        options["protocol"] = "tls" if security.require_encryption else "tcp"
    if protocol != "tcp":
        options["protocol"] = protocol
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
    cpu_in_process: bool = False,
    cpu_devices: int = 1,
    security: Any = None,
    protocol: str | None = None,
    ucx: UCXSwitches | None = None,
) -> EmbeddedCluster:
    """Start an embedded cluster; unset arguments come from the ``daskgraph`` Dask config,
    and ``gpus`` from NVML (:func:`daskgraph.cluster.gpus.visible_gpus`: none without a driver).
    Sessions share one per process (:mod:`daskgraph.cluster.embedded`); this starts a private one,
    whose workers all have processes of their own with ``processes=True`` unless
    ``cpu_in_process`` keeps the CPU worker in this one; ``cpu_devices`` CPU devices (see
    :func:`worker_specs`). Its connections use ``security`` (a ``distributed.Security``), by
    default per ``daskgraph.local.security``: TLS with credentials made for this cluster
    alone (:mod:`daskgraph.cluster.local_security`), so that no other user of the machine
    can reach it; ``Client(cluster)`` picks them up. ``protocol`` (default:
    ``daskgraph.local.protocol``) "ucx" runs it on Dask's UCX transport with dask-cuda's
    switches ``ucx`` (default: ``daskgraph.local.ucx``), which needs ``security`` none (see
    :mod:`daskgraph.cluster.protocols`)."""
    if virtual_gpus is None:
        virtual_gpus = virtual_gpu_count()
    if gpus is None:
        gpus = visible_gpus()
    if cpu_threads is None:
        cpu_threads = dask.config.get("daskgraph.local.cpu-threads")
    if processes is None:
        processes = bool(dask.config.get("daskgraph.local.processes"))
    choice = dask.config.get(SECURITY_KEY, "temporary") if security is None else "temporary"
    protocol = cluster_protocol(protocol, choice)
    if security is None:
        security = local_security()
    ucx = ucx or UCXSwitches.from_config()
    workers = worker_specs(
        virtual_gpus=virtual_gpus,
        gpus=gpus,
        gpu_options=gpu_options,
        cpu_threads=cpu_threads,
        processes=processes,
        cpu_in_process=cpu_in_process,
        cpu_devices=cpu_devices,
        security=security,
        protocol=protocol,
        ucx=ucx,
    )
    scheduler = scheduler_spec(security=security, protocol=protocol)
    transport = transport_settings(protocol, ucx, gpus=False)  # (this process: no CUDA)
    return EmbeddedCluster(workers, scheduler, security=security, transport=transport)


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
    security
        The ``distributed.Security`` the scheduler and the workers were given (their specs
        carry it), for the clients of the cluster (``Client(cluster)`` reads
        ``cluster.security``); ``None`` for plain TCP (or UCX).
    transport
        Dask settings this process needs before its first connection to the cluster
        (:func:`daskgraph.cluster.protocols.transport_settings`: UCX's, without CUDA
        transports: the client never touches CUDA), applied while the scheduler and the thread
        workers start (UCX reads them once per process).
    """

    def __init__(
        self,
        worker_spec: dict[str, dict[str, Any]],
        scheduler: dict[str, Any],
        security: Any = None,
        transport: dict[str, Any] | None = None,
    ):
        self.worker_spec = worker_spec
        self.workers: dict[str, Any] = {}
        shorten_dask_logs()  # the scheduler, its streams and thread workers, in this process
        with dask.config.set(transport or {}):
            self._cluster = SpecCluster(
                workers={},
                scheduler=scheduler,
                silence_logs="error",
                name="daskgraph-local",
                security=security,
            )
            remember(self.scheduler_address, security)  # (sessions of this process may name it)
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
        """The scheduler's address (``tls://127.0.0.1:PORT``; ``tcp://`` without TLS)."""
        return self._cluster.scheduler_address

    @property
    def scheduler(self) -> Any:
        """The scheduler (an in-process ``distributed.Scheduler``)."""
        return self._cluster.scheduler

    @property
    def dashboard_link(self) -> str:
        """The URL of the cluster's Dask dashboard."""
        return self._cluster.dashboard_link

    @property
    def loop(self) -> Any:
        """The event loop the cluster runs on (for ``Client(cluster)``)."""
        return self._cluster.loop

    def sync(self, func: Any, *args: Any, **kwargs: Any) -> Any:
        """Run coroutine function ``func`` on the cluster's event loop and wait for it."""
        return self._cluster.sync(func, *args, **kwargs)

    def close(self, timeout: float | None = None) -> None:
        """Close the device workers, then the scheduler, printing nothing.

        A worker process's nanny is asked to stop and exits by itself (its worker closed,
        its multiprocessing resources released) before anything is killed; what Dask logs
        meanwhile in this process's closing threads stays out of stderr
        (:mod:`daskgraph.cluster.shutdown`).
        """
        forget(self.scheduler_address)
        with quiet_close(self.loop):
            if self.workers:
                workers, self.workers = list(self.workers.values()), {}
                try:
                    self.sync(close_workers, workers, callback_timeout=timeout)
                except Exception:  # closing anyway: the scheduler goes next
                    logging.getLogger("daskgraph.cluster.local").debug(
                        "closing workers", exc_info=True
                    )
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
