"""Deadlines: a run past ``RunOptions.timeout_in_ms`` (or the config's
``operation_timeout_in_ms``) is cancelled with DeadlineExceededError soon after its deadline,
on the one-device fast path and on the scheduler's path alike, and the session stays usable."""

from __future__ import annotations

import numpy as np
import pytest

import daskgraph as dg

N = 600
STEPS = 60  # a few seconds of matmuls on this machine: far past the deadlines below


def _slow_graph(devices: tuple[str, str]):
    a = dg.placeholder(dg.float32, [N, N], name="a")
    with dg.device(devices[0]):
        y = a
        for _ in range(STEPS):
            y = dg.matmul(y, a) * 0.001
    with dg.device(devices[1]):
        out = dg.reduce_sum(y)
    quick = dg.reduce_sum(a)
    return a, out, quick


@pytest.mark.virtual_gpus(1)
@pytest.mark.parametrize("devices", [("/gpu:0", "/gpu:0"), ("/gpu:0", "/cpu:0")])
@pytest.mark.parametrize("where", ["run options", "session config"])
def test_a_run_past_its_deadline_is_cancelled_and_the_session_stays_usable(
    tally, dg_client, devices, where
):
    value = np.full((N, N), 0.5, np.float32)
    paths = "one device" if devices[0] == devices[1] else "two devices"
    scenario = tally.scenario(f"deadline exceeded, {paths}", limit_s=3.0, expect="clear error")
    config = dg.SessionConfig(operation_timeout_in_ms=300 if where == "session config" else 0)
    options = dg.RunOptions(timeout_in_ms=300) if where == "run options" else None
    with dg.Graph().as_default() as graph:
        a, out, quick = _slow_graph(devices)
    with dg.Session(dg_client, graph=graph, config=config) as session:
        with scenario.trial() as trial:
            trial.run(
                lambda: session.run(out, {a: value}, options=options),
                timeout=60,
                mentions=["300 ms"],
            )
        assert scenario.trials[-1].detail.startswith("DeadlineExceededError"), scenario.trials
        generous = dg.RunOptions(timeout_in_ms=60_000)  # the slow run may still hold the worker
        later = tally.scenario("a run after a deadline", limit_s=60.0, expect="correct")
        with later.trial() as trial:
            trial.check(
                trial.run(lambda: session.run(quick, {a: value}, options=generous), timeout=60),
                np.float32(value.sum()),
            )
    scenario.verify()
    later.verify()


@pytest.mark.virtual_gpus(1)
def test_a_run_within_its_deadline_returns_its_result(dg_session):
    a = dg.placeholder(dg.float32, [4], name="a")
    with dg.device("/gpu:0"):
        y = a * 2.0
    got = dg_session.run(y, {a: np.ones(4, np.float32)}, options=dg.RunOptions(timeout_in_ms=60000))
    np.testing.assert_array_equal(got, np.full(4, 2.0, np.float32))


@pytest.mark.parametrize("bad", ["5s", -1, 1.5, True])
def test_timeouts_must_be_whole_milliseconds(bad):
    with pytest.raises((TypeError, ValueError), match="timeout_in_ms"):
        dg.RunOptions(timeout_in_ms=bad)
    with pytest.raises((TypeError, ValueError), match="operation_timeout_in_ms"):
        dg.SessionConfig(operation_timeout_in_ms=bad).validate()
