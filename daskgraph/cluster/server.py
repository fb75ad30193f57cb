"""Clusters across processes and machines: TensorFlow's ``ClusterSpec`` and ``Server`` on Dask.

A :class:`ClusterSpec` names the tasks of each job by address, as in TensorFlow. One Dask
scheduler serves the whole cluster: by default it listens at the address of the first task of
the first job (or at an explicit ``scheduler_address``). Each :class:`Server` starts its own
task's workers on its host — a CPU worker plus one per GPU (or virtual GPU), named
``/job:J/replica:0/task:T/device:TYPE:N`` — registered with that scheduler; the server of the
first task also runs the scheduler.

Every task's address is a session target, as in TensorFlow, where each task's port is a live
server that any client may use as its master: ``server.target`` is the task's own address, and
``Session("grpc://host:port")`` of any task of a running ClusterSpec, from any process, reaches
the cluster. The server of a task that does not run the scheduler listens on its ClusterSpec
port with a small ``distributed.core.Server`` (Dask's public base of the scheduler and the
workers, over Dask's comm: ``tls://`` with the cluster's certificates where it uses TLS) whose
``identity`` handler answers with the task's name and the scheduler's address
(:func:`daskgraph.cluster.master.task_identity`). The session's connection step
(:func:`daskgraph.cluster.master.locate`), which already asks every target for its ``identity``
before
it makes a ``Client``, follows that answer to the scheduler, and counts the task as the
master's local one. A redirect, not a proxy: the client then talks to the scheduler directly,
as TensorFlow's master on any task talks to every worker directly; relaying the client's
messages and batched streams through the task would add a hop to every message, and a task
that leaves would take its sessions with it. (A plain ``distributed.Client`` of a task's
address gets no scheduler there: give it ``server.scheduler_address``.)

Every server publishes the ClusterSpec to the scheduler when it starts, and notes itself in
this process's registry of servers (:mod:`daskgraph.cluster.master`): a session created on a cluster
waits, as TensorFlow's master does, until every task of the spec has joined, and one created
on a server of this process (``server.target``, or ``grpc://`` and the task's address) counts
that server's task as its local one.

>>> spec = ClusterSpec({"worker": ["host0:2222", "host1:2222"], "ps": {0: "host2:2222"}})
>>> spec.jobs, spec.num_tasks("worker"), spec.job_tasks("ps")
(['worker', 'ps'], 2, ['host2:2222'])
>>> spec.scheduler_address()
'tcp://host0:2222'
"""

from __future__ import annotations

import logging
import pathlib
import random
import signal
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import dask.config
from distributed import Scheduler
from distributed.core import Server as DaskServer
from distributed.utils import LoopRunner, silence_logging_cmgr, sync

from daskgraph.cluster import master
from daskgraph.cluster.cluster_spec import ADDRESS, ClusterSpec, with_protocol
from daskgraph.cluster.footprint import scheduler_extensions, shorten_dask_logs
from daskgraph.cluster.gpus import visible_gpus
from daskgraph.cluster.local import worker_specs
from daskgraph.cluster.shutdown import close_workers, quiet_close, quiet_peer_departures
from daskgraph.cluster.tls import (
    check_serving_certificates,
    https_settings,
    require_client_certificates,
)
from daskgraph.config import SessionConfig, virtual_gpu_count
from daskgraph.errors import InvalidArgumentError, UnknownError
from daskgraph.framework.device import CPU, GPU

__all__ = ["ClusterSpec", "Server", "free_ports"]


def free_ports(n: int, host: str = "127.0.0.1") -> list[int]:
    """``n`` distinct ports free on ``host`` now (bound all at once, then released), for the
    addresses of a local ClusterSpec.

    They are taken below the kernel's ephemeral range where it can be read: a port the
    kernel hands out (``bind(0)``) is one it may also give an outgoing connection before the
    server binds it, which then fails with "Address already in use".

    >>> len(set(free_ports(3)))
    3
    """
    sockets: list[socket.socket] = []
    try:
        for port in _candidate_ports():
            sock = socket.socket()
            try:
                sock.bind((host, port))
            except OSError:
                sock.close()
                continue
            sockets.append(sock)
            if len(sockets) == n:
                break
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def _candidate_ports() -> Iterator[int]:
    """Random ports below the ephemeral range (Linux: ``ip_local_port_range``), then ``0``
    (any free port) for as long as needed."""
    try:
        text = pathlib.Path("/proc/sys/net/ipv4/ip_local_port_range").read_text()
        low = int(text.split()[0])
    except (OSError, ValueError, IndexError):
        low = 0
    if low > 12000:
        yield from random.sample(range(10000, low), min(200, low - 10000))
    while True:
        yield 0


def _host_port(address: str) -> tuple[str, int]:
    """The host and port of a task's address; TensorFlow's InvalidArgumentError when it has
    none.

    >>> _host_port("tcp://[::1]:2222")
    ('::1', 2222)
    >>> _host_port("localhost")
    Traceback (most recent call last):
    ...
    daskgraph.errors.InvalidArgumentError: Could not parse port for local server from \
"localhost". Expected an address like 'host:port'.
    """
    match = ADDRESS.match(address.split("://", 1)[-1] if "://" in address else address)
    if match is None:
        raise InvalidArgumentError(
            f'Could not parse port for local server from "{address}". Expected an address '
            "like 'host:port'.",
            address=address,
        )
    return match.group("host").strip("[]"), int(match.group("port"))


class Server:
    """One task of a cluster: its workers, and the scheduler when it is the first task.

    Parameters
    ----------
    cluster_spec
        A :class:`ClusterSpec` or the dict to make one.
    job_name, task_index
        Which task this server is.
    config
        A :class:`~daskgraph.config.SessionConfig`; its ``gpu_options`` set up GPU workers.
    start
        Start at once (else call :meth:`start`).
    security
        A ``distributed.Security`` for TLS (``tls://``) with mutual certificates. The HTTP
        servers then speak HTTPS with the same certificates
        (:func:`daskgraph.cluster.tls.https_settings`):
        the scheduler's dashboard, at the task's host, asks every client for a certificate of
        the cluster's CA; each worker's listens on 127.0.0.1 only.
    scheduler_address
        Run the scheduler here instead of at the first task of the first job.
    virtual_gpus
        Virtual GPU workers of this task (default: the ``daskgraph.virtual-gpus`` config).
    """

    def __init__(
        self,
        cluster_spec: ClusterSpec | Mapping[str, Any],
        job_name: str,
        task_index: int = 0,
        config: SessionConfig | None = None,
        start: bool = True,
        security: Any = None,
        scheduler_address: str | None = None,
        virtual_gpus: int | None = None,
    ) -> None:
        self.cluster_spec = ClusterSpec(cluster_spec)
        self.job_name = job_name
        self.task_index = task_index
        self.address = self.cluster_spec.task_address(job_name, task_index)
        _host_port(self.address)  # a task's address is checked here, as TensorFlow's server does
        self.config = (config or SessionConfig()).validate()
        self.security = security
        protocol = "tls" if security is not None and security.require_encryption else "tcp"
        default = self.cluster_spec.scheduler_address(protocol)
        self._target = with_protocol(self.address, protocol)
        self._scheduler_address = (
            with_protocol(scheduler_address, protocol) if scheduler_address else default
        )
        self._hosts_scheduler = scheduler_address is None and default == self._target
        self._answers_for_scheduler = not master.same_address(self._target, self._scheduler_address)
        self._virtual_gpus = virtual_gpu_count() if virtual_gpus is None else virtual_gpus
        self._loop: LoopRunner | None = None
        self._scheduler: Scheduler | None = None
        self._endpoint: DaskServer | None = None
        self._workers: list[Any] = []
        self._stopped = threading.Event()
        if start:
            self.start()

    @property
    def target(self) -> str:
        """This task's own address (``tcp://`` or ``tls://``), as TensorFlow's: a session on it
        reaches the whole cluster, and this task's devices are its master's local ones."""
        return self._target

    @property
    def scheduler_address(self) -> str:
        """The address of the cluster's Dask scheduler, where this task's workers register (a
        plain ``distributed.Client`` connects here)."""
        return self._scheduler_address

    @property
    def workers(self) -> list[Any]:
        """This task's Dask workers (one per device), living in this process."""
        return list(self._workers)

    @classmethod
    def create_local_server(cls, config: SessionConfig | None = None, start: bool = True):
        """A one-task cluster on a free port of localhost, as ``tf.train.Server``'s."""
        (port,) = free_ports(1)
        return cls({"local": [f"localhost:{port}"]}, "local", 0, config=config, start=start)

    def start(self) -> None:
        """Start the scheduler (first task only; the other tasks answer at their address with
        the scheduler's) and this task's workers.

        Raises
        ------
        InvalidArgumentError
            A certificate of ``security`` that cannot serve in its role (a client's given as
            the scheduler's or a worker's), naming its file, before anything starts
            (:func:`daskgraph.cluster.tls.check_serving_certificates`).
        """
        if self._loop is not None:
            return
        roles = ("scheduler", "worker") if self._hosts_scheduler else ("worker",)
        check_serving_certificates(self.security, roles)
        self._quiet = silence_logging_cmgr(logging.WARNING)  # no INFO chatter, as LocalCluster
        self._quiet.__enter__()
        self._loop = LoopRunner(asynchronous=False)
        self._loop.start()
        try:
            sync(self._loop.loop, self._start)
        except BaseException:
            self.stop()
            raise
        master.register_server(self)

    async def _start(self) -> None:
        host, port = _host_port(self.address)
        shorten_dask_logs()
        quiet_peer_departures()  # another task stopped (Ctrl-C): one INFO line, no traceback
        if self._hosts_scheduler:
            with dask.config.set(https_settings(self.security, "scheduler")):
                scheduler = Scheduler(  # its HTTP server starts here: HTTPS under TLS
                    host=host,
                    port=port,
                    protocol=self._scheduler_address.split("://")[0],
                    security=self.security,
                    dashboard_address=f"{host}:0",
                    extensions=scheduler_extensions(),
                )
            require_client_certificates(scheduler)  # before the loop accepts a connection
            self._scheduler = await scheduler
            # sessions find the spec at once, whichever task's workers join first
            await master.publish_cluster_spec(
                self.cluster_spec, self._scheduler_address, scheduler=self._scheduler
            )
        elif self._answers_for_scheduler:
            await self._answer_at_own_address()
        gpus = [] if self.config.device_count.get(GPU) == 0 else visible_gpus()
        specs = worker_specs(
            virtual_gpus=self._virtual_gpus,
            gpus=gpus,
            gpu_options=self.config.gpu_options,
            cpu_devices=max(1, self.config.device_count.get(CPU, 1)),
            processes=False,
            job=self.job_name,
            task=self.task_index,
            host=host,
            security=self.security,  # every worker, the GPU workers' processes too
        )
        for spec in specs.values():
            self._workers.append(spec["cls"](self._scheduler_address, **spec["options"]))
        # workers here start their HTTP servers under the settings of this moment (those in
        # processes of their own get them from their spec), on loopback under TLS
        with dask.config.set(https_settings(self.security, "worker")):
            for worker in self._workers:
                await worker
        if self._scheduler is None:  # a scheduler elsewhere (the first task's, or given)
            try:
                await master.publish_cluster_spec(
                    self.cluster_spec, self._scheduler_address, self.security
                )
            except Exception as exc:  # sessions then do not wait for the tasks: not fatal
                master.logger.warning(
                    "could not publish the ClusterSpec to the scheduler at %s: %s",
                    self._scheduler_address,
                    exc,
                )

    async def _answer_at_own_address(self) -> None:
        """Listen on this task's port (over Dask's comm, TLS included) and answer ``identity``
        with the task and the scheduler's address, so that a session on ``self.target``
        reaches the cluster from any process (see the module)."""
        identity = master.task_identity(self.job_name, self.task_index, self._scheduler_address)
        endpoint = DaskServer({"identity": lambda **_: identity}, needs_workdir=False)
        await endpoint
        try:
            listen_args = self.security.get_listen_args("worker") if self.security else {}
            await endpoint.listen(self._target, **listen_args)
        except BaseException as exc:
            await endpoint.close()
            if isinstance(exc, OSError):  # the port is taken (TensorFlow: UnknownError too)
                raise self._cannot_listen(exc) from None
            raise
        self._endpoint = endpoint

    def _cannot_listen(self, exc: OSError) -> UnknownError:
        task = f"/job:{self.job_name}/replica:0/task:{self.task_index}"
        return UnknownError(
            f"Could not start the server of {task} at its address {self.address!r} (from the "
            f"ClusterSpec): {exc.strerror or exc}. Another process listens there: stop it, or "
            "give the task a free port in the ClusterSpec.",
            task=task,
            address=self.address,
            found=exc.strerror or str(exc),
        )

    def wait_for_cluster(self, timeout: float = 60.0) -> None:
        """Wait until every task of the cluster spec has registered its workers (a session
        created on the cluster waits for them by itself, see :mod:`daskgraph.cluster.master`).

        Raises
        ------
        daskgraph.errors.DeadlineExceededError
            A ``TimeoutError``, naming the tasks still missing (field ``missing``).
        """
        client = master.connect(self._scheduler_address, self.security)
        try:
            master.wait_for_tasks(
                client,
                self.cluster_spec,
                timeout,
                master.cluster_wait_log_interval(),
                target=self._scheduler_address,
                what="wait_for_cluster",
            )
        finally:
            client.close()

    def wait_for_others_to_leave(self, timeout: float = 60.0) -> None:
        """On the task running the scheduler: wait until other tasks' workers have left (so
        that stopping does not pull the scheduler from under them). Elsewhere: return."""
        if not self._hosts_scheduler or self._scheduler is None:
            return
        mine = f"/job:{self.job_name}/replica:0/task:{self.task_index}/"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            names = [str(ws.name) for ws in self._scheduler.workers.values()]
            if all(n.startswith(mine) for n in names):
                return
            time.sleep(0.1)

    def join(self, ready: Callable[[], Any] | None = None) -> None:
        """Block until the server is stopped; SIGINT and SIGTERM stop it cleanly.

        ``ready`` is called once those signals are handled: a program that announces that it
        serves (so that something may stop it with SIGTERM) announces it there, not before
        ``join``, where SIGTERM would still kill it with Python's default handling.
        """
        if threading.current_thread() is threading.main_thread():
            previous = {
                sig: signal.signal(sig, lambda *_: self._stopped.set())
                for sig in (signal.SIGINT, signal.SIGTERM)
            }
            try:
                if ready is not None:
                    ready()
                while not self._stopped.wait(0.2):
                    pass
            finally:
                for sig, handler in previous.items():
                    signal.signal(sig, handler)
        else:
            if ready is not None:
                ready()
            self._stopped.wait()
        self.stop()

    def stop(self) -> None:
        """Stop this task's workers and what listens at its address (the scheduler if this
        server runs it)."""
        master.unregister_server(self)
        self._stopped.set()
        loop = self._loop
        if loop is None:
            return
        self._loop = None
        try:
            with quiet_close(loop.loop):  # an orderly stop prints nothing of Dask's
                try:
                    sync(loop.loop, self._close)
                finally:
                    loop.stop()
        finally:
            self._quiet.__exit__(None, None, None)

    async def _close(self) -> None:
        await close_workers(self._workers)  # nannies first: nothing of theirs is left behind
        self._workers.clear()
        if self._endpoint is not None:
            await self._endpoint.close()
            self._endpoint = None
        if self._scheduler is not None:
            await self._scheduler.close()
            self._scheduler = None

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def __repr__(self) -> str:
        return (
            f"<daskgraph.Server /job:{self.job_name}/task:{self.task_index} target={self.target}>"
        )
