"""TensorFlow's ``ClusterSpec``: the tasks of each job of a cluster, by address.

A value, read by the :class:`~daskgraph.cluster.server.Server` that starts a task, by the session's
master (:mod:`daskgraph.cluster.master`) that waits for the tasks, and by the CLI.

>>> spec = ClusterSpec({"worker": ["host0:2222", "host1:2222"], "ps": {0: "host2:2222"}})
>>> spec.jobs, spec.num_tasks("worker"), spec.job_tasks("ps")
(['worker', 'ps'], 2, ['host2:2222'])
>>> spec.scheduler_address()
'tcp://host0:2222'
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = ["ADDRESS", "ClusterSpec", "with_protocol"]

_JOB = re.compile(r"[A-Za-z][A-Za-z0-9_-]*\Z")
ADDRESS = re.compile(r"(?:(?P<proto>[a-z]+)://)?(?P<host>[^:/]+|\[[^\]]+\]):(?P<port>\d+)\Z")


class ClusterSpec:
    """The tasks of each job, by address: ``{"job": ["host:port", ...]}`` or ``{job: {i: addr}}``.

    Any string is an address, as in TensorFlow: the :class:`~daskgraph.cluster.server.Server` that
    starts a task checks its own (``InvalidArgumentError``).

    Raises
    ------
    TypeError, ValueError
        For a malformed spec, naming the job or the address and what was expected.
    """

    def __init__(self, cluster: Mapping[str, Any] | ClusterSpec) -> None:
        if isinstance(cluster, ClusterSpec):
            cluster = cluster.as_dict()
        if not isinstance(cluster, Mapping):
            raise TypeError(
                "ClusterSpec expects a dict of job name -> list of 'host:port' addresses (or "
                f"dict of task index -> address); got {cluster!r}"
            )
        self._jobs: dict[str, dict[int, str]] = {}
        for job, tasks in cluster.items():
            if not isinstance(job, str) or not _JOB.match(job):
                raise ValueError(f"ClusterSpec: job name {job!r} must match {_JOB.pattern}")
            if isinstance(tasks, Mapping):
                items = list(tasks.items())
            elif isinstance(tasks, (list, tuple)):
                items = list(enumerate(tasks))
            else:
                raise TypeError(
                    f"ClusterSpec: the tasks of job {job!r} must be a list of addresses or a dict "
                    f"of task index -> address; got {tasks!r}"
                )
            checked = {}
            for index, address in items:
                if isinstance(index, str) and index.isdigit():  # JSON keys (TF_CONFIG, files)
                    index = int(index)
                if isinstance(index, bool) or not isinstance(index, int) or index < 0:
                    raise ValueError(f"ClusterSpec: task index {index!r} of job {job!r} invalid")
                if not isinstance(address, str):  # any string, as TensorFlow: a Server checks it
                    raise ValueError(
                        f"ClusterSpec: address {address!r} of /job:{job}/task:{index} must be "
                        "a 'host:port' string"
                    )
                checked[index] = address
            self._jobs[job] = dict(sorted(checked.items()))

    @property
    def jobs(self) -> list[str]:
        """Job names, in the order the spec gave them."""
        return list(self._jobs)

    def _tasks(self, job: str) -> dict[int, str]:
        try:
            return self._jobs[job]
        except KeyError:
            raise ValueError(f"No such job in cluster: {job!r}; jobs: {self.jobs}") from None

    def num_tasks(self, job: str) -> int:
        """How many tasks ``job`` has."""
        return len(self._tasks(job))

    def task_indices(self, job: str) -> list[int]:
        """The task indices of ``job``, in order."""
        return list(self._tasks(job))

    def task_address(self, job: str, index: int) -> str:
        """The ``host:port`` of task ``index`` of ``job``."""
        if isinstance(index, bool) or not isinstance(index, int):
            raise TypeError(f"task index must be an int; got {index!r}")
        try:
            return self._tasks(job)[index]
        except KeyError:
            raise ValueError(f"No task with index {index} in job {job!r}") from None

    def job_tasks(self, job: str) -> list[str | None]:
        """Addresses of the tasks of ``job`` by index (None where an index is missing)."""
        tasks = self._tasks(job)
        return [tasks.get(i) for i in range(max(tasks) + 1)] if tasks else []

    def as_dict(self) -> dict[str, list[str] | dict[int, str]]:
        """Lists where a job's indices are 0..n-1, dicts otherwise (as TensorFlow)."""
        return {
            job: list(tasks.values()) if list(tasks) == list(range(len(tasks))) else dict(tasks)
            for job, tasks in self._jobs.items()
        }

    def scheduler_address(self, protocol: str = "tcp") -> str:
        """Where the Dask scheduler listens by default: the first task of the first job."""
        for tasks in self._jobs.values():  # the first job that has a task
            if tasks:
                return with_protocol(tasks[min(tasks)], protocol)
        raise ValueError("ClusterSpec is empty: it has no task to run the scheduler")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ClusterSpec) and other._jobs == self._jobs

    def __bool__(self) -> bool:
        return bool(self._jobs)

    def __repr__(self) -> str:
        return f"ClusterSpec({self.as_dict()!r})"


def with_protocol(address: str, protocol: str) -> str:
    """``address`` with ``protocol://`` in front unless it has a protocol already.

    >>> with_protocol("h:1", "tls"), with_protocol("tcp://h:1", "tls")
    ('tls://h:1', 'tcp://h:1')
    """
    return address if "://" in address else f"{protocol}://{address}"
