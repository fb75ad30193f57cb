"""A program that ends while a fused chain compiles in the background exits at once: the
compile thread is a daemon that exit does not join (a 10,000-op chain kept a program alive
for 111 s after its last line)."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import textwrap

REPO = pathlib.Path(__file__).resolve().parents[2]

PROGRAM = textwrap.dedent(
    """
    import numpy as np

    import daskgraph as dg

    with dg.Graph().as_default() as g:
        x = dg.placeholder(dg.float32, [64], name="x")
        y = x
        for i in range(5_000):  # 10,000 elementwise ops: one chain
            y = y * 1.0001 + 0.5
    with dg.Session(graph=g) as session:
        for _ in range(2):  # the second run queues the chain's compiles
            value = session.run(y, {x: np.ones(64, np.float32)})
    print("ran", float(value[0]))
    """
)


def test_a_program_exits_without_waiting_for_a_background_compile(tmp_path) -> None:
    script = tmp_path / "long_chain.py"
    script.write_text(PROGRAM)
    path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    # a hang check, not a timing: before, the exit alone took over 100 s
    done = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": path},
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("ran "), done.stdout
    assert done.stderr == ""
