"""BLAS threads per matrix product: one for a small product, all of them for a large one.

NumPy's BLAS (OpenBLAS in its wheels) splits every product above a few hundred thousand
multiply-adds over all its threads, in fixed shares, and the calling thread waits for every
share. A product of a few million multiply-adds (a 256x64 by 64x128 layer of a small model)
takes tens of microseconds; when another process holds the second core, the calling thread
waits for the OS to give the BLAS thread a time slice, milliseconds (a one-device MLP step
measured 15-24 ms instead of 0.7 on a shared 2-core machine, where TensorFlow's took 0.5). So
:func:`matmul` runs
a product of at most :data:`SMALL_PRODUCT` multiply-adds with one BLAS thread, and larger ones
with the threads BLAS has (the worker's, as configured). A small product's result is then the
one BLAS gives with one thread, whatever the machine's cores: mostly the same bits as a split
product (BLAS splits most products by blocks of the output), but not always (OpenBLAS splits
some along their inner dimension, and sums the parts in another order: the last bits differ).

The thread count of OpenBLAS (built with pthreads, as in NumPy's wheels) is one number for the
whole process, so products of several threads coordinate through one lock: a small product
lowers the count only when no other product of these kernels is under way (it runs unchanged
otherwise), puts it back when done, and a large product waits for a small one under way to
finish (microseconds) so that it starts with every thread. Products outside these kernels
(user code in other threads) are not coordinated: one that starts while a small product here
holds the count at one runs single-threaded.

Libraries are found through ``threadpoolctl`` (OpenBLAS, MKL, BLIS), once, on the first small
product, and set by its controllers, or for OpenBLAS on pthreads by OpenBLAS's own two
functions (see :func:`_knob`); with none found, or BLAS already at one thread (Dask's nanny
starts workers with ``OPENBLAS_NUM_THREADS=1``, a user may hold a ``threadpool_limits``),
products run as they are. Other array modules (CuPy) are called directly.

>>> a = np.ones((256, 64), np.float32)
>>> b = np.ones((64, 128), np.float32)
>>> out = matmul(np, a, b)
>>> out.shape, float(out[0, 0])
((256, 128), 64.0)
>>> product_size(a, b)
2097152
"""

from __future__ import annotations

import itertools
import os
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["LARGEST_UNSPLIT", "SMALL_PRODUCT", "BlasThreads", "matmul", "product_size"]

#: multiply-adds (M*N*K of one matrix of the product) up to which a product runs with one BLAS
#: thread: about 0.3 ms on one core, where waiting for a second one can cost milliseconds
SMALL_PRODUCT = 1 << 24

#: multiply-adds up to which BLAS libraries use one thread anyway (OpenBLAS: 262,144): these
#: products are left as they are, saving the two thread-count calls
LARGEST_UNSPLIT = 1 << 16

#: NumPy dtypes whose products BLAS computes (integer products are NumPy's own loops)
_BLAS_TYPES = frozenset(np.dtype(t) for t in ("float32", "float64", "complex64", "complex128"))


def product_size(a: Any, b: Any) -> int:
    """Multiply-adds of one matrix product of ``matmul(a, b)`` (M*K*N; a vector counts as one
    row or column; batches are not counted: BLAS is called once per matrix of a batch).

    >>> product_size(np.ones((8, 3, 4)), np.ones(4))
    12
    """
    rows = a.shape[-2] if a.ndim > 1 else 1
    cols = b.shape[-1] if b.ndim > 1 else 1
    return rows * a.shape[-1] * cols


class BlasThreads:
    """One BLAS thread for small products, and the coordination of the process-wide count.

    ``controllers`` are ``threadpoolctl`` library controllers (``get_num_threads`` and
    ``set_num_threads``); found on first use by default (NumPy's BLAS).

    >>> class Fake:
    ...     threads = 4
    ...     def get_num_threads(self): return self.threads
    ...     def set_num_threads(self, n): self.threads = n
    >>> fake = Fake()
    >>> policy = BlasThreads([fake])
    >>> policy.small(lambda: fake.threads), fake.threads
    (1, 4)
    >>> policy.large(lambda: fake.threads)
    4
    """

    def __init__(self, controllers: list[Any] | None = None) -> None:
        self._knobs = None if controllers is None else [_knob(c) for c in controllers]
        self._lock = threading.Lock()  # held by a small product that changed the count
        self._large = 0  # large products under way (a small one then leaves the count alone)

    def small(self, fn: Callable[[], Any]) -> Any:
        """``fn()`` with one BLAS thread, unless another product is under way (then as is)."""
        if not self._lock.acquire(blocking=False):
            return fn()
        try:
            lowered = () if self._large else self._lower()
            try:
                return fn()
            finally:
                for knob, threads in lowered:
                    knob.set(threads)
        finally:
            self._lock.release()

    def large(self, fn: Callable[[], Any]) -> Any:
        """``fn()`` once no small product holds BLAS at one thread; none lowers it meanwhile."""
        with self._lock:
            self._large += 1
        try:
            return fn()
        finally:
            with self._lock:
                self._large -= 1

    def _lower(self) -> list[tuple[_Knob, int]]:
        """Set every library with more than one thread to one; (library, its count) each."""
        if self._knobs is None:
            self._knobs = [_knob(c) for c in _numpy_blas()]
        lowered = []
        for knob in self._knobs:
            threads = knob.get()
            if threads is not None and threads > 1:
                knob.set(1)
                lowered.append((knob, threads))
        return lowered


class _Knob:
    """One BLAS library's thread count: ``get()`` and ``set(threads)``."""

    __slots__ = ("get", "set")

    def __init__(self, get: Callable[[], Any], set: Callable[[int], Any]) -> None:
        self.get, self.set = get, set


#: how OpenBLAS builds name their functions (``scipy_openblas_get_num_threads64_``), as
#: ``threadpoolctl`` looks them up
_OPENBLAS_AFFIXES = tuple(itertools.product(("", "scipy_"), ("", "64_", "_64")))


def _knob(controller: Any) -> _Knob:
    """The thread count of a ``threadpoolctl`` controller's library. For OpenBLAS on its own
    threads (pthreads, NumPy's wheels), its C functions: ``threadpoolctl`` lets only one live
    thread set a process-wide pool (another thread's call does nothing until that one clears
    it), and a run's products come from whichever thread runs it; its Python layers also cost
    a microsecond a call, three calls a product. Else the controller's own methods."""
    if (
        getattr(controller, "internal_api", None) == "openblas"
        and getattr(controller, "threading_layer", None) == "pthreads"
    ):
        for prefix, suffix in _OPENBLAS_AFFIXES:
            get = getattr(controller.dynlib, f"{prefix}openblas_get_num_threads{suffix}", None)
            put = getattr(controller.dynlib, f"{prefix}openblas_set_num_threads{suffix}", None)
            if get is not None and put is not None:
                return _Knob(get, put)
    return _Knob(controller.get_num_threads, controller.set_num_threads)


def _numpy_blas() -> list[Any]:
    """``threadpoolctl``'s controllers of the BLAS libraries NumPy may call: those loaded from
    NumPy's own directories (its wheels' ``numpy.libs``) if any, else every BLAS loaded."""
    from threadpoolctl import ThreadpoolController

    found = ThreadpoolController().select(user_api="blas").lib_controllers
    numpy_dir = os.path.dirname(np.__file__)  # a prefix of its wheels' numpy.libs too
    own = [c for c in found if str(c.filepath).startswith(numpy_dir)]
    return own or found


#: the process's policy (one BLAS thread count per process)
_POLICY = BlasThreads()


def matmul(xp: Any, a: Any, b: Any) -> Any:
    """``xp.matmul(a, b)``, with one BLAS thread for a small NumPy product (see the module)."""
    if xp is not np or a.dtype not in _BLAS_TYPES or b.dtype not in _BLAS_TYPES:
        return xp.matmul(a, b)
    size = product_size(a, b)
    if size <= LARGEST_UNSPLIT:
        return np.matmul(a, b)
    if size <= SMALL_PRODUCT:
        return _POLICY.small(lambda: np.matmul(a, b))
    return _POLICY.large(lambda: np.matmul(a, b))
