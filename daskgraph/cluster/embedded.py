"""One embedded cluster per process, shared by every ``Session()`` as dask shares its client.

The first ``Session()`` of a process starts the embedded cluster (:mod:`daskgraph.cluster.local`)
and a client of it; later sessions with the same cluster shape (virtual GPUs, GPUs and their
memory options, CPU threads, processes) reuse both, so a session costs milliseconds instead of
a second. A session that asks for another shape gets a cluster of its own; a cluster nobody
uses is closed when one of another shape is started, and every one is closed cleanly when the
process exits (clients first, then workers, then the scheduler), so sessions left open print
nothing at exit. :func:`shutdown` closes them all now. Each cluster's connections are TLS
with credentials of its own (``daskgraph.local.security``,
:mod:`daskgraph.cluster.local_security`): other users of the machine cannot reach it; or,
with ``daskgraph.local.protocol: ucx`` and ``security: none``, Dask's UCX transport
(:mod:`daskgraph.cluster.protocols`).

>>> shape = ClusterShape(virtual_gpus=2)
>>> shape.virtual_gpus, shape.processes
(2, True)
"""

from __future__ import annotations

import atexit
import logging
import threading
from dataclasses import dataclass, field

import dask.config
from distributed import Client

from daskgraph.cluster.gpus import GPUInfo, visible_gpus
from daskgraph.cluster.liveness import forget_client
from daskgraph.cluster.local import EmbeddedCluster, scheduler_spec, worker_specs
from daskgraph.cluster.local_security import CONFIG_KEY as SECURITY_KEY
from daskgraph.cluster.local_security import local_security
from daskgraph.cluster.protocols import UCXSwitches, cluster_protocol, transport_settings
from daskgraph.cluster.shutdown import quiet_close
from daskgraph.config import GPUOptions, SessionConfig, virtual_gpu_count
from daskgraph.framework.device import CPU, GPU

__all__ = ["ClusterShape", "acquire", "release", "running", "shape_for", "shutdown"]

logger = logging.getLogger("daskgraph.cluster.embedded")


@dataclass(frozen=True)
class ClusterShape:
    """What makes two embedded clusters different: sessions of one shape share a cluster."""

    virtual_gpus: int = 0
    gpus: tuple[GPUInfo, ...] = ()
    allow_growth: bool = False
    per_process_gpu_memory_fraction: float = 0.0
    visible_device_list: str = ""
    virtual_devices: tuple[int, ...] = ()
    cpu_threads: int | None = None
    cpu_devices: int = 1
    processes: bool = True
    cpu_in_process: bool = True
    security: str = "temporary"
    protocol: str = "tcp"
    ucx: UCXSwitches = field(default_factory=UCXSwitches)

    @property
    def gpu_options(self) -> GPUOptions:
        """The shape's GPU options as a :class:`~daskgraph.config.GPUOptions`."""
        return GPUOptions(
            allow_growth=self.allow_growth,
            per_process_gpu_memory_fraction=self.per_process_gpu_memory_fraction,
            visible_device_list=self.visible_device_list,
            virtual_devices=list(self.virtual_devices),
        )


def shape_for(config: SessionConfig) -> ClusterShape:
    """The cluster a session with ``config`` runs on, from the ``daskgraph`` Dask config and
    the GPUs NVML finds (none with ``device_count={"GPU": 0}``); ``device_count={"CPU": n}``
    gives it n CPU devices (TensorFlow's logical CPUs). Raises where
    ``daskgraph.local.protocol`` and ``daskgraph.local.security`` conflict
    (:func:`daskgraph.cluster.protocols.cluster_protocol`)."""
    options = config.gpu_options
    gpus = () if config.device_count.get(GPU) == 0 else tuple(visible_gpus())
    security = str(dask.config.get(SECURITY_KEY)).lower()
    protocol = cluster_protocol(None, security)
    # memory options shape only real GPU workers: without GPUs, one cluster serves every config
    return ClusterShape(
        virtual_gpus=virtual_gpu_count(),
        gpus=gpus,
        allow_growth=options.allow_growth if gpus else False,
        per_process_gpu_memory_fraction=options.per_process_gpu_memory_fraction if gpus else 0.0,
        visible_device_list=options.visible_device_list if gpus else "",
        virtual_devices=tuple(options.virtual_devices) if gpus else (),
        cpu_threads=dask.config.get("daskgraph.local.cpu-threads"),
        cpu_devices=max(1, config.device_count.get(CPU, 1)),
        processes=bool(dask.config.get("daskgraph.local.processes")),
        cpu_in_process=bool(dask.config.get("daskgraph.local.cpu-in-process")),
        security=security,
        protocol=protocol,
        ucx=UCXSwitches.from_config() if protocol == "ucx" else UCXSwitches(),
    )


@dataclass
class _Running:
    cluster: EmbeddedCluster
    client: Client
    users: int = 0


_running: dict[ClusterShape, _Running] = {}
_lock = threading.Lock()
_exit_hook_registered = False


def acquire(shape: ClusterShape) -> tuple[EmbeddedCluster, Client]:
    """The running cluster of ``shape`` and its client, started if there is none; every
    ``acquire`` is paired with a :func:`release`."""
    global _exit_hook_registered
    with _lock:
        entry = _running.get(shape)
        if entry is None or entry.client.status != "running":
            for idle in [s for s, e in _running.items() if e.users == 0]:
                _close(_running.pop(idle))
            entry = _running[shape] = _start(shape)
            if not _exit_hook_registered:
                atexit.register(shutdown)  # after distributed's: runs before them
                _exit_hook_registered = True
        entry.users += 1
        return entry.cluster, entry.client


def release(shape: ClusterShape) -> None:
    """One session fewer on the cluster of ``shape``; it keeps running for the next one."""
    with _lock:
        entry = _running.get(shape)
        if entry is not None and entry.users > 0:
            entry.users -= 1


def running() -> dict[ClusterShape, EmbeddedCluster]:
    """The embedded clusters running now, by shape."""
    with _lock:
        return {shape: entry.cluster for shape, entry in _running.items()}


def shutdown() -> None:
    """Close every embedded cluster of this process (sessions on them stop working)."""
    with _lock:
        entries = list(_running.values())
        _running.clear()
    for entry in entries:
        _close(entry)


def _start(shape: ClusterShape) -> _Running:
    timeout = float(dask.config.get("daskgraph.local.startup-timeout"))
    security = local_security(shape.security)  # its own credentials: no other user connects
    transport = transport_settings(shape.protocol, shape.ucx, gpus=False)  # (this process's)
    specs = worker_specs(
        virtual_gpus=shape.virtual_gpus,
        gpus=shape.gpus,
        gpu_options=shape.gpu_options,
        cpu_threads=shape.cpu_threads,
        cpu_devices=shape.cpu_devices,
        processes=shape.processes,
        cpu_in_process=shape.cpu_in_process,
        security=security,
        protocol=shape.protocol,
        ucx=shape.ucx,
    )
    scheduler = scheduler_spec(security=security, protocol=shape.protocol)
    cluster = EmbeddedCluster(specs, scheduler, security=security, transport=transport)
    try:
        client = Client(cluster, set_as_default=False, direct_to_workers=True)
        client.wait_for_workers(len(specs), timeout=timeout)
    except BaseException:
        cluster.close()
        raise
    return _Running(cluster, client)


def _close(entry: _Running) -> None:
    """Close the client, then the cluster (its workers, then its scheduler), printing nothing:
    what Dask logs while they close is daskgraph's business (:mod:`daskgraph.cluster.shutdown`)."""
    with quiet_close(entry.cluster.loop):
        forget_client(entry.client)
        try:
            entry.client.close()
        except Exception:  # pragma: no cover - closing anyway
            logger.debug("closing the embedded cluster's client", exc_info=True)
        try:
            entry.cluster.close()
        except Exception:  # pragma: no cover
            logger.debug("closing the embedded cluster", exc_info=True)
