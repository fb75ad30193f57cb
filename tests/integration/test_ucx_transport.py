"""A two-device step over Dask's UCX transport (``daskgraph.local.protocol: ucx``), on a
machine without a GPU: UCX over TCP, shared memory and loopback (issue 33, item 2).

The workers listen on ``ucx://``; a tensor made on one virtual GPU's worker process is read
on the other's, by a compiled step (no task through the scheduler), and
``log_device_placement`` and the ``/daskgraph`` page name the pair's transport ``ucx``.

``distributed-ucxx`` is not in the test venv (imported by every process of the suite, it would
slow each one down and hook into dask): ``make test`` installs it into a folder of its own,
``.ucx-site`` at the repository's root (``DASKGRAPH_UCX_SITE`` names another). One subprocess
with that folder first on its ``PYTHONPATH`` (its workers inherit it) builds the cluster once
and runs ``ucx_checks.py``; each test here asserts on that script's record of one check.
Skipped only where that folder is missing or ``distributed_ucxx`` cannot be imported with it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from script_report import script_report

HERE = Path(__file__).resolve().parent
SITE = Path(os.environ.get("DASKGRAPH_UCX_SITE", HERE.parent.parent / ".ucx-site"))
PREFIX = "/job:localhost/replica:0/task:0/device:"
SKIP = (
    "Dask's UCX transport is not there ({why}): `make test` installs it into its UCX site,"
    " .ucx-site (Linux x86_64 only; DASKGRAPH_UCX_SITE names another folder)"
)


def _environment(tmp: Path) -> dict[str, str]:
    path = [str(SITE), str(HERE), os.environ.get("PYTHONPATH", "")]
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(p for p in path if p),
        "DASK_TEMPORARY_DIRECTORY": str(tmp),
    }


def _importable(env: dict[str, str]) -> str:
    """'' where ``distributed_ucxx`` imports with the UCX site, else why not."""
    done = subprocess.run(
        [sys.executable, "-c", "import distributed_ucxx"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    return "" if done.returncode == 0 else done.stderr.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """``ucx_checks.py``'s record of every check, the UCX cluster built once for them all."""
    if not SITE.is_dir():
        pytest.skip(SKIP.format(why=f"{SITE} is missing"))
    env = _environment(tmp_path_factory.mktemp("ucx-scratch"))
    why = _importable(env)
    if why:
        pytest.skip(SKIP.format(why=f"distributed_ucxx does not import with {SITE}: {why}"))
    return script_report([str(HERE / "ucx_checks.py")], env, timeout=300)


def _check(report: dict[str, Any], name: str) -> dict[str, Any]:
    record = report[name]
    assert "error" not in record, record.get("error")
    return record


def _expected(fed: np.ndarray) -> np.ndarray:
    return np.tanh((fed @ fed) * np.float32(0.01))


def test_a_two_device_step_runs_over_ucx(report):
    record = _check(report, "two_device_step")
    workers = record["workers"]
    assert len(workers) == 3 and all(a.startswith("ucx://") for a in workers), workers
    value = np.asarray(record["fed"], np.float32)
    np.testing.assert_allclose(record["first"], _expected(value), rtol=1e-5)
    for i, got in enumerate(record["values"]):
        np.testing.assert_allclose(got, _expected(value + np.float32(i)), rtol=1e-5)
    assert len(record["values"]) == 5
    before, after = record["transitions"]
    assert after == before  # compiled steps: no task went by the scheduler
    assert record["steps"] == {"GPU:0": 5, "GPU:1": 5}


def test_placement_log_and_page_name_the_ucx_transport(report):
    record = _check(report, "placement_log_and_page")
    log = record["log"]
    assert "Transports between devices:" in log
    assert f"{PREFIX}GPU:0 <-> {PREFIX}GPU:1: ucx" in log, log
    assert record["link"] is not None
    assert record["transports"] == [
        {"source": f"{PREFIX}GPU:0", "target": f"{PREFIX}GPU:1", "transport": "ucx"}
    ]


def test_a_cpu_to_gpu_pair_on_ucx_goes_through_the_local_socket_it_is_named(report):
    """The client's own CPU worker reaches a GPU worker of this machine through its step
    channel (a local socket) whatever Dask's transport: the log names what the step uses."""
    record = _check(report, "cpu_to_gpu_pair")
    value = np.asarray(record["fed"], np.float32)
    expected = ((value * 2) @ (value * 2)).sum()
    assert len(record["values"]) == 4
    for got in record["values"]:
        np.testing.assert_allclose(got, expected, rtol=1e-5)
    assert record["channel_steps"] == 3
    assert f"{PREFIX}CPU:0 <-> {PREFIX}GPU:0: local socket" in record["log"]


def test_a_session_names_a_ucx_cluster_by_its_address(report):
    record = _check(report, "session_by_address")
    assert record["address"].startswith("ucx://")
    value = np.eye(8, dtype=np.float32)
    np.testing.assert_allclose(record["value"], np.tanh(value * 0.01))
