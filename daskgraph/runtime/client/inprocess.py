"""Run a one-device plan whose device's Dask worker lives in this process by plain calls.

The embedded cluster's CPU worker lives in the client's process
(``daskgraph.local.cpu-in-process``, the default; GPU workers keep their own processes), and
so does every worker of a cluster started with in-process workers (``LocalCluster(processes=
False)``, ``daskgraph.local.processes: false``) and of a :class:`~daskgraph.cluster.server.Server`
started by this program. A run whose plan is one partition on such a
device needs no message at all: the partition runs in the calling thread against that worker's
own daskgraph state (its variables and compiled programs,
:mod:`daskgraph.runtime.worker.worker_state`), as
TensorFlow's direct session runs a small graph without leaving the process. A trivial run
then costs the client's bookkeeping and the kernels, not a round trip through Dask's comms and
two thread hand-offs (see ``benchmarks/findings.py``).

What the other paths guarantee holds here too:

* **One copy of every variable.** The state is the worker's: multi-device runs, whose
  partitions are Dask tasks on that same worker, read and assign the same variables.
* **Assigns apply once per run.** Runs are numbered by the session as on the other paths
  (:meth:`~daskgraph.runtime.worker.worker_state.VariableStore.apply_once`).
* **Feeds are the run's own.** Each NumPy feed is copied, as a transport would: the caller may
  refill its array for the next step, and a variable assigned from a feed must not change
  with it. Fetched read-only arrays (variables, constants) are copied on the way out
  (:func:`daskgraph.runtime.client.fetches.as_result`).
* **Deadlines.** A call in the caller's thread cannot be abandoned, so a run with a deadline
  (``RunOptions.timeout_in_ms``, ``operation_timeout_in_ms``) goes to the worker through
  Dask's comm instead, which can abandon it (a plan that may block, as a dequeue, runs here:
  its ops honour the deadline themselves).
* **A worker that is closing** is not called: the run takes the usual path, which reports it.

This is the zero-hop transport of compiled steps
(:class:`~daskgraph.runtime.client.transports.InProcessTransport`).

>>> InProcessDevices(None).worker("/job:localhost/replica:0/task:0/device:CPU:0") is None
True
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Future, wait
from typing import Any

import numpy as np
from distributed import Worker

from daskgraph.cluster.master import server_workers
from daskgraph.deadline import has_deadline
from daskgraph.runtime.program import RunStep
from daskgraph.runtime.worker.execution import RunFailure, run_partition
from daskgraph.runtime.worker.worker_state import state_of

__all__ = ["InProcessDevices", "private_feed"]

#: worker statuses (``distributed.core.Status`` names) in which a worker runs tasks
_SERVING = frozenset({"running", "paused"})


class InProcessDevices:
    """The workers of a client's cluster that live in this process, and runs on them.

    Candidates are the workers of the client's cluster object (``Client.cluster``: the
    embedded cluster, a ``LocalCluster``, ...) and those of the
    :class:`~daskgraph.cluster.server.Server`
    s this process started (``tf.Session(server.target)``); one is used only when it is
    serving and registered with the client's own scheduler.

    Parameters
    ----------
    client
        The session's ``distributed.Client`` (``None``: no worker is in this process).
    """

    def __init__(self, client: Any) -> None:
        self._client = client
        self._found: dict[Any, Worker] = {}

    def worker(self, restriction: Any) -> Worker | None:
        """The in-process worker that tasks restricted to ``restriction`` (a worker name or
        address) run on, if it is serving; else ``None``."""
        worker = self._found.get(restriction)
        if worker is None or worker.status.name not in _SERVING:
            worker = self._find(restriction)
        return worker

    def _find(self, restriction: Any) -> Worker | None:
        self._found.pop(restriction, None)
        if self._client is None:
            return None
        scheduler = self._client.scheduler.address
        for worker in self._candidates():
            if (
                isinstance(worker, Worker)
                and restriction in (worker.name, worker.address)
                and worker.status.name in _SERVING
                and worker.scheduler.address == scheduler
            ):
                self._found[restriction] = worker
                return worker
        return None

    def _candidates(self) -> list[Any]:
        workers = getattr(self._client.cluster, "workers", None)
        found = list(workers.values()) if isinstance(workers, dict) else []
        return found + server_workers()

    def run(
        self,
        plan: Any,
        step: RunStep,
        feed_values: Sequence[Any],
        trace: bool,
        blocking: bool = False,
    ) -> dict[int, tuple] | None:
        """Run ``plan`` here when all its partitions are on one worker of this process:
        partition index -> outputs (those the client needs; all of them when tracing).
        ``None`` when its worker is elsewhere (or closing), or the run has a deadline: another
        path must run it. Raises the error the run hit. A ``blocking`` plan (one with ops
        that may wait for another run, as a dequeue, which honour the deadline themselves)
        runs here with a deadline too.

        One partition runs in this thread; the parallel parts of a large CPU partition
        (``daskgraph.parallel-partition-elements``) run on the worker's own threads, as its
        tasks would.
        """
        if has_deadline() and not blocking:
            return None
        workers = {p.worker for p in plan.partitions}
        worker = self.worker(workers.pop()) if len(workers) == 1 else None
        if worker is None:
            return None
        state = state_of(worker)
        if len(plan.partitions) == 1:
            (partition,) = plan.partitions
            feeds = _private_feeds(partition, feed_values)
            result = run_partition(state, worker.address, partition.program, step, feeds, trace)
            outputs = {0: result}
        else:
            outputs = _run_parts(worker, state, plan, step, feed_values, trace)
        for result in outputs.values():
            if isinstance(result, RunFailure):
                raise result.error
        return outputs

    def forget(self) -> None:
        """Look the workers up again on the next run (after the cluster changed)."""
        self._found.clear()


def _run_parts(
    worker: Worker, state: Any, plan: Any, step: RunStep, feed_values: Sequence[Any], trace: bool
) -> dict[int, Any]:
    """Every partition of ``plan`` on ``worker``'s threads, each once its dependencies are
    done (partitions are in a topological order and the pool takes them in order, so a
    partition waiting for another never holds the thread that one needs); waits for all."""
    pool = worker.executor
    futures: list[Future] = []
    for p in plan.partitions:
        feeds = _private_feeds(p, feed_values)
        depends = [futures[d] for d in p.dependencies]
        futures.append(
            pool.submit(_after, depends, state, worker.address, p.program, step, feeds, trace)
        )
    wait(futures)
    wanted = range(len(futures)) if trace else plan.result_partitions
    return {i: futures[i].result() for i in wanted}


def _after(
    depends: list[Future],
    state: Any,
    address: str,
    program: Any,
    step: RunStep,
    feeds: tuple,
    trace: bool,
) -> Any:
    """One partition, once the partitions it reads are done (a failure there is passed on
    by :func:`~daskgraph.runtime.worker.execution.run_partition`)."""
    dependencies = tuple(f.result() for f in depends)
    return run_partition(state, address, program, step, feeds, trace, dependencies)


def _private_feeds(partition: Any, feed_values: Sequence[Any]) -> tuple:
    """The feeds ``partition`` reads, each the run's own (:func:`private_feed`)."""
    return tuple(private_feed(feed_values[i]) for i in partition.feed_indices)


def private_feed(value: Any) -> Any:
    """A feed value the run may keep: NumPy arrays are copied (the caller's array may be
    refilled for the next step); scalars and other immutable values are passed as they are.

    >>> fed = np.zeros(2)
    >>> kept = private_feed(fed)
    >>> fed[0] = 1.0
    >>> kept
    array([0., 0.])
    """
    if isinstance(value, np.ndarray):
        return value.copy()
    return value
