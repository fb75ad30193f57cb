"""What TensorFlow's master does when a session is created on a cluster, done for Dask.

In TensorFlow 1, ``tf.Session("grpc://host:port")`` talks to the *master* of the server at that
address. Its ``Master::CreateSession`` (tensorflow/core/distributed_runtime/master.cc) asks every
task of the cluster for its devices and waits until each has answered, logging every 10 s
``CreateSession still waiting for response from worker: /job:J/replica:0/task:T`` for those
that have not; the devices of the master's own task are *local* ones, which the placer prefers
to other tasks' devices of the same type (see :func:`daskgraph.runtime.planner.placement.place`).

This module is that step and nothing else:

* :func:`resolve_target` reads a session target (``grpc://host:port`` as TF1 programs write
  it, ``tcp://``, ``tls://`` or ``host:port``) into the Dask scheduler's address and the
  master's task, using the :class:`~daskgraph.cluster.server.Server` objects started in this
  process;
* :func:`open_target` and :func:`connect` reach the scheduler, failing within seconds with a
  message saying what answered and how to fix it, and leaving nothing behind that keeps the
  process alive. Any task's address is a target, as in TensorFlow: the server of a task that
  does not run the scheduler answers Dask's ``identity`` call with the scheduler's address
  (:data:`TASK_TYPE`, :func:`task_identity`), and :func:`locate` follows it;
* :func:`publish_cluster_spec` (every ``Server`` calls it when it starts) and
  :func:`published_cluster_spec` hand the cluster's ``ClusterSpec`` over through the scheduler,
  and :func:`wait_for_tasks` waits until every task of that spec has a worker: they live in
  :mod:`daskgraph.cluster.task_wait`, and this module re-exports them.

Settings (Dask config, durations such as ``"10s"``, read by :mod:`daskgraph.cluster.timeouts`
and re-exported here): ``daskgraph.connect-timeout``, ``daskgraph.cluster.wait-timeout`` and
``daskgraph.cluster.wait-log-interval``.

>>> resolve_target("grpc://10.0.0.1:2222")
Target(address='tcp://10.0.0.1:2222', local_task=None, given='grpc://10.0.0.1:2222')
"""

from __future__ import annotations

import logging
import re
import socket
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from daskgraph.cluster.greeting import (
    GREETING_SHARE,
    is_dask_greeting,
    listen_to,
    not_dask_error,
    probe,
    reach,
    requires_encryption,
    silent_server_error,
)
from daskgraph.cluster.local_security import known_security
from daskgraph.cluster.task_wait import (
    SPEC_KEY,
    publish_cluster_spec,
    published_cluster_spec,
    task_name,
    task_names,
    wait_for_tasks,
)
from daskgraph.cluster.timeouts import (
    cluster_wait_log_interval,
    cluster_wait_timeout,
    connect_timeout,
)
from daskgraph.errors import (
    InvalidArgumentError,
    InvalidTargetError,
    UnreachableError,
)

if TYPE_CHECKING:
    from distributed import Client


__all__ = [
    "SPEC_KEY",
    "TASK_TYPE",
    "Target",
    "cluster_wait_log_interval",
    "cluster_wait_timeout",
    "connect",
    "connect_timeout",
    "locate",
    "open_target",
    "publish_cluster_spec",
    "published_cluster_spec",
    "register_server",
    "resolve_target",
    "same_address",
    "server_workers",
    "task_identity",
    "task_names",
    "unregister_server",
    "wait_for_tasks",
]

logger = logging.getLogger("daskgraph.cluster.master")

_FORMS = (
    "'grpc://host:port' (as TensorFlow 1 programs write it), 'tcp://host:port', "
    "'tls://host:port', 'ucx://host:port' or 'host:port'"
)
#: the Dask transports a session target may name (``ucx``: a UCX cluster, e.g. dask-cuda's)
_DASK_SCHEMES = ("tcp", "tls", "ucx")
_HOST_PORT = re.compile(r"(?P<host>[^:/\[\]\s]+|\[[^\]\s]+\]):(?P<port>\d{1,5})\Z")
_LOOPBACK = {"localhost", "127.0.0.1", "[::1]", "::1"}


# -- targets and the servers of this process ------------------------------------------------------
class _Server(Protocol):
    """What the registry reads of a :class:`~daskgraph.cluster.server.Server`."""

    address: str
    job_name: str
    task_index: int

    @property
    def target(self) -> str: ...

    @property
    def scheduler_address(self) -> str: ...

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
        ``(job, task)`` whose devices are the master's local devices (the task whose address
        the target names), or ``None``.
    given
        The target as the caller wrote it.
    """

    address: str
    local_task: tuple[str, int] | None
    given: str


def same_address(a: str, b: str) -> bool:
    """Whether two addresses name the same ``host:port`` (any protocol in front is ignored),
    counting the loopback names as one host.

    >>> same_address("tcp://localhost:2222", "127.0.0.1:2222"), same_address("h:1", "h:2")
    (True, False)
    """
    a, b = _rest(a), _rest(b)
    if a == b:
        return True
    ma, mb = _HOST_PORT.match(a), _HOST_PORT.match(b)
    if ma is None or mb is None or int(ma["port"]) != int(mb["port"]):
        return False
    return ma["host"] in _LOOPBACK and mb["host"] in _LOOPBACK


def _rest(address: str) -> str:
    return address.split("://", 1)[-1]


def _parse_target(target: Any) -> tuple[str, str]:
    """The scheme (``""``, ``grpc``, ``tcp`` or ``tls``) and the ``host:port`` of a target.

    Raises
    ------
    InvalidArgumentError
        For a target of another form, quoting it and listing the accepted ones.
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
    if scheme not in ("", "grpc", *_DASK_SCHEMES):
        why = f"unknown scheme {scheme!r}"
    elif not _HOST_PORT.match(rest) or not 0 < int(rest.rsplit(":", 1)[1]) < 65536:
        why = "expected a host and a port (1-65535)"
    else:
        return scheme, rest
    raise InvalidTargetError(
        f"Invalid session target {target!r}: {why}. Accepted: {_FORMS}. (No session factory "
        f"registered for the given session options: {{target: {target}}}.)",
        target=target,
    )


def resolve_target(target: str) -> Target:
    """The scheduler address and the master's task of a session target, as far as this
    process knows them (nothing is asked over the network: see :func:`open_target`).

    A target naming the address of a :class:`~daskgraph.cluster.server.Server` started in this
    process
    (its ``server.target``; ``grpc://host:port`` or ``host:port`` with any protocol), or else
    its scheduler's address, resolves to that server's scheduler (``tls://`` for a TLS cluster)
    and its ``(job, task)``: the most recently started such server where several share the
    scheduler. Otherwise ``grpc://host:port`` and ``host:port`` mean ``tcp://host:port``, and
    no task is known to be local.

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
    >>> resolve_target("ucx://10.0.0.1:8786").address
    'ucx://10.0.0.1:8786'
    >>> try:
    ...     resolve_target("ftp://x:1")
    ... except InvalidArgumentError as exc:
    ...     print(exc)  # doctest: +NORMALIZE_WHITESPACE
    Invalid session target 'ftp://x:1': unknown scheme 'ftp'. Accepted: 'grpc://host:port'
    (as TensorFlow 1 programs write it), 'tcp://host:port', 'tls://host:port',
    'ucx://host:port' or 'host:port'. (No session factory registered for the given session
    options: {target: ftp://x:1}.)
    """
    scheme, rest = _parse_target(target)
    wanted = scheme if scheme in _DASK_SCHEMES else None  # grpc:// and bare: any protocol
    with _servers_lock:
        newest_first = list(reversed(_servers))
    for address_of in (lambda s: s.target, lambda s: s.scheduler_address):  # its task's first
        for server in newest_first:
            address = address_of(server)
            if wanted in (None, address.split("://", 1)[0]) and same_address(rest, address):
                task = (server.job_name, server.task_index)
                return Target(server.scheduler_address, task, target)
    return Target(f"{wanted or 'tcp'}://{rest}", None, target)


# -- a task's answer: where its scheduler is ------------------------------------------------------
#: The ``type`` that the server of a task without the scheduler answers to Dask's ``identity``
#: call (a scheduler answers ``"Scheduler"``), with the task and its cluster's scheduler.
TASK_TYPE = "daskgraph.Task"


def task_identity(job: str, task: int, scheduler: str) -> dict[str, Any]:
    """What a task's server answers to ``identity``: see :data:`TASK_TYPE`.

    >>> task_identity("worker", 1, "tcp://h0:2222")["scheduler"]
    'tcp://h0:2222'
    """
    return {"type": TASK_TYPE, "job": job, "task": task, "scheduler": scheduler}


def _task_of(reply: Any) -> tuple[tuple[str, int], str] | None:
    """``((job, task), scheduler address)`` of a task's answer to ``identity``, or ``None``
    for any other answer (a scheduler's, a worker's, a malformed one)."""
    if not isinstance(reply, dict) or reply.get("type") != TASK_TYPE:
        return None
    job, task, scheduler = reply.get("job"), reply.get("task"), reply.get("scheduler")
    if not (isinstance(job, str) and isinstance(task, int) and isinstance(scheduler, str)):
        return None
    scheme, _, rest = scheduler.partition("://")
    if scheme not in _DASK_SCHEMES or not _HOST_PORT.match(rest):
        return None
    return (job, task), scheduler


# -- connecting -----------------------------------------------------------------------------------
def open_target(
    target: str,
    security: Any = None,
    timeout: float | None = None,
    *,
    direct_to_workers: bool = False,
) -> tuple[Client, Target]:
    """A ``distributed.Client`` of the cluster that a session target names, and the target
    resolved: the address of any task of a running ClusterSpec reaches its cluster, as in
    TensorFlow, whatever process started the task. With ``direct_to_workers``, the client
    gathers results from the workers and sends data to them directly, not through the
    scheduler (a session's client does: the scheduler need not carry its tensors).

    The target is first resolved in this process (:func:`resolve_target`); then
    :func:`locate` asks the address who answers there. A task's server that does not run the
    scheduler answers with the scheduler's address (see :mod:`daskgraph.cluster.server`), which the
    client then connects to, and that task becomes the master's local task.

    Raises
    ------
    InvalidArgumentError, UnreachableError
        As :func:`resolve_target` and :func:`connect` do.
    """
    resolved = resolve_target(target)
    if security is None:  # one of this process's embedded clusters: its own credentials
        security = known_security(resolved.address)
    scheduler, task = locate(resolved.address, security, timeout)
    client = _client(scheduler, security, timeout, direct_to_workers)
    if task is not None:
        resolved = Target(scheduler, task, target)
    return client, resolved


def connect(address: str, security: Any = None, timeout: float | None = None) -> Client:
    """A ``distributed.Client`` of the scheduler at ``address`` (``tcp://`` or ``tls://``), or
    of the scheduler of the task whose server answers there (:func:`locate`).

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
    >>> from daskgraph.cluster.server import free_ports
    >>> try:
    ...     connect(f"tcp://127.0.0.1:{free_ports(1)[0]}")
    ... except UnreachableError as exc:
    ...     print(exc.found)
    connection refused
    """
    if security is None:
        security = known_security(address)
    scheduler, _ = locate(address, security, timeout)
    return _client(scheduler, security, timeout)


def locate(
    address: str, security: Any = None, timeout: float | None = None
) -> tuple[str, tuple[str, int] | None]:
    """The scheduler that answers at ``address``, checked as :func:`connect` says, and the
    task whose server answers there (``None`` where the scheduler itself answers).

    A task's server answers with its scheduler's address (:data:`TASK_TYPE`): that address is
    checked in turn, and an error there says which task sent the client to it.
    """
    timeout = connect_timeout() if timeout is None else float(timeout)
    reply, address = _identity(address, security, timeout)
    found = _task_of(reply)
    if found is None:
        _require_scheduler(reply, address)
        return address, None
    task, scheduler = found
    try:
        reply, scheduler = _identity(scheduler, security, timeout)
        _require_scheduler(reply, scheduler)
    except (InvalidArgumentError, UnreachableError) as exc:
        raise type(exc)(
            f"The address {address!r} is the server of {task_name(*task)}, whose cluster's "
            f"Dask scheduler is at {scheduler!r}. {exc.message}",
            **{**exc.fields, "task": task_name(*task)},
        ) from None
    return scheduler, task


def _client(
    address: str, security: Any, timeout: float | None, direct_to_workers: bool = False
) -> Client:
    """A ``Client`` of the scheduler at ``address``, which answered a moment ago."""
    from distributed import Client

    timeout = connect_timeout() if timeout is None else float(timeout)
    try:
        return Client(
            address,
            security=security,
            timeout=timeout,
            set_as_default=False,
            direct_to_workers=direct_to_workers,
        )
    except Exception as exc:  # it answered a moment ago: say what happened, leave nothing
        raise UnreachableError(
            f"Cannot connect to the Dask scheduler at {address!r}: it answered, then the client "
            f"could not connect: {exc}",
            target=address,
            found=str(exc),
        ) from None


def _checked(address: str, security: Any) -> tuple[str, str, int]:
    """``address`` with the protocol ``security`` needs, its host and port; the errors of a
    malformed address and of ``tls://`` without certificates."""
    scheme, _, rest = address.partition("://")
    match = _HOST_PORT.match(rest)
    if scheme not in _DASK_SCHEMES or match is None:
        raise InvalidArgumentError(
            f"Cannot connect to {address!r}: expected a Dask scheduler address "
            "'tcp://host:port', 'tls://host:port' or 'ucx://host:port' (see resolve_target for "
            "the session forms).",
            target=address,
        )
    if scheme == "tcp" and requires_encryption(security):
        address = f"tls://{rest}"
    if address.startswith("tls://") and security is None:
        raise InvalidArgumentError(
            f"Cannot connect to {address!r}: a tls:// scheduler needs certificates; pass "
            "security=daskgraph.cluster.tls.security_from_dir(DIR) (see `daskgraph certs DIR`).",
            target=address,
        )
    return address, match["host"].strip("[]"), int(match["port"])


def _identity(address: str, security: Any, timeout: float) -> tuple[Any, str]:
    """What the Dask server at ``address`` answers to ``identity``, and the address (with the
    protocol ``security`` needs); the errors of a closed port, of a server that is not Dask
    and of a failed handshake."""
    address, host, port = _checked(address, security)
    head = f"Cannot connect to the Dask scheduler at {address!r}"
    tls, ucx = address.startswith("tls://"), address.startswith("ucx://")
    greeting = None  # (UCX shakes hands its own way: no greeting over plain TCP to look at)
    if not ucx:
        greeting = _greeting(head, address, host, port, timeout, security if tls else None)
    if greeting is None and not (tls or ucx):  # silent: what does it answer to a request?
        raise silent_server_error(head, address, host, port, GREETING_SHARE * timeout)
    if greeting == b"":  # (Dask's handshake would try again and again until the timeout)
        raise InvalidArgumentError(
            f"{head}: the server at {host}:{port} closed the connection at once, without a word "
            "(a Dask scheduler greets every connection). Give the address of a task of the "
            "cluster (server.target) or of its scheduler instead.",
            target=address,
            found="connection closed at once",
        )
    if greeting and not is_dask_greeting(greeting):  # it spoke first, and not as Dask does
        raise not_dask_error(head, address, host, port, greeting)
    try:
        return probe(address, security, timeout), address
    except MemoryError:  # a non-Dask reply read as a Dask frame length ("3.07 EiB")
        said = listen_to(host, port) or b"bytes that are no Dask message"
        raise not_dask_error(head, address, host, port, said) from None
    except TypeError as exc:  # distributed's answer to TLS without a usable ssl context
        raise InvalidArgumentError(
            f"{head}: {exc}. A tls:// target needs "
            "security=daskgraph.cluster.tls.security_from_dir(DIR)"
            " (see `daskgraph certs DIR`).",
            target=address,
            found="no TLS certificates",
        ) from None
    except Exception as exc:  # OSError, TimeoutError, and tornado's ValueError for TLS to TCP
        raise _explain_failed_handshake(head, address, host, port, timeout, exc) from None


def _greeting(
    head: str, address: str, host: str, port: int, timeout: float, security: Any
) -> bytes | None:
    """:func:`~daskgraph.cluster.greeting.reach`, its ``OSError`` turned into daskgraph's errors."""
    try:
        return reach(host, port, timeout, security)
    except socket.gaierror as exc:
        raise InvalidArgumentError(
            f"{head}: unknown host {host!r} ({exc.strerror}). Check the host name of the target.",
            target=address,
            found="unknown host",
        ) from None
    except ConnectionRefusedError:
        raise UnreachableError(
            f"{head}: nothing listens at {host}:{port} (connection refused). Start the cluster "
            "first (the Server of the ClusterSpec's first task runs the scheduler; `daskgraph "
            "server ...` starts a task from a shell), and give the address of one of its tasks "
            "(server.target) or of its scheduler.",
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


def _require_scheduler(reply: Any, address: str) -> None:
    """The error for a Dask server at ``address`` that is not a scheduler (a worker, ...)."""
    if isinstance(reply, dict) and reply.get("type") == "Scheduler":
        return
    kind = reply.get("type") if isinstance(reply, dict) else type(reply).__name__
    host_port = _rest(address)
    raise InvalidArgumentError(
        f"Cannot connect to the Dask scheduler at {address!r}: a Dask {kind} answers at "
        f"{host_port}, not the scheduler. Give the address of a task of the cluster "
        "(server.target) or of its scheduler.",
        target=address,
        found=f"Dask {kind}",
    )


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
            "security=daskgraph.cluster.tls.security_from_dir(DIR).",
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
