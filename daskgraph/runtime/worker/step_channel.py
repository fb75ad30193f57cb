"""Step channels: a compiled step's message and reply between processes of one machine
through a local socket, in the calling threads, with no event loop on the way.

Ray's compiled graphs join the actors of a repeated graph by channels; TensorFlow's workers
on one host share the process's rendezvous. A compiled step sent through Dask's comm costs a
hand-off to the client's event loop, Dask's framing and the worker's event loop on each side:
about 0.4 ms a round trip on a small machine, more than the step itself. A worker on the
client's machine therefore also serves its compiled steps over a channel: a Unix socket
(``multiprocessing.connection``) in a directory only its user can enter, opened with a secret
key the worker gives the client over Dask's comm (so TLS protects the key where the cluster
uses TLS), each connection read by a thread of its own that hands each message to the
worker's executor, where the step's partitions run
(:mod:`~daskgraph.runtime.worker.step_order`) and the reply is written. The client writes the
message from the thread that called ``Session.run`` and reads the reply there
(:mod:`daskgraph.runtime.client.channel_steps`).

Messages are pickled (protocol 5); arrays of :data:`OUT_OF_BAND_BYTES` or more travel as
frames of their own, without a copy into the pickle, and arrive writable; those of
:data:`~daskgraph.runtime.worker.shared_arrays.SEGMENT_BYTES` or more through shared memory
(:mod:`~daskgraph.runtime.worker.shared_arrays`: written once, mapped by the receiver), the
message carrying the segment's name. The sender releases its segments once the reply came
(a reply's, when the next message comes or the connection ends).

The socket's directory (mode 0700, in the temporary folder) is named after the worker's
process and machine (:func:`step_folder_prefix`): a worker killed outright (``SIGKILL``) cannot
remove it, so every channel server, such as the one of the worker its nanny starts in the
killed one's place, first removes the folders of this user whose process is gone
(:func:`sweep_step_folders`).

>>> from multiprocessing import Pipe
>>> import numpy as np
>>> a, b = Pipe()
>>> segments = send_message(a, {"x": np.arange(3.0), "big": np.ones(OUT_OF_BAND_BYTES // 8),
...                             "huge": np.ones(shared_arrays.SEGMENT_BYTES // 8)})
>>> got = recv_message(b)
>>> got["x"].tolist(), got["big"].flags.writeable, got["huge"].flags.writeable
([0.0, 1.0, 2.0], True, True)
>>> len(segments)  # (the huge one went through shared memory)
1
"""

from __future__ import annotations

import contextlib
import logging
import os
import pickle
import re
import shutil
import socket
import stat
import struct
import tempfile
import threading
from collections.abc import Callable
from concurrent.futures import Executor
from multiprocessing.connection import Connection, Listener
from typing import Any

from daskgraph.runtime.worker import shared_arrays
from daskgraph.runtime.worker.machine import host_identity, leftovers, machine_tag

__all__ = [
    "OUT_OF_BAND_BYTES",
    "STEP_FOLDER",
    "ChannelServer",
    "Frames",
    "encode",
    "host_identity",
    "recv_message",
    "send_message",
    "step_folder_prefix",
    "sweep_step_folders",
    "write",
]

logger = logging.getLogger("daskgraph.runtime.worker.step_channel")

#: arrays at least this large travel as frames of their own (no copy into the pickle)
OUT_OF_BAND_BYTES = 1 << 16
#: the start of a step channel's folder name (then the process id and the machine's tag)
STEP_FOLDER = "daskgraph-steps-"
_STEP_FOLDER_NAME = re.compile(re.escape(STEP_FOLDER) + r"(\d+)-([0-9a-f]{10})-")


def step_folder_prefix(pid: int | None = None) -> str:
    """The start of the name of a step channel's folder made by process ``pid`` (this one):
    :data:`STEP_FOLDER`, the process id, and a tag of this machine (:func:`host_identity`:
    a folder from another container sharing the temporary folder, or from before a reboot,
    is never taken for one of this machine's processes).

    >>> step_folder_prefix(42).startswith("daskgraph-steps-42-")
    True
    >>> _STEP_FOLDER_NAME.match(step_folder_prefix(42) + "x1y2").group(1)
    '42'
    """
    return f"{STEP_FOLDER}{os.getpid() if pid is None else pid}-{machine_tag()}-"


def sweep_step_folders(folder: str | None = None) -> list[str]:
    """Remove the step channel folders in ``folder`` (the temporary folder) that this user
    owns, this machine's processes made, and whose process is gone (killed before it could
    remove them); return their paths.

    A folder of a live process, of another user, of another machine, or of an older name
    is left alone, as is anything that is not a plain directory.

    >>> folder = tempfile.mkdtemp()
    >>> alive = tempfile.mkdtemp(prefix=step_folder_prefix(), dir=folder)
    >>> sweep_step_folders(folder), os.path.isdir(alive)
    ([], True)
    >>> shutil.rmtree(folder)
    """
    folder = folder or tempfile.gettempdir()
    removed = []
    for path in leftovers(folder, _STEP_FOLDER_NAME, stat.S_ISDIR):
        with contextlib.suppress(OSError):
            shutil.rmtree(path)
            removed.append(path)
    return removed


class Frames(list):
    """The frames of one message (:func:`encode`) and the names of the shared segments it
    made (its sender releases them, :func:`~daskgraph.runtime.worker.shared_arrays.release`,
    once the receiver is done with the message)."""

    segments: list[str]


def encode(message: Any, shared: bool = True) -> Frames:
    """``message`` as the frames :func:`write` sends: a head (the sizes of the buffers that
    follow, then the names of those in shared segments, then the pickle) and each large
    buffer not in a segment. ``shared``: buffers of
    :data:`~daskgraph.runtime.worker.shared_arrays.SEGMENT_BYTES` or more go through shared
    memory (the receiver is on this machine)."""
    least = shared_arrays.SEGMENT_BYTES
    frames, sizes, names = Frames(), [], []

    def out_of_band(buffer: pickle.PickleBuffer) -> bool:
        raw = buffer.raw()
        if raw.nbytes < OUT_OF_BAND_BYTES:
            return True  # (in the pickle)
        name = shared_arrays.share(raw) if shared and raw.nbytes >= least else None
        if name is None:
            frames.append(raw)
            sizes.append(raw.nbytes)
        else:
            names.append(name)
            sizes.append(raw.nbytes | _IN_SEGMENT)
        return False

    body = pickle.dumps(message, protocol=5, buffer_callback=out_of_band)
    head = struct.pack(f"<I{len(sizes)}Q", len(sizes), *sizes) + shared_arrays.names_bytes(names)
    frames.insert(0, head + body)
    frames.segments = names
    return frames


#: a buffer's size in a head with this bit set: the buffer is in a shared segment, whose
#: name follows the sizes
_IN_SEGMENT = 1 << 63


def write(conn: Connection, frames: list[Any]) -> None:
    """Send the frames of one message (:func:`encode`) with one system call where the
    socket takes them at once, each framed as ``Connection.send_bytes`` frames it (so
    ``recv_bytes`` reads them). ``send_bytes`` writes a frame above 16 KiB in two calls:
    the reader would wake for the length, then sleep again until the rest came."""
    buffers: list[Any] = []
    for frame in frames:
        n = _nbytes(frame)
        buffers.append(_LENGTH.pack(n) if n <= 0x7FFFFFFF else _HUGE.pack(-1, n))
        buffers.append(frame)
    fd = conn.fileno()
    while buffers:
        sent = os.writev(fd, buffers[:_IOV_MAX])
        while buffers and sent >= _nbytes(buffers[0]):
            sent -= _nbytes(buffers.pop(0))
        if sent:  # (part of a frame went: the rest of it first)
            buffers[0] = memoryview(buffers[0]).cast("B")[sent:]


#: how ``multiprocessing.connection`` frames a message: its length, big-endian; -1 and an
#: 8-byte length beyond 2 GiB
_LENGTH, _HUGE = struct.Struct("!i"), struct.Struct("!iQ")
#: buffers one ``writev`` takes at most
_IOV_MAX = os.sysconf("SC_IOV_MAX") if hasattr(os, "sysconf") else 16


def _nbytes(buffer: Any) -> int:
    return buffer.nbytes if isinstance(buffer, memoryview) else len(buffer)


def send_message(conn: Connection, message: Any) -> list[str]:
    """Write ``message`` to ``conn`` (:func:`encode`, then :func:`write`); return the names
    of the shared segments it made (to release once the receiver is done)."""
    frames = encode(message)
    try:
        write(conn, frames)
    except BaseException:
        shared_arrays.release(frames.segments)
        raise
    return frames.segments


def recv_message(conn: Connection) -> Any:
    """Read one message :func:`send_message` wrote (raises ``EOFError`` when the other end
    closed, ``OSError`` where a shared segment it names cannot be opened)."""
    head = conn.recv_bytes()
    (count,) = struct.unpack_from("<I", head)
    sizes = struct.unpack_from(f"<{count}Q", head, 4)
    offset, buffers, missing = 4 + 8 * count, [], None
    for size in sizes:
        if size & _IN_SEGMENT:
            name, offset = shared_arrays.name_at(head, offset)
            try:
                buffers.append(shared_arrays.open_segment(name, size & ~_IN_SEGMENT))
            except (OSError, ValueError) as exc:  # (the other frames are read all the same)
                missing = missing or exc
            continue
        frame = bytearray(size)
        conn.recv_bytes_into(frame)
        buffers.append(frame)
    if missing is not None:
        raise OSError(f"a step channel message's shared segment is gone: {missing}")
    return pickle.loads(memoryview(head)[offset:], buffers=buffers)


def run_as_batch_work() -> None:
    """Mark the calling thread as batch work for the OS (Linux's ``SCHED_BATCH``; elsewhere,
    or where refused, nothing): its wake-up then does not preempt the thread running on its
    core. A client writes a step's messages to several workers back to back; where a worker
    woken by the first message preempted the client on a busy machine, the other messages
    waited for the client to get its core back (measured on 2 cores, 4 workers: 3-7% of a
    4-tower step). The thread still gets its fair share of the CPU."""
    batch = getattr(os, "SCHED_BATCH", None)
    if batch is not None:
        with contextlib.suppress(OSError):
            os.sched_setscheduler(0, batch, os.sched_param(0))


class ChannelServer:
    """A worker's step channels (see the module): listens once asked for its
    :meth:`endpoint`, and answers each message of a connection with ``serve(message)``.
    Made, it removes the step folders of this user's dead processes
    (:func:`sweep_step_folders`).

    Parameters
    ----------
    serve
        The worker's answer to one message (a dict of fields).
    name
        For the threads' names.
    executor
        Where ``serve`` runs and its reply is written (the worker's executor, whose threads
        Dask counts); the connection's thread then only reads the messages. None: in the
        connection's thread.
    quick
        Whether a message is answered faster in the connection's thread than the hand-off
        to the executor takes (a step of small partitions that change no state: the rule
        by which the worker's event loop runs a partition itself); None: never.
    """

    def __init__(
        self,
        serve: Callable[[dict[str, Any]], Any],
        name: str,
        executor: Executor | None = None,
        quick: Callable[[dict[str, Any]], bool] | None = None,
    ) -> None:
        self.serve, self.name, self.executor, self.quick = serve, name, executor, quick
        self._lock = threading.Lock()
        self._listener: Listener | None = None
        self._directory = ""
        self._key = b""
        self._connections: set[Connection] = set()
        self._closed = False
        sweep_step_folders()  # of workers killed before they could (this one's predecessor)
        shared_arrays.sweep_segments()

    def endpoint(self) -> dict[str, Any]:
        """Where and how to connect: the socket's ``path``, the ``authkey``, this
        machine's ``host`` (:func:`host_identity`) and the ``shared`` memory folder this
        process sees (:func:`~daskgraph.runtime.worker.shared_arrays.folder_identity`);
        starts listening on first use."""
        with self._lock:
            if self._closed:
                raise RuntimeError(f"the step channels of {self.name} are closed")
            if self._listener is None:
                self._directory = tempfile.mkdtemp(prefix=step_folder_prefix())  # mode 0700
                self._key = os.urandom(32)
                path = os.path.join(self._directory, "steps.sock")
                self._listener = Listener(path, family="AF_UNIX", authkey=self._key)
                accept = threading.Thread(
                    target=self._accept, name=f"daskgraph-channels-{self.name}", daemon=True
                )
                accept.start()
            return {
                "path": self._listener.address,
                "authkey": self._key,
                "host": host_identity(),
                "shared": shared_arrays.folder_identity(),
            }

    def _accept(self) -> None:
        listener = self._listener
        while listener is not None and not self._closed:
            try:
                conn = listener.accept()
            except Exception:  # closed, or a client that failed the key's challenge
                if self._closed:
                    return
                logger.debug("a step channel was refused", exc_info=True)
                continue
            if self._closed:
                conn.close()
                return
            with self._lock:
                self._connections.add(conn)
            threading.Thread(
                target=self._serve, args=(conn,), name=f"daskgraph-channel-{self.name}",
                daemon=True,
            ).start()  # fmt: skip

    def _serve(self, conn: Connection) -> None:
        """Read the messages of ``conn`` until its client closes it (or the worker does),
        each answered (:meth:`_answer`) on the executor, or here without one. A client
        sends its next message once it has read the reply to the last one."""
        run_as_batch_work()
        writing = threading.Lock()  # the reply being written; the connection's close
        replied: list[str] = []  # (the last reply's segments: read once the next message came)
        try:
            while True:
                try:
                    message = recv_message(conn)
                except (EOFError, OSError):
                    return
                finally:
                    shared_arrays.release(replied)
                    replied.clear()
                if self.executor is None or (self.quick is not None and self.quick(message)):
                    if not self._answer(conn, writing, message, replied):
                        return
                    continue
                try:
                    self.executor.submit(self._answer, conn, writing, message, replied)
                except RuntimeError as exc:  # the executor shut down: the worker closes
                    failed = {"status": "error", "error": f"{type(exc).__name__}: {exc}"}
                    if not self._reply(conn, writing, failed, replied):
                        return
                message = None  # (a large feed is freed once answered, not once the next came)
        finally:
            with self._lock:
                self._connections.discard(conn)
            with writing:
                conn.close()

    def _answer(
        self, conn: Connection, writing: threading.Lock, message: Any, replied: list[str]
    ) -> bool:
        """Write ``serve(message)`` to ``conn``; whether the connection is still open."""
        try:
            reply = self.serve(message)
        except Exception as exc:  # a bug: the client falls back to Dask's comm
            logger.warning("step channel message failed", exc_info=True)
            reply = {"status": "error", "error": f"{type(exc).__name__}: {exc}"}
        return self._reply(conn, writing, reply, replied)

    @staticmethod
    def _reply(conn: Connection, writing: threading.Lock, reply: Any, replied: list[str]) -> bool:
        """Write ``reply``, its shared arrays' segments noted in ``replied`` (released once
        the next message shows the client read it); whether the connection is still open."""
        with writing:
            try:
                replied.extend(send_message(conn, reply))
            except (OSError, ValueError):  # (closed: its client left)
                return False
        return True

    def close(self) -> None:
        """Stop listening, end every connection (their clients read end-of-file), and remove
        the socket's directory."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            listener, self._listener = self._listener, None
            connections = list(self._connections)
        for conn in connections:  # wakes the thread blocked reading it
            with contextlib.suppress(OSError):
                socket.socket(fileno=os.dup(conn.fileno())).shutdown(socket.SHUT_RDWR)
        if listener is not None:
            path = listener.address
            with contextlib.suppress(OSError):  # wakes the accepting thread
                with socket.socket(socket.AF_UNIX) as wake:
                    wake.connect(path)
            with contextlib.suppress(OSError):
                listener.close()
        if self._directory:
            shutil.rmtree(self._directory, ignore_errors=True)
