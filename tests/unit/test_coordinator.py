"""tf.train.Coordinator, LooperThread and start_queue_runners: TensorFlow 1's behaviours."""

from __future__ import annotations

import sys
import threading
import time

import pytest

import daskgraph as dg
from daskgraph.errors import OutOfRangeError
from daskgraph.training.coordinator import Coordinator, LooperThread, start_queue_runners


def _stopping_worker(coord: Coordinator, looping: threading.Semaphore) -> None:
    looping.release()  # once: this thread is in its loop
    while not coord.should_stop():
        time.sleep(0.001)


def test_request_stop_stops_every_thread_and_join_returns() -> None:
    coord = Coordinator()
    looping = threading.Semaphore(0)
    threads = [threading.Thread(target=_stopping_worker, args=(coord, looping)) for _ in range(3)]
    for t in threads:
        t.start()
    assert all(looping.acquire(timeout=30) for _ in threads)  # every thread is looping
    assert not coord.should_stop()
    coord.request_stop()
    coord.join(threads)
    assert coord.should_stop() and coord.joined
    assert not any(t.is_alive() for t in threads)


def test_first_error_is_raised_by_join_and_later_ones_ignored() -> None:
    coord = Coordinator()

    def fail(message: str, delay: float) -> None:
        time.sleep(delay)
        with coord.stop_on_exception():
            raise ValueError(message)

    first = threading.Thread(target=fail, args=("first", 0.0))
    first.start()
    assert coord.wait_for_stop(5.0)
    second = threading.Thread(target=fail, args=("second", 0.0))
    second.start()
    with pytest.raises(ValueError, match="first"):
        coord.join([first, second])
    with pytest.raises(ValueError, match="first"):
        coord.raise_requested_exception()


def test_out_of_range_is_a_clean_stop() -> None:
    coord = Coordinator()
    with coord.stop_on_exception():
        raise OutOfRangeError("input exhausted", op=None)
    assert coord.should_stop()
    coord.join()  # no error
    coord.raise_requested_exception()


def test_request_stop_with_an_exception_instance_and_exc_info() -> None:
    coord = Coordinator()
    try:
        raise KeyError("k")
    except KeyError:
        coord.request_stop(sys.exc_info())
    coord.request_stop(RuntimeError("ignored: a stop was requested already"))
    with pytest.raises(KeyError):
        coord.join()
    coord.clear_stop()
    assert not coord.should_stop() and not coord.joined
    coord.request_stop(RuntimeError("plain"))
    with pytest.raises(RuntimeError, match="plain"):
        coord.join()


def test_join_names_threads_that_do_not_stop() -> None:
    coord = Coordinator()
    release = threading.Event()
    stuck = threading.Thread(target=release.wait, name="stuck-thread")
    stuck.start()
    coord.request_stop()
    try:
        with pytest.raises(RuntimeError, match="threads still running: stuck-thread"):
            coord.join([stuck], stop_grace_period_secs=0.01)
    finally:
        release.set()
        stuck.join()
    coord.clear_stop()
    coord.request_stop()
    coord.join([], ignore_live_threads=True)


def test_looper_thread_calls_its_target_until_stopped() -> None:
    coord = Coordinator()
    calls: list[float] = []
    three = threading.Event()

    def target() -> None:
        calls.append(time.time())
        if len(calls) == 3:
            three.set()

    looper = LooperThread.loop(coord, 0.01, target=target)
    assert three.wait(30), f"the looper called its target {len(calls)} times"
    coord.request_stop()
    coord.join()  # the looper registered itself
    assert len(calls) >= 3 and not looper.is_alive()
    with pytest.raises(ValueError, match="'coord' argument must be a Coordinator"):
        LooperThread("not a coordinator", 1.0)
    with pytest.raises(ValueError, match="require that you also pass 'target'"):
        LooperThread(Coordinator(), 1.0, args=(1,))


def test_start_queue_runners_starts_the_runners_of_the_collection() -> None:
    class Runner:
        def create_threads(self, sess, coord=None, daemon=False, start=False):
            thread = threading.Thread(target=lambda: None, daemon=daemon)
            if start:
                thread.start()
            return [thread]

    with dg.Graph().as_default() as graph, dg.Session() as sess:
        assert start_queue_runners(sess, Coordinator()) == []
        assert start_queue_runners() == []  # the default session
        graph.add_to_collection("queue_runners", Runner())
        threads = start_queue_runners(sess, Coordinator())
        assert len(threads) == 1 and threads[0].daemon
    with pytest.raises(ValueError, match="No default session is registered"):
        start_queue_runners()
    with pytest.raises(TypeError, match=r"sess must be a `tf\.Session` object"):
        start_queue_runners(object())
