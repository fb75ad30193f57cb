"""Shared segments: a large array's bytes handed to another process of this machine through
shared memory, written once by the sender and mapped, without a copy, by the receiver.

A 400 MB feed pickled through a socket is copied four times (into the socket, out of it,
and by the kernel twice between); through a segment it is copied once: the sender writes
its bytes into a new file of the machine's shared memory folder (``/dev/shm``, a ``tmpfs``;
``os.write``, so the sender maps nothing), the receiver opens the file, removes its name at
once and maps it (``MAP_POPULATE``: its page tables are filled in one system call, not one
fault a page). The receiver's array is then the run's own: no other process has the file
open or mapped (the sender closed it before sending its name) and nobody can open it again;
its memory goes back to the system when the array is freed. On a machine measured with
2 cores, writing and mapping 400 MB cost 1.0-1.2 times ``ndarray.copy()`` of it.

The segment travels as its name in a message that is already authenticated (the step
channel's key, Dask's comm); only raw bytes live in a segment, never a pickle.

Files are made with mode 0600 and named after their creator's process and machine
(:func:`segment_prefix`). A segment the receiver never opened (it died, the message was
dropped) is removed by its sender (:func:`release`, once the reply came or the channel
closed) or, where the sender died too, by :func:`sweep_segments`, which the next channel
server (or anyone) runs.

>>> import numpy as np
>>> name = share(memoryview(np.arange(4.0)))
>>> mapped = open_segment(name, 32)
>>> np.frombuffer(mapped).tolist(), os.path.exists(os.path.join(SHARED_FOLDER, name))
([0.0, 1.0, 2.0, 3.0], False)
"""

from __future__ import annotations

import contextlib
import ctypes
import mmap
import os
import pickle
import re
import secrets
import stat
import struct
import threading
import time
from collections import Counter, deque
from collections.abc import Iterable
from typing import Any

from daskgraph.runtime.worker.machine import leftovers, machine_tag

__all__ = [
    "COUNTS",
    "SEGMENT_BYTES",
    "SEGMENT_PREFIX",
    "SHARED_FOLDER",
    "available",
    "dumps",
    "folder_identity",
    "is_shared",
    "loads",
    "name_at",
    "names_bytes",
    "open_segment",
    "release",
    "segment_prefix",
    "share",
    "sweep_segments",
]

#: buffers at least this large travel through a segment (below it, through the socket
#: costs less than making, filling and mapping a file; measured in benchmarks/feeds.py)
SEGMENT_BYTES = 1 << 20
#: the machine's shared memory folder (a ``tmpfs``)
SHARED_FOLDER = "/dev/shm"
#: the start of a segment's name (then the process id, the machine's tag and a random part)
SEGMENT_PREFIX = "daskgraph-shm-"
_SEGMENT_NAME = re.compile(re.escape(SEGMENT_PREFIX) + r"(\d+)-([0-9a-f]{10})-[0-9a-f]{16}$")

#: this process's segment traffic: "shared out"/"shared in" (segments), "shared bytes out"/
#: "shared bytes in", "shared fallbacks" (a segment that could not be made: the bytes went
#: the other way)
COUNTS: Counter[str] = Counter()
_COUNTS_LOCK = threading.Lock()
_WRITE_CHUNK = 1 << 30  # (one ``os.write`` takes at most about 2 GiB)


def available(folder: str = SHARED_FOLDER) -> bool:
    """Whether segments can be made here: ``folder`` is a directory this process may write.

    >>> available("/nonexistent-folder")
    False
    """
    return os.path.isdir(folder) and os.access(folder, os.W_OK | os.X_OK)


def folder_identity(folder: str = SHARED_FOLDER) -> str | None:
    """Which shared memory folder this process sees (device and inode: two containers of
    one machine with folders of their own differ), or None where it has none; a peer that
    reports another cannot map this process's segments.

    >>> folder_identity("/nonexistent-folder") is None
    True
    """
    try:
        info = os.stat(folder)
    except OSError:
        return None
    return f"{info.st_dev}:{info.st_ino}"


def segment_prefix(pid: int | None = None) -> str:
    """The start of the names of the segments process ``pid`` (this one) makes:
    :data:`SEGMENT_PREFIX`, the process id and a tag of this machine (a segment from another
    container sharing the folder is never taken for one of this machine's processes).

    >>> _SEGMENT_NAME.match(segment_prefix(42) + "0" * 16).group(1)
    '42'
    """
    return f"{SEGMENT_PREFIX}{os.getpid() if pid is None else pid}-{machine_tag()}-"


def share(buffer: memoryview, folder: str = SHARED_FOLDER) -> str | None:
    """Write ``buffer`` (contiguous) into a new segment and return its name, or None where
    no segment could be made or filled (no such folder, the folder full): the caller then
    sends the bytes the other way. The sender never touches the segment again; the
    receiver's :func:`open_segment` removes its name, the sender's :func:`release` too."""
    name = segment_prefix() + secrets.token_hex(8)
    path = os.path.join(folder, name)
    data = buffer.cast("B") if buffer.format != "B" or buffer.ndim != 1 else buffer
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    except OSError:
        _count(("shared fallbacks", 1))
        return None
    try:
        written = 0
        while written < data.nbytes:
            written += os.write(fd, data[written : written + _WRITE_CHUNK])
    except OSError:  # (ENOSPC: the folder is full)
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(path)
        _count(("shared fallbacks", 1))
        return None
    os.close(fd)
    _count(("shared out", 1), ("shared bytes out", data.nbytes))
    return name


def dumps(value: Any) -> bytes | None:
    """``value`` pickled (protocol 5) for a receiver on this machine, its buffers of
    :data:`SEGMENT_BYTES` or more in segments (the smaller ones in the pickle), as one
    ``bytes`` that :func:`loads` reads and :func:`is_shared` recognises; None where no buffer
    went to a segment (pickle it the usual way). For messages whose sender gets no word of
    their arrival (Dask's comm), the segments are left to the receiver, which opens them on
    arrival; those of a message lost on the way are removed by the sender's next ``dumps``
    once :data:`UNCLAIMED_AFTER` seconds old.

    >>> import numpy as np
    >>> big = np.arange(SEGMENT_BYTES // 8, dtype=np.float64)
    >>> blob = dumps({"x": big, "small": 1.5})
    >>> is_shared(blob), len(blob) < 1000, dumps({"small": 1.5}) is None
    (True, True, True)
    >>> got = loads(blob)
    >>> bool((got["x"] == big).all()), got["small"]
    (True, 1.5)
    """
    if not available():
        return None
    _release_unclaimed()
    names: list[str] = []
    sizes: list[int] = []

    def out_of_band(buffer: pickle.PickleBuffer) -> bool:
        raw = buffer.raw()
        name = share(raw) if raw.nbytes >= SEGMENT_BYTES else None
        if name is None:
            return True  # (in the pickle)
        names.append(name)
        sizes.append(raw.nbytes)
        return False

    body = pickle.dumps(value, protocol=5, buffer_callback=out_of_band)
    if not names:
        return None
    with _COUNTS_LOCK:
        _UNCLAIMED.extend((time.monotonic(), name) for name in names)
    head = struct.pack(f"<I{len(sizes)}Q", len(sizes), *sizes)
    return _MAGIC + head + names_bytes(names) + body


def is_shared(value: Any) -> bool:
    """Whether ``value`` is what :func:`dumps` made."""
    return isinstance(value, bytes) and value.startswith(_MAGIC)


def loads(blob: bytes) -> Any:
    """The value :func:`dumps` pickled, its large buffers mapped from their segments (which
    are then gone from the folder); raises ``OSError`` where one cannot be opened."""
    view = memoryview(blob)[len(_MAGIC) :]
    (count,) = struct.unpack_from("<I", view)
    sizes = struct.unpack_from(f"<{count}Q", view, 4)
    offset = 4 + 8 * count
    buffers = []
    for size in sizes:
        name, offset = name_at(view, offset)
        buffers.append(open_segment(name, size))
    return pickle.loads(view[offset:], buffers=buffers)


#: the start of what :func:`dumps` makes (a pickle of protocol 2 or more starts with 0x80)
_MAGIC = b"DGSHM1"
_NAME = struct.Struct("64s")


def names_bytes(names: Iterable[str]) -> bytes:
    """Segments' names as a message's head carries them (64 bytes each; see :func:`name_at`).

    >>> name_at(names_bytes(["a", "bc"]), 64)
    ('bc', 128)
    """
    return b"".join(_NAME.pack(name.encode()) for name in names)


def name_at(head: Any, offset: int) -> tuple[str, int]:
    """The segment name :func:`names_bytes` wrote at ``offset`` of ``head``, and the offset
    after it."""
    return _NAME.unpack_from(head, offset)[0].rstrip(b"\0").decode(), offset + _NAME.size


#: seconds after which a segment :func:`dumps` made and nobody opened counts as lost (its
#: message's receiver opens it on arrival: this is a message lost with its connection)
UNCLAIMED_AFTER = 60.0
_UNCLAIMED: deque[tuple[float, str]] = deque()


def _release_unclaimed() -> None:
    """Remove this process's segments of :func:`dumps` older than :data:`UNCLAIMED_AFTER`
    (a segment its receiver opened is gone already: nothing happens to it)."""
    now, old = time.monotonic(), []
    with _COUNTS_LOCK:
        while _UNCLAIMED and now - _UNCLAIMED[0][0] > UNCLAIMED_AFTER:
            old.append(_UNCLAIMED.popleft()[1])
    release(old)


def open_segment(name: str, nbytes: int, folder: str = SHARED_FOLDER) -> memoryview:
    """The segment ``name`` (``nbytes`` long) mapped, writable, its name removed at once
    (nobody else can open it) and its descriptor closed (only the mapping is kept: freed
    with the last reference to the returned view); raises ``OSError`` where there is no
    such segment or it is not ``nbytes`` long, and ``ValueError`` for a name that is not a
    segment's."""
    if _SEGMENT_NAME.match(name) is None:
        raise ValueError(f"{name!r} is not the name of a daskgraph shared segment")
    path = os.path.join(folder, name)
    fd = os.open(path, os.O_RDWR | os.O_CLOEXEC | os.O_NOFOLLOW)
    try:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        size = os.fstat(fd).st_size
        if size != nbytes or nbytes <= 0:
            raise OSError(f"shared segment {name} holds {size} bytes, the message said {nbytes}")
        mapped = _map(fd, nbytes)
    finally:
        os.close(fd)
    _count(("shared in", 1), ("shared bytes in", nbytes))
    return mapped


def _map(fd: int, nbytes: int) -> memoryview:
    """``fd``'s first ``nbytes`` mapped shared and writable, page tables filled at once
    (``MAP_POPULATE``), as a view that unmaps them when its last reference goes.
    (``mmap.mmap`` keeps a duplicate of the descriptor open for as long as the map lives
    before Python 3.13: one descriptor a received array.)"""
    flags = mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0)
    address = _LIBC.mmap(None, nbytes, mmap.PROT_READ | mmap.PROT_WRITE, flags, fd, 0)
    if address is None or address == _MAP_FAILED:
        error = ctypes.get_errno()
        raise OSError(error, f"mapping a shared segment failed: {os.strerror(error)}")
    mapping = type("SharedSegment", (ctypes.c_char * nbytes,), {"__del__": _unmap})
    return memoryview(mapping.from_address(address)).cast("B")


def _unmap(mapped: ctypes.Array) -> None:
    _LIBC.munmap(ctypes.addressof(mapped), ctypes.sizeof(mapped))


_LIBC = ctypes.CDLL(None, use_errno=True)
_LIBC.mmap.restype = ctypes.c_void_p
_LIBC.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                       ctypes.c_int, ctypes.c_long]  # fmt: skip
_LIBC.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_MAP_FAILED = ctypes.c_void_p(-1).value


def release(names: Iterable[str], folder: str = SHARED_FOLDER) -> None:
    """Remove the segments ``names`` this process made where their receiver has not (it
    never read the message); a segment already opened is gone by then and left alone.

    >>> release(["daskgraph-shm-not-there"])
    """
    for name in names:
        with contextlib.suppress(OSError):
            os.unlink(os.path.join(folder, name))


def sweep_segments(folder: str = SHARED_FOLDER) -> list[str]:
    """Remove the segments in ``folder`` that this user owns, this machine's processes
    made, and whose process is gone (died before they were read or released); return their
    names. A segment of a live process, of another user or of another machine is left alone.

    >>> sweep_segments("/nonexistent-folder")
    []
    """
    removed = []
    for path in leftovers(folder, _SEGMENT_NAME, stat.S_ISREG):
        with contextlib.suppress(OSError):
            os.unlink(path)
            removed.append(os.path.basename(path))
    return removed


def _count(*pairs: tuple[str, int]) -> None:
    with _COUNTS_LOCK:
        for key, n in pairs:
            COUNTS[key] += n
