"""daskgraph.cluster.shutdown's log filter: it drops what Dask logs while daskgraph closes its own
objects (in the closing thread and the closed loops' threads), and nothing else."""

from __future__ import annotations

import io
import logging
import threading
from collections.abc import Iterator

import pytest
from tornado.ioloop import IOLoop

from daskgraph.cluster import shutdown


@pytest.fixture
def dask_stream() -> Iterator[io.StringIO]:
    """What a handler on the ``distributed`` logger prints, as Dask's own handler would."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    log = logging.getLogger("distributed")
    old_level = log.level
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    try:
        yield stream
    finally:
        log.removeHandler(handler)
        log.setLevel(old_level)


def _log_in_thread(name: str, message: str) -> None:
    thread = threading.Thread(target=logging.getLogger(name).error, args=(message,))
    thread.start()
    thread.join()


def test_drops_dasks_records_of_the_closing_thread_only_while_closing(dask_stream) -> None:
    logging.getLogger("distributed.batched").info("before")
    with shutdown.quiet_close():
        assert shutdown.quieting_now()
        logging.getLogger("distributed.batched").info("Batched Comm Closed")
        logging.getLogger("distributed.client").error("reconnect cancelled")
        _log_in_thread("distributed.scheduler", "another thread's record")
    logging.getLogger("distributed.batched").info("after")
    assert dask_stream.getvalue().split() == ["before", "another", "thread's", "record", "after"]
    assert not shutdown.quieting_now()


def test_records_of_other_loggers_are_kept(dask_stream, caplog) -> None:
    with caplog.at_level(logging.WARNING, logger="myapp"), shutdown.quiet_close():
        logging.getLogger("myapp").warning("the user's own line")
    assert [r.getMessage() for r in caplog.records] == ["the user's own line"]


def test_drops_the_records_of_the_closed_loops_thread_until_it_has_ended() -> None:
    ready, stopped, release = threading.Event(), threading.Event(), threading.Event()
    box: dict = {}

    def run_loop() -> None:
        box["loop"] = IOLoop(make_current=False)
        box["ident"] = threading.get_ident()
        box["loop"].add_callback(ready.set)
        box["loop"].start()
        stopped.set()
        release.wait(10)
        logging.getLogger("distributed.core").error("its thread, finishing")

    thread = threading.Thread(target=run_loop, daemon=True)
    thread.start()
    assert ready.wait(10)
    loop = box["loop"]
    assert shutdown.loop_thread(loop) == box["ident"]
    seen: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(record.getMessage())

    keep = Keep()
    logging.getLogger("distributed").addHandler(keep)
    try:
        with shutdown.quiet_close(loop):
            loop.add_callback(lambda: logging.getLogger("distributed.core").error("in loop"))
            loop.add_callback(loop.stop)
            assert stopped.wait(10)
            release.set()  # the block waits for the stopped loop's thread to end
        assert not thread.is_alive()
        logging.getLogger("distributed.core").error("later, elsewhere")
    finally:
        logging.getLogger("distributed").removeHandler(keep)
        loop.close()
    assert seen == ["later, elsewhere"]


def test_dropped_records_go_to_daskgraphs_debug_log(dask_stream, caplog) -> None:
    with (
        caplog.at_level(logging.DEBUG, logger="daskgraph.cluster.shutdown"),
        shutdown.quiet_close(),
    ):
        logging.getLogger("distributed.worker").error("heartbeat failed")
    assert [r.getMessage() for r in caplog.records if r.name == "daskgraph.cluster.shutdown"] == [
        "while closing: distributed.worker - heartbeat failed"
    ]
    assert dask_stream.getvalue() == ""


def test_the_teardown_hook_quiets_only_a_worker_with_a_nanny(monkeypatch) -> None:
    quieted: list[bool] = []
    monkeypatch.setattr(shutdown, "quiet_process", lambda: quieted.append(True))

    class ThreadWorker:
        nanny = None

    class ProcessWorker:
        nanny = "tcp://127.0.0.1:4001"

    shutdown.dask_teardown(ThreadWorker())
    assert quieted == []
    shutdown.dask_teardown(ProcessWorker())
    assert quieted == [True]
