"""A background compiler that process exit never waits for.

Its one job is the thread on which daskgraph compiles what a run would otherwise wait for
(fused chains with Numba, :mod:`daskgraph.kernels.fused`; hot programs as Python,
:mod:`daskgraph.runtime.worker.codegen`). A ``concurrent.futures.ThreadPoolExecutor``
would do, but the interpreter joins its threads at exit: a program that ends while Numba
compiles a long chain waits for it (111 s for a 10,000-op chain, measured), and a compiler
cannot be interrupted. Here the thread is a daemon, registered with nothing: at exit the
jobs not started are dropped (their futures cancelled) and the one running is abandoned
with the thread.

>>> compiler = CompileThread("daskgraph-doctest")
>>> compiler.submit(sum, [1, 2, 3]).result(timeout=30)
6
"""

from __future__ import annotations

import atexit
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

__all__ = ["CompileThread"]

#: set once the interpreter exits: no job starts after that
_EXITING = threading.Event()
atexit.register(_EXITING.set)


class CompileThread:
    """Jobs run one at a time, in order, on a daemon thread started by the first one.

    Parameters
    ----------
    name
        The thread's name (as a traceback or a profiler shows it).
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self._jobs: queue.SimpleQueue[tuple[Future, Callable[..., Any], tuple]] = (
            queue.SimpleQueue()
        )
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def submit(self, fn: Callable[..., Any], *args: Any) -> Future:
        """Run ``fn(*args)`` on the thread; its future (cancelled if the process exits
        before the job starts)."""
        future: Future = Future()
        self._jobs.put((future, fn, args))
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._work, name=self.name, daemon=True)
                self._thread.start()
        return future

    def _work(self) -> None:
        while True:
            future, fn, args = self._jobs.get()
            if _EXITING.is_set():
                future.cancel()
                continue
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(fn(*args))
            except BaseException as exc:  # (the job's caller reads it from the future)
                future.set_exception(exc)
