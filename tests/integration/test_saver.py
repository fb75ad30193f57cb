"""Checkpoints: save and restore (fresh session, fresh graph, other devices, another process
after a SIGKILL), max_to_keep and the state file, errors, and crashes mid-save."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import daskgraph as dg
from daskgraph.errors import InvalidArgumentError, NotFoundError
from daskgraph.kernels.checkpoint_files import read_checkpoint
from daskgraph.training import saver as saver_module
from daskgraph.training.namespace import (
    AdamOptimizer,
    Saver,
    checkpoint_exists,
    get_checkpoint_state,
    get_or_create_global_step,
    latest_checkpoint,
)

W0 = np.array([[1.0, -2.0], [0.5, 3.0]])


def _model(device: str = ""):
    """A small model trained with Adam: its train op and global step."""
    with dg.device(device):
        w = dg.get_variable("w", initializer=W0)
        b = dg.get_variable("b", [2], dtype=dg.float64, initializer=dg.ones_initializer())
    loss = dg.reduce_sum(dg.square(dg.matmul(w, w) + b))
    step = get_or_create_global_step()
    return AdamOptimizer(0.1).minimize(loss, global_step=step), step


def _state(session) -> dict[str, np.ndarray]:
    variables = dg.global_variables(session.graph)
    return dict(zip([v.op.name for v in variables], session.run(variables), strict=True))


def _files(directory) -> list[str]:
    return sorted(os.listdir(directory))


def _bundles(*prefixes: str) -> list[str]:
    """The files of TensorFlow's V2 checkpoints ``prefixes``, sorted."""
    return sorted(f"{p}{suffix}" for p in prefixes for suffix in (".data-00000-of-00001", ".index"))


def test_save_then_restore_in_a_fresh_session(dg_session, dg_client, tmp_path):
    train, step = _model()
    dg_session.run(dg.global_variables_initializer())
    for _ in range(3):
        dg_session.run(train)
    saver = Saver()
    path = saver.save(dg_session, str(tmp_path / "model"), global_step=step)
    assert path == str(tmp_path / "model-3") and checkpoint_exists(path)
    saved = _state(dg_session)
    assert set(saved) == {"w", "b", "global_step", "w/Adam", "w/Adam_1", "b/Adam", "b/Adam_1",
                          "beta1_power", "beta2_power"}  # fmt: skip
    with dg.Session(dg_client, graph=dg_session.graph) as fresh:
        version = fresh.graph.version
        saver.restore(fresh, path)
        restored = _state(fresh)
        saver.restore(fresh, path)  # the restore ops are made once
        assert fresh.graph.version > version
        after_first = fresh.graph.version
        saver.restore(fresh, path)
        assert fresh.graph.version == after_first
        for name, value in saved.items():
            np.testing.assert_array_equal(restored[name], value, err_msg=name)
            assert restored[name].dtype == value.dtype
        fresh.run(train)  # training goes on from the restored state
        assert fresh.run(step) == 4


@pytest.mark.virtual_gpus(1)
def test_restore_into_a_fresh_graph_on_other_devices(dg_session, dg_client, tmp_path):
    train, step = _model("/gpu:0")
    dg_session.run(dg.global_variables_initializer())
    dg_session.run(train)
    Saver().save(dg_session, str(tmp_path / "model"), global_step=step)
    saved = _state(dg_session)
    with dg.Graph().as_default() as graph:
        train2, step2 = _model("/cpu:0")
        with dg.Session(dg_client, graph=graph) as sess:
            Saver().restore(sess, latest_checkpoint(str(tmp_path)))
            restored = _state(sess)
            placed = {op.name: op.assigned for op in sess.placement(train2).ops}
            sess.run(train2)
            assert sess.run(step2) == 2
    assert placed["w"].endswith("CPU:0") and placed["w/Adam"].endswith("CPU:0")
    for name, value in saved.items():
        np.testing.assert_array_equal(restored[name], value, err_msg=name)


def test_max_to_keep_and_the_state_file(dg_session, tmp_path):
    w = dg.Variable([1.0], name="w")
    bump = w.assign_add([1.0])
    dg_session.run(w.initializer)
    saver = Saver(max_to_keep=2)
    assert latest_checkpoint(str(tmp_path)) is None and get_checkpoint_state(str(tmp_path)) is None
    prefix = str(tmp_path / "ckpt")
    for step in range(1, 5):
        dg_session.run(bump)
        assert saver.save(dg_session, prefix, global_step=step) == f"{prefix}-{step}"
    assert _files(tmp_path) == ["checkpoint", *_bundles("ckpt-3", "ckpt-4")]
    assert (tmp_path / "checkpoint").read_text() == (
        'model_checkpoint_path: "ckpt-4"\n'
        'all_model_checkpoint_paths: "ckpt-3"\n'
        'all_model_checkpoint_paths: "ckpt-4"\n'
    )
    assert saver.last_checkpoints == [f"{prefix}-3", f"{prefix}-4"]
    assert latest_checkpoint(str(tmp_path)) == f"{prefix}-4"
    state = get_checkpoint_state(str(tmp_path))
    assert state.all_model_checkpoint_paths == [f"{prefix}-3", f"{prefix}-4"]
    assert read_checkpoint(f"{prefix}-4")["w"].tolist() == [5.0]
    # keep everything; no global step: the path itself
    keep_all = Saver(max_to_keep=None)
    for _ in range(3):
        keep_all.save(dg_session, str(tmp_path / "all"))
    assert latest_checkpoint(str(tmp_path)) == str(tmp_path / "all")
    os.unlink(tmp_path / "all.index")
    assert latest_checkpoint(str(tmp_path)) is None  # the state names a file that is gone


def test_var_list_as_a_dict_renames(dg_session, dg_client, tmp_path):
    w = dg.Variable([1.0, 2.0], name="w")
    dg_session.run(w.initializer)
    path = Saver({"layer/kernel": w}).save(dg_session, str(tmp_path / "m"))
    assert list(read_checkpoint(path)) == ["layer/kernel"]
    with dg.Graph().as_default() as graph:
        other = dg.Variable([0.0, 0.0], name="other")
        with dg.Session(dg_client, graph=graph) as sess:
            Saver({"layer/kernel": other}).restore(sess, path)
            assert sess.run(other).tolist() == [1.0, 2.0]


def test_restore_errors_name_what_is_wrong(dg_session, tmp_path):
    w = dg.Variable([1.0, 2.0], name="w")
    dg_session.run(w.initializer)
    path = Saver([w]).save(dg_session, str(tmp_path / "m"))
    extra = dg.Variable(0.0, name="extra")
    with pytest.raises(NotFoundError, match="Key extra not found in checkpoint") as err:
        Saver([w, extra]).restore(dg_session, path)
    assert err.value.variable == "extra"
    wrong = dg.Variable([1.0, 2.0, 3.0], name="wrong")
    with pytest.raises(InvalidArgumentError, match=r"tensor_name = w; shape .* \[3\] does not"):
        Saver({"w": wrong}).restore(dg_session, path)
    with pytest.raises(ValueError, match="The passed save_path is not a valid checkpoint"):
        Saver([w]).restore(dg_session, str(tmp_path / "nothing-here"))
    with pytest.raises(ValueError, match=r"Parent directory of .* doesn't exist, can't save"):
        Saver([w]).save(dg_session, str(tmp_path / "no" / "such" / "dir"))
    with pytest.raises(ValueError, match="No variables to save"):
        Saver([])
    with pytest.raises(TypeError, match="var_list must hold Variables"):
        Saver([w.value()])


def test_a_crash_mid_save_leaves_the_previous_checkpoint(dg_session, tmp_path, monkeypatch):
    w = dg.Variable(np.arange(1000.0), name="w")
    bump = w.assign_add(np.ones(1000))
    dg_session.run(w.initializer)
    saver = Saver()
    good = saver.save(dg_session, str(tmp_path / "model"), global_step=1)
    before = {name: (tmp_path / name).read_bytes() for name in _files(tmp_path)}
    dg_session.run(bump)

    def write_half_then_fail(prefix, arrays):
        with saver_module._atomic_file(prefix + ".data-00000-of-00001") as out:
            out.write(b"\0" * 500)  # the start of the data file, then the disk fails
            raise OSError(28, "No space left on device")

    monkeypatch.setattr(saver_module, "_write_checkpoint", write_half_then_fail)
    with pytest.raises(OSError, match="No space left"):
        saver.save(dg_session, str(tmp_path / "model"), global_step=2)
    # nothing partial is left, the state and the previous checkpoint are intact
    assert {name: (tmp_path / name).read_bytes() for name in _files(tmp_path)} == before
    assert not checkpoint_exists(str(tmp_path / "model-2"))
    assert latest_checkpoint(str(tmp_path)) == good
    assert read_checkpoint(good)["w"].tolist() == list(np.arange(1000.0))
    monkeypatch.undo()

    # a crash while the state file is written (before its rename): the old state stays whole
    real_replace = os.replace

    def replace_fails_for_the_state(source, target):
        if os.path.basename(target) == "checkpoint":
            assert os.path.basename(source).startswith(".checkpoint.")  # a hidden temporary
            raise OSError(5, "Input/output error")
        real_replace(source, target)

    monkeypatch.setattr(saver_module.os, "replace", replace_fails_for_the_state)
    with pytest.raises(OSError, match="Input/output error"):
        saver.save(dg_session, str(tmp_path / "model"), global_step=3)
    monkeypatch.undo()
    assert (tmp_path / "checkpoint").read_bytes() == before["checkpoint"]
    assert latest_checkpoint(str(tmp_path)) == good
    assert not [name for name in _files(tmp_path) if name.endswith(".tmp")]
    # and the next save works
    assert saver.save(dg_session, str(tmp_path / "model"), global_step=4) == str(
        tmp_path / "model-4"
    )
    assert read_checkpoint(str(tmp_path / "model-4"))["w"][0] == 1.0


# -- a save killed mid-write ---------------------------------------------------------------------
KILLED_SAVE = textwrap.dedent(
    """
    import io, sys, threading
    import numpy as np
    import daskgraph as dg
    from daskgraph import saver as saver_module

    class Values:  # a stand-in session: the values to save, without a cluster
        def run(self, fetches):
            return [np.full(200_000, 7.0) for _ in fetches]

    def write_half_then_hang(prefix, arrays):
        with saver_module._atomic_file(prefix + ".data-00000-of-00001") as out:
            whole = b"".join(np.ascontiguousarray(a).tobytes() for a in arrays.values())
            out.write(whole[: len(whole) // 2])
            out.flush()
            print("half written", flush=True)
            threading.Event().wait()  # until the SIGKILL

    saver_module._write_checkpoint = write_half_then_hang
    w = dg.Variable(np.zeros(200_000), name="w")
    dg.train.Saver().save(Values(), sys.argv[1] + "/model", global_step=2)
    """
)


def _kill_mid_save(directory) -> None:
    """Run a save in another process and SIGKILL it once half its file is written."""
    script = directory / "killed_save.py"
    script.write_text(KILLED_SAVE)
    saving = subprocess.Popen(
        [sys.executable, str(script), str(directory)],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    line: list[str] = []
    reader = threading.Thread(target=lambda: line.append(saving.stdout.readline()), daemon=True)
    reader.start()
    reader.join(120)
    try:
        assert line == ["half written\n"], f"the save did not start writing: {line}"
    finally:
        os.killpg(saving.pid, signal.SIGKILL)
        saving.wait(30)
        saving.stdout.close()
    assert saving.returncode == -signal.SIGKILL


@pytest.mark.parametrize("then", ["save", "restore"])
def test_a_save_killed_mid_write_leaves_nothing_after_the_next_save_or_restore(
    dg_session, tmp_path, then
):
    w = dg.Variable(np.arange(200_000.0), name="w")
    dg_session.run(w.initializer)
    good = Saver().save(dg_session, str(tmp_path / "model"), global_step=1)
    _kill_mid_save(tmp_path)
    partial = [name for name in _files(tmp_path) if name.endswith(".tmp")]
    assert len(partial) == 1 and partial[0].startswith(".model-2.data-")  # the killed save's
    assert (tmp_path / partial[0]).stat().st_size >= 800_000  # half of 1.6 MB
    assert latest_checkpoint(str(tmp_path)) == good  # the kill did not touch the checkpoint

    dg_session.run(w.assign(np.zeros(200_000)))
    if then == "save":
        assert Saver().save(dg_session, str(tmp_path / "model"), global_step=3) == str(
            tmp_path / "model-3"
        )
        assert _files(tmp_path) == sorted(
            ["checkpoint", "killed_save.py", *_bundles("model-1", "model-3")]
        )
        Saver().restore(dg_session, good)
    else:
        Saver().restore(dg_session, latest_checkpoint(str(tmp_path)))
        assert _files(tmp_path) == sorted(["checkpoint", "killed_save.py", *_bundles("model-1")])
    assert dg_session.run(w).tolist() == list(np.arange(200_000.0))


# -- a killed process, restored in another one -----------------------------------------------------
SCRIPT = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    import daskgraph as dg

    mode, directory = sys.argv[1], sys.argv[2]
    w = dg.get_variable("w", initializer=np.array([3.0, -2.0]))
    step = dg.train.get_or_create_global_step()
    optimizer = dg.train.MomentumOptimizer(0.1, 0.9)
    train = optimizer.minimize(dg.reduce_sum(w * w), global_step=step)
    saver = dg.train.Saver()

    def state(sess):
        variables = dg.global_variables()
        return {v.op.name: sess.run(v).tolist() for v in variables}

    with dg.Session() as sess:
        if mode == "train":
            sess.run(dg.global_variables_initializer())
            for _ in range(3):
                sess.run(train)
            path = saver.save(sess, directory + "/model", global_step=step)
            print(json.dumps({"path": path, "state": state(sess)}), flush=True)
            for _ in range(3):  # training goes on, unsaved
                sess.run(train)
            print(json.dumps({"unsaved": state(sess)}), flush=True)
            while True:  # and on, until the process is killed
                sess.run(train)
        else:
            path = dg.train.latest_checkpoint(directory)
            saver.restore(sess, path)
            restored = state(sess)
            sess.run(train)
            print(json.dumps({"path": path, "state": restored, "after": state(sess)}))
    """
)


def test_a_killed_trainer_resumes_from_its_checkpoint_in_a_new_process(tmp_path):
    script = tmp_path / "trainer.py"
    script.write_text(SCRIPT)
    env = {**os.environ, "DASK_DASKGRAPH__LOCAL__PROCESSES": "False"}
    trainer = subprocess.Popen(
        [sys.executable, str(script), "train", str(tmp_path)],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,  # its own process group: the kill takes everything it started
    )
    lines: list[str] = []

    def read() -> None:
        lines.extend(trainer.stdout.readline() for _ in range(2))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(120)
    try:
        assert len(lines) == 2 and all(lines), f"the trainer printed {lines!r}"
        saved = json.loads(lines[0])
        # it trained on past its checkpoint (unsaved), and is killed without warning
        assert json.loads(lines[1])["unsaved"]["global_step"] == 6
        assert trainer.poll() is None, "the trainer should still be training"
    finally:
        os.killpg(trainer.pid, signal.SIGKILL)
        trainer.wait(30)
        trainer.stdout.close()
    assert trainer.returncode == -signal.SIGKILL
    assert saved["state"]["global_step"] == 3 and saved["state"]["w"] != [3.0, -2.0]

    done = subprocess.run(
        [sys.executable, str(script), "restore", str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=180,
        check=True,
    )
    resumed = json.loads(done.stdout.strip().splitlines()[-1])
    assert resumed["path"] == saved["path"]
    assert resumed["state"] == saved["state"]  # every variable, the momentum slot included
    # one more step of TensorFlow's momentum update from the restored values
    w, acc = np.array(resumed["state"]["w"]), np.array(resumed["state"]["w/Momentum"])
    acc = acc * 0.9 + 2 * w
    np.testing.assert_allclose(resumed["after"]["w"], w - 0.1 * acc, rtol=1e-12)
    assert resumed["after"]["global_step"] == 4


def test_save_makes_the_checkpoint_folder_but_not_a_chain_of_them(dg_session, tmp_path):
    w = dg.Variable([1.0, 2.0], name="w_folder")
    dg_session.run(w.initializer)
    path = Saver([w]).save(dg_session, str(tmp_path / "fresh" / "model"))
    assert (tmp_path / "fresh").is_dir() and latest_checkpoint(str(tmp_path / "fresh")) == path
    with pytest.raises(ValueError, match=r"Parent directory of .* doesn't exist, can't save"):
        Saver([w]).save(dg_session, str(tmp_path / "no" / "such" / "model"))
