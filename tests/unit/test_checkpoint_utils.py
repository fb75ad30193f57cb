"""Checkpoint utilities and Saver's checkpoint management, against TensorFlow 2.21's
behaviour: NewCheckpointReader (maps, debug_string, errors), list/load_variable(s),
load_checkpoint, init_from_checkpoint (scope and name mappings, read when the initializer runs,
TF's errors), get_checkpoint_mtimes, generate_checkpoint_state_proto, remove_checkpoint,
checkpoints_iterator, Saver's max_to_keep=None and keep_checkpoint_every_n_hours."""

from __future__ import annotations

import os
import threading

import numpy as np
import pytest

import daskgraph as dg
import daskgraph.compat.v1 as tf
from daskgraph.errors import InvalidArgumentError, NotFoundError
from daskgraph.kernels.checkpoint_files import write_checkpoint
from daskgraph.training import saver as saver_module
from daskgraph.training.checkpoint_utils import (
    NewCheckpointReader,
    checkpoints_iterator,
    init_from_checkpoint,
    list_variables,
    load_checkpoint,
    load_variable,
)
from daskgraph.training.saver import (
    Saver,
    generate_checkpoint_state_proto,
    get_checkpoint_mtimes,
    remove_checkpoint,
)


def _write_checkpoint(directory, step=3) -> str:
    """TensorFlow's reference graph: old/a [1, 2], old/b int32 [[3, 4]], old/inner/c [[5]],
    g 7.0 and the global step, saved as ``model-<step>``."""
    with dg.Graph().as_default():
        with dg.variable_scope("old"):
            a = dg.get_variable("a", initializer=[1.0, 2.0])
            dg.get_variable("b", initializer=dg.constant([[3, 4]], dg.int32))
            with dg.variable_scope("inner"):
                dg.get_variable("c", initializer=[[5.0]])
        dg.get_variable("g", initializer=7.0)
        dg.train.get_or_create_global_step()
        with dg.Session() as sess:
            sess.run(dg.global_variables_initializer())
            assert sess.run(a).tolist() == [1.0, 2.0]
            return Saver().save(sess, os.path.join(str(directory), "model"), global_step=step)


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    return _write_checkpoint(tmp_path_factory.mktemp("ckpt"))


def test_reader_maps_and_debug_string_are_tensorflows(checkpoint):
    reader = NewCheckpointReader(checkpoint)
    assert reader.get_variable_to_shape_map() == {
        "old/a": [2],
        "old/b": [1, 2],
        "old/inner/c": [1, 1],
        "g": [],
        "global_step": [],
    }
    dtype_map = reader.get_variable_to_dtype_map()
    assert dtype_map["old/a"] == dg.float32 and dtype_map["old/b"] == dg.int32
    assert dtype_map["global_step"] == dg.int64
    assert reader.debug_string() == (
        b"g (DT_FLOAT) []\nglobal_step (DT_INT64) []\nold/a (DT_FLOAT) [2]\n"
        b"old/b (DT_INT32) [1,2]\nold/inner/c (DT_FLOAT) [1,1]\n"
    )
    assert reader.has_tensor("old/a") and not reader.has_tensor("nope")
    a = reader.get_tensor("old/a")
    assert a.dtype == np.float32 and a.tolist() == [1.0, 2.0]
    step = reader.get_tensor("global_step")
    assert isinstance(step, np.int64) and step == 0  # the name says 3, the variable 0


def test_reader_errors_are_tensorflows(checkpoint, tmp_path):
    reader = NewCheckpointReader(checkpoint)
    with pytest.raises(NotFoundError, match=r"^Key nope not found in checkpoint$"):
        reader.get_tensor("nope")
    with pytest.raises(NotFoundError, match="Key old/a:0 not found in checkpoint"):
        reader.get_tensor("old/a:0")
    missing = str(tmp_path / "x")
    with pytest.raises(NotFoundError, match=r"Failed to find any matching files for .*/x$"):
        NewCheckpointReader(missing)
    with pytest.raises(ValueError, match="Couldn't find 'checkpoint' file or checkpoints in"):
        load_checkpoint(str(tmp_path))


def test_list_and_load_variables_take_a_directory_or_a_checkpoint(checkpoint):
    directory = os.path.dirname(checkpoint)
    assert list_variables(directory) == [
        ("g", []),
        ("global_step", []),
        ("old/a", [2]),
        ("old/b", [1, 2]),
        ("old/inner/c", [1, 1]),
    ]
    assert list_variables(checkpoint) == list_variables(directory)
    b = load_variable(directory, "old/b:0")
    assert b.dtype == np.int32 and b.tolist() == [[3, 4]]
    assert load_checkpoint(directory).get_tensor("g") == np.float32(7.0)


def _new_model():
    with dg.variable_scope("new"):
        a = dg.get_variable("a", shape=[2], initializer=dg.zeros_initializer())
        b = dg.get_variable("b", shape=[1, 2], dtype=dg.int32, initializer=dg.zeros_initializer())
        with dg.variable_scope("inner"):
            c = dg.get_variable("c", shape=[1, 1], initializer=dg.zeros_initializer())
    x = dg.get_variable("x", shape=[], initializer=dg.zeros_initializer())
    return a, b, c, x


# TensorFlow 2.21's values of new/a, new/b, new/inner/c, x after global_variables_initializer
MAPPINGS = [
    ({"old/": "new/"}, [[1.0, 2.0], [[3, 4]], [[5.0]], 0.0]),
    ({"old/inner/": "new/inner/"}, [[0.0, 0.0], [[0, 0]], [[5.0]], 0.0]),
    ({"old/a": "new/a", "g": "x"}, [[1.0, 2.0], [[0, 0]], [[0.0]], 7.0]),
    ({"old/inner/c": "new/inner/c"}, [[0.0, 0.0], [[0, 0]], [[5.0]], 0.0]),
    ({"old/": "zz/"}, [[0.0, 0.0], [[0, 0]], [[0.0]], 0.0]),
    ([("old/a", "new/a"), ("g", "x")], [[1.0, 2.0], [[0, 0]], [[0.0]], 7.0]),
]


@pytest.mark.parametrize("assignment_map,values", MAPPINGS)
def test_init_from_checkpoint_maps_as_tensorflow(checkpoint, assignment_map, values):
    with dg.Graph().as_default():
        variables = _new_model()
        init_from_checkpoint(os.path.dirname(checkpoint), assignment_map)
        with dg.Session() as sess:
            sess.run(dg.global_variables_initializer())
            assert [v.tolist() for v in sess.run(list(variables))] == values


def test_init_from_checkpoint_takes_variables(checkpoint):
    with dg.Graph().as_default():
        a, _, _, x = _new_model()
        init_from_checkpoint(checkpoint, {"old/a": a, "g": x})
        assert a.initial_value.op.type == "RestoreV2"
        assert a.initial_value.op.name.startswith("checkpoint_initializer")
        assert a.initial_value.device == "/device:CPU:0"
        with dg.Session() as sess:
            sess.run([a.initializer, x.initializer])
            assert sess.run(a).tolist() == [1.0, 2.0] and sess.run(x) == 7.0


@pytest.mark.parametrize(
    "assignment_map,message",
    [
        ({"/": "new/"}, r"Tensor a \(a in /\) is not found in .* checkpoint"),
        (
            {"old/b": "new/a"},
            r"Shape of variable new/a:0 \(\(2,\)\) doesn't match with shape of tensor old/b "
            r"\(\[1, 2\]\) from checkpoint reader\.",
        ),
        ({"nope": "new/a"}, r"Tensor nope is not found in .* checkpoint \{"),
        (
            {"old/a": "new/zz"},
            "Assignment map with scope only name new should map to scope only old/a. Should "
            "be 'scope/': 'other_scope/'.",
        ),
        ({"old/": "new"}, r"Tensor old/ew/a \(ew/a in old/\) is not found in"),
        ({"old": "new/"}, "Assignment map with scope only name new should map to scope only old"),
    ],
)
def test_init_from_checkpoint_errors_are_tensorflows(checkpoint, assignment_map, message):
    with dg.Graph().as_default():
        _new_model()
        with pytest.raises(ValueError, match=message):
            init_from_checkpoint(os.path.dirname(checkpoint), assignment_map)


def test_the_checkpoint_is_read_when_the_initializer_runs(tmp_path):
    prefix = _write_checkpoint(tmp_path)
    with dg.Graph().as_default():
        with dg.variable_scope("new"):
            a = dg.get_variable("a", shape=[2], initializer=dg.zeros_initializer())
        init_from_checkpoint(prefix, {"old/a": "new/a"})
        write_checkpoint(prefix, {"old/a": np.array([8.0, 9.0], np.float32)})  # rewritten
        with dg.Session() as sess:
            sess.run(dg.global_variables_initializer())
            assert sess.run(a).tolist() == [8.0, 9.0]
        z = dg.get_variable("z", shape=[2], dtype=dg.int32)
        init_from_checkpoint(prefix, {"old/a": "z"})
        with dg.Session() as sess:
            with pytest.raises(
                InvalidArgumentError,
                match="tensor_name = old/a; expected dtype int32 does not equal original dtype "
                "float",
            ):
                sess.run(z.initializer)


@pytest.mark.virtual_gpus(1)
def test_a_gpu_variable_loads_through_the_cpu(dg_session, checkpoint):
    with dg.device("/gpu:0"):
        with dg.variable_scope("new"):
            a = dg.get_variable("a", shape=[2], initializer=dg.zeros_initializer())
    init_from_checkpoint(checkpoint, {"old/": "new/"})
    dg_session.run(dg.global_variables_initializer())
    assert dg_session.run(a).tolist() == [1.0, 2.0]
    placed = dg_session.placement(a.initializer)
    devices = {op.name: op.assigned for op in placed.ops}
    assert devices[a.initial_value.op.name].endswith("CPU:0")
    assert devices["new/a"].endswith("GPU:0")


def test_checkpoint_state_helpers_are_tensorflows(checkpoint, tmp_path):
    assert str(generate_checkpoint_state_proto("/abs", "/abs/model-3", ["/abs/model-3"])) == (
        'model_checkpoint_path: "/abs/model-3"\nall_model_checkpoint_paths: "/abs/model-3"\n'
    )
    state = generate_checkpoint_state_proto("train", "train/model-3", ["train/model-1"], [1.0, 2.5])
    assert state.model_checkpoint_path == "model-3"
    assert state.all_model_checkpoint_paths == ["model-1", "model-3"]
    assert state.all_model_checkpoint_timestamps == [1.0, 2.5]
    assert type(state).from_text(state.to_text()) == state
    with pytest.raises(ValueError, match="Checkpoint timestamps, if provided, must match"):
        generate_checkpoint_state_proto("d", "d/m-2", ["d/m-2"], [1.0, 2.0])
    (mtime,) = get_checkpoint_mtimes([checkpoint, str(tmp_path / "missing")])
    assert mtime == pytest.approx(os.stat(checkpoint + ".index").st_mtime)
    prefix = _write_checkpoint(tmp_path, step=5)
    (tmp_path / "model-5.meta").write_text("")
    remove_checkpoint(prefix)
    assert sorted(os.listdir(tmp_path)) == ["checkpoint"]
    remove_checkpoint(prefix)  # nothing left: no error


def _files(*prefixes: str) -> list[str]:
    """The files of TensorFlow's V2 checkpoints ``prefixes``, sorted."""
    return sorted(f"{p}{suffix}" for p in prefixes for suffix in (".data-00000-of-00001", ".index"))


def _saves(directory, saver, steps, clock=None, monkeypatch=None) -> None:
    with dg.Graph().as_default():
        v = dg.Variable(1.0, name="v")
        saver = saver()
        with dg.Session() as sess:
            sess.run(v.initializer)
            for step in steps:
                if clock is not None:
                    clock[0] = 0.3 * step
                saver.save(sess, os.path.join(str(directory), "m"), global_step=step)
    return saver


@pytest.mark.parametrize("max_to_keep", [None, 0])
def test_max_to_keep_none_keeps_every_file_and_lists_the_latest(tmp_path, max_to_keep):
    saver = _saves(tmp_path, lambda: Saver(max_to_keep=max_to_keep), range(4))
    assert saver.last_checkpoints == []
    assert sorted(os.listdir(tmp_path)) == ["checkpoint", *_files("m-0", "m-1", "m-2", "m-3")]
    assert (tmp_path / "checkpoint").read_text() == (
        'model_checkpoint_path: "m-3"\nall_model_checkpoint_paths: "m-3"\n'
    )


def test_keep_checkpoint_every_n_hours_keeps_tensorflows_files(tmp_path, monkeypatch):
    clock = [0.0]
    monkeypatch.setattr(saver_module.time, "time", lambda: clock[0])
    # as TensorFlow with saves 0.3 s apart and a 0.5 s period: m-2 and m-4 stay
    saver = _saves(
        tmp_path,
        lambda: Saver(max_to_keep=1, keep_checkpoint_every_n_hours=0.5 / 3600),
        range(6),
        clock,
    )
    assert saver.last_checkpoints == [str(tmp_path / "m-5")]
    assert sorted(os.listdir(tmp_path)) == ["checkpoint", *_files("m-2", "m-4", "m-5")]


def test_save_takes_tensorflows_meta_graph_arguments(tmp_path):
    with dg.Graph().as_default():
        v = dg.Variable(1.0, name="v")
        with dg.Session() as sess:
            sess.run(v.initializer)
            path = Saver().save(sess, str(tmp_path / "m"), write_meta_graph=False)
            other = str(tmp_path / "m2")
            Saver().save(sess, other, meta_graph_suffix="meta", strip_default_attrs=True)
            assert path == str(tmp_path / "m")
            with pytest.raises(ValueError, match="The passed save_path is not a valid checkpoint"):
                Saver().restore(sess, str(tmp_path / "nope"))


def test_checkpoints_iterator_yields_new_checkpoints(tmp_path):
    found = []
    writer = threading.Timer(0.3, lambda: _write_checkpoint(tmp_path, step=1))
    writer.start()
    for path in checkpoints_iterator(str(tmp_path), timeout=3):
        found.append(path)
        break
    writer.join()
    assert found == [str(tmp_path / "model-1")]
    calls = []
    assert list(checkpoints_iterator(str(tmp_path / "none"), timeout=0.1,
                                     timeout_fn=lambda: calls.append(1) or True)) == []  # fmt: skip
    assert calls == [1]


def test_compat_names():
    for name in (
        "NewCheckpointReader",
        "list_variables",
        "load_variable",
        "load_checkpoint",
        "init_from_checkpoint",
        "checkpoints_iterator",
        "get_checkpoint_mtimes",
        "generate_checkpoint_state_proto",
        "remove_checkpoint",
    ):
        assert callable(getattr(tf.train, name)), name
    assert tf.train.init_from_checkpoint is init_from_checkpoint


def test_a_saver_of_some_variables_restores_only_them(checkpoint):
    with dg.Graph().as_default():
        with dg.variable_scope("old"):
            a = dg.get_variable("a", shape=[2], initializer=dg.zeros_initializer())
            c = dg.get_variable("inner/c", shape=[1, 1], initializer=dg.zeros_initializer())
        renamed = dg.Variable(0.0, name="renamed")
        with dg.Session() as sess:
            sess.run(dg.global_variables_initializer())
            Saver([a]).restore(sess, checkpoint)
            Saver({"g": renamed}).restore(sess, checkpoint)
            assert sess.run(a).tolist() == [1.0, 2.0] and sess.run(renamed) == 7.0
            assert sess.run(c).tolist() == [[0.0]]  # not in the savers: left as it was
