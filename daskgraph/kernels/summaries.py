"""Summary kernels: scalars, histograms, tensors and images serialized as TensorBoard's protos.

The kernels of :mod:`daskgraph.summary.summary_ops`'s ops, each ``kernel(xp, *inputs, **attrs)``.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import Any

import numpy as np

from daskgraph.errors import InvalidArgumentError

#: TensorFlow's DataType enum name of each dtype summaries and event files carry
DATA_TYPES = {
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
    proto = TensorProto(dtype=DataType.Value(DATA_TYPES[dtype_name]), tensor_shape=shape)
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
