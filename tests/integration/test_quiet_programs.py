"""Programs that print nothing they did not print themselves: IEEE results (``x / 0``,
``log(0)``, an overflowing ``exp``) are values, with no NumPy ``RuntimeWarning``, on every
path a kernel runs (the op loop, fused kernels, JIT-mode fusion, worker processes); and a
program that exits while a daemon thread's run is in flight ends without a traceback, as
TensorFlow's does. Each program runs in a fresh interpreter; the verdicts are about what it
printed, never about how fast it ran.
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import textwrap

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
#: a program that has not ended after this long hangs, which is a failure too
RUN_TIMEOUT_S = 120

IEEE = textwrap.dedent(
    """
    import sys

    import numpy as np

    import daskgraph as dg
    from daskgraph.config import SessionConfig

    x = dg.placeholder(dg.float32, [3], name="x")
    fetches = []
    for device in ("/cpu:0", "/gpu:0"):
        with dg.device(device):
            chain = dg.exp(x * 1000.0) - dg.log(x) / (x - x)  # fused: one elementwise chain
            fetches += [x / 0.0, dg.log(x), dg.sqrt(x - 5.0), chain, dg.reduce_sum(x / 0.0)]
    config = SessionConfig(global_jit=sys.argv[1] == "jit")
    with dg.Session(config=config) as sess:
        values = sess.run(fetches, {x: np.array([0.0, 1.0, 2.0], np.float32)})
    print("inf" if np.isinf(values[0][1]) and np.isnan(values[2]).all() else "wrong")
    """
)

IN_FLIGHT_AT_EXIT = textwrap.dedent(
    """
    import threading

    import numpy as np

    import daskgraph as dg

    with dg.device("/cpu:0"):
        x = dg.placeholder(dg.float32, [100, 100])
        y = x
        for _ in range(20):
            y = dg.matmul(y, x) * 1e-2
    towers = []
    for gpu in range(2):
        with dg.device(f"/gpu:{gpu}"):
            towers.append(dg.matmul(y, y))
    total = dg.add_n(towers)
    sess = dg.Session()
    value = np.ones((100, 100), np.float32)
    sess.run(total, {x: value})
    running = threading.Event()

    def loop():
        while True:
            sess.run(total, {x: value})
            running.set()

    threading.Thread(target=loop, daemon=True).start()
    running.wait()
    print("exiting")
    """
)


def _run(
    source: str, tmp_path: pathlib.Path, *args: str, **env: str
) -> subprocess.CompletedProcess:
    script = tmp_path / "program.py"
    script.write_text(source)
    path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    return subprocess.run(
        [sys.executable, str(script), *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": path, "DASK_DASKGRAPH__VIRTUAL_GPUS": "2", **env},
        cwd=tmp_path,
        timeout=RUN_TIMEOUT_S,
        check=False,
    )


@pytest.mark.parametrize("mode", ["exact", "jit"])
def test_ieee_results_print_no_warning(tmp_path, mode):
    done = _run(IEEE, tmp_path, mode)
    assert (done.returncode, done.stdout, done.stderr) == (0, "inf\n", "")


@pytest.mark.parametrize(
    "settings",
    [
        {},
        {"DASK_DASKGRAPH__COMPILED_STEPS": "False"},
        {"DASK_DASKGRAPH__LOCAL__PROCESSES": "False"},
    ],
    ids=["compiled-steps", "scheduler", "threads"],
)
def test_an_in_flight_run_at_exit_prints_nothing(tmp_path, settings):
    for _ in range(2):
        done = _run(IN_FLIGHT_AT_EXIT, tmp_path, **settings)
        assert (done.returncode, done.stdout, done.stderr) == (0, "exiting\n", "")
