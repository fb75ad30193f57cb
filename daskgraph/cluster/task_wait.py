"""A cluster's tasks, as a session created on it sees them: its ClusterSpec, handed over through
the scheduler, and the wait until every task of it has a worker.

Its one job is that part of TensorFlow's ``Master::CreateSession``: every
:class:`~daskgraph.cluster.server.Server` stores its ``ClusterSpec`` in the scheduler's
metadata when it starts (:func:`publish_cluster_spec`, key :data:`SPEC_KEY`); a session reads
it back (:func:`published_cluster_spec`) and :func:`wait_for_tasks` waits until every task of
it has a worker, logging every ``daskgraph.cluster.wait-log-interval`` (logger
``daskgraph.cluster.master``, as before this module was split from
:mod:`daskgraph.cluster.master`, which re-exports its names) the tasks still missing.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from daskgraph.cluster.liveness import MembershipView, release_watch, watch_for
from daskgraph.cluster.timeouts import connect_timeout
from daskgraph.errors import DeadlineExceededError

if TYPE_CHECKING:
    from daskgraph.cluster.cluster_spec import ClusterSpec

__all__ = [
    "SPEC_KEY",
    "publish_cluster_spec",
    "published_cluster_spec",
    "task_name",
    "task_names",
    "wait_for_tasks",
]

# the master's logger: what TensorFlow's master logs, daskgraph logs under its name
logger = logging.getLogger("daskgraph.cluster.master")

#: Where the cluster's ClusterSpec lives in the scheduler's metadata.
SPEC_KEY = ("daskgraph", "cluster-spec")


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
    from daskgraph.cluster.cluster_spec import ClusterSpec

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

    >>> from daskgraph.cluster.server import ClusterSpec
    >>> task_names(ClusterSpec({"ps": ["a:1"], "worker": {2: "b:1"}}))
    ['/job:ps/replica:0/task:0', '/job:worker/replica:0/task:2']
    """
    return [task_name(job, task) for job, task in _tasks(spec)]


def _tasks(spec: ClusterSpec) -> list[tuple[str, int]]:
    return [(job, task) for job in spec.jobs for task in spec.task_indices(job)]


def task_name(job: str, task: int) -> str:
    """A task's device-name prefix, as TensorFlow writes it in its messages.

    >>> task_name("ps", 1)
    '/job:ps/replica:0/task:1'
    """
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
    ``daskgraph.cluster.master``, WARNING), ``CreateSession still waiting for response from worker:
    /job:J/replica:0/task:T`` as TensorFlow's master does. It waits on the client's
    :class:`~daskgraph.cluster.liveness.ClusterWatch`, which looks again whenever the scheduler
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
    >>> from daskgraph.cluster.server import ClusterSpec
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
    wanted = [task_name(job, task) for job, task in tasks]

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
    names = [task_name(job, task) for job, task in missing]
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
