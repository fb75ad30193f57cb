"""Fused elementwise kernels: a chain of elementwise ops run as one compiled loop.

A partition runs its ops one NumPy call at a time; a chain of small elementwise ops then
pays a call, an allocation and a pass over memory per op. Lowering groups such chains
(:mod:`daskgraph.runtime.planner.fusion`) into one instruction whose kernel is a
:class:`FusedKernel`: the chain as plain data (each step an array function of NumPy's and
where its arguments come from). On NumPy, the chain is compiled by Numba into one loop (a
single loop over the elements, no intermediate arrays) for the dtypes it meets and for
which of its inputs are scalars, once per process. Inputs of one shape (C-contiguous) and
scalars take the loop; other broadcasts run op by op. On CuPy the chain is one
``ElementwiseKernel`` (:mod:`daskgraph.kernels.fused_cuda`), any broadcast included. So
does a short chain over a small array (:func:`worth_a_loop`), where NumPy's calls cost less
than checking and flattening the loop's inputs.

**Numba, not numexpr.** Measured side by side on the 64 MiB, 30-op chain of the *fusion*
benchmark (2-core VM): Numba's compiled loop 11.1 ms, numexpr 2.14's 104.7 ms (both NumPy's
bits). numexpr's virtual machine runs the program block by block, one op at a time; Numba
compiles the whole chain into one loop, with no thread pool of its own to share the cores
with Dask's.

**Threads of the worker.** A loop over :data:`PARALLEL_ELEMENTS` elements or more runs in
contiguous pieces on as many threads as the worker running it has
(:func:`~daskgraph.kernels.kernel_threads.kernel_threads`), by
:func:`~daskgraph.kernels.split_loops.run_split`: the same compiled loop (``nogil``) on each
piece, so the bits are the whole loop's, and no second, ``prange`` variant to compile.

**Rent or buy**, as :mod:`daskgraph.runtime.worker.codegen` does for programs: a kernel's
first call runs the ops one by one, and looks in the kernel cache on a background thread
(:mod:`~daskgraph.kernels.kernel_cache`: a process compiled that loop before, this one loads
it in milliseconds, once Numba is ready in the process: about a second, once); its second
call, where the cache has nothing, has the loop compiled on that thread, into the cache
(``daskgraph.compile-process: true``: in the compile server,
:mod:`~daskgraph.kernels.compile_server`, a process whose GIL the run loop does not share)
and keeps running the ops one by one until the loop is loaded, so a program run twice never
waits for a compiler. A chain that Numba cannot compile (or a process without Numba) keeps
running op by op. A kernel called with inputs like its last call's (a program's next run)
goes straight to the loop that call took, its inputs checked by straight-line code
(:func:`~daskgraph.kernels.fused_again.again_for`).

**Bit for bit.** Only ops whose NumPy results are exactly rounded IEEE operations are fused
(:data:`FUSABLE`: ``+ - * /``, negation, ``abs``, squares, square roots, comparisons and
logical ops, over float32, float64 and bool): each step of the compiled loop computes in the
dtype NumPy's ufunc would give it (``numpy.result_type`` of its inputs), so the fused result
equals the unfused one, bit for bit; a NaN is a NaN in both, its sign and payload bits being
left open by IEEE 754 (the compiler may swap the operands of a commutative op, and x86
returns the first NaN operand).

**Relaxed, under the JIT switches.** TensorFlow 1 programs turn XLA on for a session
(``graph_options.optimizer_options.global_jit_level``) or for the ops of a block
(``tf.xla.experimental.jit_scope()``); there daskgraph also fuses the transcendental functions
(:data:`RELAXED`: ``exp``, ``log``, ``tanh``, ``sin``, ``cos``, ``log1p``, ``expm1``, the
sigmoid), whose compiled results may differ from NumPy's in the last bits, as XLA's differ
from TensorFlow's kernels. A kernel's result stays within :data:`RELAXED_RTOL` of its ops' one
by one: the sigmoid is the kernel's own overflow-free formula (``sigmoid(-100)`` is 3.7e-44,
not 0; subnormals are kept, Numba compiling without fast math), and a transcendental joins a
kernel only where what follows it there keeps its error bounded (:data:`BOUNDED`): one that a
sum, difference or comparison would read runs as NumPy's op (``sigmoid(x) * 2 - 1``), as such
ops would cancel its last bits (``exp(1e-4) - 1`` off by 1e-3). What ops after a kernel make of
its last bits is theirs, as under XLA; and a subnormal transcendental result (float32's
``exp(-98.7)``) may differ from NumPy's in its few bits, which a product that brings it back
to the normal range keeps.

>>> import numpy as np
>>> k = FusedKernel((("m", "multiply", (0, 1)), ("a", "add", (2, 0))), 2)
>>> k(np, np.float32(3.0), np.float32(2.0))  # 3 * 2 + 3
np.float32(9.0)
>>> k.op_names
('m', 'a')
"""

from __future__ import annotations

import functools
import logging
import math
import threading
from typing import Any

import numpy as np

from daskgraph.kernels import compile_server, kernel_cache
from daskgraph.kernels.compile_thread import Builds, CompileThread
from daskgraph.kernels.fusable import DTYPES, KERNELS, expression_of, step_dtypes
from daskgraph.kernels.fused_again import again_for
from daskgraph.kernels.kernel_threads import kernel_threads
from daskgraph.kernels.split_loops import run_split

__all__ = [
    "PARALLEL_ELEMENTS",
    "SMALL_ELEMENTS",
    "FusedKernel",
    "compile_now",
    "settle",
    "worth_a_loop",
]

logger = logging.getLogger("daskgraph.kernels.fused")


class FusedKernel:
    """A chain of elementwise ops as one kernel (see the module).

    Parameters
    ----------
    steps
        ``(op name, NumPy function name, arguments)`` per op, in order; an argument below
        ``n_inputs`` is that input of the kernel, else the result of step
        ``argument - n_inputs``. The last step's result is the kernel's.
    n_inputs
        How many inputs the kernel takes.
    """

    __slots__ = ("_again", "_bound", "_loops", "_text", "least", "n_inputs", "steps")

    def __init__(self, steps: tuple[tuple[str, str, tuple[int, ...]], ...], n_inputs: int):
        self.steps, self.n_inputs = steps, n_inputs
        self._text: str | None = None  # (written when first asked for: see source)
        self._loops: dict[tuple, _Loop] = {}  # this kernel's compiled loops, by input kinds
        self._again: Any = None  # its last call by a loop, for calls like it (again_for)
        self._bound: tuple | None = None  # (array module, each step's function and arguments)
        #: the fewest elements from which the loop beats the ops one by one (:func:`worth_a_loop`)
        self.least = 0 if worth_a_loop(len(steps), n_inputs, 0) else SMALL_ELEMENTS

    @property
    def source(self) -> str:
        """The chain as the body of a loop (what its compiled loops are made from, and keyed
        by); written on first use: a kernel run on small arrays op by op never needs it, and
        lowering a million-op graph made twenty thousand of them."""
        if self._text is None:
            # kernels of one structure (the links of long chains) share one text: written
            # once, and hashed once as their compiled loops' key
            shape = (self.n_inputs, tuple([step[1:] for step in self.steps]))
            text = _SOURCES.get(shape)
            if text is None:
                text = _source(self.steps, self.n_inputs)
                if len(_SOURCES) < _SOURCES_KEPT:
                    _SOURCES[shape] = text
            self._text = text
        return self._text

    @property
    def op_names(self) -> tuple[str, ...]:
        """The ops the kernel holds, in order."""
        return tuple(step[0] for step in self.steps)

    def __call__(self, xp: Any, *inputs: Any) -> Any:
        if xp is np:
            again = self._again
            if again is not None:
                out = again(inputs)
                if out is not None:
                    return out
            shape = _loop_shape(inputs)
            if shape is not None and (not self.least or math.prod(shape) >= self.least):
                out = self.looped(shape, inputs)
                if out is not None:
                    return out
        elif getattr(xp, "__name__", "") == "cupy":
            from daskgraph.kernels.fused_cuda import call_on_cupy  # (GPU workers only)

            out = call_on_cupy(self, xp, inputs)
            if out is not None:
                return out
        return self.one_by_one(xp, inputs)

    def looped(self, shape: tuple[int, ...], inputs: tuple) -> np.ndarray | None:
        """The chain's result of shape ``shape`` by its compiled loop, or None where there
        is none (yet) for such inputs: NumPy arrays of that shape (C-contiguous) and
        scalars, whatever their size."""
        kinds = tuple(map(_kind, inputs))
        loop = self._loops.get(kinds)
        if loop is None:
            loop = _CACHE.lookup(self, kinds)
            if loop is None:
                return None
            self._loops[kinds] = loop
        out = np.empty(shape, loop.out_dtype)
        flat = [x.reshape(-1) if x.ndim else x[()] for x in inputs]
        try:
            loop(out.reshape(-1), *flat)
        except TypeError:  # (inputs of a kind it was not compiled for)
            return None
        self._again = again_for(loop, shape, kinds)
        return out

    def one_by_one(self, xp: Any, inputs: tuple) -> Any:
        """The chain's result, op by op (what the unfused ops compute). Each step's function
        of ``xp`` is looked up once, not every call (a program runs its chains op by op
        until their loops are compiled: the first runs of a process)."""
        bound = self._bound
        if bound is None or bound[0] is not xp:
            bound = self._bound = (xp, tuple((_function(xp, n), a) for _, n, a in self.steps))
        values = list(inputs)
        append = values.append
        for fn, args in bound[1]:
            if len(args) == 2:
                append(fn(values[args[0]], values[args[1]]))
            elif len(args) == 1:
                append(fn(values[args[0]]))
            else:
                append(fn(*[values[a] for a in args]))
        return values[-1]

    def __reduce__(self) -> tuple:
        return (FusedKernel, (self.steps, self.n_inputs))

    def __repr__(self) -> str:
        return f"FusedKernel({'+'.join(self.op_names)})"


def _function(xp: Any, name: str) -> Any:
    """The function of ``xp`` that a step named ``name`` calls (daskgraph's own kernel where
    :data:`~daskgraph.kernels.fusable.KERNELS` has one, bound to ``xp``)."""
    kernel = KERNELS.get(name)
    return getattr(xp, name) if kernel is None else functools.partial(kernel, xp)


#: NumPy calls that one call of a compiled loop costs (about 2.5 us), plus half a call per
#: input (checking and flattening it)
_LOOP_CALLS = 4
#: elements below which NumPy's per-call cost dominates its per-element cost (float32)
SMALL_ELEMENTS = 1 << 14


def worth_a_loop(n_steps: int, n_inputs: int, elements: int) -> bool:
    """Whether a chain of ``n_steps`` NumPy calls over ``n_inputs`` inputs of ``elements``
    elements runs faster as one compiled loop: always from :data:`SMALL_ELEMENTS` elements
    (one pass over memory instead of one per op), and below that where the chain makes more
    calls than the loop's own call costs (measured on a 2-core x86 VM: a loop's call 3.3 us,
    a small NumPy call 0.65 us).

    >>> worth_a_loop(2, 2, 1000), worth_a_loop(8, 2, 1000), worth_a_loop(2, 2, 1 << 20)
    (False, True, True)
    """
    return elements >= SMALL_ELEMENTS or n_steps >= _LOOP_CALLS + n_inputs // 2


def _loop_shape(inputs: tuple) -> tuple[int, ...] | None:
    """The shape of a compiled loop's result, where it applies: every input a NumPy array,
    the non-scalar ones C-contiguous and of one shape (at least one of them); else None
    (other broadcasts run op by op)."""
    shape = None
    for x in inputs:
        if type(x) is not np.ndarray:
            if isinstance(x, np.generic):
                continue
            return None
        if x.ndim == 0:
            continue
        if not x.flags.c_contiguous or (shape is not None and x.shape != shape):
            return None
        shape = x.shape
    return shape


#: the loop bodies written so far, by kernel structure (inputs, then each step's function and
#: arguments): many kernels share one (see FusedKernel.source)
_SOURCES: dict[tuple, str] = {}
_SOURCES_KEPT = 4096


def _source(steps: tuple, n_inputs: int) -> str:
    """The compiled loop's body: one line per step inside a loop over the elements (fields
    ``{d<k>}`` for each step's dtype, ``{x<i>}`` for how input ``i`` is read)."""
    names = [f"{{x{i}}}" for i in range(n_inputs)]
    lines = ["    for i in range(out.size):"]
    for k, (_, name, args) in enumerate(steps):
        expression = expression_of(name).format(*[names[a] for a in args])
        lines.append(f"        t{k} = {{d{k}}}({expression})")
        names.append(f"t{k}")
    lines.append(f"        out[i] = t{len(steps) - 1}")
    return "\n".join(lines)


#: elements from which a compiled loop runs on the worker's threads (smaller ones on the
#: calling thread alone)
PARALLEL_ELEMENTS = 1 << 20


def _kind(x: Any) -> tuple[np.dtype, bool, bool]:
    """What a compiled loop is specialised on for input ``x``: its dtype, whether it is a
    scalar, and whether it is a read-only array (a scalar is read by value: a NumPy scalar
    and a 0-d array are the same kind)."""
    if x.ndim == 0:
        return (x.dtype, True, False)
    return (x.dtype, False, not x.flags.writeable)


def module_text(
    kernel: FusedKernel, kinds: tuple[tuple[np.dtype, bool, bool], ...]
) -> tuple[str, np.dtype] | None:
    """The module (for :mod:`~daskgraph.kernels.kernel_cache`) of ``kernel``'s loop for
    inputs of ``kinds`` (:func:`_kind`: scalars read as such, the others as 1-d arrays of the
    result's size), and the result's dtype; None where a dtype is not fused. Its function
    ``fused(out, *inputs)`` is compiled for that one signature (at import, not on its first
    call), ``nogil``: the pieces of a large array run on several threads at once (_Loop)."""
    inputs = [dtype for dtype, _, _ in kinds]
    scalars = [scalar for _, scalar, _ in kinds]
    dtypes = step_dtypes(kernel.steps, list(inputs))
    if dtypes is None or any(d.name not in DTYPES for d in inputs):
        return None
    fields = {f"d{k}": "np.bool_" if d.kind == "b" else f"np.{d.name}" for k, d in
              enumerate(dtypes)}  # fmt: skip
    fields.update({f"x{i}": f"x{i}" if scalar else f"x{i}[i]" for i, scalar in
                   enumerate(scalars)})  # fmt: skip
    types = [_numba_type(d) if scalar else _array_type(d, readonly) for d, scalar, readonly in
             kinds]  # fmt: skip
    signature = ", ".join([_array_type(dtypes[-1], False), *types])
    args = ", ".join(["out", *[f"x{i}" for i in range(kernel.n_inputs)]])
    # no fast math: LLVM would contract x * y + z into one fused multiply-add (NumPy rounds
    # twice); tests/unit/test_fused_chains.py checks the bits
    text = (
        f"{_PREAMBLE}\n\n@numba.njit(types.void({signature}), cache=CACHE, nogil=True,"
        f' error_model="numpy", fastmath=False)\n'
        f"def fused({args}):\n{kernel.source.format(**fields)}\n"
    )
    return text, dtypes[-1]


_PREAMBLE = (
    '"""A fused chain of daskgraph (daskgraph.kernels.fused): written by daskgraph."""\n\n'
    "import numba\nimport numpy as np\nfrom numba import types"
)


def _numba_type(dtype: np.dtype) -> str:
    return "types.boolean" if dtype.kind == "b" else f"types.{dtype.name}"


def _array_type(dtype: np.dtype, readonly: bool) -> str:
    return f'types.Array({_numba_type(dtype)}, 1, "C", readonly={readonly})'


def build(
    kernel: FusedKernel,
    kinds: tuple[tuple[np.dtype, bool, bool], ...],
    elsewhere: bool = False,
) -> Any:
    """Compile ``kernel`` with Numba into one loop for inputs of ``kinds`` (see
    :func:`module_text`), or load it from the kernel cache where a process compiled it
    before; None where a dtype is not fused. The loop is called ``loop(out, *inputs)``; on
    arrays of :data:`PARALLEL_ELEMENTS` or more, piece by piece on the worker's threads.
    ``elsewhere``: compile in the compile server
    (:mod:`~daskgraph.kernels.compile_server`) where it runs, then load here."""
    made = module_text(kernel, kinds)
    if made is None:
        return None
    text, out_dtype = made
    if elsewhere and not kernel_cache.is_cached(text):
        folder = kernel_cache.cache_folder()
        if folder is not None:
            try:
                if not compile_server.compile_elsewhere(text, folder, _ready_to_load):
                    return None  # (Numba cannot compile it: op by op)
            except OSError as exc:
                logger.info("compiling fused chains in this process: %s", exc)
    module = kernel_cache.load_module(text, "fused")
    return _Loop(module.fused, out_dtype)


def _ready_to_load() -> None:
    """Have Numba ready to load compiled code (its import and target context: about a
    second, once a process), as the compile server compiles."""
    from numba.core.registry import cpu_target

    cpu_target.target_context.refresh()


class _Loop:
    """A compiled chain and the dtype of its result. Over :data:`PARALLEL_ELEMENTS` elements
    or more it runs in pieces on the threads the calling worker has
    (:func:`~daskgraph.kernels.split_loops.run_split`), else on the calling thread."""

    __slots__ = ("loop", "out_dtype")

    def __init__(self, loop: Any, out_dtype: np.dtype) -> None:
        self.loop, self.out_dtype = loop, out_dtype

    def __call__(self, out: np.ndarray, *inputs: Any) -> None:
        if out.size >= PARALLEL_ELEMENTS:
            threads = kernel_threads()
            if threads > 1:
                run_split(self.loop, out, inputs, threads)
                return
        self.loop(out, *inputs)


class _Compiled:
    """The process's compiled chains, by (source, input dtypes). A chain's first call loads
    its loop where the kernel cache has it (a warm cache: at once); else rent or buy (see the
    module), its second call having it compiled here or in the compile server
    (``daskgraph.compile-process``). Loading, compiling and waiting run on one background
    thread, which process exit does not wait for
    (:class:`~daskgraph.kernels.compile_thread.CompileThread`)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seen: set[tuple] = set()
        self._builds = Builds(CompileThread("daskgraph-fusion"))

    def lookup(self, kernel: FusedKernel, kinds: tuple) -> Any:
        """The loop for inputs of ``kinds`` (each one's :func:`_kind`), or None (not
        compiled yet, or not fusable)."""
        key = (kernel.source, *kinds)
        if self._builds.known(key):
            return self._builds.get(key)
        with self._lock:
            first = key not in self._seen
            self._seen.add(key)
        if first:  # the first call rents, unless the cache has it
            self._builds.thread.submit(self._load_cached, key, kernel)
        elif self._builds.claim(key):  # the second buys
            self._builds.thread.submit(self._build, key, kernel)
        return None

    def _load_cached(self, key: tuple, kernel: FusedKernel) -> None:
        """Load the loop of ``key`` where the kernel cache has it (a warm cache)."""
        try:
            made = module_text(kernel, key[1:])
            if made is None:
                return
            if not kernel_cache.is_cached(made[0]):
                # a second call will want it: the server and Numba here take a second each
                # to start, which they do at once
                if _elsewhere():
                    compile_server.SERVER.start()
                _ready_to_load()
                return
        except Exception as exc:  # (no Numba): op by op
            logger.debug("fused chain %r not looked up: %s", kernel, exc)
            return
        if self._builds.claim(key):
            self._build(key, kernel)

    def _build(self, key: tuple, kernel: FusedKernel, elsewhere: bool | None = None) -> Any:
        if elsewhere is None:
            elsewhere = _elsewhere()
        return self._builds.make(key, lambda: build(kernel, key[1:], elsewhere=elsewhere), kernel)

    def now(self, kernel: FusedKernel, inputs: tuple) -> Any:
        """Compile ``kernel`` for ``inputs`` (their dtypes and which are scalars) in this
        thread (tests, benchmarks' warm-up)."""
        return self._build((kernel.source, *map(_kind, inputs)), kernel, elsewhere=False)

    def settle(self, timeout: float) -> None:
        """Wait until the compilations queued so far are done."""
        self._builds.settle(timeout)


_CACHE = _Compiled()


def _elsewhere() -> bool:
    """Whether chains compile in the compile server (``daskgraph.compile-process``)."""
    import dask.config

    return bool(dask.config.get("daskgraph.compile-process", False))


def settle(timeout: float = 120.0) -> None:
    """Wait (at most ``timeout`` seconds) until the fused chains queued for compilation in
    this process are compiled (tests and benchmarks; runs never wait)."""
    _CACHE.settle(timeout)


def compile_now(kernel: FusedKernel, *inputs: Any) -> Any:
    """The compiled loop of ``kernel`` for inputs like ``inputs`` (same dtypes, and scalars
    where they are), compiled in this thread if it is not yet (None where the chain is not
    fused for them); later calls with such inputs run it."""
    return _CACHE.now(kernel, tuple(np.asarray(x) for x in inputs))
