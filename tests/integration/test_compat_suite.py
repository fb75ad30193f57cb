"""Run the compatibility suite: public TF1 programs we did not write, only their import changed.

Each program of tests/compat_suite runs as it stands (``import daskgraph.compat.v1 as tf``) in
this process, on the embedded cluster with the virtual GPUs its ``# Virtual GPUs: N`` header
asks for (worker threads, so the programs share a cluster per size). What it prints on stdout,
and the name of the exception it raises if any (``raised: NAME``), must equal what TensorFlow
printed for it: ``tests/compat_suite/expected/NAME.out``, recorded by
``docs/tools/record_compat_suite.py``. Programs marked ``# Run: with OTHER.py`` run together as
subprocesses (a two-task cluster).

A program that needs what daskgraph lacks says so in a ``# Needs: ...`` header: it is
``xfail(strict=True)``, so it fails once daskgraph has it and the header must go.
docs/compat.md lists the programs from the same headers (``daskgraph.compat.table``).
"""

from __future__ import annotations

import contextlib
import io
import os
import pathlib
import subprocess
import sys
import time

import dask.config
import pytest

import daskgraph as dg
from daskgraph.compat.table import SuiteProgram, suite_programs

SUITE = pathlib.Path(__file__).resolve().parents[1] / "compat_suite"
PROGRAMS = suite_programs(SUITE)
SERVER_TIMEOUT_S = 60


def _marks(program: SuiteProgram) -> list[pytest.MarkDecorator]:
    if not program.needs:
        return []
    return [pytest.mark.xfail(strict=True, reason=f"missing: {program.needs}")]


def _expected(program: SuiteProgram) -> str:
    return (SUITE / "expected" / f"{program.name}.out").read_text(encoding="utf-8")


def run_in_process(path: pathlib.Path, virtual_gpus: int) -> str:
    """Run one program as ``__main__`` here; its stdout, with ``raised: NAME`` if it raised."""
    namespace = {"__name__": "__main__", "__file__": str(path)}
    out = io.StringIO()
    settings = {"daskgraph.virtual-gpus": virtual_gpus, "daskgraph.local.processes": False}
    with dask.config.set(settings), contextlib.redirect_stdout(out):
        dg.reset_default_graph()
        try:
            exec(compile(path.read_text(encoding="utf-8"), str(path), "exec"), namespace)
        except Exception as error:
            print(f"raised: {type(error).__name__}")
        finally:
            for value in list(namespace.values()):
                if isinstance(value, dg.Session):
                    value.close()
            dg.reset_default_graph()
    return out.getvalue()


IN_PROCESS = sorted((p for p in PROGRAMS if not p.run_with), key=lambda p: p.virtual_gpus)


@pytest.mark.parametrize(
    "program", [pytest.param(p, id=p.name, marks=_marks(p)) for p in IN_PROCESS]
)
def test_program(program: SuiteProgram) -> None:
    assert run_in_process(program.path, program.virtual_gpus) == _expected(program)


def _first_line(process: subprocess.Popen, deadline: float) -> str:
    assert process.stdout is not None
    os.set_blocking(process.stdout.fileno(), False)
    while time.monotonic() < deadline and process.poll() is None:
        line = process.stdout.readline()
        if line:
            return line
        time.sleep(0.1)
    return process.stdout.read() or f"(exited {process.returncode} with no output)"


def test_two_task_cluster() -> None:
    """notebook_server1.py and notebook_server2.py: each task prints its constant, then joins."""
    pair = [p for p in PROGRAMS if p.run_with]
    assert len(pair) == 2, pair
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    processes = [
        subprocess.Popen(
            [sys.executable, str(p.path)],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=env,
        )
        for p in pair
    ]
    try:
        deadline = time.monotonic() + SERVER_TIMEOUT_S
        lines = [_first_line(process, deadline) for process in processes]
    finally:
        for process in processes:
            process.kill()
            process.wait()
    assert lines == [_expected(p) for p in pair]
