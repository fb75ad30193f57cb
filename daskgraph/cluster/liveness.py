"""Which workers a cluster has now: the one place that follows workers joining and leaving.

A :class:`ClusterWatch` subscribes to the scheduler's ``"all"`` event topic
(``Client.subscribe_topic``), on which the scheduler announces every ``add-worker`` and
``remove-worker``. Between events its view of the cluster is current without asking the
scheduler anything, so a run's watchdog can check on every tick, for free, whether the workers
of its devices are still there; after an event the view is read again once
(:func:`cluster_workers`). Sessions use :attr:`ClusterWatch.version` to notice that devices
came or went, :meth:`ClusterWatch.wait_for` to wait for workers to (re)join, and
:meth:`ClusterWatch.wait_until` for any condition on the membership (a cluster session waits
there for every task of its ``ClusterSpec``, :mod:`daskgraph.cluster.master`).

The watch also notices when the client loses the scheduler itself (the client's ``status``
leaves ``"running"``: its connection broke, it is reconnecting, or it gave up and closed):
:meth:`ClusterWatch.check` then raises :class:`~daskgraph.errors.UnreachableError` at once,
and keeps raising it, before anything asks the scheduler (which would wait for
``distributed.comm.timeouts.connect`` and then fail with distributed's own errors). A run's
watchdog calls it on every tick, so a run whose scheduler was killed fails within a tick.

Events alone are not trusted to bound a wait: one may be missed, and a worker that is
*frozen* (SIGSTOP, swap, a debugger, a long pause) sends none at all while the scheduler lists
it as running for its whole ``distributed.scheduler.worker-ttl`` (5 minutes). So a waiting run
asks for a fresh view at most once a tick (:meth:`ClusterWatch.view` with ``max_age``), and
each fresh view compares the workers' heartbeats (the scheduler's ``last_seen``, on the
scheduler's clock alone, :func:`silent_workers`): a worker silent for longer than
``daskgraph.worker-stall-timeout`` while the others were heard is *stalled*. A stalled worker
is left out of every later view of that client: its devices read as gone, and a worker that
wakes up later is not trusted with a half-run step (one that restarts comes back at a new
address, and is seen afresh).

A worker that left is *gone for good* (:meth:`ClusterWatch.gone_for_good`), and nobody waits
for it to come back, when it was retired on purpose (``Client.retire_workers``: the
scheduler's ``remove-worker`` event carries a ``retire-workers`` stimulus), or when no nanny
will restart it: it had none (a worker in a thread, a ``dask worker --no-nanny``, a
daskgraph server task), or its nanny is gone too (its address refuses connections; a host
out of reach says nothing, and its workers are awaited). Only a worker whose nanny still
runs is awaited, for ``daskgraph.worker-restart-grace``.

There is one watch per client (:func:`watch_for`), shared by the sessions using that client,
and it unsubscribes when the last of them lets it go (:func:`release_watch`): a client that
closes while subscribed makes the scheduler log a ``CommClosedError`` as it announces that.

>>> view = MembershipView({"tcp://127.0.0.1:1": {"name": "cpu0", "status": "running"}})
>>> view.missing(["cpu0", "gpu0", "tcp://127.0.0.1:1"])
['gpu0']
>>> MembershipView({"tcp://h:1": {"name": "gpu0"}}, stalled=["tcp://h:1"]).missing(["gpu0"])
['gpu0']
"""

from __future__ import annotations

import logging
import socket
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import dask.config
from dask.utils import parse_timedelta
from distributed import Client
from distributed.comm import get_address_host_port, parse_address

from daskgraph.deadline import raise_if_cancelled
from daskgraph.errors import UnreachableError

__all__ = [
    "ClusterWatch",
    "MembershipView",
    "cluster_workers",
    "forget_client",
    "nanny_answers",
    "release_watch",
    "restart_grace",
    "scheduler_lost",
    "silent_workers",
    "stall_timeout",
    "watch_for",
]

logger = logging.getLogger(__name__)

#: the scheduler's event topic that carries add-worker / remove-worker
TOPIC = "all"
_MEMBERSHIP = frozenset({"add-worker", "remove-worker"})
#: how the scheduler's stimulus ids of ``retire_workers`` begin
_RETIRED = "retire-workers"
#: worker statuses of a worker on its way out: it serves no device any more
LEAVING = frozenset({"closing", "closing_gracefully", "closed", "failed"})


class MembershipView:
    """The workers of a cluster at one moment: address -> worker record (as
    ``Client.scheduler_info()["workers"]``), looked up by address or by name."""

    def __init__(
        self, workers: Mapping[str, Mapping[str, Any]], stalled: Iterable[str] = ()
    ) -> None:
        left_out = set(stalled)
        self.workers = {a: info for a, info in workers.items() if a not in left_out}
        self.stalled = {a: workers[a] for a in left_out if a in workers}
        self._present = set()
        for address, info in self.workers.items():
            if info.get("status") in LEAVING:
                continue
            self._present.add(address)
            self._present.add(info.get("name", address))

    def missing(self, workers: Iterable[Any]) -> list[Any]:
        """Those of ``workers`` (names or addresses) that are not in the cluster, in order."""
        return [w for w in workers if w not in self._present]

    def names(self) -> list[str]:
        """The names of the workers present (not leaving), as strings.

        >>> MembershipView({"tcp://h:1": {"name": "cpu0"}, "tcp://h:2": {}}).names()
        ['cpu0', 'tcp://h:2']
        """
        return [
            str(info.get("name", address))
            for address, info in self.workers.items()
            if address in self._present
        ]

    def addresses(self, workers: Iterable[Any]) -> dict[Any, str | None]:
        """The address of each of ``workers`` (names or addresses) now; None if absent.

        >>> MembershipView({"tcp://h:1": {"name": "cpu0"}}).addresses(["cpu0", "gpu0"])
        {'cpu0': 'tcp://h:1', 'gpu0': None}
        """
        by_name = {
            info.get("name", a): a
            for a, info in self.workers.items()
            if info.get("status") not in LEAVING
        }
        return {
            w: w if w in self.workers and w in self._present else by_name.get(w) for w in workers
        }

    def __contains__(self, worker: Any) -> bool:
        return worker in self._present

    def stalled_names(self, workers: Iterable[Any]) -> list[Any]:
        """Those of ``workers`` (names or addresses) that are stalled: listed by the
        scheduler, but silent for longer than ``daskgraph.worker-stall-timeout``.

        >>> MembershipView({"tcp://h:1": {"name": "gpu0"}}, ["tcp://h:1"]).stalled_names(["gpu0"])
        ['gpu0']
        """
        names = {info.get("name", a) for a, info in self.stalled.items()} | set(self.stalled)
        return [w for w in workers if w in names]


def stall_timeout() -> float:
    """``daskgraph.worker-stall-timeout`` in seconds (a number, or a duration such as "15s").

    >>> with dask.config.set({"daskgraph.worker-stall-timeout": "2s"}):
    ...     stall_timeout()
    2.0
    """
    value = dask.config.get("daskgraph.worker-stall-timeout")
    return float(parse_timedelta(value, default="seconds"))


def restart_grace() -> float:
    """``daskgraph.worker-restart-grace`` in seconds (a number, or a duration such as "30s"):
    how long a run waits for a lost worker whose nanny may restart it.

    >>> with dask.config.set({"daskgraph.worker-restart-grace": "2s"}):
    ...     restart_grace()
    2.0
    """
    value = dask.config.get("daskgraph.worker-restart-grace")
    return float(parse_timedelta(value, default="seconds"))


def silent_workers(workers: Mapping[str, Mapping[str, Any]], timeout: float) -> list[str]:
    """The workers (addresses) whose last heartbeat is over ``timeout`` seconds older than the
    latest heartbeat of any worker: frozen while the others, and the scheduler, went on.

    Only the scheduler's clock is used (each record's ``last_seen``), so clocks need not agree;
    a scheduler too busy to hear anyone stalls no worker, and a cluster of one worker has no
    one to compare with (its loss shows when it leaves).

    >>> silent_workers({"tcp://h:1": {"last_seen": 100.0}, "tcp://h:2": {"last_seen": 120.0},
    ...                 "tcp://h:3": {"last_seen": 119.5}}, timeout=15)
    ['tcp://h:1']
    >>> silent_workers({"tcp://h:1": {"last_seen": 100.0}}, timeout=15)
    []
    """
    seen = {a: float(i["last_seen"]) for a, i in workers.items() if i.get("last_seen")}
    latest = max(seen.values(), default=0.0)
    return sorted(a for a, t in seen.items() if latest - t > timeout)


def cluster_workers(client: Any, attempts: int = 5) -> dict[str, dict[str, Any]]:
    """Every worker record of ``client``'s cluster: address -> record, as
    ``Client.scheduler_info(n_workers=-1)["workers"]``, but complete.

    ``Client.scheduler_info`` fetches the scheduler's identity into an attribute of the client
    and returns that attribute, which the client's own periodic refresh overwrites with an
    identity *without* worker records (``n_workers=0``): read at the wrong moment, a cluster
    of running workers looks empty. The identity always carries the number of workers, so a
    reply with fewer records than that is read again.

    >>> class FakeClient:
    ...     replies = [{"n_workers": 1, "workers": {}},
    ...                {"n_workers": 1, "workers": {"tcp://h:1": {"name": "cpu0"}}}]
    ...     def scheduler_info(self, n_workers=-1):
    ...         return self.replies.pop(0)
    >>> cluster_workers(FakeClient())
    {'tcp://h:1': {'name': 'cpu0'}}
    """
    info: Mapping[str, Any] = {}
    for _ in range(attempts):
        info = client.scheduler_info(n_workers=-1)
        workers = dict(info.get("workers") or {})
        if len(workers) >= int(info.get("n_workers", len(workers))):
            return workers
    return dict(info.get("workers") or {})


class ClusterWatch:
    """Follows a client's cluster through the scheduler's membership events."""

    def __init__(self, client: Client) -> None:
        self._client = client
        self.address = _scheduler_address(client)
        self._changed = threading.Condition()
        self._version = 0
        self._view: MembershipView | None = None
        self._view_version = -1
        self._view_time = 0.0
        self._stalled: set[str] = set()
        #: ask a stalled worker's nanny to restart it (daskgraph's own clusters: as Dask's
        #: scheduler does after ``worker-ttl``), so that its device comes back, fresh
        self.restart_stalled = False
        self._lost: UnreachableError | None = None
        self._retired: set[str] = set()  # addresses retired on purpose (retire_workers)
        #: name and address of each worker seen -> (its address, its record), as last seen
        self._last: dict[Any, tuple[str, Mapping[str, Any]]] = {}
        client.subscribe_topic(TOPIC, self._on_event)

    @property
    def lost(self) -> UnreachableError | None:
        """The error saying the scheduler was lost, once :meth:`check` has seen it."""
        return self._lost

    def check(self) -> None:
        """Raise :class:`~daskgraph.errors.UnreachableError` if the client has lost its
        scheduler (now, or at any time before: a session does not go on with a scheduler
        that came back empty). Reads only the client's status: never blocks."""
        if self._lost is None:
            status = getattr(self._client, "status", "running")  # (a stand-in client)
            if status == "running":
                return
            self._lost = scheduler_lost(self.address, status)
        raise self._lost

    @property
    def version(self) -> int:
        """Grows by one whenever a worker joins or leaves the cluster."""
        return self._version

    def _on_event(self, event: tuple[float, Any]) -> None:
        """Runs on the client's event loop: never blocks, only records that something moved."""
        _, msg = event
        if isinstance(msg, dict) and msg.get("action") in _MEMBERSHIP:
            if str(msg.get("stimulus_id", "")).startswith(_RETIRED) and msg.get("worker"):
                self._retired.add(str(msg["worker"]))  # (set.add: atomic, never blocks)
            with self._changed:
                self._version += 1
                self._changed.notify_all()

    def view(self, fresh: bool = False, max_age: float | None = None) -> MembershipView:
        """The cluster's workers, read from the scheduler only when a worker came or went,
        when ``fresh``, or when the last read is older than ``max_age`` seconds (a waiting
        run's tick: an event may be missed, and a frozen worker sends none). Stalled workers
        are left out (see the module's docstring).
        Raises :class:`~daskgraph.errors.UnreachableError` once the scheduler is lost."""
        self.check()
        version = self._version
        now = time.monotonic()
        stale = max_age is not None and now - self._view_time >= max_age
        if fresh or stale or self._view is None or self._view_version != version:
            try:
                workers = cluster_workers(self._client)
            except (OSError, KeyError, RuntimeError):  # the scheduler went away meanwhile?
                self.check()
                raise
            self._note_stalls(workers)
            for address, info in workers.items():
                self._last[address] = self._last[info.get("name", address)] = (address, info)
            self._view = MembershipView(workers, self._stalled)
            self._view_version, self._view_time = version, now
        return self._view

    def _note_stalls(self, workers: Mapping[str, Mapping[str, Any]]) -> None:
        """A worker of ``workers`` silent for longer than the stall timeout is stalled from
        now on, for as long as the scheduler lists it at that address."""
        self._stalled &= set(workers)  # a worker that left (or restarted) is seen afresh
        timeout = stall_timeout()
        for address in silent_workers(workers, timeout):
            if address not in self._stalled:
                self._stalled.add(address)
                logger.warning(
                    "worker %s (%s) sent no heartbeat for over %s s while the others did: "
                    "taken as gone (daskgraph.worker-stall-timeout), and not used again by "
                    "this client unless it restarts",
                    workers[address].get("name", address),
                    address,
                    timeout,
                )
                if self.restart_stalled:
                    self._restart(address)

    def _restart(self, address: str) -> None:
        """Have ``address``'s nanny kill and restart it, in the background (a frozen process
        takes the nanny's close timeout to be killed); no nanny: nothing happens."""

        def restart() -> None:
            try:
                self._client.restart_workers([address], raise_for_error=False)
            except Exception:  # the cluster is closing, or the worker has no nanny
                logger.debug("could not restart stalled worker %s", address, exc_info=True)

        threading.Thread(target=restart, daemon=True, name="daskgraph-restart-stalled").start()

    def missing(self, workers: Iterable[Any]) -> list[Any]:
        """Those of ``workers`` (names or addresses) that are not in the cluster now."""
        return self.view().missing(workers)

    def wait_for(self, workers: Iterable[Any], timeout: float, exclude: Iterable[str] = ()) -> bool:
        """Wait until every one of ``workers`` (names or addresses) is in the cluster, on a
        worker whose address is not in ``exclude`` (the dead ones the scheduler may still
        list for a moment); returns whether they all are, at the latest after ``timeout``.
        Workers :meth:`gone_for_good` are not waited for: once only those are missing, it
        returns False at once."""
        wanted = list(workers)
        dead = set(exclude)
        back = [False]

        def settled(view: MembershipView) -> bool:
            alive = MembershipView({a: i for a, i in view.workers.items() if a not in dead})
            missing = alive.missing(wanted)
            back[0] = not missing
            return not missing or len(self.gone_for_good(missing, dead)) == len(missing)

        self.wait_until(settled, timeout)
        return back[0]

    def gone_for_good(self, workers: Iterable[Any], exclude: Iterable[str] = ()) -> list[Any]:
        """Those of ``workers`` (names or addresses; absent from the cluster, or at an
        address in ``exclude``) that no nanny will bring back: retired on purpose, without a
        nanny, or whose nanny is gone too (see the module). A worker this watch never saw is
        not among them (it may still be starting)."""
        dead = set(exclude)
        view = self.view()
        gone = []
        for worker in workers:
            if worker in view and view.addresses([worker])[worker] not in dead:
                continue
            if worker not in self._last:
                continue
            address, info = self._last[worker]
            nanny = info.get("nanny")
            if address in self._retired or not nanny or not nanny_answers(str(nanny)):
                gone.append(worker)
        return gone

    def wait_until(
        self,
        ready: Callable[[MembershipView], bool],
        timeout: float | None,
        *,
        every: float | None = None,
        waiting: Callable[[MembershipView], None] | None = None,
    ) -> bool:
        """Wait until ``ready(view)`` holds for the cluster's membership, looking again after
        every membership event; returns whether it holds, at the latest after ``timeout``
        seconds (``None``: no limit). While waiting, ``waiting(view)`` is called every
        ``every`` seconds (a progress report). Inside a run whose session is closed
        meanwhile, raises :class:`~daskgraph.errors.CancelledError` (within half a second).
        """
        start = time.monotonic()
        next_report = start + every if every else None
        fresh = False
        while True:
            raise_if_cancelled("lost workers to come back")
            version = self._version
            view = self.view(fresh)
            if ready(view):
                return True
            now = time.monotonic()
            left = None if timeout is None else start + timeout - now
            if left is not None and left <= 0:
                return False
            if next_report is not None and now >= next_report:
                if waiting is not None:
                    waiting(view)
                next_report = now + (every or 0.0)
            pause = min(x for x in (left, 0.5, next_report and next_report - now) if x)
            with self._changed:
                # an event may be missed between the check and the wait: look again every
                # half second all the same
                if self._version == version:
                    fresh = not self._changed.wait(max(pause, 0.0))  # no event: ask anyway

    def close(self) -> None:
        """Stop following the cluster."""
        if getattr(self._client, "status", "running") != "running":
            return  # nothing to tell a scheduler that is gone (or that the client left)
        try:
            self._client.unsubscribe_topic(TOPIC)
        except Exception:  # the client is already closed: nothing is subscribed any more
            pass


def nanny_answers(address: str, timeout: float = 1.0) -> bool:
    """Whether the nanny at ``address`` may still be there: only a refused TCP connection
    says it is gone (its host answers, nothing listens). A connection that cannot be tried
    or times out (another transport, a host out of reach) says nothing: the nanny counts as
    there, and its worker is awaited for the restart grace, as before.

    >>> nanny_answers("tcp://127.0.0.1:1")
    False
    >>> nanny_answers("inproc://127.0.0.1/1/2")
    True
    """
    try:
        scheme, _ = parse_address(address)
        if scheme not in ("tcp", "tls"):
            return True
        host, port = get_address_host_port(address)
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except ConnectionRefusedError:
        return False
    except (OSError, ValueError):  # out of reach, or not an address: cannot tell
        return True


def scheduler_lost(address: str, status: str) -> UnreachableError:
    """The error of a session whose client lost the scheduler at ``address``.

    >>> print(scheduler_lost("tcp://127.0.0.1:8786", "connecting"))  # doctest: +ELLIPSIS
    Lost the connection to the Dask scheduler at tcp://127.0.0.1:8786 (the client is ...
    """
    return UnreachableError(
        f"Lost the connection to the Dask scheduler at {address} (the client is {status!r}): "
        "the cluster is gone, or cannot be reached from here any more. A session cannot go on "
        "without its scheduler (its state there, and on the workers, is lost): start the "
        "cluster again and open a new Session; close() this one.",
        target=address,
        found=f"client {status}",
    )


def _scheduler_address(client: Any) -> str:
    return str(getattr(getattr(client, "scheduler", None), "address", "") or "?")


_watches: weakref.WeakKeyDictionary[Client, tuple[ClusterWatch, int]] = weakref.WeakKeyDictionary()
_watches_lock = threading.Lock()


def watch_for(client: Client) -> ClusterWatch:
    """The watch of ``client``'s cluster (one per client, made on first use); pair every call
    with :func:`release_watch`."""
    with _watches_lock:
        watch, users = _watches.get(client, (None, 0))
        if watch is None:
            watch = ClusterWatch(client)
        _watches[client] = (watch, users + 1)
        return watch


def release_watch(client: Client) -> None:
    """One user fewer of ``client``'s watch; the last one unsubscribes it."""
    with _watches_lock:
        watch, users = _watches.get(client, (None, 0))
        if watch is None:
            return
        if users > 1:
            _watches[client] = (watch, users - 1)
            return
        del _watches[client]
    watch.close()


def forget_client(client: Client) -> None:
    """Unsubscribe ``client``'s watch whoever still uses it (the client is about to close)."""
    with _watches_lock:
        watch, _ = _watches.pop(client, (None, 0))
    if watch is not None:
        watch.close()
