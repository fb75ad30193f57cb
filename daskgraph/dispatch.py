"""The client side of a run: ship a plan's programs once, submit each run, and never hang.

A :class:`CompiledRun` is a lowered plan whose partition programs have been sent to the
workers that run them (``Client.scatter`` to the owning worker, kept as futures): repeated runs
then send only the feeds and the task graph, not the programs, and the constants inside them
cross the network once per session. :func:`submit_run` builds one run's graph, submits it, and
waits for it with a watchdog: while the run is pending it checks every ``tick`` seconds that
the workers of the plan's devices are still in the cluster, so that a vanished device fails the
run within seconds instead of leaving its tasks in Dask's ``no-worker`` state forever.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import dask.config
from distributed import Client, Future

from daskgraph.errors import UnavailableError
from daskgraph.execution import RunFailure, execute_partition
from daskgraph.lowering import Plan, build_task_graph

__all__ = ["CompiledRun", "submit_run"]


class CompiledRun:
    """A plan, and the futures of its programs resident on their workers."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self._programs: list[Future] | None = None

    def program_futures(self, client: Client) -> list[Future]:
        """The programs' futures, sending (again) what is not on its worker."""
        programs = self._programs
        if programs is None or any(f.status != "finished" for f in programs):
            programs = self._programs = self._ship(client)
        return programs

    def forget_programs(self) -> None:
        self._programs = None

    def _ship(self, client: Client) -> list[Future]:
        by_worker: dict[str, list[int]] = {}
        for p in self.plan.partitions:
            by_worker.setdefault(p.worker, []).append(p.index)
        futures: list[Future | None] = [None] * len(self.plan.partitions)
        for worker, indices in by_worker.items():
            programs = [self.plan.partitions[i].program for i in indices]
            scattered = client.scatter(programs, workers=[worker], hash=False, broadcast=False)
            for i, future in zip(indices, scattered, strict=True):
                futures[i] = future
        return futures  # type: ignore[return-value]


def submit_run(
    client: Client,
    compiled: CompiledRun,
    key_prefix: str,
    session_id: str,
    feed_values: Sequence[Any],
    trace: bool,
    tick: float,
) -> dict[int, tuple]:
    """Run ``compiled`` once; partition index -> its outputs (results, or all when tracing).

    Raises the error a partition returned, or :class:`~daskgraph.errors.UnavailableError`
    naming the devices whose workers left the cluster during the run.
    """
    plan = compiled.plan
    programs = compiled.program_futures(client)
    feed_futures = _send_large_feeds(client, plan, feed_values)
    dsk, keys = build_task_graph(
        plan,
        key_prefix,
        session_id,
        feed_values,
        execute_partition,
        trace,
        program_keys=[f.key for f in programs],
        feed_keys={i: f.key for i, f in feed_futures.items()},
    )
    # with tracing, every partition reports where it ran; otherwise only results matter
    parts = range(len(plan.partitions)) if trace else plan.result_partitions
    futures = client.get(dsk, [keys[i] for i in parts], sync=False)
    try:
        gathered = [_result_watching_workers(client, plan, futures, f, tick) for f in futures]
    finally:
        del futures, feed_futures
    for result in gathered:
        if isinstance(result, RunFailure):
            raise result.error
    return dict(zip(parts, gathered, strict=True))


def _send_large_feeds(client: Client, plan: Plan, feed_values: Sequence[Any]) -> dict[int, Future]:
    """Send each feed of at least ``daskgraph.direct-feed-bytes`` straight to the (first)
    worker that reads it, bypassing the scheduler; smaller feeds travel inside the graph."""
    threshold = int(dask.config.get("daskgraph.direct-feed-bytes"))
    readers: dict[int, str] = {}
    for p in plan.partitions:
        for i in p.feed_indices:
            readers.setdefault(i, p.worker)
    sent: dict[int, Future] = {}
    for i, worker in readers.items():
        value = feed_values[i]
        if getattr(value, "nbytes", 0) >= threshold:
            sent[i] = client.scatter(value, workers=[worker], direct=True, hash=False)
    return sent


def _result_watching_workers(
    client: Client, plan: Plan, futures: list[Future], future: Future, tick: float
) -> Any:
    while True:
        try:
            return future.result(timeout=tick)
        except TimeoutError:
            missing = missing_devices(client, plan)
            if missing:
                client.cancel(futures)
                raise UnavailableError(
                    f"The workers of devices {', '.join(missing)} left the cluster during the "
                    "run, so its partitions there cannot run. Run again: the graph is placed "
                    "again on the devices that remain (soft placement may move ops elsewhere).",
                    missing=missing,
                ) from None


def missing_devices(client: Client, plan: Plan) -> list[str]:
    """Devices of ``plan`` whose workers are no longer in the cluster (asks the scheduler)."""
    live = set(client.scheduler_info(n_workers=-1)["workers"])
    return sorted({p.device for p in plan.partitions if p.worker not in live})
