"""Step channels without Dask: messages framed over a local socket, the server's threads,
its key, and what its clients see when it closes."""

from __future__ import annotations

import os
import tempfile
import threading
from multiprocessing import AuthenticationError, Pipe
from multiprocessing.connection import Client as connect

import numpy as np
import pytest

from daskgraph.runtime.worker.step_channel import (
    OUT_OF_BAND_BYTES,
    ChannelServer,
    host_identity,
    recv_message,
    send_message,
    step_folder_prefix,
    sweep_step_folders,
)


def test_messages_keep_their_values_and_large_arrays_arrive_writable():
    a, b = Pipe()
    big = np.arange(OUT_OF_BAND_BYTES // 4, dtype=np.float32).reshape(-1, 64)  # (fits the pipe)
    message = {"small": np.float32(1.5), "big": big, "list": [big[:2], "x"], "none": None}
    send_message(a, message)
    got = recv_message(b)
    np.testing.assert_array_equal(got["big"], big)
    assert got["big"].flags.writeable and got["big"].dtype == np.float32
    np.testing.assert_array_equal(got["list"][0], big[:2])
    assert got["small"] == np.float32(1.5) and got["none"] is None


def _server(handled: list) -> ChannelServer:
    def serve(message):
        handled.append(threading.current_thread().name)
        if message.get("boom"):
            raise ValueError("boom")
        return {"status": "ok", "double": message["x"] * 2}

    return ChannelServer(serve, "test")


def test_a_server_answers_each_connection_in_a_thread_of_its_own():
    handled: list[str] = []
    server = _server(handled)
    endpoint = server.endpoint()
    try:
        assert endpoint["host"] == host_identity()
        assert oct(os.stat(os.path.dirname(endpoint["path"])).st_mode & 0o777) == "0o700"
        conns = [connect(endpoint["path"], "AF_UNIX", authkey=endpoint["authkey"]) for _ in "ab"]
        for i, conn in enumerate(conns):
            send_message(conn, {"x": np.arange(3) + i})
        for i, conn in enumerate(conns):
            np.testing.assert_array_equal(recv_message(conn)["double"], (np.arange(3) + i) * 2)
        send_message(conns[0], {"boom": True})
        failed = recv_message(conns[0])  # a handler's error is a reply, and the channel lives on
        assert failed["status"] == "error" and "ValueError: boom" in failed["error"]
        send_message(conns[0], {"x": 1})
        assert recv_message(conns[0])["double"] == 2
        assert all(name.startswith("daskgraph-channel-test") for name in handled)
        for conn in conns:
            conn.close()
    finally:
        server.close()


def test_a_client_without_the_key_is_refused():
    server = _server([])
    endpoint = server.endpoint()
    try:
        with pytest.raises(AuthenticationError):
            connect(endpoint["path"], "AF_UNIX", authkey=b"wrong")
        good = connect(endpoint["path"], "AF_UNIX", authkey=endpoint["authkey"])
        send_message(good, {"x": 2})
        assert recv_message(good)["double"] == 4
        good.close()
    finally:
        server.close()


def test_closing_the_server_ends_its_connections_and_removes_the_socket():
    server = _server([])
    endpoint = server.endpoint()
    conn = connect(endpoint["path"], "AF_UNIX", authkey=endpoint["authkey"])
    send_message(conn, {"x": 1})
    assert recv_message(conn)["double"] == 2
    server.close()
    assert conn.poll(10)  # the client waiting for a reply wakes up ...
    with pytest.raises(EOFError):  # ... to the end of the channel
        recv_message(conn)
    assert not os.path.exists(os.path.dirname(endpoint["path"]))
    with pytest.raises(RuntimeError, match="closed"):
        server.endpoint()
    server.close()  # twice is fine


def test_a_message_larger_than_the_socket_takes_at_once_arrives_whole():
    a, b = Pipe()
    frames = [np.full(3 << 20, i, dtype=np.uint8) for i in range(3)]  # 9 MiB, many writes
    message = {"frames": frames, "small": np.arange(5)}
    got: list = []
    reader = threading.Thread(target=lambda: got.append(recv_message(b)))
    reader.start()
    send_message(a, message)
    reader.join(60)
    (received,) = got
    for sent, came in zip(frames, received["frames"], strict=True):
        assert came.tobytes() == sent.tobytes()
    np.testing.assert_array_equal(received["small"], np.arange(5))


@pytest.mark.skipif(not hasattr(os, "sched_getscheduler"), reason="POSIX scheduling")
def test_serving_a_channel_leaves_the_callers_thread_as_it_was():
    """However a channel's own thread is scheduled (a tuning: run_as_batch_work), the thread
    that opened the server and talks to it keeps its policy and priority."""
    before = (os.sched_getscheduler(0), os.sched_getparam(0).sched_priority, os.nice(0))
    server = ChannelServer(lambda message: {"status": "ok", "echo": message["n"]}, "test")
    endpoint = server.endpoint()
    try:
        conn = connect(endpoint["path"], "AF_UNIX", authkey=endpoint["authkey"])
        send_message(conn, {"n": 3})
        assert recv_message(conn) == {"status": "ok", "echo": 3}
        conn.close()
    finally:
        server.close()
    assert (os.sched_getscheduler(0), os.sched_getparam(0).sched_priority, os.nice(0)) == before


def _dead_pid() -> int:
    """The id of a process that has ended (and been reaped)."""
    import subprocess
    import sys

    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_a_step_folder_is_named_after_its_process_and_removed_when_it_closes(tmp_path):
    server = ChannelServer(lambda m: m, "w")
    path = server.endpoint()["path"]
    folder = os.path.dirname(path)
    assert os.path.basename(folder).startswith(step_folder_prefix(os.getpid()))
    assert os.stat(folder).st_mode & 0o777 == 0o700
    server.close()
    assert not os.path.exists(folder)


def test_the_step_folders_of_dead_processes_are_swept_and_no_others(tmp_path):
    dead, folders = _dead_pid(), {}
    for name, prefix in [
        ("dead", step_folder_prefix(dead)),
        ("alive", step_folder_prefix(os.getpid())),
        ("other machine", f"daskgraph-steps-{dead}-0123456789-"),  # (another tag)
        ("old name", "daskgraph-steps-"),
    ]:
        folders[name] = tmp_path / (prefix + "abc123")
        folders[name].mkdir(mode=0o700)
        (folders[name] / "steps.sock").write_bytes(b"")
    (tmp_path / (step_folder_prefix(dead) + "file")).write_text("not a folder")
    assert sweep_step_folders(str(tmp_path)) == [str(folders["dead"])]
    assert not folders["dead"].exists()
    assert all(folders[name].exists() for name in ("alive", "other machine", "old name"))
    assert (tmp_path / (step_folder_prefix(dead) + "file")).exists()


def test_a_new_channel_server_sweeps_the_folder_of_a_killed_worker(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    killed = tmp_path / (step_folder_prefix(_dead_pid()) + "k1ll3d")
    killed.mkdir(mode=0o700)
    (killed / "steps.sock").write_bytes(b"")
    server = ChannelServer(lambda m: m, "w")
    try:
        assert not killed.exists()
    finally:
        server.close()
