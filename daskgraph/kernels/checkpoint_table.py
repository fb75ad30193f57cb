"""The LevelDB table that is a V2 checkpoint's ``.index`` file: writing one, and reading one
with every varint, length and block handle checked against the bytes that are there.

A table is data blocks (prefix-compressed key/value entries with restart points), an empty
metaindex block, an index block (the last key of each data block -> that block's handle:
offset and size as varints), and a 48-byte footer holding the two handles and LevelDB's
magic number. Each block is followed by a type byte (0: uncompressed) and the masked CRC32C
of the block and that byte. Whatever is not so raises :class:`~daskgraph.errors.DataLossError`
naming the file: nothing read from the file is trusted as a size or an offset before it is
checked against the file's length.

>>> import io
>>> out = io.BytesIO()
>>> write_table(out, [(b"", b"header"), (b"w", b"entry")])
>>> list(read_table(out.getvalue(), "model.index"))
[(b'', b'header'), (b'w', b'entry')]
>>> read_table(b"short", "model.index")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
daskgraph.errors.DataLossError: model.index is not a TensorFlow checkpoint index: it is 5 bytes...
"""

from __future__ import annotations

import itertools
import struct
from collections.abc import Iterator
from typing import IO, Any

import google_crc32c

from daskgraph.errors import DataLossError

__all__ = ["masked_crc", "read_table", "read_varint", "varint", "write_table"]

_MAGIC = 0xDB4775248B80FB57  # LevelDB's table magic number
_FOOTER = 48  # two handles (at most 20 bytes each), padding, the magic number
_TRAILER = 5  # a block's type byte and masked CRC32C
_RESTART_INTERVAL = 16
_BLOCK_SIZE = 256 * 1024
_MAX_VARINT = 10  # bytes of a 64-bit varint


def masked_crc(data: Any) -> int:
    """LevelDB's masked CRC32C of ``data`` (bytes, or a C-contiguous NumPy array, read
    in place): the CRC stored beside the data it covers.

    >>> masked_crc(b"")
    2726488792
    """
    crc = google_crc32c.value(data)
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


def varint(value: int) -> bytes:
    """``value`` (>= 0) as a protocol buffer varint: 7 bits a byte, low bits first.

    >>> varint(300).hex()
    'ac02'
    """
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if not value:
            out.append(byte)
            return bytes(out)
        out.append(byte | 0x80)


def read_varint(data: bytes | memoryview, pos: int, end: int, path: str) -> tuple[int, int]:
    """The varint at ``data[pos:]`` that ends before ``end``, and the position after it;
    DataLossError naming ``path`` where it runs past ``end`` or past 64 bits.

    >>> read_varint(b"\\xac\\x02", 0, 2, "f")
    (300, 2)
    """
    result = shift = 0
    for i in range(pos, min(end, pos + _MAX_VARINT)):
        byte = data[i]
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            if result >> 64:
                break
            return result, i + 1
        shift += 7
    raise DataLossError(
        f"{path}: a malformed varint at byte {pos} (it runs past its bounds or past 64 bits); "
        "the file is damaged",
        op=None,
        path=path,
    )


# -- writing (as LevelDB's TableBuilder, so that the bytes are TensorFlow's) ----------------------
class _BlockBuilder:
    """A block being built: prefix-compressed entries, a restart point every ``interval``
    entries (16 in data blocks, 1 in the index block), then the restarts and their count."""

    def __init__(self, interval: int) -> None:
        self.interval, self.count = interval, 0
        self.buffer, self.restarts, self.last = bytearray(), [0], b""

    def add(self, key: bytes, value: bytes) -> None:
        """Append an entry (keys in order)."""
        shared = 0
        if self.count % self.interval == 0:
            if self.count:
                self.restarts.append(len(self.buffer))
        else:
            limit = min(len(self.last), len(key))
            while shared < limit and self.last[shared] == key[shared]:
                shared += 1
        self.buffer += varint(shared) + varint(len(key) - shared) + varint(len(value))
        self.buffer += key[shared:] + value
        self.last, self.count = key, self.count + 1

    def size(self) -> int:
        """The size of the finished block (LevelDB's ``CurrentSizeEstimate``)."""
        return len(self.buffer) + 4 * len(self.restarts) + 4

    def finish(self) -> bytes:
        """The block's bytes."""
        restarts = b"".join(struct.pack("<I", offset) for offset in self.restarts)
        return bytes(self.buffer) + restarts + struct.pack("<I", len(self.restarts))


def _write_block(out: IO[bytes], data: bytes, position: int) -> tuple[bytes, int]:
    """Write a block and its trailer (no compression, masked CRC32C); its handle and the
    position after it."""
    trailer = b"\x00" + struct.pack("<I", masked_crc(data + b"\x00"))
    out.write(data + trailer)
    return varint(position) + varint(len(data)), position + len(data) + len(trailer)


def _separator(start: bytes, limit: bytes) -> bytes:
    """LevelDB's ``FindShortestSeparator``: a short key >= ``start`` and < ``limit``.

    >>> _separator(b"abcd", b"abzz"), _separator(b"ab", b"abc")
    (b'abd', b'ab')
    """
    common = 0
    while common < min(len(start), len(limit)) and start[common] == limit[common]:
        common += 1
    if common < min(len(start), len(limit)):
        byte = start[common]
        if byte < 0xFF and byte + 1 < limit[common]:
            return start[:common] + bytes([byte + 1])
    return start


def _successor(key: bytes) -> bytes:
    """LevelDB's ``FindShortSuccessor``: a short key >= ``key``.

    >>> _successor(b"s"), _successor(bytes([255, 97, 98]))
    (b't', b'\\xffb')
    """
    for i, byte in enumerate(key):
        if byte != 0xFF:
            return key[:i] + bytes([byte + 1])
    return key


def write_table(out: IO[bytes], items: list[tuple[bytes, bytes]]) -> None:
    """Write the LevelDB table of ``items`` (key, value; sorted by key) to ``out``, byte for
    byte as TensorFlow's table builder does (blocks of 256 KiB, uncompressed).

    >>> import io
    >>> out = io.BytesIO()
    >>> write_table(out, [(b"k", b"v")])
    >>> len(out.getvalue()), out.getvalue()[-8:].hex()  # (three blocks, then the footer)
    (98, '57fb808b247547db')
    """
    position, block = 0, _BlockBuilder(_RESTART_INTERVAL)
    index = _BlockBuilder(1)
    pending: bytes | None = None  # (the handle of the block written last, not yet indexed)
    last = b""
    for key, value in items:
        if pending is not None:
            index.add(_separator(last, key), pending)
            pending = None
        block.add(key, value)
        last = key
        if block.size() >= _BLOCK_SIZE:
            pending, position = _write_block(out, block.finish(), position)
            block = _BlockBuilder(_RESTART_INTERVAL)
    if block.count:
        pending, position = _write_block(out, block.finish(), position)
    if pending is not None:
        index.add(_successor(last), pending)
    meta_handle, position = _write_block(out, _BlockBuilder(1).finish(), position)
    index_handle, position = _write_block(out, index.finish(), position)
    footer = meta_handle + index_handle
    out.write(footer + b"\x00" * (40 - len(footer)) + struct.pack("<Q", _MAGIC))


# -- reading -------------------------------------------------------------------------------------
def _damaged(path: str, what: str) -> DataLossError:
    return DataLossError(f"{path}: {what}; the checkpoint index is damaged", op=None, path=path)


def read_table(data: bytes, path: str) -> list[tuple[bytes, bytes]]:
    """Every (key, value) of the LevelDB table ``data`` (the bytes of the file ``path``), in
    order; DataLossError naming ``path`` where it is not a whole, undamaged table.

    >>> import io
    >>> out = io.BytesIO()
    >>> write_table(out, [(b"", b"h"), (b"a", b"1")])
    >>> read_table(out.getvalue(), "model.index")
    [(b'', b'h'), (b'a', b'1')]
    >>> read_table(out.getvalue()[1:], "model.index")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    daskgraph.errors.DataLossError: model.index: the index block ends at byte ...
    """
    if len(data) < _FOOTER:
        raise DataLossError(
            f"{path} is not a TensorFlow checkpoint index: it is {len(data)} bytes, shorter "
            f"than a table's {_FOOTER}-byte footer",
            op=None,
            path=path,
        )
    if struct.unpack_from("<Q", data, len(data) - 8)[0] != _MAGIC:
        raise DataLossError(
            f"{path} is not a TensorFlow checkpoint index (its last 8 bytes are not a "
            "table's magic number)",
            op=None,
            path=path,
        )
    start, end = len(data) - _FOOTER, len(data) - 8
    (meta_offset, meta_size), pos = _handle(data, start, end, path)
    (index_offset, index_size), _ = _handle(data, pos, end, path)
    # (as a table is written: data blocks from byte 0 on, the metaindex, the index, the
    # footer, each right after the one before; a handle pointing elsewhere is damage)
    _follows(path, "the index block", index_offset + index_size + _TRAILER, start)
    _follows(path, "the metaindex block", meta_offset + meta_size + _TRAILER, index_offset)
    index = _checked_block(data, index_offset, index_size, path)
    items, position = [], 0
    for _, handle in _block_entries(index, path):
        (offset, size), _ = _handle(handle, 0, len(handle), path)
        _follows(path, "a data block", position, offset)
        items += _block_entries(_checked_block(data, offset, size, path), path)
        position = offset + size + _TRAILER
    _follows(path, "the data blocks", position, meta_offset)
    if any(a >= b for (a, _), (b, _) in itertools.pairwise(items)):
        raise _damaged(path, "its keys are not in order")
    return items


def _follows(path: str, what: str, end: int, start: int) -> None:
    """DataLossError unless a block ending at ``end`` is followed by one at ``start``."""
    if end != start:
        raise _damaged(path, f"{what} ends at byte {end}, where the next part begins at {start}")


def _handle(data: bytes, pos: int, end: int, path: str) -> tuple[tuple[int, int], int]:
    """A block handle (offset, size) at ``data[pos:end]``, and the position after it."""
    offset, pos = read_varint(data, pos, end, path)
    size, pos = read_varint(data, pos, end, path)
    return (offset, size), pos


def _checked_block(data: bytes, offset: int, size: int, path: str) -> memoryview:
    """The block at ``offset`` of ``size`` bytes, once its handle lies within the table's
    blocks and its trailer says it is uncompressed and its CRC matches."""
    if offset + size + _TRAILER > len(data) - _FOOTER:
        raise _damaged(
            path,
            f"a block handle (offset {offset}, size {size}) points past the table's "
            f"{len(data) - _FOOTER} bytes of blocks",
        )
    kind = data[offset + size]
    if kind != 0:
        raise DataLossError(
            f"{path}: a compressed index block (type {kind}); daskgraph reads TensorFlow's "
            "uncompressed checkpoint indexes only",
            op=None,
            path=path,
        )
    block = memoryview(data)[offset : offset + size + 1]
    (crc,) = struct.unpack_from("<I", data, offset + size + 1)
    if crc != masked_crc(bytes(block)):
        raise _damaged(path, "an index block's checksum does not match")
    return block[:size]


def _block_entries(block: memoryview, path: str) -> Iterator[tuple[bytes, bytes]]:
    """The (key, value) entries of a block, each length checked against the block."""
    if len(block) < 4:
        raise _damaged(path, f"an index block of {len(block)} bytes has no restart count")
    (count,) = struct.unpack_from("<I", block, len(block) - 4)
    if 4 * count > len(block) - 4:
        raise _damaged(path, f"an index block of {len(block)} bytes claims {count} restarts")
    end = len(block) - 4 - 4 * count
    pos, key = 0, b""
    while pos < end:
        shared, pos = read_varint(block, pos, end, path)
        fresh, pos = read_varint(block, pos, end, path)
        length, pos = read_varint(block, pos, end, path)
        if shared > len(key) or fresh + length > end - pos:
            raise _damaged(path, f"an index entry at byte {pos} runs past its block")
        key = key[:shared] + bytes(block[pos : pos + fresh])
        pos += fresh
        yield key, bytes(block[pos : pos + length])
        pos += length
