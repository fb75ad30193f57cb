"""A flat elementwise loop over a large array, split into contiguous pieces run on threads.

A fused chain's compiled loop (:mod:`daskgraph.kernels.fused`) is ``loop(out, *inputs)``
over 1-d arrays of one size (and scalars), each element computed from the same element of
its inputs alone. Run on a piece ``[start, stop)`` of every array, it computes that piece of
``out``, the same bits as the whole loop would there. :func:`run_split` runs the loop so, on
at most ``threads`` threads: the calling thread and up to ``threads - 1`` helpers from one
pool shared by the process. The loop is compiled ``nogil`` (it holds no GIL while it runs), so
its pieces run at once.

* **One compiled loop.** The same serial loop serves small and large arrays: no second,
  parallel variant to compile (Numba's ``prange`` variant of a 30-op chain cost 3.5 s more),
  and no thread pool of Numba's (of every core, whatever the worker's threads; its default
  layer must not be entered from two threads at once, so its calls took a process-wide lock).
* **Callers do not wait for each other.** Pieces are claimed one at a time from the call's
  own counter, by the caller and by whichever helpers start; the caller claims pieces until
  none is left, then waits only for the pieces that helpers have claimed and are running. No
  lock is held while a loop runs, so several workers of one process (the embedded cluster's)
  split their loops at the same time; a busy pool slows a call (the caller runs more of its
  pieces itself) but never stops it.
* **Pieces.** :data:`PIECES_PER_THREAD` piece per thread (so a call makes at most
  ``threads`` pieces), of at least :data:`PIECE_ELEMENTS` elements, starting at multiples of
  :data:`ALIGN` elements; a helper that has not started when the caller is done with its own
  piece leaves its piece to the caller (a busy pool costs the split, not the call).
  Measured on the *fusion* benchmark's 64 MiB, 30-op chain (a 2-core VM under a load of 11):
  1, 2, 4 and 8 pieces a thread within the noise of each other (52-58 ms medians).

>>> import numpy as np
>>> def loop(out, x, s):  # (any loop(out, *inputs); a compiled one holds no GIL)
...     np.multiply(x, s, out=out)
>>> x = np.arange(10, dtype=np.float32)
>>> out = np.empty_like(x)
>>> run_split(loop, out, (x, np.float32(2)), threads=3, piece=4)
>>> out[[0, 4, 9]]
array([ 0.,  8., 18.], dtype=float32)
>>> bounds(1000, threads=3, piece=200)
((0, 384), (384, 768), (768, 1000))
"""

from __future__ import annotations

import itertools
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

__all__ = ["ALIGN", "PIECES_PER_THREAD", "PIECE_ELEMENTS", "bounds", "run_split"]

#: pieces a split call makes per thread it may use (see the module)
PIECES_PER_THREAD = 1
#: the fewest elements of a piece: a call of a compiled loop and the hand-off of a piece cost
#: microseconds, a piece of 256 Ki elements a hundred or more
PIECE_ELEMENTS = 1 << 18
#: pieces start at multiples of this many elements (64-byte cache lines of any dtype)
ALIGN = 64


def bounds(size: int, threads: int, piece: int = PIECE_ELEMENTS) -> tuple[tuple[int, int], ...]:
    """The pieces ``(start, stop)`` that a call over ``size`` elements on ``threads`` threads
    splits into: :data:`PIECES_PER_THREAD` per thread, each at least ``piece`` elements (one
    piece for fewer), starting at multiples of :data:`ALIGN`.

    >>> bounds(1000, threads=4, piece=1000)
    ((0, 1000),)
    >>> len(bounds(16 << 20, threads=2)), len(bounds(16 << 20, threads=128))
    (2, 64)
    """
    count = min(threads * PIECES_PER_THREAD, size // max(1, piece))
    if count <= 1:
        return ((0, size),)
    per_piece = -(-size // count)  # (rounded up, then up to a multiple of ALIGN)
    step = -(-per_piece // ALIGN) * ALIGN
    return tuple((start, min(start + step, size)) for start in range(0, size, step))


def run_split(
    loop: Callable[..., Any],
    out: np.ndarray,
    inputs: tuple,
    threads: int,
    piece: int = PIECE_ELEMENTS,
) -> None:
    """``loop(out, *inputs)`` piece by piece (:func:`bounds`) on at most ``threads`` threads:
    this one and helpers from the process's pool (see the module). ``out`` and the array
    inputs are 1-d arrays of one size, the other inputs scalars (passed to every piece as
    they are). An exception of a piece is raised here once the call's pieces are done.

    >>> seen = set()
    >>> def loop(out, x):
    ...     seen.add(threading.get_ident())
    ...     np.negative(x, out=out)
    >>> out = np.empty(100, np.float64)
    >>> run_split(loop, out, (np.ones(100),), threads=1, piece=10)
    >>> seen == {threading.get_ident()}, float(out.sum())
    (True, -100.0)
    """
    pieces = bounds(out.size, threads, piece)
    call = _SplitCall(loop, out, inputs, pieces)
    for _ in range(min(threads, len(pieces)) - 1):
        _pool().submit(call.work)
    call.work()
    call.wait()


class _SplitCall:
    """One split call: its pieces, claimed one at a time by the threads that work on it."""

    __slots__ = ("_claims", "_done", "_left", "_lock", "error", "inputs", "loop", "out", "pieces")

    def __init__(
        self, loop: Callable[..., Any], out: np.ndarray, inputs: tuple, pieces: tuple
    ) -> None:
        self.loop, self.out, self.pieces = loop, out, pieces
        self.inputs = [(x, isinstance(x, np.ndarray) and x.ndim > 0) for x in inputs]
        self.error: BaseException | None = None
        self._claims = itertools.count()  # (next() on it is atomic)
        self._left = len(pieces)
        self._lock = threading.Lock()
        self._done = threading.Event()

    def work(self) -> None:
        """Run pieces not yet claimed until none is left."""
        n = len(self.pieces)
        while (i := next(self._claims)) < n:
            start, stop = self.pieces[i]
            try:
                args = [x[start:stop] if array else x for x, array in self.inputs]
                self.loop(self.out[start:stop], *args)
            except BaseException as exc:  # (raised by the caller, in wait)
                self.error = self.error or exc
            with self._lock:
                self._left -= 1
                if not self._left:
                    self._done.set()

    def wait(self) -> None:
        """Wait until every piece ran (the caller claimed the last ones: no piece waits for
        a helper to start); raise the first piece's exception."""
        self._done.wait()
        if self.error is not None:
            raise self.error


_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


def _pool() -> ThreadPoolExecutor:
    """The process's helper threads (made on first use): as many as its cores, shared by
    every split call (a call asks at most ``threads - 1`` of them)."""
    global _POOL
    if _POOL is None:
        with _POOL_LOCK:
            if _POOL is None:
                _POOL = ThreadPoolExecutor(os.cpu_count() or 1, "daskgraph-split")
    return _POOL


def _forget_pool() -> None:
    """In a forked child: the parent's pool threads are not there (a new one on first use)."""
    global _POOL, _POOL_LOCK
    _POOL, _POOL_LOCK = None, threading.Lock()


os.register_at_fork(after_in_child=_forget_pool)
