"""Liveness, deadlines and aborts of a run, in one place: how every path waits for its workers.

A run waits for replies (a compiled step's, a scheduled graph's results, a step channel's)
one liveness tick (``daskgraph.liveness-check-interval``) at a time, or less when its deadline
comes sooner; between two waits, a :class:`RunWatch` checks that the run was not cancelled
(its session closed), that its deadline has not passed, and that the workers of the plan's
devices are there and the same as when the run started (a restarted worker lost what it held
of the run). What it finds is raised: :class:`~daskgraph.errors.CancelledError`,
:class:`~daskgraph.errors.DeadlineExceededError` or
:class:`~daskgraph.errors.UnavailableError` (naming the devices, their workers and the dead
addresses); before raising (or when the wait itself was interrupted) the run's ``abort``
callback tells its workers to give it up, so that no one waits for tensors that will not come.
After a failure that a lost worker may explain, :meth:`RunWatch.raise_if_left` says whether
one did.
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Callable
from typing import Any

from distributed import Future

from daskgraph.cluster.liveness import ClusterWatch
from daskgraph.deadline import raise_if_past, wait_time
from daskgraph.errors import UnavailableError

__all__ = ["RunWatch", "raise_if_devices_left", "workers_now"]


class RunWatch:
    """The watch over one run's wait (see the module).

    Parameters
    ----------
    watch
        The session's :class:`~daskgraph.cluster.liveness.ClusterWatch`.
    plan
        The run's plan (its partitions name the workers watched).
    started
        Each watched worker's address as the run started (``None``: only check that the
        plan's workers are there).
    tick
        Seconds between two checks.
    abort
        Called once when the wait ends in an error: tell the workers to give the run up.
    what
        What is waited for, for the messages (``"the partitions of the run"``).
    futures
        Dask futures of the run, cancelled when a worker left.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> from daskgraph.cluster.liveness import MembershipView
    >>> cluster = SimpleNamespace(view=lambda **kw: MembershipView({}))
    >>> done = concurrent.futures.Future()
    >>> done.set_result(42)
    >>> RunWatch(cluster, SimpleNamespace(partitions=()), None, 0.1).wait(done.result)
    42
    """

    def __init__(
        self,
        watch: ClusterWatch,
        plan: Any,
        started: dict[Any, str | None] | None,
        tick: float,
        abort: Callable[[], None] | None = None,
        what: str = "the partitions of the run",
        futures: list[Future] | None = None,
    ) -> None:
        self.watch, self.plan, self.started, self.tick = watch, plan, started, tick
        self.abort, self.what, self.futures = abort, what, futures or []

    def check(self) -> None:
        """Raise if the run was cancelled, its deadline passed or a worker of the plan left
        or was replaced (calling ``abort`` first)."""
        try:
            raise_if_past(self.what)
            raise_if_devices_left(
                self.watch, self.plan, self.futures, started=self.started, max_age=self.tick
            )
        except BaseException:
            self._abort()
            raise

    def wait(self, result: Callable[[float], Any]) -> Any:
        """``result(timeout)``'s value: called with a tick (or less, before a deadline) until
        it returns instead of raising ``TimeoutError``, :meth:`check` between two calls. An
        error ``result`` raised is raised as it is (the caller knows what it means); an
        interrupt (``KeyboardInterrupt``) aborts the run first."""
        while True:
            try:
                return result(wait_time(self.tick))
            except (TimeoutError, concurrent.futures.TimeoutError):
                self.check()
            except Exception:
                raise
            except BaseException:
                self._abort()
                raise

    def raise_if_left(self, cause: BaseException | None = None) -> None:
        """After a failure a lost worker may explain (a closed connection, an error reply):
        raise :class:`~daskgraph.errors.UnavailableError` (from ``cause``) if a worker of the
        plan is missing or was replaced since ``started``, waiting up to a tick for the
        scheduler to say so (the failure is often noticed first); else return."""
        started = dict(self.started or {})
        self.watch.wait_until(lambda view: view.addresses(list(started)) != started, self.tick)
        raise_if_devices_left(self.watch, self.plan, [], cause, started=self.started)

    def _abort(self) -> None:
        if self.futures:
            self.futures[0].client.cancel(self.futures)
        if self.abort is not None:
            abort, self.abort = self.abort, None
            abort()


def workers_now(watch: ClusterWatch, plan: Any) -> dict[Any, str | None]:
    """The address of each worker of the plan as a run starts; a run must not be submitted
    while one is missing (the scheduler resolves a worker name when a task arrives: a task
    restricted to a name it does not know would wait for that name forever)."""
    raise_if_devices_left(watch, plan, [])
    return watch.view().addresses({p.worker for p in plan.partitions})


def raise_if_devices_left(
    watch: ClusterWatch,
    plan: Any,
    futures: list[Future],
    cause: BaseException | None = None,
    started: dict[Any, str | None] | None = None,
    max_age: float | None = None,
) -> None:
    """Raise UnavailableError if a worker of the plan is missing, stalled (silent for longer
    than ``daskgraph.worker-stall-timeout``), or (given the addresses at the start of the run)
    was replaced since: a restarted worker lost the run's partitions there, and Dask may hold
    them for a worker that never comes. The membership is read again when older than
    ``max_age`` seconds (a waiting run's tick). The error names the devices, their workers,
    (field ``addresses``) the dead addresses and (``stalled``) the devices of stalled workers;
    the run's futures are cancelled, so a stalled worker that wakes up runs nothing more of
    it."""
    workers = {p.worker for p in plan.partitions}
    view = watch.view(max_age=max_age)
    now = view.addresses(workers)
    started = started or {}
    gone = [
        p
        for p in plan.partitions
        if now[p.worker] is None or started.get(p.worker, now[p.worker]) != now[p.worker]
    ]
    if not gone:
        return
    missing = sorted({p.device for p in gone})
    frozen = set(view.stalled_names(workers))
    stalled = sorted({p.device for p in gone if p.worker in frozen})
    if futures:
        futures[0].client.cancel(futures)
    raise UnavailableError(
        _left_message(missing, stalled, cause),
        missing=missing,
        stalled=stalled,
        workers=sorted({str(p.worker) for p in gone}),
        addresses=sorted({a for p in gone if (a := started.get(p.worker))}),
    ) from cause


def _left_message(missing: list[str], stalled: list[str], cause: BaseException | None) -> str:
    """What :func:`raise_if_devices_left` says.

    >>> print(_left_message(["/device:GPU:0"], ["/device:GPU:0"], None))  # doctest: +ELLIPSIS
    The workers of devices /device:GPU:0 left the cluster during the run; ... stopped sending...
    """
    seen = f" ({type(cause).__name__}: {cause})" if cause is not None else ""
    frozen = (
        f"; the workers of {', '.join(stalled)} stopped sending heartbeats for longer than "
        "daskgraph.worker-stall-timeout and are taken as gone"
        if stalled
        else ""
    )
    return (
        f"The workers of devices {', '.join(missing)} left the cluster during the run{seen}"
        f"{frozen}, so its partitions there cannot run. The session runs the step again once "
        "they are back (within daskgraph.worker-restart-grace), or places the graph again on "
        "the devices that remain (soft placement may move ops elsewhere)."
    )
