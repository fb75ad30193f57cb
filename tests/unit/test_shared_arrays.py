"""Shared segments: large arrays of step channel and Dask comm messages through shared
memory, once written, mapped by the receiver, and never left behind."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from multiprocessing import Pipe

import numpy as np
import pytest

from daskgraph.runtime.worker import shared_arrays
from daskgraph.runtime.worker.step_channel import encode, recv_message, send_message, write
from daskgraph.runtime.worker.wire import pack, unpack

pytestmark = pytest.mark.skipif(not shared_arrays.available(), reason="no /dev/shm here")

BIG = shared_arrays.SEGMENT_BYTES // 4 * 3  # float32 elements: three segments' threshold


def _mine() -> set[str]:
    """This process's segments in the shared folder."""
    prefix = shared_arrays.segment_prefix()
    return {n for n in os.listdir(shared_arrays.SHARED_FOLDER) if n.startswith(prefix)}


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_a_large_array_goes_through_a_segment_and_arrives_equal_and_writable() -> None:
    sender, receiver = Pipe()
    value = np.random.default_rng(0).random(BIG, dtype=np.float32).reshape(-1, 4)
    before = shared_arrays.COUNTS["shared bytes in"]
    segments = send_message(sender, {"feed": value, "small": np.arange(3)})
    got = recv_message(receiver)
    assert len(segments) == 1
    assert shared_arrays.COUNTS["shared bytes in"] - before == value.nbytes
    np.testing.assert_array_equal(got["feed"], value)
    assert got["feed"].flags.writeable and got["small"].tolist() == [0, 1, 2]


def test_fortran_ordered_arrays_keep_their_layout() -> None:
    sender, receiver = Pipe()
    value = np.asfortranarray(np.arange(BIG, dtype=np.float32).reshape(-1, 8))
    send_message(sender, value)
    got = recv_message(receiver)
    np.testing.assert_array_equal(got, value)
    assert got.flags.f_contiguous


def test_nothing_is_left_behind_once_received_and_freed() -> None:
    sender, receiver = Pipe()
    fds = _open_fds()
    send_message(sender, {"a": np.ones(BIG, np.float32), "b": np.zeros(BIG, np.float32)})
    assert len(_mine()) == 2  # (written, not yet read)
    got = recv_message(receiver)
    assert _mine() == set()  # the receiver removed the names on opening
    assert _open_fds() == fds  # and keeps no descriptor: only the mapping
    del got


def test_the_receivers_array_does_not_follow_the_senders_source() -> None:
    sender, receiver = Pipe()
    source = np.full(BIG, 1.0, np.float32)
    send_message(sender, source)
    source[:] = 7.0  # the sender refills its array for the next step
    got = recv_message(receiver)
    source[:] = 9.0
    assert float(got.min()) == float(got.max()) == 1.0


def test_the_sender_releases_what_its_receiver_never_read() -> None:
    sender, _ = Pipe()
    segments = send_message(sender, np.ones(BIG, np.float32))
    assert set(segments) == _mine() and segments
    shared_arrays.release(segments)
    assert _mine() == set()


def test_a_segment_gone_before_it_was_read_fails_the_message_not_the_stream() -> None:
    sender, receiver = Pipe()
    frames = encode({"a": np.ones(BIG, np.float32), "b": np.ones(1 << 13)})  # (b: a frame)
    shared_arrays.release(frames.segments)
    write(sender, frames)
    with pytest.raises(OSError, match="shared segment is gone"):
        recv_message(receiver)
    send_message(sender, "next")
    assert recv_message(receiver) == "next"  # (the socket frames of the first were read)


def test_without_shared_memory_the_bytes_go_through_the_socket() -> None:
    sender, receiver = Pipe()
    value = np.ones(BIG, np.float32)
    frames = encode(value, shared=False)
    assert frames.segments == [] and len(frames) == 2
    writer = threading.Thread(target=write, args=(sender, frames))  # (more than a socket holds)
    writer.start()
    np.testing.assert_array_equal(recv_message(receiver), value)
    writer.join()
    assert shared_arrays.share(memoryview(value), folder="/nonexistent-folder") is None


def test_a_dead_senders_segments_are_swept_and_a_live_ones_kept() -> None:
    code = (
        "import numpy as np, os\n"
        "from daskgraph.runtime.worker import shared_arrays\n"
        "print(shared_arrays.share(memoryview(np.ones(1000))))\n"
        "os._exit(0)\n"  # (dies without releasing it)
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    name = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    ).stdout.strip()
    assert os.path.exists(os.path.join(shared_arrays.SHARED_FOLDER, name))
    live = shared_arrays.share(memoryview(np.ones(1000)))
    swept = shared_arrays.sweep_segments()
    assert name in swept and live not in swept
    assert not os.path.exists(os.path.join(shared_arrays.SHARED_FOLDER, name))
    shared_arrays.release([live])


def test_segments_are_readable_by_their_user_only() -> None:
    name = shared_arrays.share(memoryview(np.ones(1000)))
    mode = os.stat(os.path.join(shared_arrays.SHARED_FOLDER, name)).st_mode & 0o777
    shared_arrays.release([name])
    assert mode == 0o600


def test_only_segment_names_are_opened() -> None:
    with pytest.raises(ValueError, match="not the name"):
        shared_arrays.open_segment("../etc/passwd", 10)


def test_dask_comm_messages_to_this_machine_carry_segment_names_not_bytes() -> None:
    value = {0: np.random.default_rng(1).random(BIG, dtype=np.float32), 1: np.float32(2)}
    near = pack(value, near=True)
    assert shared_arrays.is_shared(near) and len(near) < 4096
    got = unpack(near)
    np.testing.assert_array_equal(got[0], value[0])
    assert got[1] == 2 and _mine() == set()
    assert type(pack(value)).__name__ == "Serialize"  # (another machine: frames, as before)


def test_segments_of_a_lost_dask_comm_message_are_removed_later(monkeypatch) -> None:
    lost = shared_arrays.dumps(np.ones(BIG, np.float32))  # (its receiver never reads it)
    assert lost is not None and len(_mine()) == 1
    monkeypatch.setattr(shared_arrays, "UNCLAIMED_AFTER", 0.0)
    kept = shared_arrays.dumps(np.ones(BIG, np.float32))  # the next message removes it
    assert len(_mine()) == 1
    np.testing.assert_array_equal(shared_arrays.loads(kept), np.ones(BIG, np.float32))
    assert _mine() == set()
