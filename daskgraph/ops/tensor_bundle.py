"""TensorFlow's V2 checkpoint format (the *tensor bundle*): reading and writing it.

Its one job is the bytes of ``tensor_bundle.cc``'s format, so that a checkpoint TensorFlow
wrote restores here and one written here restores in TensorFlow:

* ``<prefix>.data-00000-of-00001``: the tensors' bytes one after the other (little endian;
  a string tensor is its elements' lengths as varints, the masked CRC32C of those, then the
  bytes);
* ``<prefix>.index``: a LevelDB table (uncompressed blocks, each with its masked CRC32C)
  whose empty key holds a ``BundleHeaderProto`` and whose other keys, sorted, are tensor
  names holding a ``BundleEntryProto`` (dtype, shape, shard, offset, size, CRC32C).

The two protocol buffers are written and read field by field here (their ``.proto`` is not
shipped with any package daskgraph depends on); CRC32C comes from ``google-crc32c``. Sliced
(partitioned) entries are read by assembling their slices; written checkpoints hold whole
tensors (daskgraph's variables are not partitioned).

>>> import tempfile, os
>>> prefix = os.path.join(tempfile.mkdtemp(), "model")
>>> write_bundle(prefix, {"w": np.arange(3, dtype=np.float32), "step": np.int64(7)})
>>> bundle = read_bundle(prefix)
>>> sorted(bundle), bundle["w"].tolist(), int(bundle["step"])
(['step', 'w'], [0.0, 1.0, 2.0], 7)
"""

from __future__ import annotations

import os
import re
import struct
from collections.abc import Callable, Iterator
from typing import Any

import google_crc32c
import numpy as np

from daskgraph.errors import DataLossError, NotFoundError

__all__ = [
    "DATA_SUFFIX",
    "INDEX_SUFFIX",
    "bundle_exists",
    "bundle_files",
    "bundle_shapes",
    "data_files",
    "read_bundle",
    "write_bundle",
]

INDEX_SUFFIX = ".index"
DATA_SUFFIX = ".data-00000-of-00001"

#: TensorFlow's DataType enum <-> NumPy dtypes (the ones daskgraph's variables hold)
_DTYPES: dict[int, np.dtype] = {
    1: np.dtype("float32"), 2: np.dtype("float64"), 3: np.dtype("int32"),
    4: np.dtype("uint8"), 5: np.dtype("int16"), 6: np.dtype("int8"), 7: np.dtype(object),
    8: np.dtype("complex64"), 9: np.dtype("int64"), 10: np.dtype("bool"),
    17: np.dtype("uint16"), 18: np.dtype("complex128"), 19: np.dtype("float16"),
    22: np.dtype("uint32"), 23: np.dtype("uint64"),
}  # fmt: skip
_ENUMS = {dtype: code for code, dtype in _DTYPES.items()}
_MAGIC = 0xDB4775248B80FB57  # LevelDB's table magic number
_RESTART_INTERVAL = 16
_BLOCK_SIZE = 256 * 1024


def bundle_files(prefix: str) -> tuple[str, str]:
    """The index and data files of the checkpoint ``prefix``."""
    return prefix + INDEX_SUFFIX, prefix + DATA_SUFFIX


def bundle_exists(prefix: str) -> bool:
    """Whether ``prefix`` names a V2 checkpoint (its index file exists)."""
    return os.path.exists(prefix + INDEX_SUFFIX)


# -- CRC32C and varints ---------------------------------------------------------------------------
def _masked_crc(data: Any) -> int:
    """LevelDB's masked CRC32C of ``data`` (a CRC stored beside data it covers)."""
    crc = google_crc32c.value(bytes(data))
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _read_varint(data: bytes | memoryview, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7


# -- the two protocol buffers, field by field -----------------------------------------------------
def _field(number: int, wire: int) -> bytes:
    return _varint(number << 3 | wire)


def _message(number: int, payload: bytes) -> bytes:
    return _field(number, 2) + _varint(len(payload)) + payload


def _header_proto() -> bytes:
    """``BundleHeaderProto``: one shard, little endian, version producer 1."""
    return _field(1, 0) + _varint(1) + _message(3, _field(1, 0) + _varint(1))


def _entry_proto(dtype: int, shape: tuple[int, ...], offset: int, size: int, crc: int) -> bytes:
    dims = b"".join(_message(2, _field(1, 0) + _varint(d)) for d in shape)
    out = _field(1, 0) + _varint(dtype) + _message(2, dims)
    if offset:
        out += _field(4, 0) + _varint(offset)
    if size:
        out += _field(5, 0) + _varint(size)
    return out + _field(6, 5) + struct.pack("<I", crc)


def _fields(data: bytes | memoryview) -> Iterator[tuple[int, Any]]:
    """(field number, value) of a protocol buffer: ints for varints and fixed fields,
    bytes for length-delimited ones."""
    pos = 0
    while pos < len(data):
        key, pos = _read_varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _read_varint(data, pos)
        elif wire == 1:
            value, pos = struct.unpack_from("<Q", data, pos)[0], pos + 8
        elif wire == 5:
            value, pos = struct.unpack_from("<I", data, pos)[0], pos + 4
        elif wire == 2:
            length, pos = _read_varint(data, pos)
            value, pos = bytes(data[pos : pos + length]), pos + length
        else:
            raise DataLossError(f"checkpoint index: unknown protocol buffer wire type {wire}")
        yield number, value


def _shape(data: bytes) -> tuple[int, ...]:
    dims = []
    for number, value in _fields(data):
        if number == 2:
            size = dict(_fields(value)).get(1, 0)
            dims.append(size - (1 << 64) if size >= 1 << 63 else size)
    return tuple(dims)


class _Entry:
    """A ``BundleEntryProto``."""

    def __init__(self, data: bytes) -> None:
        self.dtype, self.shape, self.shard = 0, (), 0
        self.offset = self.size = self.crc = 0
        self.slices: list[bytes] = []
        for number, value in _fields(data):
            if number == 1:
                self.dtype = value
            elif number == 2:
                self.shape = _shape(value)
            elif number == 3:
                self.shard = value
            elif number == 4:
                self.offset = value
            elif number == 5:
                self.size = value
            elif number == 6:
                self.crc = value
            elif number == 7:
                self.slices.append(value)


# -- the LevelDB table of the index ---------------------------------------------------------------
def _block(entries: list[tuple[bytes, bytes]]) -> bytes:
    """A table block: prefix-compressed entries, restart points every 16 entries."""
    out = bytearray()
    restarts: list[int] = []
    last = b""
    for i, (key, value) in enumerate(entries):
        shared = 0
        if i % _RESTART_INTERVAL == 0:
            restarts.append(len(out))
        else:
            limit = min(len(last), len(key))
            while shared < limit and last[shared] == key[shared]:
                shared += 1
        out += _varint(shared) + _varint(len(key) - shared) + _varint(len(value))
        out += key[shared:] + value
        last = key
    restarts = restarts or [0]
    for offset in restarts:
        out += struct.pack("<I", offset)
    return bytes(out + struct.pack("<I", len(restarts)))


def _write_block(out: Any, data: bytes, position: int) -> tuple[bytes, int]:
    """Write a block and its trailer (no compression, masked CRC32C); its handle and the
    position after it."""
    trailer = b"\x00" + struct.pack("<I", _masked_crc(data + b"\x00"))
    out.write(data + trailer)
    return _varint(position) + _varint(len(data)), position + len(data) + len(trailer)


def _write_table(out: Any, items: list[tuple[bytes, bytes]]) -> None:
    """A LevelDB table of ``items`` (sorted by key)."""
    position = 0
    index: list[tuple[bytes, bytes]] = []
    pending: list[tuple[bytes, bytes]] = []
    size = 0
    for key, value in items:
        pending.append((key, value))
        size += len(key) + len(value)
        if size >= _BLOCK_SIZE:
            handle, position = _write_block(out, _block(pending), position)
            index.append((pending[-1][0], handle))
            pending, size = [], 0
    if pending:
        handle, position = _write_block(out, _block(pending), position)
        index.append((pending[-1][0], handle))
    meta_handle, position = _write_block(out, _block([]), position)
    index_handle, position = _write_block(out, _block(index), position)
    footer = meta_handle + index_handle
    out.write(footer + b"\x00" * (40 - len(footer)) + struct.pack("<Q", _MAGIC))


def _block_entries(block: bytes) -> Iterator[tuple[bytes, bytes]]:
    (count,) = struct.unpack_from("<I", block, len(block) - 4)
    end = len(block) - 4 - 4 * count
    pos, key = 0, b""
    while pos < end:
        shared, pos = _read_varint(block, pos)
        fresh, pos = _read_varint(block, pos)
        length, pos = _read_varint(block, pos)
        key = key[:shared] + block[pos : pos + fresh]
        pos += fresh
        yield key, block[pos : pos + length]
        pos += length


def _read_table(data: bytes, path: str) -> Iterator[tuple[bytes, bytes]]:
    """Every (key, value) of a LevelDB table, in order; DataLossError where it is not one."""
    if len(data) < 48 or struct.unpack_from("<Q", data, len(data) - 8)[0] != _MAGIC:
        raise DataLossError(f"{path} is not a TensorFlow checkpoint index (no table footer)")
    footer = data[len(data) - 48 :]
    _, pos = _read_varint(footer, 0)
    _, pos = _read_varint(footer, pos)  # (the metaindex block's handle)
    index_offset, pos = _read_varint(footer, pos)
    index_size, _ = _read_varint(footer, pos)
    for _, handle in _block_entries(_checked_block(data, index_offset, index_size, path)):
        offset, pos = _read_varint(handle, 0)
        size, _ = _read_varint(handle, pos)
        yield from _block_entries(_checked_block(data, offset, size, path))


def _checked_block(data: bytes, offset: int, size: int, path: str) -> bytes:
    block = data[offset : offset + size]
    kind = data[offset + size : offset + size + 1]
    (crc,) = struct.unpack_from("<I", data, offset + size + 1)
    if kind != b"\x00":
        raise DataLossError(
            f"{path}: a compressed index block (type {kind!r}); daskgraph reads TensorFlow's "
            "uncompressed checkpoint indexes only"
        )
    if crc != _masked_crc(block + kind):
        raise DataLossError(f"{path}: an index block's checksum does not match (corrupted file)")
    return block


# -- tensors --------------------------------------------------------------------------------------
def _encoded(value: np.ndarray) -> tuple[bytes, int]:
    """The bytes of a tensor in the data file, and their checksum for its entry."""
    if value.dtype.kind not in "OSU":
        raw = np.ascontiguousarray(value, value.dtype.newbyteorder("<")).tobytes()
        return raw, _masked_crc(raw)
    items = [v if isinstance(v, bytes) else str(v).encode() for v in value.ravel()]
    lengths = b"".join(_varint(len(v)) for v in items)
    summed = _checksummed_lengths([len(v) for v in items])
    length_crc = struct.pack("<I", _masked_crc(summed))
    body = b"".join(items)
    return lengths + length_crc + body, _masked_crc(summed + length_crc + body)


def _checksummed_lengths(lengths: list[int]) -> bytes:
    """What a string tensor's checksum covers of its lengths (``WriteStringTensor``): each
    as a little-endian uint32 (uint64 beyond 4 GiB), not as the varints written."""
    return b"".join(
        struct.pack("<I", n) if n <= 0xFFFFFFFF else struct.pack("<Q", n) for n in lengths
    )


def _tensor(entry: _Entry, data: _DataFiles, name: str) -> np.ndarray:
    dtype = _DTYPES.get(entry.dtype)
    path = data.path(entry.shard)
    if dtype is None:
        raise DataLossError(
            f"{path}: tensor {name!r} has TensorFlow dtype {entry.dtype}, which daskgraph "
            "does not read"
        )
    raw = data.read(entry)
    count = int(np.prod(entry.shape, dtype=np.int64))
    if dtype.kind == "O":
        value, covered = _strings(raw, count)
    else:
        value = np.frombuffer(raw, dtype.newbyteorder("<"), count).astype(dtype)
        covered = raw
    if len(raw) != entry.size or _masked_crc(covered) != entry.crc:
        raise DataLossError(f"{path}: the bytes of tensor {name!r} are damaged (checksum)")
    return value.reshape(entry.shape)


def _strings(raw: bytes, count: int) -> tuple[np.ndarray, bytes]:
    """A string tensor's elements, and the bytes its checksum covers."""
    lengths, pos = [], 0
    for _ in range(count):
        n, pos = _read_varint(raw, pos)
        lengths.append(n)
    length_crc = raw[pos : pos + 4]
    pos += 4
    items = []
    for n in lengths:
        items.append(bytes(raw[pos : pos + n]))
        pos += n
    covered = _checksummed_lengths(lengths) + length_crc + b"".join(items)
    return np.array([*items, None], dtype=object)[:-1], covered


# -- the two files --------------------------------------------------------------------------------
def write_bundle(
    prefix: str, tensors: dict[str, Any], opener: Callable[[str], Any] | None = None
) -> None:
    """Write ``tensors`` (name -> array) as the V2 checkpoint ``prefix``: the data file,
    then the index. ``opener(path)`` gives a context manager yielding a binary file to
    write (default: ``open(path, "wb")``; the Saver passes its atomic writer)."""
    opener = opener or (lambda path: open(path, "wb"))
    index_path, data_path = bundle_files(prefix)
    entries: list[tuple[bytes, bytes]] = [(b"", _header_proto())]
    offset = 0
    with opener(data_path) as data:
        for name in sorted(tensors):
            value = np.asarray(tensors[name])
            dtype = np.dtype(object) if value.dtype.kind in "SU" else value.dtype
            if dtype not in _ENUMS:
                raise TypeError(f"checkpoint: cannot write {name!r} of dtype {value.dtype}")
            raw, crc = _encoded(value)
            data.write(raw)
            entry = _entry_proto(_ENUMS[dtype], value.shape, offset, len(raw), crc)
            entries.append((name.encode(), entry))
            offset += len(raw)
    with opener(index_path) as index:
        _write_table(index, entries)


def _entries(prefix: str) -> tuple[dict[bytes, _Entry], int]:
    """The entries of the checkpoint's index, by key, and its number of data shards."""
    index_path = prefix + INDEX_SUFFIX
    try:
        with open(index_path, "rb") as f:
            index = f.read()
    except FileNotFoundError:
        raise NotFoundError(f"no checkpoint index {index_path}", op=None, path=index_path) from None
    found, shards = {}, 1
    for key, value in _read_table(index, index_path):
        if key:
            found[key] = _Entry(value)
        else:  # the BundleHeaderProto
            shards = dict(_fields(value)).get(1, 1)
    return found, shards


def data_files(prefix: str) -> list[str]:
    """The data files of the V2 checkpoint ``prefix``, one per shard (as its index says)."""
    _, shards = _entries(prefix)
    return [_shard_path(prefix, i, shards) for i in range(shards)]


def _shard_path(prefix: str, shard: int, shards: int) -> str:
    return f"{prefix}.data-{shard:05d}-of-{shards:05d}"


class _DataFiles:
    """A checkpoint's data files (a sharded save writes one per device), each opened when
    a tensor is first read from it."""

    def __init__(self, prefix: str, shards: int) -> None:
        self.prefix, self.shards = prefix, shards
        self._open: dict[int, Any] = {}

    def path(self, shard: int) -> str:
        return _shard_path(self.prefix, shard, self.shards)

    def read(self, entry: _Entry) -> bytes:
        f = self._open.get(entry.shard)
        if f is None:
            path = self.path(entry.shard)
            try:
                f = self._open[entry.shard] = open(path, "rb")
            except FileNotFoundError:
                raise NotFoundError(
                    f"checkpoint {self.prefix}: its data file {path} is missing",
                    op=None,
                    path=path,
                ) from None
        f.seek(entry.offset)
        return f.read(entry.size)

    def close(self) -> None:
        for f in self._open.values():
            f.close()


def _names(entries: dict[bytes, _Entry]) -> list[bytes]:
    """The keys of whole tensors (a slice's key starts with a zero byte)."""
    return [key for key in entries if not key.startswith(b"\x00")]


def bundle_shapes(prefix: str) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
    """Name -> (shape, dtype) of every tensor of the checkpoint, from its index alone."""
    entries, _ = _entries(prefix)
    return {
        key.decode(): (entries[key].shape, _DTYPES.get(entries[key].dtype, np.dtype(object)))
        for key in _names(entries)
    }


def read_bundle(prefix: str, names: Any = None) -> dict[str, np.ndarray]:
    """The tensors of the V2 checkpoint ``prefix`` by name (those of ``names``; all by
    default; a partitioned variable's slices assembled into one array); each read from the
    data file (of its shard) where it lies. NotFoundError names a tensor it does not hold."""
    entries, shards = _entries(prefix)
    wanted = _names(entries) if names is None else [n.encode() for n in names]
    for key in wanted:
        if key not in entries:
            raise NotFoundError(
                f"Key {key.decode()} not found in checkpoint", op=None, variable=key.decode()
            )
    data = _DataFiles(prefix, shards)
    try:
        out = {}
        for key in wanted:
            name, entry = key.decode(), entries[key]
            if entry.slices:
                out[name] = _assembled(name, entry, entries, data)
            else:
                out[name] = _tensor(entry, data, name)
        return out
    finally:
        data.close()


def _assembled(
    name: str, entry: _Entry, entries: dict[bytes, _Entry], data: _DataFiles
) -> np.ndarray:
    """A partitioned variable: each slice (a ``TensorSliceProto``: start and length per
    dimension, no length for all of it) is stored under its own key
    (``checkpoint::EncodeTensorNameSlice``); put them together."""
    full = np.zeros(entry.shape, _DTYPES[entry.dtype])
    for spec in entry.slices:
        extents = [dict(_fields(value)) for number, value in _fields(spec) if number == 1]
        starts = [_signed(e.get(1, 0)) for e in extents]
        lengths = [_signed(e.get(2, (1 << 64) - 1)) for e in extents]
        key = _slice_key(name, starts, lengths)
        if key not in entries:
            raise DataLossError(
                f"checkpoint {data.prefix}: a slice of {name!r} ({starts}, {lengths}) is missing"
            )
        index = tuple(
            slice(s, None if n == -1 else s + n) for s, n in zip(starts, lengths, strict=True)
        )
        full[index] = _tensor(entries[key], data, name)
    return full


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


# -- TensorFlow's OrderedCode (the keys of slices) ------------------------------------------------
def _slice_key(name: str, starts: list[int], lengths: list[int]) -> bytes:
    """``checkpoint::EncodeTensorNameSlice``: 0, the name, the rank, then each dimension's
    start and length, in ``OrderedCode``.

    >>> _slice_key("v", [0], [-1]).hex()
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


_ESCAPES = {b"\x00": b"\x00\xff", b"\xff": b"\xff\x00"}


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
