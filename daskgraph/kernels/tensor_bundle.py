"""TensorFlow's V2 checkpoint format (the *tensor bundle*): reading and writing it.

Its one job is the bytes of ``tensor_bundle.cc``'s format, so that a checkpoint TensorFlow
wrote restores here and one written here restores in TensorFlow:

* ``<prefix>.data-00000-of-00001``: the tensors' bytes one after the other (little endian;
  a string tensor is its elements' lengths as varints, the masked CRC32C of those, then the
  bytes);
* ``<prefix>.index``: a LevelDB table (:mod:`daskgraph.kernels.checkpoint_table`) whose empty key
  holds a ``BundleHeaderProto`` and whose other keys, sorted, are tensor names holding a
  ``BundleEntryProto`` (dtype, shape, shard, offset, size, CRC32C).

The protocol buffers are protobuf's own messages, generated from
``daskgraph/kernels/protos/tensor_bundle.proto``. Every dtype daskgraph's variables hold is read
and written, and ``bfloat16`` (``ml_dtypes.bfloat16``, TensorFlow's ``DT_BFLOAT16``) too.
Sliced (partitioned) entries are read by assembling their slices
(:mod:`daskgraph.kernels.checkpoint_slices`); written checkpoints hold whole tensors.

A tensor is copied once on its way: read straight from the data file into the array
returned, written straight from the array's buffer (its CRC32C computed in place). Whatever
in either file is malformed (truncated, damaged, sizes or offsets that do not fit) raises
:class:`~daskgraph.errors.DataLossError` naming the file, before anything is allocated from a
size read in it.

>>> import tempfile, os
>>> prefix = os.path.join(tempfile.mkdtemp(), "model")
>>> write_bundle(prefix, {"w": np.arange(3, dtype=np.float32), "step": np.int64(7)})
>>> bundle = read_bundle(prefix)
>>> sorted(bundle), bundle["w"].tolist(), int(bundle["step"])
(['step', 'w'], [0.0, 1.0, 2.0], 7)
"""

from __future__ import annotations

import math
import os
import struct
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import ml_dtypes
import numpy as np
from google.protobuf.message import DecodeError

from daskgraph.errors import DataLossError, NotFoundError, UnimplementedError
from daskgraph.kernels.checkpoint_slices import check_tiling, slice_extents, slice_key
from daskgraph.kernels.checkpoint_table import (
    masked_crc,
    read_table,
    read_varint,
    varint,
    write_table,
)
from daskgraph.kernels.protos import tensor_bundle_pb2 as pb

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

#: TensorFlow's DataType enum <-> NumPy dtypes (the ones daskgraph's variables hold, bfloat16)
_DTYPES: dict[int, np.dtype] = {
    pb.DT_FLOAT: np.dtype("float32"), pb.DT_DOUBLE: np.dtype("float64"),
    pb.DT_INT32: np.dtype("int32"), pb.DT_UINT8: np.dtype("uint8"),
    pb.DT_INT16: np.dtype("int16"), pb.DT_INT8: np.dtype("int8"),
    pb.DT_STRING: np.dtype(object), pb.DT_COMPLEX64: np.dtype("complex64"),
    pb.DT_INT64: np.dtype("int64"), pb.DT_BOOL: np.dtype("bool"),
    pb.DT_BFLOAT16: np.dtype(ml_dtypes.bfloat16), pb.DT_UINT16: np.dtype("uint16"),
    pb.DT_COMPLEX128: np.dtype("complex128"), pb.DT_HALF: np.dtype("float16"),
    pb.DT_UINT32: np.dtype("uint32"), pb.DT_UINT64: np.dtype("uint64"),
}  # fmt: skip
_ENUMS = {dtype: code for code, dtype in _DTYPES.items()}


def bundle_files(prefix: str) -> tuple[str, str]:
    """The index and data files of the (unsharded) checkpoint ``prefix``.

    >>> bundle_files("dir/model-7")
    ('dir/model-7.index', 'dir/model-7.data-00000-of-00001')
    """
    return prefix + INDEX_SUFFIX, prefix + DATA_SUFFIX


def bundle_exists(prefix: str) -> bool:
    """Whether ``prefix`` names a V2 checkpoint (its index file exists).

    >>> bundle_exists("/no/such/model")
    False
    """
    return os.path.exists(prefix + INDEX_SUFFIX)


def _damaged(path: str, what: str, **fields: Any) -> DataLossError:
    return DataLossError(f"{path}: {what}", op=None, path=path, **fields)


# -- writing -------------------------------------------------------------------------------------
def _header_proto() -> bytes:
    """``BundleHeaderProto``: one shard, little endian, version producer 1."""
    header = pb.BundleHeaderProto(num_shards=1, version=pb.VersionDef(producer=1))
    return header.SerializeToString(deterministic=True)


def _entry_proto(dtype: int, shape: tuple[int, ...], offset: int, size: int, crc: int) -> bytes:
    """``BundleEntryProto`` of a whole tensor (its shape always present, as TensorFlow's)."""
    entry = pb.BundleEntryProto(dtype=dtype, offset=offset, size=size, crc32c=crc)
    entry.shape.SetInParent()
    entry.shape.dim.extend(pb.TensorShapeProto.Dim(size=d) for d in shape)
    return entry.SerializeToString(deterministic=True)


def _encoded(value: np.ndarray) -> tuple[Any, int]:
    """The bytes of a tensor in the data file (a buffer: for a numeric tensor, the array's
    own memory where it is C-contiguous and little endian), and their checksum."""
    if value.dtype.kind not in "OSU":
        raw = np.ascontiguousarray(value, value.dtype.newbyteorder("<")).reshape(-1)
        raw = raw.view(np.uint8)  # (a view: no copy)
        return raw, masked_crc(raw)
    items = [v if isinstance(v, bytes) else str(v).encode() for v in value.ravel()]
    lengths = b"".join(varint(len(v)) for v in items)
    summed = _checksummed_lengths([len(v) for v in items])
    length_crc = struct.pack("<I", masked_crc(summed))
    body = b"".join(items)
    return lengths + length_crc + body, masked_crc(summed + length_crc + body)


def _checksummed_lengths(lengths: list[int]) -> bytes:
    """What a string tensor's checksum covers of its lengths (``WriteStringTensor``): each
    as a little-endian uint32 (uint64 beyond 4 GiB), not as the varints written."""
    return b"".join(
        struct.pack("<I", n) if n <= 0xFFFFFFFF else struct.pack("<Q", n) for n in lengths
    )


def write_bundle(
    prefix: str, tensors: dict[str, Any], opener: Callable[[str], Any] | None = None
) -> None:
    """Write ``tensors`` (name -> array) as the V2 checkpoint ``prefix``: the data file,
    then the index. ``opener(path)`` gives a context manager yielding a binary file to
    write (default: ``open(path, "wb")``; the Saver passes its atomic writer).

    >>> import tempfile, os
    >>> prefix = os.path.join(tempfile.mkdtemp(), "model")
    >>> write_bundle(prefix, {"b": np.array([1.0, -2.0], ml_dtypes.bfloat16)})
    >>> open(prefix + DATA_SUFFIX, "rb").read().hex()  # (the high halves of the float32s)
    '803f00c0'
    """
    opener = opener or (lambda path: open(path, "wb"))
    index_path, data_path = bundle_files(prefix)
    entries: list[tuple[bytes, bytes]] = [(b"", _header_proto())]
    offset = 0
    with opener(data_path) as data:
        for name in sorted(tensors):
            value = np.asarray(tensors[name])
            kind = np.dtype(object) if value.dtype.kind in "SU" else value.dtype
            code = _ENUMS.get(kind.newbyteorder("="))
            if code is None:
                raise TypeError(f"checkpoint: cannot write {name!r} of dtype {value.dtype}")
            raw, crc = _encoded(value)
            data.write(raw)
            size = len(raw)  # (a 1-D uint8 view or bytes: its length is its size)
            entries.append((name.encode(), _entry_proto(code, value.shape, offset, size, crc)))
            offset += size
    with opener(index_path) as index:
        write_table(index, entries)


# -- the index -----------------------------------------------------------------------------------
@dataclass
class _Entry:
    """A ``BundleEntryProto``, checked: its dtype's code, a shape of sizes >= 0, and the raw
    (start, length or None) extents of each of its slices."""

    code: int
    shape: tuple[int, ...]
    shard: int
    offset: int
    size: int
    crc: int
    slices: list[list[tuple[int, int | None]]]

    @property
    def dtype(self) -> np.dtype | None:
        """The NumPy dtype of its code; None for one daskgraph does not read."""
        return _DTYPES.get(self.code)


def _parsed(message: Any, value: bytes, path: str, what: str) -> Any:
    try:
        return message.FromString(value)
    except DecodeError as err:
        raise _damaged(path, f"{what} is not a valid protocol buffer ({err})") from None


def _entry(key: bytes, value: bytes, path: str) -> _Entry:
    proto = _parsed(pb.BundleEntryProto, value, path, f"the entry of {key!r}")
    shape = tuple(dim.size for dim in proto.shape.dim)
    if proto.shape.unknown_rank or any(d < 0 for d in shape):
        raise _damaged(path, f"the entry of {key!r} has an unknown or negative shape {shape}")
    slices = [
        [(e.start, e.length if e.HasField("length") else None) for e in spec.extent]
        for spec in proto.slices
    ]
    return _Entry(
        proto.dtype,
        shape,
        proto.shard_id,
        proto.offset,
        proto.size,
        proto.crc32c,
        slices,
    )


@dataclass
class _Index:
    """A checkpoint's index: its entries by key, its number of data files and whether the
    bundle is big endian."""

    path: str
    entries: dict[bytes, _Entry]
    shards: int
    big_endian: bool

    def names(self) -> list[bytes]:
        """The keys of whole tensors (a slice's key starts with a zero byte)."""
        return [key for key in self.entries if not key.startswith(b"\x00")]

    def check_endianness(self) -> None:
        """UnimplementedError for a bundle written big endian, as TensorFlow's reader."""
        if self.big_endian:
            raise UnimplementedError(
                f"{self.path}: Reading a bundle with different endianness from the reader is "
                "unsupported (it was written on a big-endian machine)",
                op=None,
                path=self.path,
            )


def _index(prefix: str) -> _Index:
    """The checked index of the checkpoint ``prefix``; NotFoundError when there is none."""
    path = prefix + INDEX_SUFFIX
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise NotFoundError(f"no checkpoint index {path}", op=None, path=path) from None
    items = read_table(data, path)
    if not items or items[0][0] != b"":
        raise _damaged(path, "the index has no header entry (its empty key)")
    header = _parsed(pb.BundleHeaderProto, items[0][1], path, "the header")
    entries = {key: _entry(key, value, path) for key, value in items[1:]}
    # (each data file holds at least one tensor: more files than entries is damage)
    if not 1 <= header.num_shards <= max(1, len(entries)) or header.endianness not in (0, 1):
        raise _damaged(
            path,
            f"the header says {header.num_shards} data files, endianness "
            f"{header.endianness}, for {len(entries)} entries",
        )
    return _Index(path, entries, header.num_shards, header.endianness == pb.BundleHeaderProto.BIG)


def _shard_path(prefix: str, shard: int, shards: int) -> str:
    return f"{prefix}.data-{shard:05d}-of-{shards:05d}"


def data_files(prefix: str) -> list[str]:
    """The data files of the V2 checkpoint ``prefix``, one per shard (as its index says).

    >>> import tempfile, os
    >>> prefix = os.path.join(tempfile.mkdtemp(), "model")
    >>> write_bundle(prefix, {"w": np.zeros(2)})
    >>> [os.path.basename(p) for p in data_files(prefix)]
    ['model.data-00000-of-00001']
    """
    shards = _index(prefix).shards
    return [_shard_path(prefix, i, shards) for i in range(shards)]


def _name(key: bytes, path: str) -> str:
    try:
        return key.decode()
    except UnicodeDecodeError:
        raise _damaged(path, f"a tensor name {key!r} that is not UTF-8") from None


def bundle_shapes(prefix: str) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
    """Name -> (shape, dtype) of every tensor of the checkpoint, from its index alone (the
    dtype ``object`` for one daskgraph does not read).

    >>> import tempfile, os
    >>> prefix = os.path.join(tempfile.mkdtemp(), "model")
    >>> write_bundle(prefix, {"w": np.zeros((2, 3), np.float32)})
    >>> bundle_shapes(prefix)
    {'w': ((2, 3), dtype('float32'))}
    """
    index = _index(prefix)
    index.check_endianness()
    out = {}
    for key in index.names():
        entry = index.entries[key]
        out[_name(key, index.path)] = (entry.shape, entry.dtype or np.dtype(object))
    return out


# -- the data files ------------------------------------------------------------------------------
class _DataFiles:
    """A checkpoint's data files (a sharded save writes one per device), each opened when
    a tensor is first read from it; every read is checked to lie within its file."""

    def __init__(self, prefix: str, shards: int) -> None:
        self.prefix, self.shards = prefix, shards
        self._open: dict[int, Any] = {}

    def path(self, shard: int) -> str:
        """The data file of ``shard``."""
        return _shard_path(self.prefix, shard, self.shards)

    def _file(self, shard: int) -> Any:
        f = self._open.get(shard)
        if f is None:
            path = self.path(shard)
            try:
                f = self._open[shard] = open(path, "rb", buffering=0)
            except FileNotFoundError:
                raise NotFoundError(
                    f"checkpoint {self.prefix}: its data file {path} is missing",
                    op=None,
                    path=path,
                ) from None
        return f

    def check(self, entry: _Entry, name: str) -> str:
        """The data file of ``entry``, once its bytes are known to lie within that file."""
        if not 0 <= entry.shard < self.shards:
            raise _damaged(
                self.prefix + INDEX_SUFFIX,
                f"tensor {name!r} is in data file {entry.shard} of {self.shards}",
                tensor=name,
            )
        path = self.path(entry.shard)
        length = os.fstat(self._file(entry.shard).fileno()).st_size
        if entry.offset < 0 or entry.size < 0 or entry.offset + entry.size > length:
            raise _damaged(
                path,
                f"tensor {name!r} is said to be {entry.size} bytes at offset {entry.offset}, "
                f"past the end of the file ({length} bytes): it is truncated or damaged",
                tensor=name,
            )
        return path

    def read_into(self, entry: _Entry, target: Any) -> None:
        """Fill ``target`` (a writable buffer of ``entry.size`` bytes) from the file."""
        f = self._file(entry.shard)
        f.seek(entry.offset)
        view, done = memoryview(target).cast("B"), 0
        while done < len(view):
            got = f.readinto(view[done:])
            if not got:  # (the file shrank under us)
                raise _damaged(self.path(entry.shard), "the file ended early")
            done += got

    def close(self) -> None:
        """Close every data file opened."""
        for f in self._open.values():
            f.close()


# -- tensors -------------------------------------------------------------------------------------
def _dtype_of(entry: _Entry, path: str, name: str) -> np.dtype:
    if entry.dtype is None:
        raise _damaged(
            path,
            f"tensor {name!r} has TensorFlow dtype {entry.code}, which daskgraph does not read",
            tensor=name,
        )
    return entry.dtype


def _tensor(entry: _Entry, data: _DataFiles, name: str, out: np.ndarray | None = None) -> Any:
    """The tensor of ``entry``, read into ``out`` where given (a C-contiguous array of its
    shape and dtype), else into a new array; checked against its size and checksum."""
    dtype = _dtype_of(entry, data.prefix + INDEX_SUFFIX, name)
    path = data.check(entry, name)
    count = math.prod(entry.shape)
    if dtype.kind == "O":
        return _strings(entry, data, path, name, count).reshape(entry.shape)
    if count * dtype.itemsize != entry.size:
        raise _damaged(
            path,
            f"tensor {name!r} of shape {entry.shape} and dtype {dtype} is {count * dtype.itemsize}"
            f" bytes, but its entry says {entry.size}",
            tensor=name,
        )
    value = np.empty(entry.shape, dtype.newbyteorder("<")) if out is None else out
    raw = value.reshape(-1).view(np.uint8)  # (views: the file's bytes land in ``value``)
    data.read_into(entry, raw)
    if masked_crc(raw) != entry.crc:
        raise _damaged(path, f"the bytes of tensor {name!r} are damaged (checksum)", tensor=name)
    return value


def _strings(entry: _Entry, data: _DataFiles, path: str, name: str, count: int) -> np.ndarray:
    """A string tensor's elements: ``count`` varint lengths, their checksum, the bytes."""
    if count + 4 > entry.size:  # (a length is at least one byte)
        raise _damaged(path, f"string tensor {name!r} of {count} elements in {entry.size} bytes")
    raw = bytearray(entry.size)
    data.read_into(entry, raw)
    lengths, pos = [], 0
    for _ in range(count):
        n, pos = read_varint(raw, pos, len(raw), path)
        lengths.append(n)
    if pos + 4 + sum(lengths) != len(raw):
        raise _damaged(path, f"the lengths of string tensor {name!r} do not add up to its size")
    length_crc = bytes(raw[pos : pos + 4])
    body = bytes(raw[pos + 4 :])
    if masked_crc(_checksummed_lengths(lengths) + length_crc + body) != entry.crc:
        raise _damaged(path, f"the bytes of tensor {name!r} are damaged (checksum)", tensor=name)
    items, pos = [], 0
    for n in lengths:
        items.append(body[pos : pos + n])
        pos += n
    return np.array([*items, None], dtype=object)[:-1]


def _assembled(name: str, entry: _Entry, index: _Index, data: _DataFiles) -> np.ndarray:
    """A partitioned tensor, its slices (each checked, and tiling it exactly) read into one
    array: straight into it where a slice is a contiguous block of it (slices of the first
    dimension, as TensorFlow's partitioners make), else through a copy."""
    dtype = _dtype_of(entry, index.path, name)
    parts = []
    for raw in entry.slices:
        extents = slice_extents(raw, entry.shape, index.path, name)
        key = slice_key(name, [s for s, _ in raw], [-1 if n is None else n for _, n in raw])
        part = index.entries.get(key)
        if part is None:
            raise _damaged(index.path, f"a slice of {name!r} ({extents}) is missing", tensor=name)
        if part.shape != tuple(n for _, n in extents) or part.dtype != dtype:
            raise _damaged(index.path, f"a slice of {name!r} is not of its shape or dtype")
        if dtype.kind != "O":
            data.check(part, name)  # (before the whole is allocated)
            if math.prod(part.shape) * dtype.itemsize != part.size:
                raise _damaged(index.path, f"a slice of {name!r} is not of its size")
        parts.append((extents, part))
    check_tiling([extents for extents, _ in parts], entry.shape, index.path, name)
    full = np.empty(entry.shape, dtype if dtype.kind == "O" else dtype.newbyteorder("<"))
    for extents, part in parts:
        target = full[tuple(slice(s, s + n) for s, n in extents)]
        if target.flags.c_contiguous and dtype.kind != "O":
            _tensor(part, data, name, out=target)
        else:
            target[...] = _tensor(part, data, name)
    return full


def read_bundle(prefix: str, names: Iterable[str] | None = None) -> dict[str, np.ndarray]:
    """The tensors of the V2 checkpoint ``prefix`` by name (those of ``names``; all by
    default; a partitioned variable's slices assembled into one array); each read from the
    data file (of its shard) where it lies. NotFoundError names a tensor it does not hold;
    DataLossError names a file that is damaged.

    >>> import tempfile, os
    >>> prefix = os.path.join(tempfile.mkdtemp(), "model")
    >>> write_bundle(prefix, {"a": np.ones(2), "b": np.array([b"x"], object)})
    >>> read_bundle(prefix, ["b"])
    {'b': array([b'x'], dtype=object)}
    """
    index = _index(prefix)
    index.check_endianness()
    wanted = index.names() if names is None else [n.encode() for n in names]
    for key in wanted:
        if key not in index.entries:
            name = _name(key, index.path)
            raise NotFoundError(f"Key {name} not found in checkpoint", op=None, variable=name)
    data = _DataFiles(prefix, index.shards)
    try:
        out = {}
        for key in wanted:
            name, entry = _name(key, index.path), index.entries[key]
            if entry.slices:
                out[name] = _assembled(name, entry, index, data)
            else:
                out[name] = _tensor(entry, data, name)
        return out
    finally:
        data.close()
