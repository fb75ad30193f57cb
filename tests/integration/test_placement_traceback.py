"""A placement error reaches the user as its message, not as the planner's frames: the
traceback a program prints for a device no placement satisfies ends at ``Session.run``, as
TensorFlow's does, and the planner's frames stay on the error for debugging."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]

PROGRAM = """
import daskgraph.compat.v1 as tf

with tf.device("/gpu:7"):
    a = tf.constant(1.0, name="a")
sess = tf.Session()
try:
    sess.run(a)
except tf.errors.InvalidArgumentError as error:
    print("kept:", "daskgraph/runtime/planner/placement.py" in error.internal_traceback)
sess.run(a)
"""


def test_a_placement_error_prints_its_message_without_the_planners_frames() -> None:
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "DASK_DASKGRAPH__LOCAL__PROCESSES": "False",
        "DASK_DASKGRAPH__VIRTUAL_GPUS": "0",
    }
    result = subprocess.run(
        [sys.executable, "-c", PROGRAM], capture_output=True, text=True, env=env, timeout=240
    )
    assert result.returncode == 1, result.stderr
    assert result.stdout.splitlines() == ["kept: True"], result.stdout + result.stderr
    lines = result.stderr.splitlines()
    start = lines.index("Traceback (most recent call last):")
    frames = [line for line in lines[start:] if line.startswith('  File "')]
    assert len(frames) <= 2, result.stderr  # the program's line, and Session.run
    assert not any("planner" in frame for frame in frames), result.stderr
    assert "During handling" not in result.stderr and "direct cause" not in result.stderr
    assert lines[-1].startswith(
        "daskgraph.errors.InvalidArgumentError: Cannot assign a device for operation 'a' "
    ), result.stderr
