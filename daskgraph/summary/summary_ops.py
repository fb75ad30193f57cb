"""Summary ops: TensorFlow 1's ``tf.summary.scalar``/``histogram``/``image``/``text``/``merge``.

Each op outputs one ``string`` scalar, the serialized ``Summary`` protocol buffer that
TensorBoard reads (built with tensorboardX's copy of TensorFlow's protos, imported by the
kernels when they first run), and joins the ``summaries`` collection (``GraphKeys.SUMMARIES``)
unless given other ``collections``. As in TensorFlow, a summary's tag is its name scope
(``loss``, ``loss_1``, ``layer1/weights``), its op is named after it, and the kernels run on
the CPU only. A :class:`~daskgraph.summary.writer.FileWriter` writes what they output.

>>> import daskgraph as dg
>>> from tensorboardX.proto.summary_pb2 import Summary
>>> with dg.Graph().as_default():
...     loss = scalar("loss", dg.constant(0.5))
...     merged = merge_all()
...     with dg.Session() as sess:
...         summary = Summary.FromString(sess.run(merged))
>>> [(v.tag, v.simple_value) for v in summary.value], loss.op.name
([('loss', 0.5)], 'loss')
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from daskgraph.framework import dtypes
from daskgraph.framework.gradient_registry import no_gradient
from daskgraph.framework.graph import Tensor, get_default_graph
from daskgraph.framework.op_registry import CPU_ALL, register
from daskgraph.kernels.summaries import (
    _histogram_kernel,
    _image_kernel,
    _merge_kernel,
    _scalar_kernel,
    _tensor_kernel,
)
from daskgraph.ops.array import convert_to_tensor

__all__ = ["histogram", "image", "merge", "merge_all", "scalar", "tensor_summary", "text"]

#: the collection summaries join by default (``tf.GraphKeys.SUMMARIES``)
SUMMARIES = "summaries"

_REAL = dtypes.NUMERIC - {dtypes.bool_}
_IMAGE = frozenset({dtypes.uint8, dtypes.float16, dtypes.float32, dtypes.float64})


_STRING = frozenset({dtypes.string})
register("ScalarSummary", _scalar_kernel, cpu=_REAL | _STRING, gpu=None)
register("HistogramSummary", _histogram_kernel, cpu=_REAL | _STRING, gpu=None)
register("ImageSummary", _image_kernel, cpu=_IMAGE | _STRING, gpu=None)
register("TensorSummaryV2", _tensor_kernel, cpu=CPU_ALL, gpu=None)
register("MergeSummary", _merge_kernel, cpu=_STRING, gpu=None)
for _op_type in ("ScalarSummary", "HistogramSummary", "ImageSummary", "TensorSummaryV2"):
    no_gradient(_op_type)  # summaries are not differentiable, as in TensorFlow
no_gradient("MergeSummary")


# -- builders -------------------------------------------------------------------------------------
_INVALID_TAG_CHARACTERS = re.compile(r"[^-/\w\.]")


def clean_tag(name: str | None) -> str | None:
    """``name`` with the characters TensorFlow's op names refuse replaced by ``_`` and
    leading slashes dropped (TensorFlow's ``clean_tag``).

    >>> clean_tag("loss (train)"), clean_tag("/a/b")
    ('loss__train_', 'a/b')
    """
    if name is None:
        return None
    return _INVALID_TAG_CHARACTERS.sub("_", name).lstrip("/")


def _summary_op(
    op_type: str,
    name: str,
    family: str | None,
    inputs: list[Tensor],
    collections: Iterable[str] | None,
    **attrs: Any,
) -> Tensor:
    """One summary op: its tag is its name scope (family first), the op named after it."""
    graph = get_default_graph()
    name, family = clean_tag(name), clean_tag(family)
    base = name if family is None else f"{family}/{name}"
    with graph.name_scope(base) as scope:
        tag = scope.rstrip("/") if family is None else f"{family}/{scope.rstrip('/')}"
    op = graph.create_op(
        op_type,
        inputs,
        dtype=dtypes.string,
        shape=(),
        attrs={"tag": tag, **attrs},
        exact_name=scope.rstrip("/"),
    )
    summary = op.outputs[0]
    _collect(summary, collections)
    return summary


def _collect(summary: Tensor, collections: Iterable[str] | None) -> None:
    graph = get_default_graph()
    for key in [SUMMARIES] if collections is None else collections:
        graph.add_to_collection(key, summary)


def _checked(tensor: Any, allowed: frozenset, where: str) -> Tensor:
    tensor = convert_to_tensor(tensor)
    if tensor.dtype not in allowed:
        raise TypeError(
            f"{where}: {tensor.name!r} has dtype {tensor.dtype.name}; expected one of "
            f"{', '.join(sorted(d.name for d in allowed))}"
        )
    return tensor


def scalar(
    name: str, tensor: Any, collections: Iterable[str] | None = None, family: str | None = None
) -> Tensor:
    """A summary of one real number (``tensor`` must hold a single value when run)."""
    tensor = _checked(tensor, _REAL, "tf.summary.scalar")
    return _summary_op("ScalarSummary", name, family, [tensor], collections)


def histogram(
    name: str, values: Any, collections: Iterable[str] | None = None, family: str | None = None
) -> Tensor:
    """A histogram of ``values`` (any shape), TensorFlow's exponential buckets; a run fails
    with ``InvalidArgumentError`` on a NaN or an infinity."""
    values = _checked(values, _REAL, "tf.summary.histogram")
    return _summary_op("HistogramSummary", name, family, [values], collections)


def image(
    name: str,
    tensor: Any,
    max_outputs: int = 3,
    collections: Iterable[str] | None = None,
    family: str | None = None,
) -> Tensor:
    """PNG images of the first ``max_outputs`` images of a ``[batch, height, width,
    channels]`` tensor (1, 3 or 4 channels; ``uint8``, or floats normalized as TensorFlow
    does), tagged ``<name>/image/<i>`` (``<name>/image`` for one)."""
    tensor = _checked(tensor, _IMAGE, "tf.summary.image")
    if tensor.shape is not None and (
        len(tensor.shape) != 4 or tensor.shape[-1] not in (1, 3, 4, None)
    ):
        raise ValueError(
            f"tf.summary.image: {tensor.name!r} must be 4-D with last dim 1, 3, or 4; its "
            f"shape is {tensor.shape}"
        )
    if max_outputs < 1:
        raise ValueError(f"tf.summary.image: max_outputs must be at least 1; got {max_outputs}")
    attrs = {"max_images": int(max_outputs), "bad_color": (255, 0, 0, 255)}
    return _summary_op("ImageSummary", name, family, [tensor], collections, **attrs)


def tensor_summary(
    name: str,
    tensor: Any,
    summary_description: str | None = None,
    collections: Iterable[str] | None = None,
    summary_metadata: Any = None,
    family: str | None = None,
    display_name: str | None = None,
) -> Tensor:
    """A summary holding the whole ``tensor`` (a ``TensorProto``); ``summary_metadata`` may
    name its TensorBoard plugin (``plugin_data.plugin_name``)."""
    tensor = convert_to_tensor(tensor)
    plugin = ""
    if summary_metadata is not None:
        plugin = summary_metadata.plugin_data.plugin_name
    attrs = {"dtype_name": tensor.dtype.name, "plugin_name": plugin}
    return _summary_op("TensorSummaryV2", name, family, [tensor], collections, **attrs)


def text(name: str, tensor: Any, collections: Iterable[str] | None = None) -> Tensor:
    """A summary of a ``string`` tensor for TensorBoard's text dashboard."""
    tensor = convert_to_tensor(tensor)
    if tensor.dtype != dtypes.string:
        raise ValueError(f"Expected tensor {tensor.name} to have dtype string, got {tensor.dtype}")
    attrs = {"dtype_name": "string", "plugin_name": "text"}
    return _summary_op("TensorSummaryV2", name, None, [tensor], collections, **attrs)


def merge(
    inputs: Sequence[Any], collections: Iterable[str] | None = None, name: str | None = None
) -> Tensor:
    """One summary holding the values of every summary of ``inputs`` (their tags must
    differ); joins ``collections`` (none by default)."""
    tensors = [_checked(t, _STRING, "tf.summary.merge") for t in inputs]
    if not tensors:
        raise ValueError(
            "List argument 'inputs' to 'MergeSummary' Op with length 0 shorter than minimum "
            "length 1."
        )
    graph = get_default_graph()
    with graph.name_scope(name or "Merge"):
        op = graph.create_op("MergeSummary", tensors, dtype=dtypes.string, shape=(), name=name)
    for key in collections or ():
        graph.add_to_collection(key, op.outputs[0])
    return op.outputs[0]


def merge_all(
    key: str = SUMMARIES, scope: str | None = None, name: str | None = None
) -> Tensor | None:
    """:func:`merge` of every summary in the collection ``key`` (those whose name starts with
    ``scope`` when given), or None when there is none."""
    found = get_default_graph().get_collection(key)
    if scope is not None:
        pattern = re.compile(scope)
        found = [s for s in found if pattern.match(s.name)]
    return merge(found, name=name) if found else None
