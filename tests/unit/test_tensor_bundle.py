"""TensorFlow's V2 checkpoints (issue 26): one TensorFlow 2.21 wrote (tests/data/tf_checkpoint,
made by its make_tf_checkpoint.py) reads here with equal values; what daskgraph writes is
TensorFlow's bytes and reads back; damage is reported, not returned; and, where TensorFlow is
installed, TensorFlow restores a checkpoint daskgraph's Saver wrote."""

from __future__ import annotations

import importlib.util
import io
import json
import os
import subprocess
import sys
import textwrap
import tracemalloc

import ml_dtypes
import numpy as np
import pytest

import daskgraph as dg
from daskgraph.errors import DataLossError, NotFoundError
from daskgraph.kernels import tensor_bundle
from daskgraph.kernels.checkpoint_files import checkpoint_shapes, read_checkpoint, write_checkpoint
from daskgraph.kernels.checkpoint_table import read_table, varint, write_table
from daskgraph.kernels.protos import tensor_bundle_pb2 as pb

HERE = os.path.join(os.path.dirname(__file__), "..", "data", "tf_checkpoint")
TF_PREFIX = os.path.join(HERE, "model")
BF16 = os.path.join(HERE, "..", "tf_bfloat16")
EXPECTED = np.load(os.path.join(HERE, "expected.npy"), allow_pickle=True).item()


def _equal(got, want, name):
    want = np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, name
    np.testing.assert_array_equal(got, want, err_msg=name)


def test_tensorflows_checkpoint_reads_with_equal_values():
    got = read_checkpoint(TF_PREFIX)
    assert sorted(got) == sorted(EXPECTED)
    for name, value in EXPECTED.items():
        _equal(got[name], value, name)
    shapes = checkpoint_shapes(TF_PREFIX)
    assert shapes["part"] == ((10, 4), np.dtype("float32")) and shapes["scope/step"][0] == ()
    assert read_checkpoint(TF_PREFIX, ["big"])["big"].shape == (300, 2)  # two slices, joined


def test_what_daskgraph_writes_is_tensorflows_bytes_for_every_tensor():
    entries = tensor_bundle._index(TF_PREFIX).entries
    (data_path,) = tensor_bundle.data_files(TF_PREFIX)
    with open(data_path, "rb") as f:
        data = f.read()
    with open(TF_PREFIX + ".index", "rb") as f:
        protos = dict(read_table(f.read(), "model.index"))  # (the protos as TensorFlow wrote them)
    assert tensor_bundle._header_proto() == protos[b""]
    for name, value in EXPECTED.items():
        if name in ("part", "big"):
            continue  # (sliced by TensorFlow's partitioner)
        entry = entries[name.encode()]
        raw, crc = tensor_bundle._encoded(np.asarray(value))
        assert bytes(raw) == data[entry.offset : entry.offset + entry.size], name
        assert crc == entry.crc, name
        written = tensor_bundle._entry_proto(entry.code, entry.shape, entry.offset, len(raw), crc)
        assert written == protos[name.encode()], name


def _fixture_values(directory: str, script: str) -> dict:
    spec = importlib.util.spec_from_file_location(script, os.path.join(directory, script + ".py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.VALUES


def test_tensorflows_bfloat16_checkpoint_reads_and_daskgraph_writes_its_bytes(tmp_path):
    """TensorFlow 2.21's DT_BFLOAT16 variables (tests/data/tf_bfloat16, made by its
    make_tf_bfloat16.py) read as ``ml_dtypes.bfloat16`` arrays, and the same arrays written
    here are TensorFlow's two files byte for byte."""
    values = _fixture_values(BF16, "make_tf_bfloat16")
    wanted = {name: np.asarray(v).astype(ml_dtypes.bfloat16) for name, v in values.items()}
    got = read_checkpoint(os.path.join(BF16, "model"))
    assert sorted(got) == sorted(wanted)
    for name, value in wanted.items():
        assert got[name].dtype == np.dtype(ml_dtypes.bfloat16), name
        assert got[name].shape == value.shape, name
        np.testing.assert_array_equal(got[name].view(np.uint16), value.view(np.uint16), name)
    assert checkpoint_shapes(os.path.join(BF16, "model"))["exact"] == (
        (3, 3),
        wanted["exact"].dtype,
    )
    prefix = str(tmp_path / "model")
    write_checkpoint(prefix, wanted)
    for suffix in (".index", tensor_bundle.DATA_SUFFIX):
        with (
            open(prefix + suffix, "rb") as ours,
            open(os.path.join(BF16, "model" + suffix), "rb") as tfs,
        ):
            assert ours.read() == tfs.read(), suffix
    write_checkpoint(prefix, {"nan": np.array([np.nan, -np.nan], "bfloat16")})
    assert np.isnan(read_checkpoint(prefix)["nan"]).all()


@pytest.mark.parametrize(
    "index", ["tf_checkpoint/model.index", "tf_sharded/sharded.index", "tf_bfloat16/model.index"]
)
def test_the_index_table_written_here_is_tensorflows_bytes(index):
    """The same entries make the same table: blocks, restarts, the index block's separator
    keys (LevelDB's shortest successor), trailers and footer."""
    with open(os.path.join(HERE, "..", index), "rb") as f:
        raw = f.read()
    out = io.BytesIO()
    write_table(out, read_table(raw, index))
    assert out.getvalue() == raw


def test_a_tensor_is_copied_at_most_once_on_write_and_on_read(tmp_path):
    """Written from the array's own buffer (its checksum computed in place), read straight
    into the array returned: tracemalloc sees no copy on the way out, one on the way in."""
    value = np.arange(4 * 2**20, dtype=np.float32)  # (16 MiB)
    prefix = str(tmp_path / "model")
    tracemalloc.start()
    try:
        write_checkpoint(prefix, {"big": value})
        _, wrote = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        got = read_checkpoint(prefix)["big"]
        _, read = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert wrote < value.nbytes // 4, wrote
    assert read < 1.25 * value.nbytes, read
    np.testing.assert_array_equal(got, value)


@pytest.mark.parametrize(
    "damage, message",
    [
        ("handle", "the index block ends at byte 1099511627791"),  # (struct.error before)
        ("size", "past the end of the file"),  # (an entry claiming 2**62 bytes)
        ("name", "not UTF-8"),  # (UnicodeDecodeError before)
    ],
)
def test_a_damaged_index_is_data_loss_naming_it(tmp_path, damage, message):
    prefix = str(tmp_path / "model")
    write_checkpoint(prefix, {"w": np.arange(4.0)})
    index_path = prefix + ".index"
    with open(index_path, "rb") as f:
        raw = f.read()
    items = read_table(raw, index_path)
    if damage == "handle":  # the footer's index block handle: a size far past the end
        handles = varint(0) + varint(1) + varint(2**40) + varint(10)
        raw = raw[:-48] + handles + bytes(40 - len(handles)) + raw[-8:]
    else:
        entry = pb.BundleEntryProto.FromString(items[1][1])
        entry.size = 2**62 if damage == "size" else entry.size
        key = b"\xff\xfe" if damage == "name" else items[1][0]
        out = io.BytesIO()
        write_table(out, [items[0], (key, entry.SerializeToString())])
        raw = out.getvalue()
    with open(index_path, "wb") as f:
        f.write(raw)
    with pytest.raises(DataLossError, match=message) as caught:
        read_checkpoint(prefix)
    assert caught.value.path in (index_path, prefix + tensor_bundle.DATA_SUFFIX)
    assert caught.value.path in str(caught.value)


def test_a_checkpoint_written_here_reads_back(tmp_path):
    prefix = str(tmp_path / "model")
    values = {k: v for k, v in EXPECTED.items()}
    values["many"] = np.arange(100_000, dtype=np.float64)  # index entries over two blocks too
    values.update({f"v{i:05d}": np.float32(i) for i in range(3000)})
    write_checkpoint(prefix, values)
    got = read_checkpoint(prefix)
    assert sorted(got) == sorted(values)
    for name, value in values.items():
        _equal(got[name], value, name)


def test_damage_and_missing_files_are_reported(tmp_path):
    prefix = str(tmp_path / "model")
    write_checkpoint(prefix, {"w": np.arange(4.0)})
    data_path = prefix + tensor_bundle.DATA_SUFFIX
    raw = bytearray(open(data_path, "rb").read())
    raw[3] ^= 0xFF
    open(data_path, "wb").write(bytes(raw))
    with pytest.raises(DataLossError, match="'w' are damaged"):
        read_checkpoint(prefix)
    with open(prefix + ".index", "r+b") as f:
        f.seek(2)
        f.write(b"\xff\xff")
    with pytest.raises(DataLossError, match="checksum"):
        read_checkpoint(prefix)
    with pytest.raises(NotFoundError, match="Failed to find any matching files"):
        read_checkpoint(str(tmp_path / "nothing"))
    with pytest.raises(NotFoundError, match="Key q not found"):
        read_checkpoint(TF_PREFIX, ["q"])


def test_a_saver_restores_tensorflows_checkpoint_into_variables():
    with dg.Graph().as_default():
        f32 = dg.Variable(np.zeros((2, 3), np.float32), name="f32")
        step = dg.Variable(np.int64(0), name="scope/step")
        part = dg.Variable(np.zeros((10, 4), np.float32), name="part")
        with dg.Session() as sess:
            dg.train.Saver([f32, step, part]).restore(sess, TF_PREFIX)
            values = sess.run([f32, step, part])
    _equal(values[0], EXPECTED["f32"], "f32")
    assert values[1] == 42
    _equal(values[2], EXPECTED["part"], "part")
    assert dict(dg.train.list_variables(TF_PREFIX))["big"] == [300, 2]


TF_READS = textwrap.dedent(
    """
    import json, sys
    import tensorflow as tf
    reader = tf.train.load_checkpoint(sys.argv[1])
    names = reader.get_variable_to_shape_map()
    print(json.dumps({n: reader.get_tensor(n).tolist() for n in names}))
    """
)


@pytest.mark.skipif(
    importlib.util.find_spec("tensorflow") is None, reason="TensorFlow is not installed"
)
def test_tensorflow_restores_a_checkpoint_daskgraphs_saver_wrote(tmp_path):
    with dg.Graph().as_default():
        dg.Variable(np.arange(6, dtype=np.float32).reshape(2, 3), name="layer/w")
        dg.Variable(np.int64(9), name="n")
        with dg.Session() as sess:
            sess.run(dg.global_variables_initializer())
            path = dg.train.Saver().save(sess, str(tmp_path / "model"), global_step=3)
    script = tmp_path / "read.py"
    script.write_text(TF_READS)
    done = subprocess.run(
        [sys.executable, str(script), path], capture_output=True, text=True, timeout=180
    )
    assert done.returncode == 0, done.stderr[-2000:]
    read = json.loads(done.stdout.strip().splitlines()[-1])
    assert read == {"layer/w": [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]], "n": 9}


def test_a_sharded_checkpoint_reads_from_every_shard_and_is_removed_whole(tmp_path):
    """TensorFlow's ``Saver(sharded=True)`` writes one data file per device
    (tests/data/tf_sharded, made by its make_tf_checkpoint.py)."""
    import shutil

    from daskgraph.kernels.checkpoint_files import checkpoint_files

    source = os.path.join(os.path.dirname(__file__), "..", "data", "tf_sharded")
    for name in os.listdir(source):
        if name.startswith("sharded."):
            shutil.copy(os.path.join(source, name), tmp_path)
    prefix = str(tmp_path / "sharded")
    got = read_checkpoint(prefix)
    _equal(got["a"], np.arange(3, dtype=np.float32), "a")
    _equal(got["b"], np.array([[7, 8]], np.int64), "b")
    assert [os.path.basename(p) for p in checkpoint_files(prefix)] == [
        "sharded.index", "sharded.data-00000-of-00002", "sharded.data-00001-of-00002",
    ]  # fmt: skip
    dg.train.remove_checkpoint(prefix)
    assert not [n for n in os.listdir(tmp_path) if n.startswith("sharded.")]


def test_a_new_checkpoint_replaces_an_older_npz_one_at_its_prefix(tmp_path):
    from daskgraph.kernels.checkpoint_files import checkpoint_exists, checkpoint_files

    prefix = str(tmp_path / "model")
    np.savez(prefix + ".npz", w=np.zeros(2))  # (daskgraph's format before)
    assert read_checkpoint(prefix)["w"].tolist() == [0.0, 0.0]
    write_checkpoint(prefix, {"w": np.ones(2)})
    assert read_checkpoint(prefix)["w"].tolist() == [1.0, 1.0]
    assert not os.path.exists(prefix + ".npz")
    np.savez(prefix + ".npz", w=np.zeros(2))  # (one left behind, however)
    dg.train.remove_checkpoint(prefix)
    assert not checkpoint_exists(prefix) and checkpoint_files(prefix) == []
