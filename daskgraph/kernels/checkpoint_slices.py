"""The slices of a partitioned tensor in a V2 checkpoint: where each lies in the whole tensor,
the index key it is stored under, and the check that they tile the tensor exactly.

TensorFlow stores a partitioned variable (``fixed_size_partitioner``) as one entry for the
whole tensor (its shape, dtype and a ``TensorSliceProto`` per slice: start and length per
dimension, no length for all of it) and one entry per slice, under the key
``checkpoint::EncodeTensorNameSlice`` makes (TensorFlow's ``OrderedCode``). A slice outside
the tensor, of the wrong rank or shape, overlapping another, or slices that leave part of
the tensor uncovered raise :class:`~daskgraph.errors.DataLossError` naming the file.

>>> slice_extents([(0, 4), (0, None)], (10, 3), "model.index", "part")
[(0, 4), (0, 3)]
>>> slice_key("part", [0, 0], [4, -1]).hex()
'0070617274000101028084807f'
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from daskgraph.errors import DataLossError

__all__ = ["check_tiling", "slice_extents", "slice_key"]

#: (start, length) per dimension of a slice; length None for all of that dimension
Extents = Sequence[tuple[int, int | None]]


def _damaged(path: str, name: str, what: str) -> DataLossError:
    return DataLossError(
        f"{path}: the slices of the partitioned tensor {name!r} are damaged: {what}",
        op=None,
        path=path,
        tensor=name,
    )


def slice_extents(
    extents: Extents, shape: tuple[int, ...], path: str, name: str
) -> list[tuple[int, int]]:
    """(start, length) per dimension of a slice of a tensor of ``shape``, each within it (a
    missing length is the whole dimension); DataLossError naming ``path`` where not.

    >>> slice_extents([(4, 3), (0, None)], (10, 4), "model.index", "part")
    [(4, 3), (0, 4)]
    >>> slice_extents([(8, 3)], (10,), "model.index", "part")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    daskgraph.errors.DataLossError: model.index: ... 'part' are damaged: a slice [8, +3) of ...
    """
    if len(extents) != len(shape):
        rank = f"a slice of rank {len(extents)} in a tensor of rank {len(shape)}"
        raise _damaged(path, name, rank)
    out = []
    for (start, length), size in zip(extents, shape, strict=True):
        if length is None:
            start, length = 0, size
        if start < 0 or length < 0 or start + length > size:
            raise _damaged(path, name, f"a slice [{start}, +{length}) of a dimension of {size}")
        out.append((start, length))
    return out


def check_tiling(
    slices: list[list[tuple[int, int]]], shape: tuple[int, ...], path: str, name: str
) -> None:
    """DataLossError unless ``slices`` (each a :func:`slice_extents` result) cover the
    tensor of ``shape`` exactly once: pairwise disjoint, their sizes adding up to its size.

    >>> check_tiling([[(0, 1)], [(1, 1)]], (2,), "f", "v")
    >>> check_tiling([[(0, 1)], [(0, 1)]], (2,), "f", "v")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    daskgraph.errors.DataLossError: f: the slices of ... 'v' are damaged: two of them overlap
    """
    boxes = [extents for extents in slices if all(n for _, n in extents)]  # (not empty ones)
    for i, one in enumerate(boxes):
        for other in boxes[:i]:
            if all(a < b + m and b < a + n for (a, n), (b, m) in zip(one, other, strict=True)):
                raise _damaged(path, name, "two of them overlap")
    covered = sum(math.prod(n for _, n in extents) for extents in slices)
    if covered != math.prod(shape):
        raise _damaged(
            path, name, f"they hold {covered} elements of the tensor's {math.prod(shape)}"
        )


# -- TensorFlow's OrderedCode (the keys of slices) ------------------------------------------------
def slice_key(name: str, starts: Sequence[int], lengths: Sequence[int]) -> bytes:
    """``checkpoint::EncodeTensorNameSlice``: 0, the name, the rank, then each dimension's
    start and length, in ``OrderedCode`` (a length -1 for a whole dimension).

    >>> slice_key("v", [0], [-1]).hex()
    '007600010101807f'
    """
    out = _num_increasing(0) + _ordered_string(name.encode()) + _num_increasing(len(starts))
    for start, length in zip(starts, lengths, strict=True):
        out += _signed_increasing(start) + _signed_increasing(length)
    return out


def _num_increasing(value: int) -> bytes:
    """``OrderedCode::WriteNumIncreasing``: a length byte, then big-endian bytes."""
    raw = value.to_bytes(8, "big").lstrip(b"\x00")
    return bytes([len(raw)]) + raw


def _ordered_string(value: bytes) -> bytes:
    """``OrderedCode::WriteString``: 0x00 and 0xff escaped, then the terminator 0x00 0x01."""
    escaped = re.sub(
        rb"[\x00\xff]", lambda m: b"\x00\xff" if m[0] == b"\x00" else b"\xff\x00", value
    )
    return escaped + b"\x00\x01"


#: ``kLengthToHeaderBits`` of OrderedCode's signed numbers
_HEADER = [(0, 0), (0x80, 0), (0xC0, 0), (0xE0, 0), (0xF0, 0), (0xF8, 0), (0xFC, 0),
           (0xFE, 0), (0xFF, 0), (0xFF, 0x80), (0xFF, 0xC0)]  # fmt: skip


def _signed_increasing(value: int) -> bytes:
    """``OrderedCode::WriteSignedNumIncreasing``."""
    x = ~value if value < 0 else value
    if x < 64:
        return bytes([(0x80 ^ value) & 0xFF])
    length = x.bit_length() // 7 + 1
    sign = b"\xff\xff" if value < 0 else b"\x00\x00"
    raw = bytearray((sign + (value & (1 << 64) - 1).to_bytes(8, "big"))[10 - length :])
    raw[0] ^= _HEADER[length][0]
    raw[1] ^= _HEADER[length][1]
    return bytes(raw)
