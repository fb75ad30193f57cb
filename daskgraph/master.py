"""What TensorFlow's master does when a session is created on a cluster, done for Dask.

In TensorFlow 1, ``tf.Session("grpc://host:port")`` talks to the *master* of the server at that
address. Its ``Master::CreateSession`` (tensorflow/core/distributed_runtime/master.cc) asks every
task of the cluster for its devices and waits until each has answered, logging every 10 s
``CreateSession still waiting for response from worker: /job:J/replica:0/task:T`` for those
that have not; the devices of the master's own task are *local* ones, which the placer prefers
to other tasks' devices of the same type (see :func:`daskgraph.placement.place`).

This module is that step and nothing else:

* :func:`resolve_target` reads a session target (``grpc://host:port`` as TF1 programs write
  it, ``tcp://``, ``tls://`` or ``host:port``) into the Dask scheduler's address and the
  master's task, using the :class:`~daskgraph.server.Server` objects started in this process;
* :func:`connect` reaches the scheduler, failing within seconds with a message saying what
  answered and how to fix it, and leaving nothing behind that keeps the process alive;
* :func:`publish_cluster_spec` (every ``Server`` calls it when it starts) and
  :func:`published_cluster_spec` hand the cluster's ``ClusterSpec`` over through the scheduler;
* :func:`wait_for_tasks` waits until every task of that spec has a worker.

Settings (Dask config, durations such as ``"10s"``): ``daskgraph.connect-timeout``,
``daskgraph.cluster.wait-timeout`` and ``daskgraph.cluster.wait-log-interval``.

>>> resolve_target("grpc://10.0.0.1:2222")
Target(address='tcp://10.0.0.1:2222', local_task=None, given='grpc://10.0.0.1:2222')
"""

from __future__ import annotations

import logging
import re
import socket
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import dask.config
from dask.utils import parse_timedelta

from daskgraph.errors import (
    DeadlineExceededError,
    InvalidArgumentError,
    InvalidTargetError,
    UnreachableError,
)
from daskgraph.greeting import (
    GREETING_SHARE,
    is_dask_greeting,
    listen_to,
    not_dask_error,
    probe,
    reach,
    requires_encryption,
    silent_server_error,
)
from daskgraph.liveness import MembershipView, release_watch, watch_for

if TYPE_CHECKING:
    from distributed import Client

    from daskgraph.cluster_spec import ClusterSpec

__all__ = [
    "SPEC_KEY",
    "Target",
    "cluster_wait_log_interval",
    "cluster_wait_timeout",
    "connect",
    "connect_timeout",
    "publish_cluster_spec",
    "published_cluster_spec",
    "register_server",
    "resolve_target",
    "server_workers",
    "task_names",
    "unregister_server",
    "wait_for_tasks",
]

logger = logging.getLogger("daskgraph.master")

#: Where the cluster's ClusterSpec lives in the scheduler's metadata.
SPEC_KEY = ("daskgraph", "cluster-spec")

_FORMS = (
    "'grpc://host:port' (as TensorFlow 1 programs write it), 'tcp://host:port', "
    "'tls://host:port' or 'host:port'"
)
_HOST_PORT = re.compile(r"(?P<host>[^:/\[\]\s]+|\[[^\]\s]+\]):(?P<port>\d{1,5})\Z")
_LOOPBACK = {"localhost", "127.0.0.1", "[::1]", "::1"}


# -- settings -------------------------------------------------------------------------------------
def _seconds(key: str) -> float | None:
    value = dask.config.get(key)
    if value is None:
        return None
    try:
        seconds = parse_timedelta(value, default="seconds")
    except (TypeError, ValueError, KeyError) as exc:
        raise ValueError(f"{key} must be a duration such as '10s' or null; got {value!r}") from exc
    if seconds is None or seconds < 0:
        raise ValueError(f"{key} must be a duration >= 0 such as '10s'; got {value!r}")
    return float(seconds)


def connect_timeout() -> float:
    """``daskgraph.connect-timeout`` in seconds: how long reaching a scheduler may take.

    >>> with dask.config.set({"daskgraph.connect-timeout": "2s"}):
    ...     connect_timeout()
    2.0
    """
    return _seconds("daskgraph.connect-timeout") or 10.0


def cluster_wait_timeout() -> float | None:
    """``daskgraph.cluster.wait-timeout`` in seconds; ``None`` (null or 0) waits without limit.

    >>> with dask.config.set({"daskgraph.cluster.wait-timeout": "1 minute"}):
    ...     cluster_wait_timeout()
    60.0
    """
    return _seconds("daskgraph.cluster.wait-timeout") or None


def cluster_wait_log_interval() -> float:
    """``daskgraph.cluster.wait-log-interval`` in seconds (TensorFlow's is 10 s).

    >>> cluster_wait_log_interval()
    10.0
    """
    return _seconds("daskgraph.cluster.wait-log-interval") or 10.0


# -- targets and the servers of this process ------------------------------------------------------
class _Server(Protocol):
    """What the registry reads of a :class:`~daskgraph.server.Server`."""

    address: str
    job_name: str
    task_index: int

    @property
    def target(self) -> str: ...

    @property
    def workers(self) -> list[Any]: ...


_servers: list[_Server] = []  # started and not stopped, oldest first
_servers_lock = threading.Lock()


def register_server(server: _Server) -> None:
    """Note a started server, so that targets naming it resolve to its scheduler and task."""
    with _servers_lock:
        if server in _servers:
            _servers.remove(server)
        _servers.append(server)


def unregister_server(server: _Server) -> None:
    """Forget a stopped server (nothing happens for one that was not registered)."""
    with _servers_lock:
        if server in _servers:
            _servers.remove(server)


def server_workers() -> list[Any]:
    """The Dask workers of the servers this process started (and has not stopped)."""
    with _servers_lock:
        return [w for server in _servers for w in server.workers]


@dataclass(frozen=True)
class Target:
    """A session target, resolved.

    Attributes
    ----------
    address
        The Dask scheduler to connect to (``tcp://`` or ``tls://``).
    local_task
        ``(job, task)`` whose devices are the master's local devices (the server this process
        started at that target), or ``None``.
    given
        The target as the caller wrote it.
    """

    address: str
    local_task: tuple[str, int] | None
    given: str


def _same_host_port(a: str, b: str) -> bool:
    """Whether two ``host:port`` are the same, counting the loopback names as one host."""
    if a == b:
        return True
    ma, mb = _HOST_PORT.match(a), _HOST_PORT.match(b)
    if ma is None or mb is None or int(ma["port"]) != int(mb["port"]):
        return False
    return ma["host"] in _LOOPBACK and mb["host"] in _LOOPBACK


def _rest(address: str) -> str:
    return address.split("://", 1)[-1]


def resolve_target(target: str) -> Target:
    """The scheduler address and the master's task of a session target.

    ``grpc://host:port`` and ``host:port`` naming the task address of a
    :class:`~daskgraph.server.Server` started in this process (or its scheduler's address), or
    a target equal to a started server's ``server.target``, resolve to that server's scheduler
    (with its protocol, ``tls://`` for a TLS cluster) and its ``(job, task)``: the most recently
    started such server where several share the scheduler. Otherwise ``grpc://host:port`` and
    ``host:port`` mean the scheduler at ``tcp://host:port``, and no task is local.

    Raises
    ------
    InvalidArgumentError
        For a target of another form, quoting it and listing the accepted ones.

    Examples
    --------
    >>> resolve_target("localhost:8786").address
    'tcp://localhost:8786'
    >>> resolve_target("tls://10.0.0.1:8786")
    Target(address='tls://10.0.0.1:8786', local_task=None, given='tls://10.0.0.1:8786')
    >>> try:
    ...     resolve_target("ftp://x:1")
    ... except InvalidArgumentError as exc:
    ...     print(exc)  # doctest: +NORMALIZE_WHITESPACE
    Invalid session target 'ftp://x:1': unknown scheme 'ftp'. Accepted: 'grpc://host:port'
    (as TensorFlow 1 programs write it), 'tcp://host:port', 'tls://host:port' or 'host:port'.
    (No session factory registered for the given session options: {target: ftp://x:1}.)
    """
    if not isinstance(target, str):
        raise InvalidArgumentError(
            f"Invalid session target {target!r}: expected a string. Accepted: {_FORMS}.",
            target=target,
        )
    text = target.strip()
    scheme, sep, rest = text.partition("://")
    if not sep:
        scheme, rest = "", text
    scheme = scheme.lower()
    if scheme.startswith("grpc"):  # TensorFlow strips any ^grpc.*:// (grpc+verbs, ...)
        scheme = "grpc"
    if scheme not in ("", "grpc", "tcp", "tls"):
        why = f"unknown scheme {scheme!r}"
    elif not _HOST_PORT.match(rest) or not 0 < int(rest.rsplit(":", 1)[1]) < 65536:
        why = "expected a host and a port (1-65535)"
    else:
        why = ""
    if why:
        raise InvalidTargetError(
            f"Invalid session target {target!r}: {why}. Accepted: {_FORMS}. (No session factory "
            f"registered for the given session options: {{target: {target}}}.)",
            target=target,
        )
    with _servers_lock:
        newest_first = list(reversed(_servers))
    if scheme in ("", "grpc"):
        for matches in (
            lambda s: _same_host_port(rest, s.address),  # a task's address, as in TensorFlow
            lambda s: _same_host_port(rest, _rest(s.target)),  # the scheduler's, bare
        ):
            for server in newest_first:
                if matches(server):
                    return Target(server.target, (server.job_name, server.task_index), target)
        return Target(f"tcp://{rest}", None, target)
    address = f"{scheme}://{rest}"
    for server in newest_first:
        if server.target.split("://", 1)[0] == scheme and _same_host_port(
            rest, _rest(server.target)
        ):
            return Target(server.target, (server.job_name, server.task_index), target)
    return Target(address, None, target)


# -- connecting -----------------------------------------------------------------------------------
def connect(address: str, security: Any = None, timeout: float | None = None) -> Client:
    """A ``distributed.Client`` of the scheduler at ``address`` (``tcp://`` or ``tls://``).

    Before a ``Client`` is made, a plain socket and then one Dask handshake check, within
    ``timeout`` (default ``daskgraph.connect-timeout``), that a Dask scheduler answers there:
    a ``Client`` that cannot connect may wait without limit, or linger in a thread after the
    failure. ``tcp://`` with a ``security`` that requires encryption means ``tls://``.

    Raises
    ------
    UnreachableError
        Nothing listens at the address, or nothing answers within ``timeout``.
    InvalidArgumentError
        The host is unknown, a non-Dask server or a Dask worker answers, ``tls://`` without
        ``security``, a TLS scheduler reached over ``tcp://``, certificates it refuses.
        Each message quotes the target, says what was found, and how to fix it.

    Examples
    --------
    >>> from daskgraph.server import free_ports
    >>> try:
    ...     connect(f"tcp://127.0.0.1:{free_ports(1)[0]}")
    ... except UnreachableError as exc:
    ...     print(exc.found)
    connection refused
    """
    from distributed import Client

    timeout = connect_timeout() if timeout is None else float(timeout)
    scheme, _, rest = address.partition("://")
    match = _HOST_PORT.match(rest)
    if scheme not in ("tcp", "tls") or match is None:
        raise InvalidArgumentError(
            f"Cannot connect to {address!r}: expected a Dask scheduler address "
            "'tcp://host:port' or 'tls://host:port' (see resolve_target for the session forms).",
            target=address,
        )
    if scheme == "tcp" and requires_encryption(security):
        scheme, address = "tls", f"tls://{rest}"
    if scheme == "tls" and security is None:
        raise InvalidArgumentError(
            f"Cannot connect to {address!r}: a tls:// scheduler needs certificates; pass "
            "security=daskgraph.tls.security_from_dir(DIR) (see `daskgraph certs DIR`).",
            target=address,
        )
    head = f"Cannot connect to the Dask scheduler at {address!r}"
    host, port = match["host"].strip("[]"), int(match["port"])
    try:
        greeting = reach(host, port, timeout, security if scheme == "tls" else None)
    except socket.gaierror as exc:
        raise InvalidArgumentError(
            f"{head}: unknown host {host!r} ({exc.strerror}). Check the host name of the target.",
            target=address,
            found="unknown host",
        ) from None
    except ConnectionRefusedError:
        raise UnreachableError(
            f"{head}: nothing listens at {host}:{port} (connection refused). Start the cluster "
            "first (the Server of the ClusterSpec's first task runs the scheduler, or "
            "`daskgraph server ...`), and give the scheduler's address: server.target, or the "
            "first task's address.",
            target=address,
            found="connection refused",
        ) from None
    except OSError as exc:  # unreachable network, a firewall dropping packets, a timeout
        raise UnreachableError(
            f"{head}: {host}:{port} cannot be reached ({exc or type(exc).__name__}). Check "
            "that the scheduler runs and that the network lets this host reach it.",
            target=address,
            found=str(exc) or type(exc).__name__,
        ) from None
    if greeting is None and scheme == "tcp":  # silent: what does it answer to a request?
        raise silent_server_error(head, address, host, port, GREETING_SHARE * timeout)
    if greeting == b"":  # (Dask's handshake would try again and again until the timeout)
        raise InvalidArgumentError(
            f"{head}: the server at {host}:{port} closed the connection at once, without a word "
            "(a Dask scheduler greets every connection). Give the address of the scheduler "
            "(server.target, or the ClusterSpec's first task) instead.",
            target=address,
            found="connection closed at once",
        )
    if greeting and not is_dask_greeting(greeting):  # it spoke first, and not as Dask does
        raise not_dask_error(head, address, host, port, greeting)
    try:
        reply = probe(address, security, timeout)
    except MemoryError:  # a non-Dask reply read as a Dask frame length ("3.07 EiB")
        said = listen_to(host, port) or b"bytes that are no Dask message"
        raise not_dask_error(head, address, host, port, said) from None
    except TypeError as exc:  # distributed's answer to TLS without a usable ssl context
        raise InvalidArgumentError(
            f"{head}: {exc}. A tls:// target needs security=daskgraph.tls.security_from_dir(DIR)"
            " (see `daskgraph certs DIR`).",
            target=address,
            found="no TLS certificates",
        ) from None
    except Exception as exc:  # OSError, TimeoutError, and tornado's ValueError for TLS to TCP
        raise _explain_failed_handshake(head, address, host, port, timeout, exc) from None
    if not isinstance(reply, dict) or reply.get("type") != "Scheduler":
        kind = reply.get("type") if isinstance(reply, dict) else type(reply).__name__
        raise InvalidArgumentError(
            f"{head}: a Dask {kind} answers at {host}:{port}, not the scheduler. Give the "
            "scheduler's address (server.target, or the ClusterSpec's first task).",
            target=address,
            found=f"Dask {kind}",
        )
    try:
        return Client(address, security=security, timeout=timeout, set_as_default=False)
    except Exception as exc:  # it answered a moment ago: say what happened, leave nothing
        raise UnreachableError(
            f"{head}: it answered, then the client could not connect: {exc}",
            target=address,
            found=str(exc),
        ) from None


def _explain_failed_handshake(
    head: str, address: str, host: str, port: int, timeout: float, exc: BaseException
) -> InvalidArgumentError | UnreachableError:
    text = str(exc) or type(exc).__name__
    if "certificate" in text.lower() or "ssl" in text.lower():
        return InvalidArgumentError(
            f"{head}: the TLS handshake failed ({text}). The certificates given in security= "
            "must come from the cluster's CA (`daskgraph certs DIR` on one host, the same "
            "DIR everywhere), and the scheduler must speak TLS.",
            target=address,
            found="TLS handshake failed",
        )
    if isinstance(exc, TimeoutError) or "timed out" in text.lower():
        hint = (
            "Is it a TLS scheduler? Then connect with tls://host:port and security=... ."
            if address.startswith("tcp://")
            else "Is it a plain TCP scheduler (tcp://)?"
        )
        return UnreachableError(
            f"{head}: something at {host}:{port} accepted the connection but did not answer as "
            f"a Dask scheduler within {timeout:g} s (daskgraph.connect-timeout). {hint} If it "
            "is not a Dask server at all, give the scheduler's address instead.",
            target=address,
            found="no Dask answer",
        )
    if address.startswith("tcp://"):
        said = listen_to(host, port)
        if said and not is_dask_greeting(said):
            return not_dask_error(head, address, host, port, said)
        return InvalidArgumentError(
            f"{head}: {host}:{port} closed the connection during the Dask handshake ({text}). "
            "A TLS scheduler does that to a plain client: connect with tls://host:port and "
            "security=daskgraph.tls.security_from_dir(DIR).",
            target=address,
            found="connection closed during the handshake",
        )
    return InvalidArgumentError(
        f"{head}: {host}:{port} closed the connection during the TLS/Dask handshake ({text}). "
        "A plain TCP scheduler does that to a TLS client (connect with tcp://), and a TLS one to "
        "certificates of another CA.",
        target=address,
        found="connection closed during the handshake",
    )


# -- the cluster spec, through the scheduler ------------------------------------------------------
async def publish_cluster_spec(
    spec: ClusterSpec, address: str, security: Any = None, scheduler: Any = None
) -> None:
    """Store ``spec`` in the scheduler's metadata (key :data:`SPEC_KEY`): directly on the
    ``distributed.Scheduler`` object when this process runs it, else from a short-lived
    asynchronous client of ``address`` (call it from the event loop it should run on)."""
    from distributed import Client

    value = spec.as_dict()
    if scheduler is not None:
        scheduler.set_metadata(keys=list(SPEC_KEY), value=value)
        return
    async with Client(
        address,
        security=security,
        asynchronous=True,
        set_as_default=False,
        timeout=connect_timeout(),
    ) as client:
        await client.set_metadata(list(SPEC_KEY), value)


def published_cluster_spec(client: Any) -> ClusterSpec | None:
    """The ClusterSpec the cluster's servers published to the scheduler, or ``None``.

    >>> class FakeClient:
    ...     def get_metadata(self, keys, default=None):
    ...         return {"local": ["localhost:2222", "localhost:2223"]}
    >>> published_cluster_spec(FakeClient()).num_tasks("local")
    2
    """
    from daskgraph.cluster_spec import ClusterSpec

    value = client.get_metadata(list(SPEC_KEY), default=None)
    if not value:
        return None
    try:
        return ClusterSpec(value)
    except (TypeError, ValueError) as exc:
        logger.warning("ignoring the malformed ClusterSpec published to the scheduler: %s", exc)
        return None


# -- waiting for the tasks ------------------------------------------------------------------------
def task_names(spec: ClusterSpec) -> list[str]:
    """``/job:J/replica:0/task:T`` of every task of ``spec``, in the spec's order.

    >>> from daskgraph.server import ClusterSpec
    >>> task_names(ClusterSpec({"ps": ["a:1"], "worker": {2: "b:1"}}))
    ['/job:ps/replica:0/task:0', '/job:worker/replica:0/task:2']
    """
    return [_task_name(job, task) for job, task in _tasks(spec)]


def _tasks(spec: ClusterSpec) -> list[tuple[str, int]]:
    return [(job, task) for job in spec.jobs for task in spec.task_indices(job)]


def _task_name(job: str, task: int) -> str:
    return f"/job:{job}/replica:0/task:{task}"


def _missing(view: MembershipView, wanted: Sequence[str]) -> list[str]:
    names = view.names()
    return [t for t in wanted if not any(n.startswith(t + "/") for n in names)]


def wait_for_tasks(
    client: Any,
    spec: ClusterSpec,
    timeout: float | None,
    log_interval: float,
    *,
    target: str | None = None,
    what: str = "CreateSession",
) -> None:
    """Wait until every task of ``spec`` has a worker named ``/job:J/replica:0/task:T/...``.

    While tasks are missing, logs for each, every ``log_interval`` seconds (logger
    ``daskgraph.master``, WARNING), ``CreateSession still waiting for response from worker:
    /job:J/replica:0/task:T`` as TensorFlow's master does. It waits on the client's
    :class:`~daskgraph.liveness.ClusterWatch`, which looks again whenever the scheduler
    announces a worker joining or leaving.

    Parameters
    ----------
    client
        A ``distributed.Client`` of the cluster's scheduler.
    spec
        The cluster's tasks.
    timeout
        Seconds to wait at most; ``None`` waits without limit (as TensorFlow by default).
    log_interval
        Seconds between two reports of the tasks still missing.
    target
        The scheduler's address, for the messages (default: the client's).
    what
        Who waits, for the error message.

    Raises
    ------
    DeadlineExceededError
        After ``timeout`` seconds, naming the missing tasks (field ``missing``) and their
        addresses, and how to start them.

    Examples
    --------
    >>> from daskgraph.server import ClusterSpec
    >>> class FakeClient:  # a cluster with task 0's CPU worker only
    ...     def scheduler_info(self, n_workers=-1):
    ...         return {"workers": {"tcp://h:1": {"name": "/job:w/replica:0/task:0/device:CPU:0"}}}
    ...     def subscribe_topic(self, topic, handler): pass
    ...     def unsubscribe_topic(self, topic): pass
    >>> wait_for_tasks(FakeClient(), ClusterSpec({"w": ["h:2222"]}), 1.0, 10.0)
    >>> wait_for_tasks(FakeClient(), ClusterSpec({"w": ["h:2222", "h:2223"]}), 0.2, 10.0,
    ...                target="tcp://h:2222")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    daskgraph.errors.DeadlineExceededError: CreateSession timed out after 0.2 s waiting for ...
    """
    tasks = _tasks(spec)
    wanted = [_task_name(job, task) for job, task in tasks]

    def report(view: MembershipView) -> None:
        for name in _missing(view, wanted):
            logger.warning("CreateSession still waiting for response from worker: %s", name)

    watch = watch_for(client)
    try:
        if watch.wait_until(
            lambda view: not _missing(view, wanted), timeout, every=log_interval, waiting=report
        ):
            return
        missing = _missing(watch.view(), wanted)
    finally:
        release_watch(client)
    gone = [task for task, name in zip(tasks, wanted, strict=True) if name in missing]
    raise _deadline(spec, gone, timeout or 0.0, target or _client_address(client), what)


def _client_address(client: Any) -> str:
    return str(getattr(getattr(client, "scheduler", None), "address", "") or "?")


def _deadline(
    spec: ClusterSpec, missing: list[tuple[str, int]], timeout: float, target: str, what: str
) -> DeadlineExceededError:
    names = [_task_name(job, task) for job, task in missing]
    listed = ", ".join(
        f"{name} (at {spec.task_address(job, task)})"
        for name, (job, task) in zip(names, missing, strict=True)
    )
    job, task = missing[0]
    tasks = "task" if len(missing) == 1 else f"{len(missing)} tasks"
    return DeadlineExceededError(
        f"{what} timed out after {timeout:g} s waiting for {tasks} of the cluster at "
        f"{target} to join: {listed}. Start the server of each (`daskgraph server "
        f"--cluster-spec FILE --job-name {job} --task-index {task}`, or "
        f"Server(cluster_spec, {job!r}, {task}) in its program), or wait longer "
        "(daskgraph.cluster.wait-timeout).",
        missing=names,
        target=target,
        timeout=timeout,
    )
