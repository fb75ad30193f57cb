"""How many threads a kernel may use from the calling thread: its worker's thread count.

A Dask worker runs its tasks on ``nthreads`` threads (``Worker.executors["default"]``), and a
daskgraph worker stands for one device: a kernel that splits its work over threads (a fused
chain over a large array, :mod:`daskgraph.kernels.split_loops`) may use as many threads as
the worker that runs it has, and no more, whatever the machine's cores. The thread that runs a
partition is not always one of the worker's own: the in-process path runs a partition of a
worker of the client's process in the client's calling thread
(:mod:`daskgraph.runtime.client.inprocess`), and that process may hold several workers (the
embedded cluster's CPU worker beside thread workers), each with its own count. So the count
is not a property of the process or of the thread but of the partition run: the worker
runtime sets it around each run (:func:`~daskgraph.runtime.worker.execution.run_partition`,
from the worker's ``nthreads``) with :func:`threads_for`, a context variable, which also keeps
a partition run inline on a worker's event loop (an ``asyncio`` task) from leaking its count
to the loop's other tasks. (This package imports no runtime: the runtime sets the count.)

**Outside a worker** (a kernel called directly, by a test or a user's own code, or a Dask task
of Dask's threaded scheduler) the count is :data:`UNSIZED`, one: no one said how many cores
such a thread may take, and it may well be one of many threads calling kernels at once (Dask's
threaded scheduler runs one per core), where each taking every core would multiply the
process's threads by the cores. One thread is what NumPy's own loops use.

>>> kernel_threads()
1
>>> with threads_for(4):
...     kernel_threads()
4
>>> with threads_for(None):  # (a worker whose count is not known: as outside a worker)
...     kernel_threads()
1
>>> kernel_threads()
1
"""

from __future__ import annotations

import contextvars

__all__ = ["UNSIZED", "kernel_threads", "threads_for"]

#: the threads a kernel may use from a thread that no worker runtime sized (see the module)
UNSIZED = 1

_THREADS: contextvars.ContextVar[int] = contextvars.ContextVar("daskgraph_kernel_threads")


def kernel_threads() -> int:
    """How many threads a kernel called now, from this thread (and ``asyncio`` task), may use:
    the count of the worker whose partition runs here, else :data:`UNSIZED`.

    >>> with threads_for(2):
    ...     kernel_threads()
    2
    """
    return _THREADS.get(UNSIZED)


class threads_for:
    """Let the kernels called inside the block use ``threads`` threads (at least one); None
    leaves the count as it is (a worker whose thread count is not known). A class, not a
    generator: it is entered around every partition run (a fraction of a microsecond).

    >>> with threads_for(0):
    ...     kernel_threads()
    1
    """

    __slots__ = ("_threads", "_token")

    def __init__(self, threads: int | None) -> None:
        self._threads = None if threads is None else max(1, int(threads))
        self._token: contextvars.Token[int] | None = None

    def __enter__(self) -> None:
        if self._threads is not None:
            self._token = _THREADS.set(self._threads)

    def __exit__(self, *exc: object) -> None:
        if self._token is not None:
            _THREADS.reset(self._token)
            self._token = None
