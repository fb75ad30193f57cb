"""How tensors travel in compiled steps' messages: small ones pickled, large ones as frames
or, to a process of this machine, through shared memory.

A Dask message's values must be wrapped for Dask's serializers. Wrapping each array with
``to_serialize`` sends it as frames of its own without a copy (and CuPy arrays through Dask's
CUDA serializers: device to device over UCX), but costs a few hundred microseconds of headers
and frames per message on a small machine; a message whose tensors are small
(:data:`PACK_BYTES` in all, :func:`~daskgraph.runtime.worker.execution.pack_small`'s rule)
goes as one pickled ``bytes`` instead. Host arrays of
:data:`~daskgraph.runtime.worker.shared_arrays.SEGMENT_BYTES` or more for a process of this
machine go through shared memory (:mod:`~daskgraph.runtime.worker.shared_arrays`), the
message carrying their segments' names. A value that is already one (the sender's and the
receiver's process are the same) is never wrapped at all: :func:`pack` is only called for
messages that leave the process.

>>> import numpy as np
>>> unpack(pack({1: np.float32(2.0)}))
{1: np.float32(2.0)}
>>> big = {0: np.zeros(PACK_BYTES)}
>>> type(pack(big)).__name__
'Serialize'
>>> unpack(pack(big))[0].shape == big[0].shape  # (the wrapper is undone by Dask on arrival)
True
"""

from __future__ import annotations

import pickle
import threading
from typing import Any

from distributed.protocol import Serialize, to_serialize

from daskgraph.runtime.worker import shared_arrays
from daskgraph.runtime.worker.execution import PACK_BYTES, pack_small

__all__ = ["PACK_BYTES", "by_index", "envelope", "open_envelope", "pack", "packed_bytes", "unpack"]

#: bytes of the tensors :func:`pack` packed in this process: "host" (NumPy arrays and values
#: pickled: host memory) and "cuda" (CuPy arrays, left to Dask's CUDA serializers: device to
#: device over UCX, through host memory over TCP); read by :func:`packed_bytes`
_PACKED = {"host": 0, "cuda": 0}
_PACKED_LOCK = threading.Lock()


def pack(value: Any, near: bool = False) -> Any:
    """``value`` (a dict or tuple of tensors, or one) ready for a Dask message: pickled into
    ``bytes`` when its arrays add up to at most :data:`PACK_BYTES` and none is on a GPU, else
    wrapped for Dask's serializers (arrays as frames of their own, CuPy arrays by Dask's
    CUDA serializers). ``near``: the receiver is a process of this machine, so host arrays
    of :data:`~daskgraph.runtime.worker.shared_arrays.SEGMENT_BYTES` or more go through
    shared memory (:func:`~daskgraph.runtime.worker.shared_arrays.dumps`), the message
    carrying their segments' names.

    >>> import numpy as np
    >>> from daskgraph.runtime.worker.shared_arrays import SEGMENT_BYTES, is_shared
    >>> packed = pack({0: np.ones(SEGMENT_BYTES)}, near=True)
    >>> is_shared(packed), unpack(packed)[0].shape  # (unpacked: the segment is gone)
    (True, (1048576,))
    """
    items = _items(value)
    if _count(items):  # (a CuPy array among them)
        return to_serialize(value)
    packed = pack_small(value, arrays=items)  # (one pickled bytes for small messages)
    if packed is not value:
        return packed
    shared = shared_arrays.dumps(value) if near else None
    return to_serialize(value) if shared is None else shared


def _items(value: Any, depth: int = 2) -> tuple:
    """The tensors of a message's field, two levels down (a reply's outputs are by
    partition, then by index; forwarded values are tuples in a list).

    >>> _items({0: {1: "a", 2: "b"}, 3: "c"})
    ('a', 'b', 'c')
    """
    if isinstance(value, dict):
        values: Any = value.values()
    elif isinstance(value, (tuple, list)):
        values = value
    else:
        return (value,)
    if depth <= 1:
        return tuple(values)
    return tuple(item for v in values for item in _items(v, depth - 1))


def _count(items: Any) -> bool:
    """Add the bytes of ``items``' arrays to :data:`_PACKED` (scalars and others count 0);
    whether any of them is a CuPy array."""
    host = cuda = 0
    on_gpu = False
    for item in items:
        if type(item).__module__.startswith("cupy"):
            on_gpu = True
            cuda += item.nbytes
        else:
            host += getattr(item, "nbytes", 0)
    with _PACKED_LOCK:
        _PACKED["host"] += host
        _PACKED["cuda"] += cuda
    return on_gpu


def packed_bytes(reset: bool = False) -> dict[str, int]:
    """Bytes of the arrays :func:`pack` packed in this process so far, ``{"host": ...,
    "cuda": ...}`` (CuPy arrays under "cuda"); with ``reset``, counted afresh from now on.
    A worker's figures come back by ``client.run(packed_bytes)``.

    >>> import numpy as np
    >>> _ = packed_bytes(reset=True)
    >>> _ = pack({0: np.zeros(4, np.float32), 1: 2.0})
    >>> packed_bytes()
    {'host': 16, 'cuda': 0}
    """
    with _PACKED_LOCK:
        found = dict(_PACKED)
        if reset:
            _PACKED.update(host=0, cuda=0)
    return found


def unpack(value: Any) -> Any:
    """The value :func:`pack` packed, as it arrived (Dask has already undone ``to_serialize``
    by then; a ``Serialize`` wrapper is undone here for callers in the same process)."""
    if shared_arrays.is_shared(value):
        return shared_arrays.loads(value)
    if isinstance(value, bytes):
        return pickle.loads(value)
    if isinstance(value, Serialize):
        return value.data
    return value


def by_index(values: dict[int, Any]) -> tuple:
    """A producer's outputs received by index, as the tuple its readers index into (only the
    indices received are filled).

    >>> by_index({2: "c", 0: "a"})
    ('a', None, 'c')
    """
    filled: list[Any] = [None] * (max(values, default=-1) + 1)
    for index, value in values.items():
        filled[index] = value
    return tuple(filled)


def envelope(fields: dict[str, Any]) -> dict[str, Any]:
    """A message's fields as Dask sends them: pickled into one ``body`` when none is a large
    tensor wrapped for Dask's serializers (Dask then sizes, frames and msgpacks one ``bytes``
    instead of walking every field: a few tens of microseconds less per message on each
    side), else the fields themselves, so that large tensors go as frames of their own.

    >>> import numpy as np
    >>> open_envelope(envelope({"run": "r1", "value": pack({0: 1.5})}))["run"]
    'r1'
    >>> "body" in envelope({"value": pack({0: np.zeros(PACK_BYTES)})})
    False
    """
    if any(isinstance(value, Serialize) for value in fields.values()):
        return fields
    return {"body": pickle.dumps(fields, protocol=pickle.HIGHEST_PROTOCOL)}


def open_envelope(message: dict[str, Any]) -> dict[str, Any]:
    """The fields of a message :func:`envelope` made (a message without a body as it is)."""
    body = message.get("body")
    return message if body is None else pickle.loads(body)
