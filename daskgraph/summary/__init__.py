"""TensorBoard summaries, as TensorFlow 1's ``tf.summary``: summary ops, event files, names.

This package's own module only gathers names: the summary ops of
:mod:`daskgraph.summary.summary_ops`
(``scalar``, ``histogram``, ``image``, ``text``, ``tensor_summary``, ``merge``,
``merge_all``), the writers of :mod:`daskgraph.summary.writer` (``FileWriter``,
``FileWriterCache``), and TensorFlow's protocol buffer classes (``Summary``, ``Event``,
``SessionLog``, ``SummaryDescription``, ``TaggedRunMetadata``, tensorboardX's copies, loaded
when first asked for), so that a TF1 program's summaries and ``FileWriter`` work unchanged::

    loss_summary = tf.summary.scalar("loss", loss)
    merged = tf.summary.merge_all()
    writer = tf.summary.FileWriter("logs", sess.graph)
    writer.add_summary(sess.run(merged), step)

>>> import daskgraph as dg
>>> summary = dg.summary.Summary(value=[dg.summary.Summary.Value(tag="acc", simple_value=0.5)])
>>> summary.value[0].tag
'acc'
"""

from __future__ import annotations

import importlib
from typing import Any

from daskgraph.summary.summary_ops import (
    histogram,
    image,
    merge,
    merge_all,
    scalar,
    tensor_summary,
    text,
)
from daskgraph.summary.writer import FileWriter, FileWriterCache

__all__ = [
    "FileWriter",
    "FileWriterCache",
    "all_v2_summary_ops",
    "histogram",
    "image",
    "merge",
    "merge_all",
    "scalar",
    "tensor_summary",
    "text",
]

#: protocol buffer class -> the tensorboardX module holding it
_PROTOS = {
    "Event": "event_pb2",
    "SessionLog": "event_pb2",
    "TaggedRunMetadata": "event_pb2",
    "Summary": "summary_pb2",
    "SummaryDescription": "summary_pb2",
}

__all__ += sorted(_PROTOS)  # the protocol buffer classes, loaded lazily

#: the protocol buffer classes TF1 also has at the top level (``tf.Summary``, ...)
_TOP_LEVEL_PROTOS = {
    "Event": "event_pb2",
    "SessionLog": "event_pb2",
    "Summary": "summary_pb2",
    "SummaryMetadata": "summary_pb2",
    "HistogramProto": "summary_pb2",
}


def proto_class(name: str, where: str = "daskgraph.summary") -> Any:
    """The protocol buffer class ``name`` (``Summary``, ``Event``, ``SessionLog``, ...:
    tensorboardX's copies of TensorFlow's); AttributeError naming ``where`` for others.

    >>> proto_class("Summary").__name__
    'Summary'
    """
    module = _PROTOS.get(name) or _TOP_LEVEL_PROTOS.get(name)
    if module is None:
        raise AttributeError(f"module {where!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"tensorboardX.proto.{module}"), name)


def __getattr__(name: str) -> Any:
    """The protocol buffer classes, imported on first use (tensorboardX takes a while)."""
    if name not in _PROTOS:
        raise AttributeError(f"module 'daskgraph.summary' has no attribute {name!r}")
    value = globals()[name] = proto_class(name)
    return value


def all_v2_summary_ops() -> list:
    """TensorFlow 2's summary ops in the graph: daskgraph has none."""
    return []
