"""The slot optimizers' updates in place: a variable and its slots rewritten in one pass.

An optimizer's update (``ApplyAdam``, ``ApplyMomentum``, ``ApplyRMSProp``,
``ApplyCenteredRMSProp``, ``ApplyAdagrad``, ``ApplyGradientDescent``) reads the gradient, the
variable and its slots and writes the variable and its slots. Op by op in NumPy it makes
about a dozen passes over memory and allocates an array for each; here it is one loop
(:mod:`daskgraph.kernels.slot_loops`, compiled by Numba) that writes the new values over the
old ones, as TensorFlow's kernels do.

**Who else holds the buffer.** The variable store replaces a value, and hands out its
values without a lock, so an update may overwrite a buffer only where nothing else holds it:
:meth:`~daskgraph.runtime.worker.worker_state.VariableStore.claim` gives the buffer of a
variable only when the store's read-only view is referenced by nothing but the store, its
base array owns its memory, is writeable, and is referenced by nothing but that view
(CPython's reference counts, as NumPy's own elision of temporaries reads them). A fetched
value, a read of the variable that a later op or another partition of the run still holds,
a value on its way to another process (its frames reference the array), a NumPy view of the
buffer, a feed or a constant the variable was assigned from: each holds a reference, and the
update then writes a new copy of that value (the old one stays as it was; the copy is the
store's alone, so the next update is in place again). A buffer from shared memory
or from an unpickled frame does not own its memory: never written either. While a buffer is
claimed, a read of the variable from another thread waits for the update to end.

**One pass, on the worker's threads.** Large arrays
(:data:`~daskgraph.kernels.fused.PARALLEL_ELEMENTS` or more) are updated in pieces on as many
threads as the worker has (:func:`~daskgraph.kernels.split_loops.run_split`, as fused chains
are): each element's update reads and writes that element alone, so a piece gives the bits
the whole loop gives there. A loop takes each array once and writes it in place: an array
passed as both input and output overlaps itself, and LLVM's vector loop (it checks overlaps
at run time) gave way to the scalar one, 2.5 times slower (Adagrad, 10M float32).

**Rent, then buy.** The loops compile on a background thread
(:class:`~daskgraph.kernels.compile_thread.CompileThread`) the first time an update of their
kind is met, and are loaded from Numba's on-disk cache in a later process: a run never waits
for them. Until the loop is there, the arrays are updated in place by NumPy's ufuncs
(``out=``, one temporary or two). Small arrays (under
:data:`~daskgraph.kernels.fused.SMALL_ELEMENTS` elements) are updated op by op.

**Bit for bit.** The loops and the ufuncs compute the unfused NumPy ops of
:mod:`daskgraph.kernels.training`, in their order and their dtype (float32 or float64; other
dtypes take NumPy's op by op), without fast math: the result is the unfused one's, bit for bit.

>>> import numpy as np
>>> from daskgraph.runtime.worker.worker_state import VariableStore
>>> store = VariableStore()
>>> store.assign("w", np.ones(1 << 14)); store.assign("w/accum", np.zeros(1 << 14))
>>> address = store.read("w").ctypes.data  # (an int: holding the array would stop it)
>>> new = update(store, "adagrad", ("w", "w/accum"), np.full(1 << 14, 2.0), (np.float64(0.5),))
>>> new[:2].tolist(), store.read("w/accum")[:2].tolist(), new.ctypes.data == address
([0.5, 0.5], [4.0, 4.0], True)
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import numpy as np

from daskgraph.kernels.compile_thread import Builds, CompileThread
from daskgraph.kernels.fused import PARALLEL_ELEMENTS, SMALL_ELEMENTS
from daskgraph.kernels.kernel_threads import kernel_threads
from daskgraph.kernels.split_loops import run_split

__all__ = ["KINDS", "compile_now", "settle", "update"]

logger = logging.getLogger("daskgraph.kernels.slot_updates")

#: the dtypes the loops are compiled for
DTYPES = frozenset({np.dtype(np.float32), np.dtype(np.float64)})


# -- NumPy's ufuncs into outputs (the inputs themselves: in place), the unfused ops' order ----
def _gradient_descent(var, grad, alpha, var_out):
    t = np.multiply(alpha, grad)
    np.subtract(var, t, out=var_out)


def _momentum(var, accum, grad, lr, mom, var_out, accum_out):
    np.multiply(accum, mom, out=accum_out)
    np.add(accum_out, grad, out=accum_out)
    t = np.multiply(lr, accum_out)
    np.subtract(var, t, out=var_out)


def _momentum_nesterov(var, accum, grad, lr, mom, var_out, accum_out):
    np.multiply(accum, mom, out=accum_out)
    np.add(accum_out, grad, out=accum_out)
    t = np.multiply(accum_out, mom)
    np.multiply(t, lr, out=t)
    np.add(np.multiply(grad, lr), t, out=t)
    np.subtract(var, t, out=var_out)


def _adam_moments(m, v, grad, c1, c2, m_out, v_out):
    t = np.subtract(grad, m)
    np.multiply(t, c1, out=t)
    np.add(m, t, out=m_out)
    np.multiply(grad, grad, out=t)
    np.subtract(t, v, out=t)
    np.multiply(t, c2, out=t)
    np.add(v, t, out=v_out)
    return t


def _adam(var, m, v, grad, lr_t, c1, c2, eps, var_out, m_out, v_out):
    t = _adam_moments(m, v, grad, c1, c2, m_out, v_out)
    s = np.multiply(m_out, lr_t)
    np.sqrt(v_out, out=t)
    np.add(t, eps, out=t)
    np.divide(s, t, out=s)
    np.subtract(var, s, out=var_out)


def _adam_nesterov(var, m, v, grad, lr_t, beta1, c1, c2, eps, var_out, m_out, v_out):
    t = _adam_moments(m, v, grad, c1, c2, m_out, v_out)
    s = np.multiply(m_out, beta1)
    np.add(s, np.multiply(c1, grad, out=t), out=s)
    np.multiply(s, lr_t, out=s)
    np.sqrt(v_out, out=t)
    np.add(t, eps, out=t)
    np.divide(s, t, out=s)
    np.subtract(var, s, out=var_out)


def _adagrad(var, accum, grad, lr, var_out, accum_out):
    t = np.multiply(grad, grad)
    np.add(accum, t, out=accum_out)
    np.multiply(grad, lr, out=t)
    np.divide(t, np.sqrt(accum_out), out=t)
    np.subtract(var, t, out=var_out)


def _mean_square(ms, grad, c_rho, ms_out):
    t = np.multiply(grad, grad)
    np.subtract(t, ms, out=t)
    np.multiply(t, c_rho, out=t)
    np.add(ms, t, out=ms_out)
    return t


def _momentum_step(mom, grad, lr, momentum, t, mom_out):
    """``mom * momentum + (grad * lr) / sqrt(t)`` into ``mom_out`` (``t`` is overwritten)."""
    np.sqrt(t, out=t)
    np.divide(np.multiply(grad, lr), t, out=t)
    np.multiply(mom, momentum, out=mom_out)
    np.add(mom_out, t, out=mom_out)


def _rms_prop(var, ms, mom, grad, lr, c_rho, momentum, eps, var_out, ms_out, mom_out):
    t = _mean_square(ms, grad, c_rho, ms_out)
    np.add(ms_out, eps, out=t)
    _momentum_step(mom, grad, lr, momentum, t, mom_out)
    np.subtract(var, mom_out, out=var_out)


def _centered_rms_prop(
    var, mg, ms, mom, grad, lr, c_rho, momentum, eps, var_out, mg_out, ms_out, mom_out
):
    t = _mean_square(ms, grad, c_rho, ms_out)
    np.subtract(grad, mg, out=t)
    np.multiply(t, c_rho, out=t)
    np.add(mg, t, out=mg_out)
    np.multiply(mg_out, mg_out, out=t)
    np.subtract(ms_out, t, out=t)
    np.add(t, eps, out=t)
    _momentum_step(mom, grad, lr, momentum, t, mom_out)
    np.subtract(var, mom_out, out=var_out)


#: the updates by name: (NumPy's version, called ``(*inputs, *outputs)``, how many arrays it
#: updates); the compiled loop of the same name is :mod:`daskgraph.kernels.slot_loops`', called
#: ``(*arrays, grad, *scalars)`` and updating the arrays in place
KINDS: dict[str, tuple[Callable[..., None], int]] = {
    "gradient_descent": (_gradient_descent, 1),
    "momentum": (_momentum, 2),
    "momentum_nesterov": (_momentum_nesterov, 2),
    "adam": (_adam, 3),
    "adam_nesterov": (_adam_nesterov, 3),
    "adagrad": (_adagrad, 2),
    "rms_prop": (_rms_prop, 3),
    "centered_rms_prop": (_centered_rms_prop, 4),
}


def _with_ufuncs(kind: str) -> Callable[..., None]:
    """NumPy's version of ``kind``, called as its loop is: ``(*arrays, grad, *scalars)``,
    writing the arrays in place."""
    update, n = KINDS[kind]

    def in_place(*args: Any) -> None:
        update(*args, *args[:n])

    return in_place


class _Loops:
    """The compiled loops, by (kind, dtype, which inputs are read-only): rent or buy (see
    the module). Compiled on one background thread, which process exit does not wait for."""

    def __init__(self) -> None:
        self._builds = Builds(CompileThread("daskgraph-slot-updates"))

    def lookup(self, key: tuple) -> Any:
        """The loop of ``key``, or None (queued for compilation the first time it is asked)."""
        if self._builds.known(key):
            return self._builds.get(key)
        if self._builds.claim(key):
            self._builds.thread.submit(self.build, key)
        return None

    def build(self, key: tuple) -> Any:
        """Compile (or load from Numba's cache) the loop of ``key`` in this thread."""
        return self._builds.make(key, lambda: _compiled(*key), ("slot update", *key))

    def settle(self, timeout: float) -> None:
        """Wait until the compilations queued so far are done."""
        self._builds.settle(timeout)


def _compiled(kind: str, dtype: np.dtype, grad_readonly: bool) -> Any:
    """The loop of ``kind`` compiled for ``dtype``: the arrays it updates (writeable), the
    gradient (read-only where ``grad_readonly``), then the scalars."""
    import numba  # (imported on the compiling thread, the first time)

    from daskgraph.kernels import slot_loops

    loop = getattr(slot_loops, kind)
    scalar = numba.from_dtype(dtype)
    n = KINDS[kind][1]
    arrays = [numba.types.Array(scalar, 1, "C")] * n
    grad = numba.types.Array(scalar, 1, "C", readonly=grad_readonly)
    n_scalars = loop.py_func.__code__.co_argcount - n - 1
    loop.compile((*arrays, grad, *[scalar] * n_scalars))
    return loop


_LOOPS = _Loops()


def settle(timeout: float = 120.0) -> None:
    """Wait (at most ``timeout`` seconds) until the loops queued for compilation in this
    process are compiled (tests and benchmarks; runs never wait)."""
    _LOOPS.settle(timeout)


def compile_now(kind: str, dtype: Any, grad_readonly: bool = False) -> Any:
    """The compiled loop of ``kind`` for ``dtype`` (and a read-only gradient where
    ``grad_readonly``), compiled in this thread if it is not yet; None without Numba."""
    return _LOOPS.build((kind, np.dtype(dtype), grad_readonly))


def update(
    store: Any, kind: str, names: tuple[str, ...], grad: Any, scalars: tuple
) -> np.ndarray | None:
    """Update the variables ``names`` (the variable, then its slots) of ``store`` by the
    update ``kind`` of :data:`KINDS`, in place where their buffers are the store's alone
    (see the module), in new arrays where not; the variable's new value.

    None where the update does not apply (NumPy's ops one by one then run instead): a
    gradient or value not a C-contiguous float32 or float64 array of the variable's shape
    and dtype, a scalar that is not a NumPy scalar of that dtype, a variable named twice,
    or an array under :data:`~daskgraph.kernels.fused.SMALL_ELEMENTS` elements (there NumPy's
    calls cost less than the claims and the loop's call; measured 23 us against 44 us for
    Adam over 64 float32 elements).
    """
    dtype = getattr(grad, "dtype", None)
    if (
        type(grad) is not np.ndarray
        or grad.size < SMALL_ELEMENTS  # (NumPy's calls cost less than the claims and the call)
        or dtype not in DTYPES
        or not grad.flags.c_contiguous
        or len(set(names)) != len(names)
        or any(getattr(s, "dtype", None) != dtype or np.ndim(s) for s in scalars)
    ):
        return None
    scalars = tuple(dtype.type(s) for s in scalars)
    claimed: list[str] = []
    try:
        arrays = _arrays(store, names, grad, claimed)
        if arrays is None:
            return None
        key = (kind, dtype, not grad.flags.writeable)
        loop = _LOOPS.lookup(key) or _with_ufuncs(kind)
        _run(loop, arrays, (grad.reshape(-1), *scalars))
    finally:
        for name in claimed:
            store.release(name)
    for name, array in zip(names, arrays, strict=True):
        if name not in claimed:
            store.assign(name, array.reshape(grad.shape))
    return store.read(names[0])


def _run(loop: Callable[..., None], arrays: list[np.ndarray], inputs: tuple) -> None:
    """``loop(*arrays, *inputs)``, in pieces on the worker's threads for a large array
    (:func:`~daskgraph.kernels.split_loops.run_split`, which slices the first array as its
    ``out``, and the other arrays)."""
    threads = kernel_threads()
    if threads < 2 or arrays[0].size < PARALLEL_ELEMENTS:
        loop(*arrays, *inputs)
    else:
        run_split(loop, arrays[0], (*arrays[1:], *inputs), threads)


def _arrays(
    store: Any, names: tuple[str, ...], grad: np.ndarray, claimed: list[str]
) -> list[np.ndarray] | None:
    """The arrays the update writes, flat: the buffer of each of ``names`` claimed from the
    store (its name appended to ``claimed``), else a new copy of its value; None where a value
    is not an array of the gradient's shape and dtype."""
    arrays = []
    for name in names:
        buffer = store.claim(name)
        if buffer is not None:
            claimed.append(name)
            value = buffer
        else:
            value = store.read(name)
        if (
            type(value) is not np.ndarray
            or value.dtype != grad.dtype
            or value.shape != grad.shape
            or not value.flags.c_contiguous
        ):
            return None
        arrays.append(value.reshape(-1) if buffer is not None else value.flatten())
    return arrays
