"""A compile server: kernels compiled in a process of their own, into the kernel cache.

Its one job is compiling kernel modules where a busy run loop cannot starve the compiler of
the GIL (``daskgraph.compile-process: true``; off by default, see ``daskgraph.yaml``: on a
2-core machine a thread of the run's process was as fast, loading needing Numba ready in that
process anyway). The server is a child process (:func:`main` of this very daskgraph, started by
``subprocess`` on first need: a daemonic
process, as Dask's nanny makes its workers, may not have ``multiprocessing`` children, but
may start a program) that reads one request a line on its stdin, a kernel module's text
and the cache folder, compiles it there with :func:`~daskgraph.kernels.kernel_cache.load_module`
(Numba saving its cache files), and answers a line on its stdout. The asking process then
loads the module from the cache, which takes milliseconds of its GIL.

The server ends when its parent does: at the parent's exit it is killed, and should the
parent die without that, the end of its stdin ends it (after the compile it is doing).
Ctrl-C in a terminal reaches the whole process group; the server ignores it and ends with its
parent.

>>> server = CompileServer()
>>> server.running
False
"""

from __future__ import annotations

import atexit
import json
import os
import pathlib
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from typing import Any

from daskgraph.kernels.kernel_cache import COUNTS, load_module

__all__ = ["SERVER", "CompileServer", "compile_elsewhere", "main"]


class CompileServer:
    """A compile server process, started on the first :meth:`compile` (one per process that
    asks: a child forked after it starts its own)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._proc: subprocess.Popen | None = None
        self._pid = 0  # the process that started _proc
        self.broken = False  # set once the server could not start or died: compile here
        self.started = 0  # servers started by this process (tests)

    @property
    def running(self) -> bool:
        """Whether this process's server is up."""
        proc = self._proc
        return proc is not None and self._pid == os.getpid() and proc.poll() is None

    def start(self) -> None:
        """Start the server now (it takes a second to import Numba), where it is not up;
        errors are left to :meth:`compile`."""
        with self._lock:
            try:
                self._running()
            except OSError:
                pass

    def compile(
        self, source: str, folder: pathlib.Path, meanwhile: Callable[[], Any] | None = None
    ) -> bool:
        """Have the server compile ``source`` into the cache folder ``folder`` (calling
        ``meanwhile()`` here while it does); whether it did (False: it could not compile it,
        a chain Numba cannot type). Raises ``OSError`` where there is no server (it cannot
        start, or died): then compile in this process."""
        request = json.dumps({"source": source, "folder": str(folder)}) + "\n"
        with self._lock:  # (one request at a time: the server answers in order)
            proc = self._running()
            try:
                assert proc.stdin is not None and proc.stdout is not None  # (both pipes)
                proc.stdin.write(request)
                proc.stdin.flush()
                if meanwhile is not None:
                    meanwhile()
                line = proc.stdout.readline()
            except (OSError, ValueError) as exc:
                line = ""
                error: Exception | None = exc
            else:
                error = None
            if not line:
                self.broken = True
                self._stop()
                raise OSError(f"daskgraph's compile server ended: {error or 'no answer'}")
        reply = json.loads(line)
        COUNTS["compiled"] += int(reply.get("compiled", 0))  # (under this server's lock)
        COUNTS["compiled elsewhere"] += int(reply.get("compiled", 0))
        return bool(reply.get("ok"))

    def _running(self) -> subprocess.Popen:
        if self.broken:
            raise OSError("daskgraph's compile server could not run earlier")
        if self.running:
            assert self._proc is not None  # (running says so)
            return self._proc
        try:
            self._proc = subprocess.Popen(
                [sys.executable, "-c", _START, str(pathlib.Path(__file__).resolve().parents[2])],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
                bufsize=1,
            )
        except OSError:
            self.broken = True
            raise
        self._pid = os.getpid()
        self.started += 1
        return self._proc

    def _stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None and self._pid == os.getpid():
            proc.kill()
            proc.wait(timeout=10)

    def close(self) -> None:
        """End the server (at exit: whatever it is compiling is dropped)."""
        if self._lock.acquire(timeout=0.1):  # (a compile thread waiting on it is abandoned)
            try:
                self._stop()
            finally:
                self._lock.release()
        elif self._proc is not None and self._pid == os.getpid():
            self._proc.kill()
            try:  # (reaped: no zombie left to a container's init that reaps none)
                self._proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                pass


#: the server's program: this very daskgraph first on its path (not one the working
#: folder or the environment would find first), then :func:`main`
_START = (
    "import sys; sys.path.insert(0, sys.argv[1]); "
    "from daskgraph.kernels.compile_server import main; main()"
)

SERVER = CompileServer()
atexit.register(SERVER.close)


def compile_elsewhere(
    source: str, folder: pathlib.Path, meanwhile: Callable[[], Any] | None = None
) -> bool:
    """Compile the kernel module ``source`` into the cache folder ``folder`` in this
    process's compile server (see the module), calling ``meanwhile()`` here while it does;
    whether it compiled. Raises ``OSError`` where the server cannot run."""
    return SERVER.compile(source, folder, meanwhile)


def main() -> None:
    """The server's loop: a request a line on stdin, an answer a line on stdout."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    answers = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # (what compiling prints goes to stderr, not into the answers)
    for line in sys.stdin:
        request: dict[str, Any] = json.loads(line)
        before = COUNTS["compiled"]
        try:
            module = load_module(request["source"], "server", pathlib.Path(request["folder"]))
            reply = {"ok": True, "cached": bool(module.CACHE)}
            reply["compiled"] = COUNTS["compiled"] - before
        except Exception as exc:  # (a chain Numba cannot type: the asker runs it op by op)
            reply = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
        answers.write(json.dumps(reply) + "\n")
        answers.flush()


if __name__ == "__main__":
    main()
