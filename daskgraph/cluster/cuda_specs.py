"""TensorFlow's GPUOptions as dask-cuda worker options.

This module has one job: translate a session's :class:`~daskgraph.config.GPUOptions` and the
GPUs found by :func:`daskgraph.cluster.gpus.visible_gpus` into the options dask-cuda's
``LocalCUDACluster`` and ``dask cuda worker`` give their workers, and recognise such workers
in a cluster the user started. dask-cuda does the rest: its ``RMMSetup`` worker plugin sets up
each worker's RMM pool and makes CuPy allocate from it, its ``CPUAffinity`` plugin pins the
worker to the cores next to its GPU, and its ``dask_cuda.initialize`` preload creates the
worker's CUDA context.

Everything here works on plain data and imports neither dask-cuda nor CuPy nor RMM, except
:func:`dask_cuda_worker_spec` (and :func:`dask_cuda_plugins`), which import dask-cuda when
called.

:func:`cuda_worker_options`
    one :class:`CudaWorker` per (logical) GPU, in device order: which GPUs the worker sees and
    its RMM pool, by TensorFlow's rules;
:func:`dask_cuda_worker_spec`, :func:`dask_cuda_worker_options`
    a ``SpecCluster`` worker spec for one of them, built as ``LocalCUDACluster`` builds its own
    (or its options as plain data, for a nanny that builds dask-cuda's plugins itself);
:func:`is_cuda_worker`, :func:`cuda_worker_device`, :func:`cuda_worker_description`
    whether a worker record of ``Client.scheduler_info()["workers"]`` is a GPU worker of a
    dask-cuda cluster the user started, which CUDA device it owns, and what the device mapping
    says about its GPU;
:func:`cuda_worker_probe`
    what a worker says about itself through ``Client.run`` (the reliable signal, see
    :func:`is_cuda_worker`).

>>> from daskgraph.config import GPUOptions
>>> from daskgraph.cluster.gpus import GPUInfo
>>> gpus = [GPUInfo(str(i), "NVIDIA H100 80GB HBM3", 81559 * 2**20) for i in range(2)]
>>> for w in cuda_worker_options(gpus, GPUOptions(per_process_gpu_memory_fraction=0.5)):
...     print(w.cuda_visible_devices, w.rmm_pool_size, w.rmm_maximum_pool_size)
0,1 42760404992 42760404992
1,0 42760404992 42760404992
"""

from __future__ import annotations

import importlib.util
import logging
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from daskgraph.cluster.gpus import GPUInfo
from daskgraph.cluster.protocols import UCXSwitches, transport_settings
from daskgraph.config import GPUOptions
from daskgraph.errors import InvalidArgumentError
from daskgraph.framework.device import CPU, GPU

__all__ = [
    "INITIAL_POOL_SIZE",
    "RMM_ALIGNMENT",
    "CudaWorker",
    "cuda_worker_description",
    "cuda_worker_device",
    "cuda_worker_options",
    "cuda_worker_probe",
    "dask_cuda_installed",
    "dask_cuda_plugins",
    "dask_cuda_worker_options",
    "dask_cuda_worker_spec",
    "is_cuda_worker",
    "may_be_cuda_worker",
]

#: bytes of a pool that grows on demand when it starts (the whole cap, if smaller)
INITIAL_POOL_SIZE = 256 * 2**20
#: RMM pool sizes are whole multiples of this many bytes (``dask_cuda.utils.parse_device_bytes``
#: aligns to it too)
RMM_ALIGNMENT = 256
#: what ``dask_cuda.initialize`` is told: create the worker's CUDA context when it starts
_CREATE_CONTEXT = "--create-cuda-context"
#: what ``distributed.system_monitor.SystemMonitor`` adds to a worker's metrics when NVML sees
#: a GPU (the first device of the worker's ``CUDA_VISIBLE_DEVICES``)
_NVML_METRICS = ("gpu-memory-total", "gpu_utilization", "gpu_memory_used")
_EXTRAS_HINT = (
    "GPU workers need dask-cuda (with RMM and CuPy): install the extra of your CUDA major "
    "version from daskgraph's clone, pip install -e '.[cuda12]' (or '.[cuda13]') there"
)


@dataclass(frozen=True, slots=True)
class CudaWorker:
    """The dask-cuda options of one GPU worker (one physical GPU, or one logical GPU of it).

    Attributes
    ----------
    cuda_visible_devices
        The worker's ``CUDA_VISIBLE_DEVICES``: the GPUs the session may use, rotated so that
        the worker's own GPU comes first and is device 0 inside the worker (what
        ``dask_cuda.utils.cuda_visible_devices(i, ids)`` gives worker ``i``).
    rmm_pool_size
        Bytes of the worker's RMM pool when it starts (dask-cuda's ``rmm_pool_size``), or
        ``None`` for no pool.
    rmm_maximum_pool_size
        Bytes the pool may grow to (``rmm_maximum_pool_size``), or ``None`` for no cap.
    description
        What the device mapping prints for the GPU (:meth:`GPUInfo.describe`).
    rmm_allocator_external_lib_list
        Libraries that allocate from the RMM pool (``rmm_allocator_external_lib_list``):
        CuPy, which runs the GPU kernels.
    """

    cuda_visible_devices: str
    rmm_pool_size: int | None
    rmm_maximum_pool_size: int | None
    description: str
    rmm_allocator_external_lib_list: tuple[str, ...] = ("cupy",)

    @property
    def visible_id(self) -> str:
        """The id of the worker's GPU (an index, or a ``GPU-``/``MIG-`` UUID).

        >>> CudaWorker("2,0", None, None, "").visible_id
        '2'
        """
        return self.cuda_visible_devices.split(",")[0]

    @property
    def nvml_device(self) -> int | str:
        """The worker's GPU as NVML addresses it: ``dask_cuda.utils.nvml_device_index(0, ...)``
        (an int for an index, the UUID otherwise).

        >>> CudaWorker("2,0", None, None, "").nvml_device
        2
        >>> CudaWorker("GPU-5e1a,GPU-77c0", None, None, "").nvml_device
        'GPU-5e1a'
        """
        first = self.visible_id
        return int(first) if first.isnumeric() else first

    def to_fields(self) -> dict[str, Any]:
        """The fields as JSON-able data (what a worker spec carries to the nanny's process).

        >>> CudaWorker("0", 2**28, None, "name: L4").to_fields()["rmm_allocator_external_lib_list"]
        ['cupy']
        """
        fields = asdict(self)
        fields["rmm_allocator_external_lib_list"] = list(self.rmm_allocator_external_lib_list)
        return fields

    @classmethod
    def from_fields(cls, fields: Mapping[str, Any]) -> CudaWorker:
        """The worker that :meth:`to_fields` (perhaps through JSON) describes.

        >>> w = CudaWorker("1,0", 2**28, 2**30, "name: L4")
        >>> CudaWorker.from_fields(w.to_fields()) == w
        True
        """
        fields = dict(fields)
        libs = fields.pop("rmm_allocator_external_lib_list", ("cupy",))
        return cls(**fields, rmm_allocator_external_lib_list=tuple(libs))


def _selected(gpus: Sequence[GPUInfo], visible_device_list: str) -> list[GPUInfo]:
    """The GPUs that become GPU:0, GPU:1, ...: TensorFlow's ``visible_device_list`` picks
    them by position, in its order; entries beyond the GPUs present are ignored."""
    entries = [s.strip() for s in visible_device_list.split(",") if s.strip()]
    if not entries:
        return list(gpus)
    if not all(s.isdigit() for s in entries) or len(set(map(int, entries))) != len(entries):
        raise InvalidArgumentError(
            "gpu_options.visible_device_list must list GPU indices (0, 1, ...), each once; "
            f"got {visible_device_list!r}",
            field="gpu_options.visible_device_list",
            value=visible_device_list,
        )
    return [gpus[i] for i in map(int, entries) if i < len(gpus)]


def _caps(gpu: GPUInfo, options: GPUOptions) -> list[int | None]:
    """The memory cap of each worker on ``gpu``: one per logical GPU, else one (or none)."""
    if options.virtual_devices:
        return [mb * 2**20 for mb in options.virtual_devices]
    fraction = options.per_process_gpu_memory_fraction
    if not fraction:
        return [None]
    cap = int(fraction * gpu.total_memory) // RMM_ALIGNMENT * RMM_ALIGNMENT
    return [max(cap, RMM_ALIGNMENT)]


def _pool(cap: int | None, allow_growth: bool) -> tuple[int, int | None]:
    """(initial, maximum) pool bytes for a cap, by TensorFlow's ``allow_growth``."""
    if cap is None:  # no cap: start small and grow (never grab a whole GPU by default)
        return INITIAL_POOL_SIZE, None
    if allow_growth:
        return min(INITIAL_POOL_SIZE, cap), cap
    return cap, cap  # TensorFlow reserves the capped memory up front


def cuda_worker_options(gpus: Sequence[GPUInfo], options: GPUOptions) -> list[CudaWorker]:
    """The dask-cuda options of each GPU worker, in device order (GPU:0, GPU:1, ...).

    Parameters
    ----------
    gpus
        The GPUs this process may use, in ``CUDA_VISIBLE_DEVICES`` order
        (:func:`daskgraph.cluster.gpus.visible_gpus`).
    options
        TensorFlow's GPU options, with its meaning:

        ``visible_device_list``
            ``"2,0"`` makes the third GPU GPU:0 and the first GPU:1; entries beyond the GPUs
            present are ignored; ``""`` takes them all. The workers see only the listed GPUs,
            as ``LocalCUDACluster(CUDA_VISIBLE_DEVICES=...)`` does.
        ``virtual_devices``
            memory limits in MiB: each physical GPU becomes one logical GPU (one worker) per
            entry, capped at its limit.
        ``per_process_gpu_memory_fraction``
            (without ``virtual_devices``) ``f > 0`` caps each worker at ``f`` times its GPU's
            memory, rounded down to a multiple of 256 bytes (RMM's alignment).
        ``allow_growth``
            with a cap, ``False`` reserves the whole cap when the worker starts (initial pool
            = maximum = cap) and ``True`` starts with ``min(256 MiB, cap)`` and grows to the
            cap. Without a cap the pool starts at 256 MiB and grows with no maximum either
            way: daskgraph never grabs a whole GPU by default.

    Returns
    -------
    list of CudaWorker
        One per GPU, or per logical GPU (those of one physical GPU next to each other).

    Raises
    ------
    daskgraph.errors.InvalidArgumentError
        A ``ValueError``: ``visible_device_list`` names a GPU twice (as TensorFlow refuses it)
        or is not a list of indices (fields ``field``, ``value``).

    Examples
    --------
    >>> from daskgraph.cluster.gpus import GPUInfo
    >>> gpus = [GPUInfo(str(i), "NVIDIA A100-SXM4-40GB", 40 * 2**30) for i in range(3)]
    >>> [w.cuda_visible_devices for w in cuda_worker_options(gpus, GPUOptions())]
    ['0,1,2', '1,2,0', '2,0,1']
    >>> options = GPUOptions(visible_device_list="2,0", virtual_devices=[1024, 128],
    ...                      allow_growth=True)
    >>> for w in cuda_worker_options(gpus, options):
    ...     print(w.cuda_visible_devices, w.rmm_pool_size >> 20, w.rmm_maximum_pool_size >> 20)
    2,0 256 1024
    2,0 128 128
    0,2 256 1024
    0,2 128 128
    """
    selected = _selected(gpus, options.visible_device_list)
    ids = [gpu.visible_id for gpu in selected]
    workers = []
    for i, gpu in enumerate(selected):
        visible = ",".join(ids[i:] + ids[:i])  # dask_cuda.utils.cuda_visible_devices(i, ids)
        for cap in _caps(gpu, options):
            initial, maximum = _pool(cap, options.allow_growth)
            workers.append(CudaWorker(visible, initial, maximum, gpu.describe()))
    return workers


def dask_cuda_installed() -> bool:
    """Whether dask-cuda can be imported here (asked without importing it).

    >>> isinstance(dask_cuda_installed(), bool)
    True
    """
    try:
        return importlib.util.find_spec("dask_cuda") is not None
    except (ImportError, ValueError):  # a module put in sys.modules by hand has no spec
        return sys.modules.get("dask_cuda") is not None


def dask_cuda_plugins(worker: CudaWorker, *, cpu_affinity: bool = True) -> list[Any]:
    """dask-cuda's worker plugins for ``worker``: ``CPUAffinity`` and ``RMMSetup``.

    Built as ``dask_cuda.worker_common.worker_plugins`` builds them for ``LocalCUDACluster``
    and ``dask cuda worker`` (less its ``PreImport`` and ``CUDFSetup``, which would do nothing
    here; and unlike it, never without ``RMMSetup``, which sets up the memory caps).

    Parameters
    ----------
    worker
        One of :func:`cuda_worker_options`.
    cpu_affinity
        Pin the worker to the CPU cores next to its GPU, as dask-cuda does. Finding them asks
        NVML, here and now.

    Returns
    -------
    list
        ``[CPUAffinity(cores), RMMSetup(...)]`` (``dask_cuda.plugins``), or just
        ``[RMMSetup(...)]``.

    Raises
    ------
    ImportError
        Without dask-cuda (the ``daskgraph[cuda12]`` or ``daskgraph[cuda13]`` extra).

    Examples
    --------
    >>> w = CudaWorker("1,0", 2**28, 2**30, "name: NVIDIA H100 80GB HBM3")
    >>> [type(p).__name__ for p in dask_cuda_plugins(w)]  # doctest: +SKIP
    ['CPUAffinity', 'RMMSetup']
    """
    try:
        from dask_cuda.plugins import CPUAffinity, RMMSetup
        from dask_cuda.utils import get_cpu_affinity
    except ImportError as exc:
        raise ImportError(f"{_EXTRAS_HINT} ({exc})") from exc
    rmm = RMMSetup(
        initial_pool_size=worker.rmm_pool_size,
        maximum_pool_size=worker.rmm_maximum_pool_size,
        managed_memory=False,
        async_alloc=False,
        release_threshold=None,
        log_directory=None,
        track_allocations=False,
        external_lib_list=list(worker.rmm_allocator_external_lib_list),
    )
    if not cpu_affinity:
        return [rmm]
    return [CPUAffinity(get_cpu_affinity(worker.nvml_device)), rmm]


def dask_cuda_worker_options(
    worker: CudaWorker,
    *,
    name: str,
    host: str,
    resources: Mapping[str, float],
    memory_limit: int | str,
    security: Any = None,
    nthreads: int = 1,
    dashboard_address: str | None = None,
    preload: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    silence_logs: int | str = logging.ERROR,
    protocol: str = "tcp",
    ucx: UCXSwitches | None = None,
) -> dict[str, Any]:
    """The nanny options of one GPU worker, as ``LocalCUDACluster`` makes them, less the
    plugins: plain data (JSON, where ``security`` is), and no dask-cuda import.

    :func:`dask_cuda_worker_spec` adds dask-cuda's plugins (objects) to them; a nanny started
    from JSON (``distributed.deploy.subprocess.SubprocessWorker``) builds the plugins in its
    own process instead, from :meth:`CudaWorker.to_fields` (see
    :class:`daskgraph.cluster.nanny_setup.DeviceNanny`).

    Parameters
    ----------
    worker
        One of :func:`cuda_worker_options`: its GPUs and their memory.
    name
        The worker's Dask name: the TensorFlow device name.
    host
        Interface the worker and its nanny listen on.
    resources
        The worker's Dask resources, e.g. ``{"GPU": 1}``.
    memory_limit
        Host memory of the worker (Dask's spill/pause/terminate thresholds).
    security
        A ``distributed.Security`` for a TLS cluster, passed to the nanny and by it to its worker.
    nthreads
        Threads of the worker (dask-cuda's default: 1).
    dashboard_address
        The worker's dashboard; ``host:0`` (a free port on ``host``) by default.
    preload
        Preloads to run before dask-cuda's, e.g. ``["daskgraph.cluster.worker_preload"]``.
    env
        More environment variables for the worker (``CUDA_VISIBLE_DEVICES`` is ``worker``'s).
    silence_logs
        Level of the nanny's and worker's ``distributed`` log handlers (``0``: leave them alone).
    protocol
        Dask's transport, as ``LocalCUDACluster(protocol=...)``: ``"tcp"`` (or ``"tls"``,
        per ``security``) or ``"ucx"``, over which CuPy arrays go GPU to GPU.
    ucx
        dask-cuda's UCX switches (``enable_nvlink``, ...) for ``protocol`` "ucx", given to the
        worker as ``distributed-ucxx``'s settings (``config``;
        :meth:`~daskgraph.cluster.protocols.UCXSwitches.dask_config`): the scheduler and the
        client need the same ones.

    Returns
    -------
    dict
        ``name``, ``nthreads``, ``resources``, ``host``, ``dashboard_address``,
        ``memory_limit``, ``security``, ``silence_logs``, ``env`` (with ``worker``'s
        ``CUDA_VISIBLE_DEVICES``), ``preload`` (``preload``, then ``dask_cuda.initialize``)
        and ``preload_argv`` (one list per preload: ``--create-cuda-context`` for dask-cuda's);
        with ``protocol`` other than ``"tcp"``, ``protocol`` and ``config`` (UCX's settings).

    Examples
    --------
    >>> w = CudaWorker("1,0", 2**28, 2**30, "name: NVIDIA H100 80GB HBM3")
    >>> options = dask_cuda_worker_options(
    ...     w, name="/job:localhost/replica:0/task:0/device:GPU:0", host="127.0.0.1",
    ...     resources={"GPU": 1}, memory_limit=2**34, preload=["daskgraph.cluster.worker_preload"])
    >>> options["env"], options["preload_argv"]
    ({'CUDA_VISIBLE_DEVICES': '1,0'}, [[], ['--create-cuda-context']])
    >>> options["preload"]
    ['daskgraph.cluster.worker_preload', 'dask_cuda.initialize']
    >>> ucx = dask_cuda_worker_options(
    ...     w, name="gpu", host="127.0.0.1", resources={"GPU": 1}, memory_limit=2**34,
    ...     protocol="ucx", ucx=UCXSwitches(nvlink=True))
    >>> ucx["protocol"], ucx["config"]["distributed-ucxx.nvlink"]
    ('ucx', True)
    """
    options = {
        "name": name,
        "nthreads": nthreads,
        "resources": dict(resources),
        "host": host,
        "dashboard_address": f"{host}:0" if dashboard_address is None else dashboard_address,
        "memory_limit": memory_limit,
        "security": security,
        "silence_logs": silence_logs,
        "env": {**(env or {}), "CUDA_VISIBLE_DEVICES": worker.cuda_visible_devices},
        "preload": [*preload, "dask_cuda.initialize"],
        # one argv per preload (a flat list would go to every preload)
        "preload_argv": [[] for _ in preload] + [[_CREATE_CONTEXT]],
    }
    if protocol != "tcp":
        options["protocol"] = protocol
        options["config"] = transport_settings(protocol, ucx, gpus=True)
    return options


def dask_cuda_worker_spec(
    worker: CudaWorker,
    *,
    nanny_class: type | None = None,
    cpu_affinity: bool = True,
    **options: Any,
) -> dict[str, Any]:
    """A ``SpecCluster`` worker spec for one GPU worker, as ``LocalCUDACluster`` makes it.

    ``{"cls": Nanny, "options": {...}}``: a nanny process whose worker sees ``worker``'s GPUs
    (``env={"CUDA_VISIBLE_DEVICES": ...}``), runs ``nthreads`` threads, carries dask-cuda's
    plugins (:func:`dask_cuda_plugins`: CPU affinity, and the RMM pool that CuPy allocates
    from) and creates its CUDA context when it starts (the ``dask_cuda.initialize`` preload
    with ``--create-cuda-context``); plus daskgraph's name and resources. The worker's data
    store is Dask's default (no device-to-host spilling, as in TensorFlow: a kernel that
    exceeds the cap fails with out-of-memory).

    Parameters
    ----------
    worker
        One of :func:`cuda_worker_options`.
    **options
        :func:`dask_cuda_worker_options`'s keyword arguments (``name``, ``host``,
        ``resources``, ``memory_limit``, ``security``, ``nthreads``, ``dashboard_address``,
        ``preload``, ``env``, ``silence_logs``, ``protocol``, ``ucx``), documented there.
    nanny_class
        The nanny class, ``distributed.Nanny`` by default (as ``LocalCUDACluster``); e.g.
        :class:`daskgraph.cluster.nanny_setup.DeviceNanny`.
    cpu_affinity
        Pin the worker to the cores next to its GPU (asks NVML now, see
        :func:`dask_cuda_plugins`).

    Returns
    -------
    dict
        ``{"cls": nanny_class, "options": {...}}``, to pass to ``SpecCluster(workers=...)`` or
        to start as ``spec["cls"](scheduler_address, **spec["options"])``. The plugins are
        objects: the spec pickles, but is no JSON (``SubprocessWorker`` cannot take it: see
        :func:`dask_cuda_worker_options`).

    Raises
    ------
    ImportError
        Without dask-cuda (the ``daskgraph[cuda12]`` or ``daskgraph[cuda13]`` extra).

    Examples
    --------
    >>> w = CudaWorker("1,0", 2**28, 2**30, "name: NVIDIA H100 80GB HBM3")
    >>> spec = dask_cuda_worker_spec(  # doctest: +SKIP
    ...     w, name="/job:localhost/replica:0/task:0/device:GPU:0", host="127.0.0.1",
    ...     resources={"GPU": 1}, memory_limit=2**34)
    >>> spec["options"]["env"], spec["options"]["preload"]  # doctest: +SKIP
    ({'CUDA_VISIBLE_DEVICES': '1,0'}, ['dask_cuda.initialize'])
    """
    options = dask_cuda_worker_options(worker, **options)
    options["plugins"] = dask_cuda_plugins(worker, cpu_affinity=cpu_affinity)
    if nanny_class is None:
        from distributed import Nanny

        nanny_class = Nanny
    return {"cls": nanny_class, "options": options}


def _nvml_gpu(info: Mapping[str, Any]) -> dict[str, Any]:
    """What a worker record says about the worker's GPU (``name``, ``memory-total``)."""
    gpu = dict(info.get("gpu") or {})  # startup information (not from nanny workers)
    metrics = info.get("metrics") or {}
    if gpu.get("memory-total") is None and metrics.get("gpu-memory-total") is not None:
        gpu["memory-total"] = metrics["gpu-memory-total"]
    if not gpu and any(key in metrics for key in _NVML_METRICS):
        gpu["memory-total"] = None
    return gpu


def may_be_cuda_worker(info: Mapping[str, Any]) -> bool:
    """Whether a worker record may be a GPU worker of a dask-cuda cluster: one that daskgraph
    does not map by its name or its resources (no daskgraph device name, no ``GPU`` or ``CPU``
    resource). Only such workers are worth a :func:`cuda_worker_probe`.

    >>> may_be_cuda_worker({"name": 0, "resources": {}})
    True
    >>> may_be_cuda_worker({"name": "w", "resources": {"GPU": 1}})
    False
    >>> may_be_cuda_worker({"name": "/job:localhost/replica:0/task:0/device:CPU:0"})
    False
    """
    name = str(info.get("name", ""))
    resources = info.get("resources") or {}
    return not (name.startswith("/job:") or GPU in resources or CPU in resources)


def cuda_worker_device(
    info: Mapping[str, Any], probe: Mapping[str, Any] | None = None
) -> int | None:
    """The index of the CUDA device a dask-cuda worker owns, where it can be told.

    With the worker's :func:`cuda_worker_probe`: the first entry of its
    ``CUDA_VISIBLE_DEVICES`` (dask-cuda puts the worker's own GPU first). Without it: the
    worker's name when that is a number, as ``LocalCUDACluster`` names each worker by the
    device it gives it (``dask cuda worker`` names its workers by their address).

    Returns
    -------
    int or None
        ``None`` for a GPU known by its UUID only, or a worker named otherwise.

    Examples
    --------
    >>> cuda_worker_device({"name": 2})
    2
    >>> cuda_worker_device({"name": "tcp://10.0.0.5:4001"}, {"cuda_visible_devices": "3,0,1,2"})
    3
    >>> cuda_worker_device({"name": "tcp://10.0.0.5:4001"}) is None
    True
    """
    visible = (probe or {}).get("cuda_visible_devices")
    if visible:
        first = str(visible).split(",")[0].strip()
        return int(first) if first.isdigit() else None
    name = info.get("name")
    if isinstance(name, int) and not isinstance(name, bool):
        return name
    return int(name) if isinstance(name, str) and name.isdigit() else None


def is_cuda_worker(info: Mapping[str, Any], probe: Mapping[str, Any] | None = None) -> bool:
    """Whether a worker record is a GPU worker of a cluster the user started with
    ``LocalCUDACluster`` or ``dask cuda worker`` (and so a GPU device with no GPU resource).

    A record of ``Client.scheduler_info()["workers"]`` is the scheduler's
    ``WorkerState.identity()``: name, resources, nthreads, ..., the worker's ``metrics``, and
    its startup information. Nothing in it comes from dask-cuda: a dask-cuda worker is a plain
    ``distributed`` worker started by a nanny with ``CUDA_VISIBLE_DEVICES`` set and dask-cuda's
    plugins, and none of that is reported to the scheduler. What the record does show is that
    the worker sees a GPU through NVML (only where ``pynvml`` is installed and
    ``distributed.diagnostics.nvml`` is on):

    * ``metrics`` has ``gpu-memory-total``, ``gpu_utilization`` and ``gpu_memory_used`` (the
      worker's system monitor, for the first GPU of its ``CUDA_VISIBLE_DEVICES``);
    * a worker started in the scheduler's process also has ``gpu``
      (``{"name", "memory-total"}``) in its startup information; one started by a nanny, as
      dask-cuda's all are, has not: that worker copies its startup information before its
      process has initialised NVML.

    The rule, without ``probe``: a worker that carries neither a ``GPU`` nor a ``CPU`` resource
    and no daskgraph device name (those are mapped by them), that sees a GPU, and runs one
    thread (dask-cuda's default, ``threads_per_worker=1`` / ``--nthreads 1``). So a
    multi-threaded ``LocalCluster`` worker on a GPU machine stays a CPU device. Its limits: a
    single-threaded worker of a plain ``LocalCluster`` or ``dask worker`` on a GPU machine
    counts as a GPU worker too (all of them then share that machine's first GPU); a dask-cuda
    worker with more threads does not (give it ``--resources GPU=1``); and without NVML in the
    worker no worker counts.

    With ``probe`` (what :func:`cuda_worker_probe` returned for this worker, through
    ``Client.run``), the rule is exact: the worker carries one of dask-cuda's worker plugins,
    which ``LocalCUDACluster`` and ``dask cuda worker`` always install.

    Parameters
    ----------
    info
        One worker's record (address -> record in ``scheduler_info()["workers"]``).
    probe
        The worker's :func:`cuda_worker_probe`, if asked.

    Returns
    -------
    bool

    Examples
    --------
    A worker of ``LocalCUDACluster()`` (a nanny's, one thread, NVML metrics, no resources):

    >>> record = {"type": "Worker", "name": 0, "resources": {}, "nthreads": 1,
    ...           "metrics": {"gpu-memory-total": 85520809984, "gpu_utilization": 0,
    ...                       "gpu_memory_used": 524288000}}
    >>> is_cuda_worker(record)
    True
    >>> is_cuda_worker({**record, "nthreads": 8})  # LocalCluster(threads_per_worker=8)
    False
    >>> is_cuda_worker({**record, "metrics": {}})  # no GPU seen
    False
    >>> is_cuda_worker({**record, "nthreads": 4}, probe={"dask_cuda_plugins": ["RMMSetup"]})
    True
    """
    if not may_be_cuda_worker(info):
        return False
    if probe is not None:
        return bool(probe.get("dask_cuda_plugins"))
    return bool(_nvml_gpu(info)) and info.get("nthreads") == 1


def cuda_worker_description(info: Mapping[str, Any], probe: Mapping[str, Any] | None = None) -> str:
    """What the device mapping prints for a dask-cuda worker's GPU: its name and memory, as
    far as the worker record (or the worker's :func:`cuda_worker_probe`) tells them.

    A nanny's worker reports its GPU's memory but not its name (see :func:`is_cuda_worker`);
    the probe has both.

    Parameters
    ----------
    info
        The worker's record in ``scheduler_info()["workers"]``.
    probe
        The worker's :func:`cuda_worker_probe`, if asked.

    Returns
    -------
    str
        Like :meth:`GPUInfo.describe`: ``"name: ..., memory: ... GiB"``, or the parts known
        (``""`` for none).

    Examples
    --------
    >>> cuda_worker_description({"metrics": {"gpu-memory-total": 85520809984}})
    'memory: 79.6 GiB'
    >>> cuda_worker_description({"gpu": {"name": "NVIDIA H100 80GB HBM3",
    ...                                  "memory-total": 85520809984}})
    'name: NVIDIA H100 80GB HBM3, memory: 79.6 GiB'
    """
    gpu = _nvml_gpu(info)
    if probe is not None and probe.get("gpu"):
        gpu = {**gpu, **{k: v for k, v in probe["gpu"].items() if v is not None}}
    parts = []
    if gpu.get("name"):
        parts.append(f"name: {gpu['name']}")
    if gpu.get("memory-total"):
        parts.append(f"memory: {gpu['memory-total'] / 2**30:.1f} GiB")
    return ", ".join(parts)


def cuda_worker_probe(dask_worker: Any) -> dict[str, Any]:
    """What a worker says about its GPU, for :func:`is_cuda_worker`: run it on the workers
    with ``client.run(cuda_worker_probe)``.

    Returns
    -------
    dict
        ``cuda_visible_devices`` (the worker process's ``CUDA_VISIBLE_DEVICES``, or
        ``None``), ``cupy`` (whether CuPy is installed there, which GPU kernels need),
        ``dask_cuda_plugins`` (the names of its worker plugins that come from
        dask-cuda, sorted) and ``gpu`` (NVML's ``{"name", "memory-total"}`` for its first
        GPU, or ``None``).

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> probe = cuda_worker_probe(SimpleNamespace(plugins={}))
    >>> sorted(probe), probe["dask_cuda_plugins"]
    (['cuda_visible_devices', 'cupy', 'dask_cuda_plugins', 'gpu'], [])
    """
    plugins = sorted(
        {
            type(plugin).__name__
            for plugin in getattr(dask_worker, "plugins", {}).values()
            if type(plugin).__module__.partition(".")[0] == "dask_cuda"
        }
    )
    gpu = None
    try:
        from distributed.diagnostics import nvml

        if nvml.device_get_count() > 0:
            gpu = nvml.one_time()
    except Exception:  # no NVML, no GPU: nothing to tell
        gpu = None
    return {
        "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
        "cupy": importlib.util.find_spec("cupy") is not None,  # can it run GPU kernels?
        "dask_cuda_plugins": plugins,
        "gpu": gpu,
    }
