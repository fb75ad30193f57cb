"""Damaged V2 checkpoints: every mutation of a valid checkpoint's index or data files (bit
flips, truncations, byte overwrites, block contents changed under valid checksums, entry and
header fields set to any value) reads back as it was, reads as what the index now says, or
raises DataLossError naming one of the checkpoint's files; never struct.error, IndexError,
ValueError, MemoryError, UnicodeDecodeError or any other exception (issue 32).

Three checkpoints are mutated: TensorFlow 2.21's (every dtype, a string tensor, partitioned
variables: tests/data/tf_checkpoint), its sharded one (two data files: tests/data/tf_sharded),
and one daskgraph wrote (bfloat16, an empty tensor, a scalar). The tests run 10,500 cases in
all, the same ones on every run (``derandomize``).
"""

from __future__ import annotations

import io
import os
import random
import shutil
import struct
import tempfile

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from daskgraph.errors import DataLossError, NotFoundError, UnimplementedError
from daskgraph.kernels import checkpoint_table
from daskgraph.kernels.checkpoint_files import checkpoint_files, checkpoint_shapes, read_checkpoint
from daskgraph.kernels.checkpoint_table import masked_crc, read_table, write_table
from daskgraph.kernels.protos import tensor_bundle_pb2 as pb
from daskgraph.kernels.tensor_bundle import write_bundle

DATA = os.path.join(os.path.dirname(__file__), "..", "data")


def fuzz(examples: int) -> settings:
    """Hypothesis settings of a fuzz test: ``examples`` cases, the same on every run."""
    return settings(
        max_examples=examples,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


class Base:
    """A valid checkpoint, held in memory: its index's bytes, its data files' bytes, the
    index's blocks (offset, size) and what it reads as."""

    def __init__(self, directory: str, prefix: str) -> None:
        self.name = prefix
        source = os.path.join(directory, prefix)
        self.index = open(source + ".index", "rb").read()
        self.data = {
            n[len(prefix) :]: open(os.path.join(directory, n), "rb").read()
            for n in sorted(os.listdir(directory))
            if n.startswith(prefix + ".data-")
        }
        self.values = read_checkpoint(source)
        self.items = read_table(self.index, "base")
        self.blocks = _blocks(self.index)


def _blocks(index: bytes) -> list[tuple[int, int]]:
    """(offset, size) of every block of a valid table: the metaindex, index and data blocks."""
    (meta, meta_size), pos = _handle(index, len(index) - 48)
    (offset, size), _ = _handle(index, pos)
    block = memoryview(index)[offset : offset + size]
    data = [_handle(h, 0)[0] for _, h in checkpoint_table._block_entries(block, "base")]
    return [(meta, meta_size), (offset, size), *data]


def _handle(data: bytes, pos: int) -> tuple[tuple[int, int], int]:
    return checkpoint_table._handle(data, pos, len(data), "base")


@pytest.fixture(scope="module")
def bases():
    made = tempfile.mkdtemp()
    write_bundle(
        os.path.join(made, "ours"),
        {
            "bf16": np.array([[1.0, -0.0], [np.inf, 3.0e38]], "bfloat16"),
            "empty": np.zeros((0, 3), np.float32),
            "n": np.int64(-5),
            "s": np.array([b"x", b"", b"yz" * 40], object),
            "w": np.arange(12, dtype=np.float64).reshape(3, 4),
        },
    )
    found = {
        "tf": Base(os.path.join(DATA, "tf_checkpoint"), "model"),
        "sharded": Base(os.path.join(DATA, "tf_sharded"), "sharded"),
        "ours": Base(made, "ours"),
    }
    shutil.rmtree(made)
    return found


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    return str(tmp_path_factory.mktemp("fuzzed"))


def _equal(got: dict, want: dict) -> bool:
    return sorted(got) == sorted(want) and all(
        got[k].dtype == want[k].dtype
        and got[k].shape == want[k].shape
        and np.array_equal(got[k], want[k])
        for k in want
    )


def check(work: str, base: Base, index: bytes, data: dict[str, bytes], same: bool) -> None:
    """Write the mutated files as a checkpoint and read it: the read gives the base's values
    (``same``: the mutation left nothing the reader uses changed, or the checksums caught
    it) or what the index now says, or raises DataLossError naming one of the checkpoint's
    files."""
    prefix = os.path.join(work, base.name)
    files = [prefix + ".index", *(prefix + suffix for suffix in data)]
    for path, content in zip(files, [index, *data.values()], strict=True):
        with open(path, "wb") as f:
            f.write(content)
    try:
        values = read_checkpoint(prefix)
    except DataLossError as err:
        assert err.path in files and err.path in str(err), (err.path, str(err))
        assert checkpoint_files(prefix)[0] == files[0]  # (what removing it would remove)
        return
    except NotFoundError as err:  # (an index that names data files that are not there)
        assert err.path.startswith(prefix + ".data-") and not os.path.exists(err.path)
        return
    except UnimplementedError as err:  # (a header saying big endian, as TensorFlow's)
        assert "endianness" in str(err)
        return
    if same:
        assert _equal(values, base.values)
    shapes = checkpoint_shapes(prefix)
    assert sorted(values) == sorted(shapes)
    for name, value in values.items():
        assert isinstance(value, np.ndarray) and value.shape == shapes[name][0], name


_BASES = st.sampled_from(["tf", "sharded", "ours"])
#: a random.Random whose seed hypothesis draws (and, derandomized, draws the same each run):
#: the mutations come from it, so a case costs one draw, not one per byte changed
_RANDOM = st.randoms(use_true_random=True)
_KINDS = ["flip", "overwrite", "truncate", "insert", "delete"]


def _edited(rng: random.Random, raw: bytes, lo: int = 0, hi: int | None = None) -> bytes:
    """``raw`` with one to three random edits in ``raw[lo:hi]`` (bit flips, overwrites and,
    where that runs to the end, truncations, insertions and deletions)."""
    out = bytearray(raw)
    whole = hi is None
    for _ in range(rng.randint(1, 3)):
        hi = len(out) if whole else hi
        if hi <= lo:
            break
        pos, kind = rng.randrange(lo, hi), rng.choice(_KINDS)
        payload = rng.randbytes(rng.randint(1, 9))
        if kind == "flip":
            out[pos] ^= 1 << rng.randrange(8)
        elif kind == "overwrite":
            out[pos : pos + len(payload)] = payload[: hi - pos]
        elif kind == "truncate" and whole:
            del out[pos:]
        elif kind == "insert" and whole:
            out[pos:pos] = payload
        elif kind == "delete" and whole:
            del out[pos : pos + len(payload)]
    return bytes(out)


@fuzz(2000)
@given(base=_BASES, rng=_RANDOM)
def test_a_damaged_index_file_is_data_loss(bases, work, base, rng):
    base = bases[base]
    check(work, base, _edited(rng, base.index), base.data, same=True)


@fuzz(2000)
@given(base=_BASES, rng=_RANDOM)
def test_a_damaged_data_file_is_data_loss(bases, work, base, rng):
    base = bases[base]
    suffix = rng.choice(sorted(base.data))
    data = {**base.data, suffix: _edited(rng, base.data[suffix])}
    check(work, base, base.index, data, same=True)


@fuzz(2500)
@given(base=_BASES, rng=_RANDOM)
def test_index_blocks_changed_under_valid_checksums_are_read_or_data_loss(bases, work, base, rng):
    """The block parser's own checks: each block's CRC is made right again after its bytes
    (restart counts, shared/key/value lengths, keys, handles, protos) are changed."""
    base = bases[base]
    offset, size = rng.choice(base.blocks)
    index = bytearray(_edited(rng, base.index, offset, offset + size))
    crc = masked_crc(bytes(index[offset : offset + size + 1]))
    struct.pack_into("<I", index, offset + size + 1, crc)
    check(work, base, bytes(index), base.data, same=False)


_EDGES = [-(2**63), -(2**31), -1, 0, 1, 2, 3, 4, 7, 8, 14, 2**31 - 1, 2**32, 2**62, 2**63 - 1]


def _int64(rng: random.Random) -> int:
    """An int64: an edge value, a small one or any."""
    pick = rng.randrange(3)
    if pick == 0:
        return rng.choice(_EDGES)
    return rng.randint(-4, 3000) if pick == 1 else rng.randint(-(2**63), 2**63 - 1)


def _set_field(rng: random.Random, entry: pb.BundleEntryProto) -> None:
    """Set one field of ``entry`` (or of its shape or one of its slices) to any value."""
    field, number = rng.choice(_FIELDS), _int64(rng)
    if field in ("dtype", "shard_id"):
        setattr(entry, field, max(-(2**31), min(2**31 - 1, number)))
    elif field == "crc32c":
        entry.crc32c = number % 2**32
    elif field in ("offset", "size"):
        setattr(entry, field, number)
    elif field == "shape":
        del entry.shape.dim[:]
        dims = [_int64(rng) for _ in range(rng.randint(0, 4))]
        entry.shape.dim.extend(pb.TensorShapeProto.Dim(size=d) for d in dims)
    elif field == "unknown_rank":
        entry.shape.unknown_rank = True
    else:  # a slice's extent: its start, its length, or no length
        spec = rng.choice(entry.slices) if entry.slices else entry.slices.add()
        extent = rng.choice(spec.extent) if spec.extent else spec.extent.add()
        extent.start, extent.length = _int64(rng), number
        if rng.random() < 0.2:
            extent.ClearField("length")


_FIELDS = ["dtype", "shard_id", "offset", "size", "crc32c", "shape", "unknown_rank", "slices"]


@fuzz(2500)
@given(base=_BASES, rng=_RANDOM)
def test_entry_fields_set_to_any_value_are_read_or_data_loss(bases, work, base, rng):
    """Offsets, sizes, shards, dtypes, shapes, checksums and slices set to anything, under
    valid block checksums: what they point at is checked before it is read or allocated."""
    base = bases[base]
    items = list(base.items)
    for _ in range(rng.randint(1, 2)):
        at = rng.randrange(1, len(items))
        entry = pb.BundleEntryProto.FromString(items[at][1])
        _set_field(rng, entry)
        items[at] = (items[at][0], entry.SerializeToString())
    check(work, base, _table(items), base.data, same=False)


@fuzz(1500)
@given(base=_BASES, rng=_RANDOM, header=st.booleans())
def test_header_and_entry_protos_changed_are_read_or_data_loss(bases, work, base, rng, header):
    """The header's number of data files and byte order set to any value; or an entry's
    protocol buffer bytes damaged (bad varints, lengths, wire types) under valid checksums."""
    base = bases[base]
    items = list(base.items)
    if header:
        shards, endianness = (max(-(2**31), min(2**31 - 1, _int64(rng))) for _ in "ab")
        header_proto = pb.BundleHeaderProto(num_shards=shards, endianness=endianness)
        items[0] = (b"", header_proto.SerializeToString())
    else:
        at = rng.randrange(1, len(items))
        items[at] = (items[at][0], _edited(rng, items[at][1]))
    check(work, base, _table(items), base.data, same=False)


def _table(items: list[tuple[bytes, bytes]]) -> bytes:
    out = io.BytesIO()
    write_table(out, items)
    return out.getvalue()
