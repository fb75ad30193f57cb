"""The temporary files of checkpoint writes: the sweep that removes those a killed save left
never touches a file a live writer still holds, nor a user's file of a similar name."""

from __future__ import annotations

import os

import pytest

from daskgraph.training import saver


def test_the_sweep_removes_an_abandoned_partial_file_only(tmp_path):
    with saver._atomic_file(str(tmp_path / "model-1.npz")) as out:
        out.write(b"half")
        (abandoned,) = (n for n in os.listdir(tmp_path) if n.endswith(".tmp"))
    # the same name again, as a killed writer leaves it: written, closed, unlocked
    (tmp_path / abandoned).write_bytes(b"partial")
    for lookalike in [".model-1.npz.k3j2h1g0.tmp", "notes.tmp", ".daskgraph-partial-x.tmp"]:
        (tmp_path / lookalike).write_bytes(b"the user's")
    assert saver._sweep_partial_files(str(tmp_path)) == [str(tmp_path / abandoned)]
    assert sorted(os.listdir(tmp_path)) == [
        ".daskgraph-partial-x.tmp",
        ".model-1.npz.k3j2h1g0.tmp",
        "model-1.npz",
        "notes.tmp",
    ]


@pytest.mark.skipif(saver.fcntl is None, reason="no flock on this platform")
def test_the_sweep_leaves_a_file_that_is_being_written(tmp_path):
    target = tmp_path / "model-2.npz"
    with saver._atomic_file(str(target)) as out:
        out.write(b"the first half")
        (partial,) = (n for n in os.listdir(tmp_path) if n.endswith(".tmp"))
        assert saver._sweep_partial_files(str(tmp_path)) == []
        assert (tmp_path / partial).exists()
        out.write(b", the second half")
    assert target.read_bytes() == b"the first half, the second half"
    assert os.listdir(tmp_path) == ["model-2.npz"]
