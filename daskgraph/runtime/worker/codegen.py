"""Turn a hot program into one generated Python function, compiled in the background.

The executor's lean loop (:func:`daskgraph.runtime.worker.execution.run_partition`) makes one
kernel call per
op, plus the loop's own work: unpacking a step, indexing the slot list, storing the result,
freeing dead slots. For a program of a few thousand tiny ops (a training step of small
tensors, a metric) that work is a quarter of the run. A program that keeps running is
therefore written out as straight-line Python -- one line per op, its tensors in local
variables (reused as tensors die, as a register allocator would), its kernels bound once:

.. code-block:: python

    def _program(fns, slots):
        (f0, f1, c0,) = fns
        v0 = slots[0]
        v1 = f0(v0, c0)
        v0 = None
        ...
        slots[7] = v1

The values of the program's constants (:class:`Constant`: a NumPy partition's ``Const``
ops, whose kernel returns the same array every run) come with its kernels, and the function
reads them where the loop would call their kernel.

CPython compiles that in about 35 us an op, so it is done once the loop has spent that long
on the program (:class:`HotProgram`), for programs of up to :data:`MAX_OPS` instructions, on a
background thread (no run waits for it); later runs call it instead of looping. The ops,
their order and their kernels are the loop's.

If the generated function raises, the run is done again by the loop, which names the op that
failed (programs compiled here have no stateful ops, so running them again changes nothing).

>>> import numpy as np
>>> steps = [(np.add, 2, 0, 0, (0, 0), 1, (0,), 0), (np.negative, 1, 1, -1, (1,), 2, (1,), 1)]
>>> source, fns = generate(steps, incoming=[0], outputs=[2])
>>> print(source)
def _program(fns, slots):
    (f0, f1,) = fns
    v0 = slots[0]
    v1 = f0(v0, v0)
    v0 = None
    v0 = f1(v1)
    v1 = None
    slots[2] = v0
>>> slots = [np.float32(3.0), None, None]
>>> build(steps, incoming=[0], outputs=[2])(slots)
>>> slots[2]
np.float32(-6.0)
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Any

from daskgraph.kernels.compile_thread import CompileThread

__all__ = ["COMPILE_SECONDS_PER_OP", "MAX_OPS", "Constant", "HotProgram", "build", "generate"]

#: programs with more instructions than this stay with the loop
MAX_OPS = 50_000
#: what CPython takes to compile generated source, per instruction (measured: 30-37 us)
COMPILE_SECONDS_PER_OP = 35e-6

#: the background thread (process exit does not wait for it)
_compiler = CompileThread("daskgraph-codegen")


class Constant:
    """A step's function that returns one value, the same every run (a NumPy partition's
    ``Const`` op): the loop calls it, a generated program reads its value.

    >>> Constant(2.5)()
    2.5
    """

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __call__(self) -> Any:
        return self.value

    def __repr__(self) -> str:
        return f"Constant({self.value!r})"


def generate(
    steps: Sequence[tuple], incoming: Sequence[int], outputs: Sequence[int]
) -> tuple[str, tuple[Any, ...]]:
    """The source of a function ``_program(fns, slots)`` running ``steps`` (compiled steps
    of :mod:`daskgraph.runtime.worker.execution`: function, arity, first slot, second slot,
    argument slots, output slot, slots to free, index), and the values ``fns`` it is given:
    the steps' functions, and the values of their :class:`Constant` ones.

    It reads the ``incoming`` slots (feeds and other partitions' outputs) and writes the
    ``outputs`` slots back into ``slots``. (Its kernels and constants are unpacked into
    local variables every run: a closure's cells would cost less a run, but CPython compiles
    a function of tens of thousands of them in a time that grows faster than their number.)
    """
    kernels: dict[int, str] = {}  # id(function) -> the local variable holding it (or its value)
    fns: list[Any] = []
    for step in steps:
        fn = step[0]
        if id(fn) not in kernels:
            constant = type(fn) is Constant
            kernels[id(fn)] = f"{'c' if constant else 'f'}{len(fns)}"
            fns.append(fn.value if constant else fn)
    names: dict[int, str] = {}  # slot -> the local variable holding it
    pool: list[str] = []  # variables of tensors that died, for the next ones
    made = 0

    def take(slot: int) -> str:
        nonlocal made
        if pool:
            name = pool.pop()
        else:
            name, made = f"v{made}", made + 1
        names[slot] = name
        return name

    lines = ["def _program(fns, slots):", f"    ({', '.join(kernels.values())},) = fns"]
    lines += [f"    {take(slot)} = slots[{slot}]" for slot in incoming]
    for fn, _, _, _, args, out, free, _ in steps:
        kernel = kernels[id(fn)]
        if kernel[0] == "c":  # a constant: read where used, never freed (fns holds it)
            if out >= 0:
                names[out] = kernel
        else:
            call = f"{kernel}({', '.join(names[s] for s in args)})"
            lines.append(f"    {take(out)} = {call}" if out >= 0 else f"    {call}")
        for slot in free:
            name = names.pop(slot)
            if name[0] == "v":
                lines.append(f"    {name} = None")
                pool.append(name)
    lines += [f"    slots[{slot}] = {names[slot]}" for slot in outputs]
    return "\n".join(lines), tuple(fns)


def build(
    steps: Sequence[tuple], incoming: Sequence[int], outputs: Sequence[int]
) -> Callable[[list], None]:
    """:func:`generate` compiled: a function of the slot list that runs every step."""
    source, fns = generate(steps, incoming, outputs)
    namespace: dict[str, Any] = {}
    exec(compile(source, "<daskgraph program>", "exec"), namespace)
    return functools.partial(namespace["_program"], fns)


class HotProgram:
    """A compiled program's steps, the time its runs spent in the loop, and its generated
    function once built.

    Generating costs about :data:`COMPILE_SECONDS_PER_OP` an instruction and saves about a
    quarter of each later run, so the function is built once the loop has spent as long on
    this program as building it would take (a rent-or-buy rule: a program that runs a few
    times never pays for a compile; one that runs on pays at most twice what knowing the
    future would have cost).
    """

    def __init__(self, steps: list, incoming: Sequence[int], outputs: Sequence[int]) -> None:
        self.steps = steps
        self._incoming = tuple(incoming)
        self._outputs = tuple(outputs)
        self._spent = 0.0  # seconds the loop spent running this program
        self._cost = COMPILE_SECONDS_PER_OP * len(steps) if 0 < len(steps) <= MAX_OPS else None
        self._function: Callable[[list], None] | None = None
        self._lock = threading.Lock()
        self._building: Future | None = None

    @property
    def building(self) -> Future | None:
        """The build on the background thread once it is asked for (done once the
        function is there), else None: what a caller waits on, rather than timing it."""
        return self._building

    def function(self) -> Callable[[list], None] | None:
        """The generated function, or ``None`` while the loop must run the program."""
        return self._function

    def ran(self, seconds: float) -> None:
        """The loop ran the program in ``seconds``; building starts (on the background
        thread) once the loop's time has reached the cost of building."""
        with self._lock:
            if self._cost is None:
                return
            self._spent += seconds
            if self._spent >= self._cost:
                self._cost = None  # once
                self._building = _compiler.submit(self._build)

    def _build(self) -> None:
        self._function = build(self.steps, self._incoming, self._outputs)

    def failed(self) -> None:
        """The generated function misbehaved: the loop runs this program from now on."""
        self._function = None
