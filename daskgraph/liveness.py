"""Which workers a cluster has now: the one place that follows workers joining and leaving.

A :class:`ClusterWatch` subscribes to the scheduler's ``"all"`` event topic
(``Client.subscribe_topic``), on which the scheduler announces every ``add-worker`` and
``remove-worker``. Between events its view of the cluster is current without asking the
scheduler anything, so a run's watchdog can check on every tick, for free, whether the workers
of its devices are still there; after an event the view is read again once
(:func:`cluster_workers`). Sessions use :attr:`ClusterWatch.version` to notice that devices
came or went, :meth:`ClusterWatch.wait_for` to wait for workers to (re)join, and
:meth:`ClusterWatch.wait_until` for any condition on the membership (a cluster session waits
there for every task of its ``ClusterSpec``, :mod:`daskgraph.master`).

The watch also notices when the client loses the scheduler itself (the client's ``status``
leaves ``"running"``: its connection broke, it is reconnecting, or it gave up and closed):
:meth:`ClusterWatch.check` then raises :class:`~daskgraph.errors.UnreachableError` at once,
and keeps raising it, before anything asks the scheduler (which would wait for
``distributed.comm.timeouts.connect`` and then fail with distributed's own errors). A run's
watchdog calls it on every tick, so a run whose scheduler was killed fails within a tick.

There is one watch per client (:func:`watch_for`), shared by the sessions using that client,
and it unsubscribes when the last of them lets it go (:func:`release_watch`): a client that
closes while subscribed makes the scheduler log a ``CommClosedError`` as it announces that.

>>> view = MembershipView({"tcp://127.0.0.1:1": {"name": "cpu0", "status": "running"}})
>>> view.missing(["cpu0", "gpu0", "tcp://127.0.0.1:1"])
['gpu0']
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from distributed import Client

from daskgraph.errors import UnreachableError

__all__ = [
    "ClusterWatch",
    "MembershipView",
    "cluster_workers",
    "forget_client",
    "release_watch",
    "scheduler_lost",
    "watch_for",
]

#: the scheduler's event topic that carries add-worker / remove-worker
TOPIC = "all"
_MEMBERSHIP = frozenset({"add-worker", "remove-worker"})
#: worker statuses of a worker on its way out: it serves no device any more
LEAVING = frozenset({"closing", "closing_gracefully", "closed", "failed"})


class MembershipView:
    """The workers of a cluster at one moment: address -> worker record (as
    ``Client.scheduler_info()["workers"]``), looked up by address or by name."""

    def __init__(self, workers: Mapping[str, Mapping[str, Any]]) -> None:
        self.workers = dict(workers)
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
        self._lost: UnreachableError | None = None
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
            with self._changed:
                self._version += 1
                self._changed.notify_all()

    def view(self, fresh: bool = False) -> MembershipView:
        """The cluster's workers, read from the scheduler only when a worker came or went
        (or when ``fresh``: an event may be missed while the subscription is on its way).
        Raises :class:`~daskgraph.errors.UnreachableError` once the scheduler is lost."""
        self.check()
        version = self._version
        if fresh or self._view is None or self._view_version != version:
            try:
                workers = cluster_workers(self._client)
            except (OSError, KeyError, RuntimeError):  # the scheduler went away meanwhile?
                self.check()
                raise
            self._view, self._view_version = MembershipView(workers), version
        return self._view

    def missing(self, workers: Iterable[Any]) -> list[Any]:
        """Those of ``workers`` (names or addresses) that are not in the cluster now."""
        return self.view().missing(workers)

    def wait_for(self, workers: Iterable[Any], timeout: float, exclude: Iterable[str] = ()) -> bool:
        """Wait until every one of ``workers`` (names or addresses) is in the cluster, on a
        worker whose address is not in ``exclude`` (the dead ones the scheduler may still
        list for a moment); returns whether they all are, at the latest after ``timeout``."""
        wanted = list(workers)
        dead = set(exclude)

        def ready(view: MembershipView) -> bool:
            alive = MembershipView({a: i for a, i in view.workers.items() if a not in dead})
            return not alive.missing(wanted)

        return self.wait_until(ready, timeout)

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
        ``every`` seconds (a progress report)."""
        start = time.monotonic()
        next_report = start + every if every else None
        fresh = False
        while True:
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
