"""A session's link to its cluster: the client, the cluster's devices, and the session's state
on the workers.

A :class:`Connection` is made from a session's target: ``None`` (the process's shared
embedded cluster, :mod:`daskgraph.cluster.embedded`), a scheduler address, or a
``distributed.Client``. It registers the session's
:class:`~daskgraph.runtime.worker.session_plugin.SessionPlugin`
on the workers (and unregisters it on close, which frees the session's variables and programs
there), follows workers joining and leaving through the client's
:class:`~daskgraph.cluster.liveness.ClusterWatch`, and maps the cluster's workers to devices
(:mod:`daskgraph.cluster.topology`), read again only when a worker came or went. Workers that carry
no daskgraph name or device resource are asked once each whether they are dask-cuda GPU
workers (:func:`cuda_probes`).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import dask.config
from distributed import Client

from daskgraph.cluster import embedded, footprint, gpu_worker, master
from daskgraph.cluster.cuda_specs import cuda_worker_probe, may_be_cuda_worker
from daskgraph.cluster.liveness import ClusterWatch, release_watch, restart_grace, watch_for
from daskgraph.cluster.shutdown import quiet_at_exit, quiet_close, quiet_peer_departures
from daskgraph.cluster.topology import Device, claims_gpu, devices_from_workers
from daskgraph.config import SessionConfig
from daskgraph.errors import InvalidArgumentError
from daskgraph.framework.device import CPU
from daskgraph.runtime.worker.session_plugin import SessionPlugin

__all__ = ["Connection", "cuda_probes", "limit_devices"]

logger = logging.getLogger("daskgraph.runtime.client.connection")


class Connection:
    """The client of a session's cluster, its devices, and the session's worker plugin.

    Parameters
    ----------
    target
        ``None`` or ``""`` for the embedded cluster, a scheduler address, a ``Client``, or a
        Dask cluster object (``LocalCluster``, dask-cuda's ``LocalCUDACluster``, ...: a client
        of it is made, and closed with the connection).
    config
        The session's :class:`~daskgraph.config.SessionConfig` (its ``device_count`` limits
        the devices; its GPU options shape the embedded cluster).
    session_id
        Names the session's state on the workers.
    security
        A ``distributed.Security`` for a ``tls://`` target.
    """

    def __init__(
        self,
        target: str | Client | None,
        config: SessionConfig,
        session_id: str,
        security: Any = None,
    ) -> None:
        self.config = config
        self.cluster: Any = None
        self._shape: embedded.ClusterShape | None = None
        self._owns_client = False
        self.local_task: tuple[str, int] | None = None  # the master's task (see master.py)
        self._probes: dict[str, dict[str, Any] | None] = {}  # address -> cuda_worker_probe
        self.client = self._open(target, security)
        self.plugin: SessionPlugin | None = None
        self.watch: ClusterWatch | None = None
        try:
            self.watch = watch_for(self.client)
            self.watch.restart_stalled |= self._shape is not None  # the embedded cluster
            self.plugin = SessionPlugin(session_id)
            self.client.register_plugin(self.plugin)
            footprint.install(self.client)  # keeps the scheduler's key memo small
            self._seen = self.watch.version
            self._await_restarts(target)
            self.devices = self.discover()
            check_cpu_devices(self.devices, self.config.device_count, self._where(target))
        except BaseException:
            self.close()
            raise

    def _where(self, target: Any) -> str:
        """The cluster, as messages name it."""
        if self._shape is not None:
            return "the embedded cluster"
        address = getattr(self.client.scheduler, "address", None) or target
        return f"the cluster at {address}"

    def _open(self, target: Any, security: Any) -> Client:
        if target is None or target == "":
            self._shape = embedded.shape_for(self.config)
            self.cluster, client = embedded.acquire(self._shape)
            quiet_at_exit()  # its exit is daskgraph's: nothing of Dask's closing is printed
            quiet_peer_departures()  # (its scheduler: a client that left is one INFO line)
            return client
        if isinstance(target, Client):
            return target
        if isinstance(target, str):  # what TensorFlow's master does in CreateSession
            footprint.shorten_dask_logs()  # of the client made here
            client, resolved = master.open_target(target, security, direct_to_workers=True)
            try:
                spec = master.published_cluster_spec(client)
                if spec:
                    master.wait_for_tasks(
                        client,
                        spec,
                        master.cluster_wait_timeout(),
                        master.cluster_wait_log_interval(),
                        target=resolved.address,
                    )
            except BaseException:
                client.close()
                raise
            self._owns_client = True
            self.local_task = resolved.local_task
            return client
        if getattr(target, "scheduler_address", None):  # a Dask cluster: LocalCUDACluster, ...
            self._owns_client = True
            # results come from the workers, not through the scheduler (as the embedded
            # cluster's client does)
            return Client(target, set_as_default=False, direct_to_workers=True)
        raise TypeError(
            "Session target must be a string (a scheduler address; '' for the embedded "
            f"cluster), a distributed.Client or a Dask cluster object; got {target!r}"
        )

    # -- devices --------------------------------------------------------------------------------
    def _await_restarts(self, target: Any) -> None:
        """A cluster described as data (the embedded cluster, or a ``SpecCluster`` such as
        ``LocalCluster`` or ``LocalCUDACluster`` given as the target) says which workers it
        should have; a session opened while one of them restarts (its nanny brings it back
        under the same name) waits for it for up to ``daskgraph.worker-restart-grace`` rather
        than seeing its devices missing. Clusters known only by address are taken as they are.
        """
        spec = getattr(self.cluster if self.cluster is not None else target, "worker_spec", None)
        if not isinstance(spec, Mapping) or not spec:
            return
        names = list(spec)
        if not self.watch.view().missing(names):
            return
        grace = restart_grace()
        if not self.watch.wait_for(names, grace):
            logger.warning(
                "workers %s of the cluster's spec did not join within %s s "
                "(daskgraph.worker-restart-grace); their devices are missing",
                self.watch.view().missing(names),
                grace,
            )

    def check(self) -> None:
        """Raise :class:`~daskgraph.errors.UnreachableError` if the cluster's scheduler is gone
        (the client lost it, now or earlier); returns at once otherwise."""
        self.watch.check()

    @property
    def changed(self) -> bool:
        """Whether a worker joined or left since the devices were last read (False once
        closed)."""
        watch = self.watch
        return watch is not None and watch.version != self._seen

    def discover(self) -> list[Device]:
        """The cluster's devices now (waiting for a first worker of a cluster still starting),
        limited by ``device_count``, GPUs described by their workers."""
        self._seen = self.watch.version
        workers = self.watch.view().workers  # read once per membership change, shared
        if not workers:
            try:
                self.client.wait_for_workers(1, timeout=_startup_timeout())
            except TimeoutError:
                pass  # placement then says plainly that there are no devices
            workers = self.watch.view(fresh=True).workers
        probes = cuda_probes(self.client, workers, self._probes)
        devices = limit_devices(devices_from_workers(workers, probes), self.config.device_count)
        return self._describe_gpus(devices)

    def _describe_gpus(self, devices: list[Device]) -> list[Device]:
        """Ask real GPU workers what their GPU is (name, memory, bus id) for the mapping."""
        gpu_workers = [d.worker for d in devices if d.kind == "gpu"]
        if not gpu_workers:
            return devices
        try:
            said = self.client.run(gpu_worker.describe, workers=gpu_workers)
        except Exception:  # a plain Dask worker without daskgraph: keep the resource view
            return devices
        return [
            replace(d, description=f"{d.description}, {said[d.worker]}")
            if said.get(d.worker)
            else d
            for d in devices
        ]

    # -- life cycle -----------------------------------------------------------------------------
    def close(self) -> None:
        """Free the session's state on the workers and let go of the cluster; quickly when
        the scheduler is gone (there is nothing left to free, and nobody to tell)."""
        client = self.client
        gone = client.status != "running" or (self.watch is not None and self.watch.lost)
        if self.plugin is not None and not gone:
            try:
                client.unregister_worker_plugin(self.plugin.name)
            except Exception:  # a worker that is gone has nothing left to free
                logger.debug("could not unregister %s", self.plugin.name, exc_info=True)
        self.plugin = None
        if self.watch is not None:
            release_watch(client)
            self.watch = None
        if self._owns_client:
            # a client of a lost scheduler is reconnecting: Dask logs the cancelled attempt
            with quiet_close(client.loop):
                if gone:
                    client.close(timeout=_CLOSE_TIMEOUT)
                else:
                    client.close()
        if self._shape is not None:
            embedded.release(self._shape)
            self._shape = None


def cuda_probes(
    client: Client,
    workers: dict[str, dict[str, Any]],
    known: dict[str, dict[str, Any] | None] | None = None,
) -> dict[str, dict[str, Any]]:
    """What each worker that may be a dask-cuda GPU worker says of itself
    (:func:`~daskgraph.cluster.cuda_specs.cuda_worker_probe`), for
    :func:`~daskgraph.cluster.topology.devices_from_workers`.

    Only workers without a daskgraph device name or a ``GPU``/``CPU`` resource
    (:func:`~daskgraph.cluster.cuda_specs.may_be_cuda_worker`) and workers that claim a real GPU
    (:func:`~daskgraph.cluster.topology.claims_gpu`: are they able to run GPU kernels?) are asked,
    in one ``client.run``, and each
    address once: ``known`` (address -> answer, ``None`` for none) keeps the answers between
    calls and forgets the workers that are gone. A worker that cannot answer (daskgraph not
    installed there, or the run failed) gets no entry: it is judged by its record.

    Parameters
    ----------
    client
        A client of the cluster.
    workers
        ``client.scheduler_info()["workers"]``.
    known
        The answers of earlier calls, updated in place.

    Returns
    -------
    dict
        Address -> answer, for the workers that answered.
    """
    known = {} if known is None else known
    for gone in [address for address in known if address not in workers]:
        del known[gone]
    ask = [
        a
        for a, info in workers.items()
        if a not in known and (may_be_cuda_worker(info) or claims_gpu(info))
    ]
    if ask:
        try:
            said = client.run(cuda_worker_probe, workers=ask, on_error="return")
        except Exception:  # the run itself failed: judge every worker by its record
            logger.debug("could not ask workers %s about their GPUs", ask, exc_info=True)
            said = {}
        for address in ask:
            answer = said.get(address)
            known[address] = answer if isinstance(answer, dict) else None
    return {a: answer for a in workers if (answer := known.get(a)) is not None}


def check_cpu_devices(devices: list[Device], device_count: dict[str, int], where: str) -> None:
    """Raise :class:`~daskgraph.errors.InvalidArgumentError` where ``device_count`` asks for
    more CPU devices than the cluster has. TensorFlow makes ``device_count={"CPU": n}``'s
    logical CPUs in the session's process, and so does the embedded cluster; a cluster of
    one's own has the CPU workers it was started with.

    >>> cpu = Device("/job:localhost/replica:0/task:0/device:CPU:0", "tcp://a:1", "cpu")
    >>> check_cpu_devices([cpu], {"CPU": 1}, "the cluster at tcp://a:0")
    >>> check_cpu_devices([cpu], {"CPU": 2}, "the cluster at tcp://a:0")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    daskgraph.errors.InvalidArgumentError: ConfigProto(device_count={'CPU': 2}) asks for 2 CPU ...
    """
    wanted = device_count.get(CPU, 0)
    found = [d for d in devices if d.device_type == CPU]
    if wanted > len(found):
        names = ", ".join(f"/cpu:{d.spec.device_index}" for d in found) or "none"
        raise InvalidArgumentError(
            f"ConfigProto(device_count={{'CPU': {wanted}}}) asks for {wanted} CPU devices, "
            f"but {where} has {len(found)} ({names}). Logical CPU devices are made on the "
            "embedded cluster (a Session without a target); on a cluster of your own, start "
            f"one CPU worker per device, or ask for at most {len(found)}."
        )


def limit_devices(devices: list[Device], limits: dict[str, int]) -> list[Device]:
    """The first ``limits[type]`` devices of each type (``device_count``), in order.

    >>> cpu = Device("/job:localhost/replica:0/task:0/device:CPU:0", "tcp://a:1", "cpu")
    >>> gpu = Device("/job:localhost/replica:0/task:0/device:GPU:0", "tcp://a:2", "gpu")
    >>> [d.kind for d in limit_devices([cpu, gpu], {"GPU": 0})]
    ['cpu']
    """
    if not limits:
        return devices
    counts: dict[str, int] = {}
    kept = []
    for d in devices:
        counts[d.device_type] = counts.get(d.device_type, 0) + 1
        if counts[d.device_type] <= limits.get(d.device_type, len(devices)):
            kept.append(d)
    return kept


#: seconds a client of a scheduler that is gone may take to close
_CLOSE_TIMEOUT = 2.0


def _startup_timeout() -> float:
    return float(dask.config.get("daskgraph.local.startup-timeout"))
