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

import io
import re
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from daskgraph.errors import InvalidArgumentError
from daskgraph.framework import dtypes
from daskgraph.framework.gradient_registry import no_gradient
from daskgraph.framework.graph import Tensor, get_default_graph
from daskgraph.framework.op_registry import CPU_ALL, register
from daskgraph.ops.array import convert_to_tensor

__all__ = ["histogram", "image", "merge", "merge_all", "scalar", "tensor_summary", "text"]

#: the collection summaries join by default (``tf.GraphKeys.SUMMARIES``)
SUMMARIES = "summaries"

_REAL = dtypes.NUMERIC - {dtypes.bool_}
_IMAGE = frozenset({dtypes.uint8, dtypes.float16, dtypes.float32, dtypes.float64})
_DATA_TYPES = {
    "float16": "DT_HALF",
    "float32": "DT_FLOAT",
    "float64": "DT_DOUBLE",
    "int8": "DT_INT8",
    "int16": "DT_INT16",
    "int32": "DT_INT32",
    "int64": "DT_INT64",
    "uint8": "DT_UINT8",
    "bool": "DT_BOOL",
    "string": "DT_STRING",
}


# -- kernels: CPU only, each returns a 0-d object array holding the serialized bytes -------------
def _serialized(summary: Any) -> np.ndarray:
    return np.array(summary.SerializeToString(), dtype=object)


def _scalar_kernel(xp, values, *, tag):
    from tensorboardX.proto.summary_pb2 import Summary

    values = np.asarray(values)
    if values.shape != ():
        raise InvalidArgumentError(
            f"tags and values are not the same shape: [] != {list(values.shape)} (tag '{tag}')",
            op=None,
        )
    return _serialized(Summary(value=[Summary.Value(tag=tag, simple_value=float(values))]))


def _histogram_kernel(xp, values, *, tag):
    from tensorboardX.proto.summary_pb2 import Summary

    flat = np.asarray(values, dtype=np.float64).ravel()
    if np.isnan(flat).any():
        raise InvalidArgumentError(f"Nan in summary histogram for: {tag}", op=None)
    if np.isinf(flat).any():
        raise InvalidArgumentError(f"Infinity in summary histogram for: {tag}", op=None)
    return _serialized(Summary(value=[Summary.Value(tag=tag, histo=histogram_proto(flat))]))


def _default_limits() -> np.ndarray:
    """TensorFlow's histogram bucket limits: +-1e-12 growing by 10% to 1e20, 0, +-DBL_MAX."""
    positive = []
    v = 1.0e-12
    while v < 1.0e20:
        positive.append(v)
        v *= 1.1
    positive.append(np.finfo(np.float64).max)
    return np.array([-p for p in reversed(positive)] + [0.0] + positive)


_LIMITS = _default_limits()


def histogram_proto(values: np.ndarray) -> Any:
    """The ``HistogramProto`` of float64 ``values``, TensorFlow's buckets and encoding (runs
    of empty buckets collapsed into one).

    >>> h = histogram_proto(np.array([0.0, 1.0, 1.0]))
    >>> h.min, h.max, h.num, h.sum, list(h.bucket)
    (0.0, 1.0, 3.0, 2.0, [0.0, 1.0, 0.0, 2.0, 0.0])
    """
    from tensorboardX.proto.summary_pb2 import HistogramProto

    counts = np.bincount(np.searchsorted(_LIMITS, values, side="right"), minlength=len(_LIMITS))
    counts = counts[: len(_LIMITS)].astype(np.float64)
    keep = counts > 0
    keep[:-1] |= counts[1:] > 0
    keep[-1] = True
    return HistogramProto(
        min=float(values.min()) if values.size else float(_LIMITS[-1]),
        max=float(values.max()) if values.size else float(_LIMITS[0]),
        num=float(values.size),
        sum=float(values.sum()),
        sum_squares=float(np.dot(values, values)),
        bucket_limit=_LIMITS[keep].tolist(),
        bucket=counts[keep].tolist(),
    )


def _tensor_kernel(xp, tensor, *, tag, dtype_name, plugin_name):
    from tensorboardX.proto.summary_pb2 import Summary, SummaryMetadata
    from tensorboardX.proto.tensor_pb2 import TensorProto
    from tensorboardX.proto.tensor_shape_pb2 import TensorShapeProto
    from tensorboardX.proto.types_pb2 import DataType

    array = np.asarray(tensor)
    shape = TensorShapeProto(dim=[TensorShapeProto.Dim(size=d) for d in array.shape])
    proto = TensorProto(dtype=DataType.Value(_DATA_TYPES[dtype_name]), tensor_shape=shape)
    if dtype_name == "string":
        proto.string_val.extend(_as_bytes(s) for s in array.ravel())
    else:
        proto.tensor_content = np.ascontiguousarray(array).tobytes()
    metadata = SummaryMetadata()
    if plugin_name:
        metadata.plugin_data.plugin_name = plugin_name
    value = Summary.Value(tag=tag, tensor=proto, metadata=metadata)
    return _serialized(Summary(value=[value]))


def _as_bytes(value: Any) -> bytes:
    return value if isinstance(value, bytes) else str(value).encode("utf-8")


def _image_kernel(xp, tensor, *, tag, max_images, bad_color):
    from tensorboardX.proto.summary_pb2 import Summary

    images = np.asarray(tensor)
    if images.ndim != 4 or images.shape[-1] not in (1, 3, 4):
        raise InvalidArgumentError(
            f"Tensor must be 4-D with last dim 1, 3, or 4, not {list(images.shape)}", op=None
        )
    count = min(max_images, images.shape[0])
    values = []
    for i in range(count):
        pixels = images[i] if images.dtype == np.uint8 else _to_uint8(images[i], bad_color)
        name = f"{tag}/image" if max_images == 1 else f"{tag}/image/{i}"
        height, width, channels = pixels.shape
        encoded = Summary.Image(
            height=height, width=width, colorspace=channels, encoded_image_string=_png(pixels)
        )
        values.append(Summary.Value(tag=name, image=encoded))
    return _serialized(Summary(value=values))


def _to_uint8(image: np.ndarray, bad_color: Sequence[int]) -> np.ndarray:
    """TensorFlow's float image normalization: ``[0, max]`` to ``[0, 255]``, or, with negative
    values, ``[-m, m]`` to ``[1, 255]`` around 128; pixels with a non-finite value get
    ``bad_color``."""
    image = image.astype(np.float32)
    finite = np.isfinite(image).all(axis=-1)
    seen = image[finite]
    low = float(seen.min()) if seen.size else np.inf
    high = float(seen.max()) if seen.size else -np.inf
    if low < 0:
        largest = max(abs(low), abs(high))
        scale, offset = (0.0 if largest < 1e-6 else 127.0 / largest), 128.0
    else:
        scale, offset = (0.0 if high < 1e-6 else 255.0 / high), 0.0
    with np.errstate(invalid="ignore"):
        out = (image * np.float32(scale) + np.float32(offset)).astype(np.uint8)
    out[~finite] = np.asarray(bad_color, dtype=np.uint8)[: image.shape[-1]]
    return out


def _png(pixels: np.ndarray) -> bytes:
    try:
        from PIL import Image
    except ImportError:  # pragma: no cover - Pillow comes with the test and example extras
        raise InvalidArgumentError(
            "tf.summary.image needs Pillow to encode PNG images: pip install pillow", op=None
        ) from None
    mode = {1: "L", 3: "RGB", 4: "RGBA"}[pixels.shape[-1]]
    data = pixels[..., 0] if pixels.shape[-1] == 1 else pixels
    out = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(data), mode=mode).save(out, format="PNG")
    return out.getvalue()


def _merge_kernel(xp, *inputs):
    from tensorboardX.proto.summary_pb2 import Summary

    merged = Summary()
    tags: set[str] = set()
    for serialized in inputs:
        part = Summary()
        try:
            part.ParseFromString(_as_bytes(np.asarray(serialized, dtype=object)[()]))
        except Exception:
            raise InvalidArgumentError(
                "Could not parse one of the summary inputs", op=None
            ) from None
        for value in part.value:
            if value.tag in tags:
                raise InvalidArgumentError(
                    f"Duplicate tag {value.tag} found in summary inputs", op=None
                )
            tags.add(value.tag)
            merged.value.add().CopyFrom(value)
    return _serialized(merged)


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
