"""Deadlines: a run past ``RunOptions.timeout_in_ms`` (or the config's
``operation_timeout_in_ms``) is cancelled with DeadlineExceededError while its kernel is still
running, on the one-device fast path and on the scheduler's path alike, and the session stays
usable.

The run holds a kernel that blocks until the test releases it (a ``py_func`` waiting on
:data:`GATE`), so its deadline is hit however fast the machine is; the test releases the
kernel only once the error is in, and then runs again on the same session.
"""

from __future__ import annotations

import threading

import dask
import numpy as np
import pytest

import daskgraph as dg

DEADLINE_MS = 300
HOLD_S = 120.0  # a held kernel lets go by itself after this, should a test fail before releasing


class Gate:
    """A kernel's hold: :func:`held` blocks until :meth:`release`, noting that it was entered."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.released = threading.Event()
        self.left = threading.Event()

    def reset(self) -> None:
        """Close the gate for the next run."""
        for event in (self.entered, self.released, self.left):
            event.clear()

    def release(self) -> None:
        """Let the held kernel return."""
        self.released.set()


#: the gate of the held kernels; module-level, so that the py_func pickles by reference and
#: the embedded cluster's worker threads see the test's object
GATE = Gate()


def held(x: np.ndarray) -> np.ndarray:
    """The py_func kernel: returns ``x`` once the test has released :data:`GATE`."""
    GATE.entered.set()
    GATE.released.wait(HOLD_S)
    GATE.left.set()
    return x


def _held_graph(devices: tuple[str, str]):
    """``out``: a held kernel on ``devices[0]`` (CPU: py_func has no GPU kernel), summed on
    ``devices[1]``; ``quick``: the feed summed, with no held kernel."""
    a = dg.placeholder(dg.float32, [4], name="a")
    with dg.device(devices[0]):
        y = dg.py_func(held, [a * 2.0], dg.float32, name="held")
    with dg.device(devices[1]):
        out = dg.reduce_sum(y)
        quick = dg.reduce_sum(a)
    return a, out, quick


@pytest.fixture
def gate():
    """:data:`GATE`, closed; released at the end whatever happened, so no kernel stays held."""
    GATE.reset()
    yield GATE
    GATE.release()


@pytest.mark.virtual_gpus(1)
@pytest.mark.parametrize("devices", [("/cpu:0", "/cpu:0"), ("/cpu:0", "/gpu:0")])
@pytest.mark.parametrize("where", ["run options", "session config"])
def test_a_run_past_its_deadline_is_cancelled_and_the_session_stays_usable(
    tally, dg_client, gate, devices, where
):
    value = np.arange(4, dtype=np.float32)
    paths = "one device" if devices[0] == devices[1] else "two devices"
    # limit: the deadline plus a liveness tick, with a wide margin for a busy machine; the
    # verdict that matters is the error arriving while the kernel is still held
    tick = float(dask.config.get("daskgraph.liveness-check-interval"))
    limit = DEADLINE_MS / 1000 + tick + 30
    scenario = tally.scenario(f"deadline exceeded, {paths}", limit_s=limit, expect="clear error")
    config = dg.SessionConfig(
        operation_timeout_in_ms=DEADLINE_MS if where == "session config" else 0
    )
    options = dg.RunOptions(timeout_in_ms=DEADLINE_MS) if where == "run options" else None
    generous = dg.RunOptions(timeout_in_ms=60_000)  # the same path as a run with a deadline
    with dg.Graph().as_default() as graph:
        a, out, quick = _held_graph(devices)
    with dg.Session(dg_client, graph=graph, config=config) as session:
        with scenario.trial() as trial:
            trial.run(
                lambda: session.run(out, {a: value}, options=options),
                timeout=HOLD_S / 2,
                mentions=[f"{DEADLINE_MS} ms"],
            )
        assert scenario.trials[-1].detail.startswith("DeadlineExceededError"), scenario.trials
        assert not gate.left.is_set()  # the error came while the kernel was still held
        gate.release()
        assert gate.left.wait(HOLD_S), "the held kernel did not return after its release"
        later = tally.scenario("a run after a deadline", limit_s=60.0, expect="correct")
        for fetch, expected in ((quick, value.sum()), (out, 2 * value.sum())):
            with later.trial() as trial:
                got = trial.run(
                    lambda f=fetch: session.run(f, {a: value}, options=generous), timeout=60
                )
                trial.check(got, np.float32(expected))
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
