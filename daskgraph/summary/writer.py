"""Event files for TensorBoard: ``tf.summary.FileWriter`` and ``FileWriterCache``.

A :class:`FileWriter` writes ``Event`` protocol buffers (summaries, the graph, session logs)
to ``<logdir>/events.out.tfevents.<time>.<host>`` with tensorboardX's event writer (TensorFlow's
record format and protos); nothing here hand-writes the format. Writes are buffered and reach
the disk on :meth:`~FileWriter.flush`, on :meth:`~FileWriter.close`, every ``max_queue``
events and every ``flush_secs`` seconds. :meth:`~FileWriter.add_graph` writes a daskgraph
graph as a ``GraphDef``: each op's name, type, inputs, the device it was requested on (which
TensorBoard can colour by), its dtype and output shapes.

>>> import os, tempfile
>>> import daskgraph as dg
>>> logdir = tempfile.mkdtemp()
>>> with dg.Graph().as_default() as graph:
...     c = dg.constant(1.0, name="c")
>>> with FileWriter(logdir, graph) as writer:
...     writer.get_logdir() == logdir
True
>>> [name.startswith("events.out.tfevents.") for name in os.listdir(logdir)]
[True]
"""

from __future__ import annotations

import os
import socket
import threading
import time
from typing import Any

from daskgraph.framework.graph import Graph, Operation
from daskgraph.kernels.summaries import DATA_TYPES

__all__ = ["FileWriter", "FileWriterCache", "graph_def_proto"]

_DTYPE_ATTRS = {"Const", "Placeholder", "VariableV2"}


# -- the graph as a GraphDef -------------------------------------------------------------------
def graph_def_proto(graph: Graph) -> Any:
    """``graph`` as TensorFlow's ``GraphDef`` protocol buffer (tensorboardX's class).

    >>> import daskgraph as dg
    >>> with dg.Graph().as_default() as g:
    ...     with dg.device("/cpu:0"):
    ...         a = dg.constant([1.0, 2.0], name="a")
    ...     b = dg.identity(a, name="b")
    >>> [(n.name, n.op, list(n.input), n.device) for n in graph_def_proto(g).node]
    [('a', 'Const', [], '/device:CPU:0'), ('b', 'Identity', ['a'], '')]
    """
    from tensorboardX.proto.graph_pb2 import GraphDef
    from tensorboardX.proto.versions_pb2 import VersionDef

    nodes = [_node_def(op) for op in graph.get_operations()]
    return GraphDef(node=nodes, versions=VersionDef(producer=22))


def _node_def(op: Operation) -> Any:
    from tensorboardX.proto.node_def_pb2 import NodeDef

    inputs = [t.op.name if t.index == 0 else t.name for t in op.inputs]
    inputs += [f"^{c.name}" for c in op.control_inputs]
    node = NodeDef(name=op.name, op=op.type, input=inputs, device=op.device)
    for key, value in _attrs(op).items():
        node.attr[key].CopyFrom(value)
    return node


def _attrs(op: Operation) -> dict[str, Any]:
    """The attributes TensorBoard shows: the element type, the output shapes and the op's
    plain (string, number, bool) attributes."""
    from tensorboardX.proto.attr_value_pb2 import AttrValue
    from tensorboardX.proto.types_pb2 import DataType

    attrs: dict[str, Any] = {}
    typed = op.outputs or op.inputs
    if typed:
        key = "dtype" if op.type in _DTYPE_ATTRS else "T"
        attrs[key] = AttrValue(type=DataType.Value(DATA_TYPES[typed[0].dtype.name]))
    if op.outputs:
        shapes = AttrValue.ListValue(shape=[_shape_proto(t.shape) for t in op.outputs])
        attrs["_output_shapes"] = AttrValue(list=shapes)
    for key, value in op.attrs.items():
        plain = _plain_attr(value)
        if plain is not None and key not in attrs:
            attrs[key] = plain
    return attrs


def _plain_attr(value: Any) -> Any:
    from tensorboardX.proto.attr_value_pb2 import AttrValue

    if isinstance(value, bool):
        return AttrValue(b=value)
    if isinstance(value, int):
        return AttrValue(i=value)
    if isinstance(value, float):
        return AttrValue(f=value)
    if isinstance(value, str):
        return AttrValue(s=value.encode("utf-8"))
    if isinstance(value, (tuple, list)) and value and all(type(v) is int for v in value):
        return AttrValue(list=AttrValue.ListValue(i=list(value)))
    return None


def _shape_proto(shape: Any) -> Any:
    from tensorboardX.proto.tensor_shape_pb2 import TensorShapeProto

    if shape is None:
        return TensorShapeProto(unknown_rank=True)
    dims = [TensorShapeProto.Dim(size=-1 if d is None else int(d)) for d in shape]
    return TensorShapeProto(dim=dims)


# -- the writer --------------------------------------------------------------------------------
class FileWriter:
    """Writes summaries and events to an event file in ``logdir`` for TensorBoard.

    Parameters
    ----------
    logdir
        The directory (made when missing).
    graph
        A daskgraph graph to write at once (as :meth:`add_graph` does).
    max_queue
        Flush after this many events.
    flush_secs
        Flush when an event comes this many seconds after the last flush.
    graph_def
        A ``GraphDef`` protocol buffer to write instead of ``graph``.
    filename_suffix
        Appended to the event file's name.
    """

    def __init__(
        self,
        logdir: str,
        graph: Graph | None = None,
        max_queue: int = 10,
        flush_secs: float = 120,
        graph_def: Any = None,
        filename_suffix: str | None = None,
        session: Any = None,
    ) -> None:
        if session is not None:
            raise ValueError("FileWriter: `session` (a summary-writer resource) is not supported")
        self._logdir = str(logdir)
        os.makedirs(self._logdir, exist_ok=True)
        self._suffix = filename_suffix or ""
        self._events = _events_writer(self._logdir, self._suffix)
        self._lock = threading.Lock()
        self._max_queue = max(1, int(max_queue))
        self._flush_secs = flush_secs
        self._pending = 0
        self._last_flush = time.time()
        self._closed = False
        self._seen_tags: set[str] = set()
        if graph is not None or graph_def is not None:
            self.add_graph(graph, graph_def=graph_def)

    def get_logdir(self) -> str:
        """The directory of the event file."""
        return self._logdir

    # -- events -----------------------------------------------------------------------------
    def add_event(self, event: Any) -> None:
        """Write an ``Event`` protocol buffer."""
        with self._lock:
            if self._closed:
                return
            self._events.write_event(event)
            self._pending += 1
            due = time.time() - self._last_flush >= self._flush_secs
            if self._pending >= self._max_queue or due:
                self._flush_locked()

    def _add(self, global_step: Any = None, **what: Any) -> None:
        from tensorboardX.proto.event_pb2 import Event

        event = Event(wall_time=time.time(), **what)
        if global_step is not None:
            event.step = int(global_step)
        self.add_event(event)

    def add_summary(self, summary: Any, global_step: Any = None) -> None:
        """Write a ``Summary``: the bytes a summary op outputs, or the protocol buffer.

        A tag's plugin metadata is written with its first value only, as TensorFlow does.
        """
        from tensorboardX.proto.summary_pb2 import Summary

        if isinstance(summary, (bytes, bytearray)):
            summary = Summary.FromString(bytes(summary))
        elif not hasattr(summary, "SerializeToString"):
            raise TypeError(
                f"add_summary takes a summary op's value (bytes) or a Summary; got {summary!r}"
            )
        else:
            summary = Summary.FromString(summary.SerializeToString())
        for value in summary.value:
            if not value.HasField("metadata"):
                continue
            if value.tag in self._seen_tags:
                value.ClearField("metadata")
            self._seen_tags.add(value.tag)
        self._add(global_step, summary=summary)

    def add_session_log(self, session_log: Any, global_step: Any = None) -> None:
        """Write a ``SessionLog`` (``START``, ``STOP``, ``CHECKPOINT``)."""
        self._add(global_step, session_log=session_log)

    def add_graph(
        self, graph: Graph | None, global_step: Any = None, graph_def: Any = None
    ) -> None:
        """Write ``graph`` (a daskgraph graph) or ``graph_def`` (a ``GraphDef`` protocol
        buffer) for TensorBoard's graph dashboard."""
        if graph is not None and graph_def is not None:
            raise ValueError("Please pass only graph, or graph_def (deprecated), but not both.")
        if graph is not None:
            if not isinstance(graph, Graph):
                raise TypeError(f"add_graph: graph must be a daskgraph Graph; got {graph!r}")
            serialized = graph_def_proto(graph).SerializeToString()
        elif graph_def is not None and hasattr(graph_def, "SerializeToString"):
            serialized = graph_def.SerializeToString()
        else:
            raise TypeError(
                f"add_graph: graph_def must be a GraphDef protocol buffer; got {graph_def!r}"
            )
        self._add(global_step, graph_def=serialized)

    # -- the file ---------------------------------------------------------------------------
    def flush(self) -> None:
        """Write everything added so far to the disk."""
        with self._lock:
            if not self._closed:
                self._flush_locked()

    def _flush_locked(self) -> None:
        self._events.flush()
        self._pending = 0
        self._last_flush = time.time()

    def close(self) -> None:
        """Flush and close the event file (later events are dropped until :meth:`reopen`)."""
        with self._lock:
            if not self._closed:
                self._events.close()
                self._closed = True

    def reopen(self) -> None:
        """After :meth:`close`, write on in a new event file in the same directory."""
        with self._lock:
            if self._closed:
                self._events = _events_writer(self._logdir, self._suffix)
                self._closed = False
                self._pending = 0

    def __enter__(self) -> FileWriter:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<FileWriter {self._logdir!r}{' closed' if self._closed else ''}>"


def _events_writer(logdir: str, suffix: str) -> Any:
    """tensorboardX's writer of a new event file ``events.out.tfevents.<time>.<host><suffix>``;
    ``.1``, ``.2``, ... follow when another writer took that name in the same second."""
    from tensorboardX.event_file_writer import EventsWriter

    prefix = os.path.join(logdir, "events")
    name = f"{prefix}.out.tfevents.{str(time.time())[:10]}.{socket.gethostname()}"
    extra, count = "", 0
    while os.path.exists(name + suffix + extra):
        count += 1
        extra = f".{count}"
    return EventsWriter(prefix, suffix + extra)


class FileWriterCache:
    """One :class:`FileWriter` per directory, shared by whoever asks for it (hooks)."""

    _cache: dict[str, FileWriter] = {}
    _lock = threading.RLock()

    @staticmethod
    def get(logdir: str) -> FileWriter:
        """The writer of ``logdir``, made on the first call."""
        with FileWriterCache._lock:
            writer = FileWriterCache._cache.get(logdir)
            if writer is None:
                writer = FileWriterCache._cache[logdir] = FileWriter(logdir)
            return writer

    @staticmethod
    def clear() -> None:
        """Close and forget every cached writer."""
        with FileWriterCache._lock:
            for writer in FileWriterCache._cache.values():
                writer.close()
            FileWriterCache._cache.clear()
