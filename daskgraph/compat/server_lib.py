"""``tf.train.ClusterSpec`` and ``tf.train.Server`` with TensorFlow's protocol buffers.

The native :class:`~daskgraph.cluster.cluster_spec.ClusterSpec` and
:class:`~daskgraph.cluster.server.Server`
with TensorFlow 1's surface on top: a ClusterSpec is also made from a ``tf.train.ClusterDef``
and gives one (``as_cluster_def``: jobs sorted by name, tasks by index, as TensorFlow's), its
``repr`` and ``as_dict`` are TensorFlow's; a Server takes TensorFlow's arguments
``(server_or_cluster_def, job_name=None, task_index=None, protocol=None, config=None,
start=True)`` -- a ``tf.train.ServerDef``, a ``ClusterDef``, a ClusterSpec or a dict -- and
keeps the ``tf.train.ServerDef`` it was made from (``server.server_def``).

>>> spec = ClusterSpec({"worker": ["w0:2222"], "ps": ["ps0:2222"]})
>>> [job.name for job in spec.as_cluster_def().job]
['ps', 'worker']
>>> ClusterSpec(spec.as_cluster_def()) == spec
True
>>> server = Server(spec, job_name="worker", start=False)
>>> server.server_def.task_index, server.server_def.protocol
(0, 'grpc')
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from daskgraph.cluster import cluster_spec as _cluster_spec
from daskgraph.cluster import server as _server
from daskgraph.compat import protos
from daskgraph.errors import UnimplementedError

__all__ = ["ClusterSpec", "Server", "make_server_def"]


class ClusterSpec(_cluster_spec.ClusterSpec):
    """``tf.train.ClusterSpec``: the native ClusterSpec, also made from a
    ``tf.train.ClusterDef`` (see the module)."""

    def __init__(self, cluster: Mapping[str, Any] | _cluster_spec.ClusterSpec | Any) -> None:
        if protos.is_message(cluster, "ClusterDef"):
            cluster = {job.name: dict(job.tasks) for job in cluster.job}
        super().__init__(cluster)

    def as_dict(self) -> dict[str, list[str] | dict[int, str]]:
        """Lists where a job's indices are 0..n-1, dicts otherwise (``{}`` for a job without
        tasks), as TensorFlow's."""
        return {job: tasks if tasks else {} for job, tasks in super().as_dict().items()}

    def as_cluster_def(self) -> Any:
        """A ``tf.train.ClusterDef``: one ``JobDef`` per job, sorted by name."""
        return protos.ClusterDef(
            job=[protos.JobDef(name=job, tasks=dict(self._tasks(job))) for job in sorted(self.jobs)]
        )

    def __repr__(self) -> str:
        tasks = self.as_dict()
        return "ClusterSpec({" + ", ".join(f"{k!r}: {tasks[k]!r}" for k in sorted(tasks)) + "})"


def _with_overrides(server_def: Any, job_name, task_index, protocol, config) -> Any:
    """A copy of a ServerDef (ours or TensorFlow's) with the arguments that are given."""
    result = protos.ServerDef.FromString(server_def.SerializeToString())
    if job_name is not None:
        result.job_name = job_name
    if task_index is not None:
        result.task_index = task_index
    if protocol is not None:
        result.protocol = protocol
    if config is not None:
        result.default_session_config.MergeFrom(protos.config_to_proto(config))
    return result


def _only(values: list, what: str) -> Any:
    if len(values) != 1:
        raise ValueError(f"Must specify an explicit `{what}`.")
    return values[0]


def make_server_def(
    server_or_cluster_def: Any,
    job_name: str | None = None,
    task_index: int | None = None,
    protocol: str | None = None,
    config: Any = None,
) -> Any:
    """The ``tf.train.ServerDef`` of a server, as TensorFlow's ``_make_server_def``: from a
    ServerDef (the arguments given override its fields), or from a ClusterDef, ClusterSpec or
    dict (``job_name`` and ``task_index`` may be left out when there is only one; the
    protocol is ``"grpc"`` by default).

    >>> make_server_def({"local": ["localhost:2222"]}).job_name
    'local'
    >>> make_server_def({"a": ["h:1"], "b": ["h:2"]})
    Traceback (most recent call last):
    ...
    ValueError: Must specify an explicit `job_name`.
    """
    if protos.is_message(server_or_cluster_def, "ServerDef"):
        return _with_overrides(server_or_cluster_def, job_name, task_index, protocol, config)
    try:
        spec = ClusterSpec(server_or_cluster_def)
    except TypeError:
        raise TypeError(
            "Could not convert `server_or_cluster_def` to a `tf.train.ServerDef` or "
            "`tf.train.ClusterSpec`."
        ) from None
    if job_name is None:
        job_name = _only(spec.jobs, "job_name")
    if task_index is None:
        task_index = _only(spec.task_indices(job_name), "task_index")
    server_def = protos.ServerDef(
        cluster=spec.as_cluster_def(),
        job_name=job_name,
        task_index=task_index,
        protocol="grpc" if protocol is None else protocol,
    )
    if config is not None:
        server_def.default_session_config.MergeFrom(protos.config_to_proto(config))
    return server_def


class Server(_server.Server):
    """``tf.train.Server``: the native Server made from TensorFlow's arguments (see the
    module); ``security``, ``scheduler_address`` and ``virtual_gpus`` are the native ones.

    The ServerDef's ``protocol`` is kept, not used (Dask's ``tcp``, or ``tls`` with
    ``security``, carries the messages); a non-zero ``port`` is refused.
    """

    def __init__(
        self,
        server_or_cluster_def: Any,
        job_name: str | None = None,
        task_index: int | None = None,
        protocol: str | None = None,
        config: Any = None,
        start: bool = True,
        *,
        security: Any = None,
        scheduler_address: str | None = None,
        virtual_gpus: int | None = None,
    ) -> None:
        server_def = make_server_def(server_or_cluster_def, job_name, task_index, protocol, config)
        if server_def.port:
            raise UnimplementedError(
                f"ServerDef.port ({server_def.port}) is not supported: give the port in the "
                "task's address of the cluster"
            )
        if config is None and server_def.HasField("default_session_config"):
            config = protos.config_from_proto(server_def.default_session_config)
        self._server_def = server_def
        super().__init__(
            ClusterSpec(server_def.cluster),
            server_def.job_name,
            server_def.task_index,
            config=config,
            start=start,
            security=security,
            scheduler_address=scheduler_address,
            virtual_gpus=virtual_gpus,
        )

    @property
    def server_def(self) -> Any:
        """The ``tf.train.ServerDef`` this server was made from."""
        return self._server_def
