"""The compile thread: jobs in order on a daemon thread, run with quick GIL switches."""

from __future__ import annotations

import sys
import threading

import pytest

from daskgraph.kernels.compile_thread import SWITCH_INTERVAL, CompileThread


def test_a_job_runs_with_the_short_switch_interval_and_the_old_one_comes_back():
    before = sys.getswitchinterval()
    assert before > SWITCH_INTERVAL  # (the interpreter's default, 5 ms)
    seen = CompileThread("test-switches").submit(sys.getswitchinterval).result(timeout=30)
    assert seen == pytest.approx(SWITCH_INTERVAL)
    assert sys.getswitchinterval() == before


def test_two_compile_threads_at_once_put_the_interval_back_after_the_last_job():
    before = sys.getswitchinterval()
    first_in, release = threading.Event(), threading.Event()

    def hold() -> float:
        first_in.set()
        release.wait(30)
        return sys.getswitchinterval()

    held = CompileThread("test-hold").submit(hold)
    assert first_in.wait(30)
    other = CompileThread("test-other").submit(sys.getswitchinterval).result(timeout=30)
    assert other == pytest.approx(SWITCH_INTERVAL)  # the first job still runs: not put back yet
    assert sys.getswitchinterval() == pytest.approx(SWITCH_INTERVAL)
    release.set()
    assert held.result(timeout=30) == pytest.approx(SWITCH_INTERVAL)
    assert sys.getswitchinterval() == before


def test_a_failing_job_puts_the_interval_back_and_reports_its_error():
    before = sys.getswitchinterval()
    future = CompileThread("test-fail").submit(lambda: 1 / 0)
    assert isinstance(future.exception(timeout=30), ZeroDivisionError)
    assert sys.getswitchinterval() == before
