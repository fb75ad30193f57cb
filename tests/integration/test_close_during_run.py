"""``Session.close()`` while another thread's run is under way: the run raises TensorFlow's
``CancelledError``, on every path a run can take, and the cluster stays usable.

The step is held by a ``py_func`` on ``/cpu:0`` that waits on an event this test sets; a
second device reads its result. The test closes the session once the ``py_func`` is known to
be running (an event, no sleep). Where the held kernel runs on a worker's thread (compiled
steps, the scheduler's path), the running call must end without waiting for the kernel; where
it runs in the calling thread (in-process runs, step channels) it cannot be interrupted, and
the call raises once it returns.
"""

from __future__ import annotations

import threading

import dask
import numpy as np
import pytest
from distributed import Client
from worker_probes import cluster_client, step_counts

import daskgraph as dg
from daskgraph.data.queues import FIFOQueue
from daskgraph.errors import CancelledError
from daskgraph.ops.script_ops import py_func

TRIALS = 3
#: bounds of the waits on events (a hang fails the test; nothing is timed)
WAIT_S = 60

# module-level (pickled by reference): the scheduler's path ships the py_func in a graph
STARTED = threading.Event()
RELEASE = threading.Event()


def _held(x: np.ndarray) -> np.ndarray:
    """The kernel that holds the step: says it started, then waits for the test."""
    STARTED.set()
    RELEASE.wait(WAIT_S)
    return x


@pytest.fixture(scope="module")
def threads():
    """CPU and two virtual GPU workers, all threads of this process."""
    with cluster_client(3, virtual_gpus=2, processes=False, cpu_threads=2) as client:
        yield client


def _step(two_devices: bool):
    with dg.device("/cpu:0"):
        x = dg.constant([1.0, 2.0], name="x")
        y = py_func(_held, [x], dg.float32, name="held")
    if two_devices:
        with dg.device("/gpu:0"):
            y = dg.multiply(y, 2.0, name="doubled")
    return x, y


def _run_in_thread(session: dg.Session, fetch) -> tuple[dict, threading.Event]:
    """Run ``fetch`` in a daemon thread; its result (``value``) or error (``error``) goes in
    the box, and the event is set once the call has returned."""
    box: dict = {}
    ended = threading.Event()

    def run() -> None:
        try:
            box["value"] = session.run(fetch)
        except BaseException as exc:
            box["error"] = exc
        ended.set()

    threading.Thread(target=run, daemon=True).start()
    return box, ended


def _close_during_run(client: Client, two_devices: bool, kernel_in_caller: bool) -> None:
    """One trial: run, close when the kernel holds the step, and see CancelledError."""
    STARTED.clear()
    RELEASE.clear()
    with dg.Graph().as_default():
        x, y = _step(two_devices)
        session = dg.Session(client)
        box, ended = _run_in_thread(session, y)
        try:
            assert STARTED.wait(WAIT_S), "the step never started"
            session.close()
            if not kernel_in_caller:  # the call ends without waiting for the kernel
                assert ended.wait(WAIT_S), "the run did not end after close()"
        finally:
            RELEASE.set()
        assert ended.wait(WAIT_S), "the run did not end after its kernel returned"
        assert isinstance(box.get("error"), CancelledError), box
        assert box["error"].reason == "session closed"
        with dg.Session(client) as fresh:  # the cluster is still usable
            np.testing.assert_array_equal(fresh.run(x), [1.0, 2.0])


@pytest.mark.parametrize(
    ("settings", "two_devices", "kernel_in_caller"),
    [
        ({}, False, True),
        ({}, True, False),
        ({"daskgraph.compiled-steps": False}, True, False),
    ],
    ids=["in-process", "compiled-steps", "scheduler"],
)
def test_close_during_a_run_cancels_it(threads, settings, two_devices, kernel_in_caller):
    with dask.config.set(settings):
        for _ in range(TRIALS):
            _close_during_run(threads, two_devices, kernel_in_caller)


def test_close_during_a_step_channel_run_cancels_it():
    """The GPU worker in a process of its own: its partition goes through a step channel,
    and the CPU worker's (the py_func) runs in the calling thread."""
    options = dict(virtual_gpus=1, processes=True, cpu_threads=1, cpu_in_process=True)
    with cluster_client(2, **options) as client:
        before = step_counts(client)["GPU:0"].get("channel steps", 0)
        for _ in range(TRIALS):
            _close_during_run(client, two_devices=True, kernel_in_caller=True)
        # the steps went through the channel (the fresh sessions' runs are one-device)
        assert step_counts(client)["GPU:0"].get("channel steps", 0) - before == TRIALS


def _started(x: np.ndarray) -> np.ndarray:
    STARTED.set()
    return x


def test_close_cancels_a_dequeue_blocked_on_an_empty_queue(threads):
    """A dequeue on a worker of this process waits for an element that never comes: close()
    ends it (TensorFlow cancels a blocked dequeue when its session closes). The step is
    known to run once a py_func before the dequeue ran."""
    STARTED.clear()
    with dg.Graph().as_default(), dg.device("/cpu:0"):
        queue = FIFOQueue(2, [dg.float32], shapes=[()])
        ran = py_func(_started, [dg.constant(1.0)], dg.float32)
        with dg.control_dependencies([ran]):
            taken = queue.dequeue()
        session = dg.Session(threads)
        box, ended = _run_in_thread(session, taken)
        assert STARTED.wait(WAIT_S), "the step never started"
        session.close()
        assert ended.wait(WAIT_S), "the dequeue still blocks after close()"
    assert isinstance(box.get("error"), CancelledError), box
