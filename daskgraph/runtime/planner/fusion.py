"""Fusion: chains of elementwise ops of a partition become one instruction.

After lowering has written a partition's instructions, this pass finds the groups of
elementwise ops that can run as one kernel (:class:`~daskgraph.kernels.fused.FusedKernel`) and
rewrites each group as one instruction at the place of its last op. An op joins the group of
the op that reads its result when

* its kernel is one of NumPy's exactly rounded array functions, or a kernel of daskgraph's
  registered as fusable (ReLU and its gradient; :data:`~daskgraph.kernels.fusable.FUSABLE`), with
  no attributes, it holds no state and reads
  no variable reference, and its result is a float32, float64 or bool tensor;
* its result is read by that op alone (several times is fine), and is neither an output of
  the partition (fetched, or read by another partition) nor fed;
* the group stays within :data:`MAX_KERNEL_SIZE` steps and inputs (a longer chain becomes
  several kernels, each compiled in about a second, where one would take minutes);
* under the JIT switches, a transcendental function (:data:`~daskgraph.kernels.fusable.RELAXED`)
  joins only where the ops between it and the group's result keep its error bounded
  (:data:`~daskgraph.kernels.fusable.BOUNDED`: products, quotients, selections, ``tanh``; not
  sums, differences or comparisons, which cancel or flip); else it runs as NumPy's op.

Groups are trees of ops ending in one result; a group of one op stays as it is. The pass is
a pure function of the instructions (as tuples of :class:`~daskgraph.runtime.program.Instruction`
fields) and one pass over them; ``daskgraph.fusion: false`` skips it.

>>> from daskgraph.framework.op_registry import ArrayFunction
>>> add, mul = ArrayFunction("add"), ArrayFunction("multiply")
>>> ins = [("a", "Mul", mul, {}, (0, 1), 2, False, ()), ("b", "Add", add, {}, (2, 0), 3, False, ())]
>>> (fused,), moved = fuse(ins, ["float32", "float32"], kept={3})
>>> fused[:2], fused[4:6], fused[2].op_names, moved
(('b', 'Fused'), ((0, 1), 3), ('a', 'b'), [0, 0])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from daskgraph.framework.op_registry import ArrayFunction
from daskgraph.kernels.fusable import (
    BOUNDED,
    CARRIED_ULPS,
    DTYPES,
    FUSABLE,
    KERNEL_NAMES,
    RELAXED,
    RELAXED_ULPS,
)
from daskgraph.kernels.fused import FusedKernel

__all__ = ["FUSED", "MAX_KERNEL_SIZE", "format_fusion_log", "fuse"]

#: the op type of a fused instruction
FUSED = "Fused"
#: the most steps and inputs (together) a fused kernel holds: Numba's compile time grows with
#: both (on a 2-core x86 VM: 400 steps of one input, or 200 steps of 200 inputs, about 1 s;
#: 10,000 steps about 100 s), so a longer chain is split into kernels of this size
MAX_KERNEL_SIZE = 256


def fuse(
    instructions: Sequence[tuple],
    dtypes: Sequence[str | None],
    kept: set[int],
    relaxed: Sequence[bool] | None = None,
) -> tuple[list[tuple], list[int]]:
    """``instructions`` with each group of fusable ops (see the module) as one instruction,
    and where each instruction went (its index in the new list: a group's ops all go to the
    group's instruction).

    Parameters
    ----------
    instructions
        A partition's instructions (``Instruction`` fields without ``free``), in order.
    dtypes
        The dtype name of each instruction's (first) result, or None.
    kept
        Slots the partition outputs (fetched, or read by other partitions).
    relaxed
        Per instruction, whether its op is under TensorFlow's JIT switches (the session's
        ``global_jit_level``, or a ``jit_scope``): then transcendental functions fuse too
        (:data:`~daskgraph.kernels.fusable.RELAXED`). Default: none is.
    """
    n = len(instructions)
    loose = relaxed if relaxed is not None else [False] * n
    names = _names(instructions)
    fusable = [
        _fusable(ins, name, dtype, jit)
        for ins, name, dtype, jit in zip(instructions, names, dtypes, loose, strict=True)
    ]
    if sum(fusable) < 2:
        return list(instructions), list(range(n))
    producer: dict[int, int] = {}
    readers: dict[int, int] = {}  # slot -> the one instruction reading it, -1: several
    for i, ins in enumerate(instructions):
        for slot in ins[4]:
            if readers.setdefault(slot, i) != i:
                readers[slot] = -1
        if ins[5] >= 0:
            producer[ins[5]] = i
    group_of = [-1] * n
    groups: dict[int, list[int]] = {}
    any_relaxed = any(loose)
    for root in range(n - 1, -1, -1):
        if not fusable[root] or group_of[root] >= 0:
            continue
        group = _Group(instructions, names, root, any_relaxed)
        members = group.grow(fusable, group_of, producer, readers, kept)
        if len(members) > 1:
            groups[root] = sorted(members)
    if not groups:
        return list(instructions), list(range(n))
    out: list[tuple] = []
    moved = [0] * n
    shared: dict[tuple[int, ...], tuple[int, ...]] = {}  # the groups' steps' refs, made once
    for i, ins in enumerate(instructions):
        if i in groups:
            for member in groups[i]:
                moved[member] = len(out)
            out.append(_fused(instructions, groups[i], names, shared))
        elif group_of[i] < 0 or group_of[i] not in groups:
            moved[i] = len(out)
            out.append(ins)
    return out, moved


class _Group:
    """A group grown from its root, producer by producer (see :func:`fuse`)."""

    def __init__(
        self, instructions: Sequence[tuple], names: list[str | None], root: int, relaxed: bool
    ) -> None:
        self.instructions = instructions
        self.names = names  # each instruction's fused_name
        self.relaxed = relaxed  # (whether relaxed steps may join: else no error to follow)
        self.members = [root]
        self.inputs = set(instructions[root][4])  # slots read from outside the group

    def grow(
        self,
        fusable: list[bool],
        group_of: list[int],
        producer: dict[int, int],
        readers: dict[int, int],
        kept: set[int],
    ) -> list[int]:
        """The group's members: every fusable producer read by a member alone, while the
        kernel stays within :data:`MAX_KERNEL_SIZE`; a relaxed one only where the members
        between it and the root carry its error boundedly (:data:`~daskgraph.kernels.fusable.
        BOUNDED`), else it is left unfused (its result then NumPy's)."""
        root = self.members[0]
        group_of[root] = root
        # member, how much it and those after it grow a relative error (0: without bound),
        # how many steps it is from the root
        stack = [(root, 1, 0)]
        while stack:
            member, factor, depth = stack.pop()
            args = self.instructions[member][4]
            for slot in dict.fromkeys(args):
                p = producer.get(slot, -1)
                if (
                    p < 0
                    or not fusable[p]
                    or group_of[p] >= 0
                    or slot in kept
                    or readers[slot] != member
                ):
                    continue
                carried = 1
                if self.relaxed:
                    carried = factor * _growth(self.names[member], args, slot)
                    if self.names[p] not in FUSABLE and (
                        carried == 0 or carried * (RELAXED_ULPS + depth + 1) > CARRIED_ULPS
                    ):
                        fusable[p] = False  # a relaxed step whose error could grow: NumPy's
                        continue
                if self._fits(p, slot):
                    group_of[p] = root
                    self.members.append(p)
                    stack.append((p, carried, depth + 1))
        return self.members

    def _fits(self, p: int, slot: int) -> bool:
        """Whether producer ``p`` of ``slot`` joins the group within
        :data:`MAX_KERNEL_SIZE` (then the group's inputs are updated)."""
        new = {a for a in self.instructions[p][4] if a not in self.inputs}
        if len(self.members) + len(self.inputs) + len(new) > MAX_KERNEL_SIZE:
            return False  # (members + 1, inputs - 1 + new)
        self.inputs.discard(slot)
        self.inputs.update(new)
        return True


def _growth(name: str | None, args: tuple[int, ...], slot: int) -> int:
    """By how much a relative error of ``slot`` may grow in the result of an op whose
    :func:`fused_name` is ``name`` reading it as ``args`` (0: without bound; summed where it
    is read more than once)."""
    factors = BOUNDED.get(name or "", ())
    positions = [i for i, a in enumerate(args) if a == slot]
    if any(i >= len(factors) or factors[i] == 0 for i in positions):
        return 0
    return sum(factors[i] for i in positions)


def fused_name(kernel: Any, relaxed: bool = True) -> str | None:
    """The name of ``kernel`` in :data:`~daskgraph.kernels.fusable.FUSABLE` (or, ``relaxed``, in
    :data:`~daskgraph.kernels.fusable.RELAXED`), or None."""
    if isinstance(kernel, ArrayFunction):
        name: str | None = kernel.name
    else:
        try:
            name = KERNEL_NAMES.get(kernel)
        except TypeError:  # (an unhashable kernel)
            return None
    if name in FUSABLE or (relaxed and name in RELAXED):
        return name
    return None


def _names(instructions: Sequence[tuple]) -> list[str | None]:
    """Each instruction's :func:`fused_name`, looked up once per kernel (a partition has few
    kernels and many instructions)."""
    by_kernel: dict[int, str | None] = {}  # id(kernel) -> fused_name(kernel)
    names = []
    for ins in instructions:
        name = by_kernel.get(id(ins[2]), False)
        if name is False:
            name = by_kernel[id(ins[2])] = fused_name(ins[2])
        names.append(name)
    return names


def _fusable(ins: tuple, name: str | None, dtype: str | None, relaxed: bool) -> bool:
    """Whether an instruction, of :func:`fused_name` ``name``, may join a group."""
    attrs, out, stateful, deref = ins[3], ins[5], ins[6], ins[7]
    return (
        name is not None
        and (relaxed or name in FUSABLE)  # (fused_name(kernel, relaxed) is not None)
        and not attrs
        and not stateful
        and not deref
        and out >= 0
        and dtype in DTYPES
    )


def _fused(
    instructions: Sequence[tuple],
    members: list[int],
    names: list[str | None],
    shared: dict[tuple[int, ...], tuple[int, ...]],
) -> tuple:
    """One instruction for the group ``members`` (in order; the last is its root).

    ``names`` holds each instruction's :func:`fused_name`; ``shared`` the steps' refs already
    made (groups of one shape, such as the links of long chains, have the same refs)."""
    made = {instructions[m][5]: k for k, m in enumerate(members)}  # slot -> its step
    position: dict[int, int] = {}  # input slot -> its position among the inputs
    for m in members:
        for s in instructions[m][4]:
            if s not in made and s not in position:
                position[s] = len(position)
    n_inputs = len(position)
    steps = []
    for m in members:
        ins = instructions[m]
        refs = tuple([n_inputs + made[s] if s in made else position[s] for s in ins[4]])
        refs = shared.setdefault(refs, refs)
        steps.append((ins[0], names[m], refs))
    root = instructions[members[-1]]
    kernel = FusedKernel(tuple(steps), n_inputs)
    return (root[0], FUSED, kernel, {}, tuple(position), root[5], False, ())


def format_fusion_log(plan: Any) -> list[str]:
    """One line per fused kernel of a lowered plan, in the placement log's format (what
    ``log_device_placement`` prints once a plan is lowered): the kernel's name (its last op),
    ``Fused`` and the ops it holds, and its device.

    >>> from types import SimpleNamespace as NS
    >>> kernel = FusedKernel((("a", "multiply", (0, 0)), ("y", "add", (1, 0))), 1)
    >>> ins = NS(op_name="y", op_type=FUSED, kernel=kernel)
    >>> part = NS(device="/device:CPU:0", program=NS(instructions=(ins,)))
    >>> format_fusion_log(NS(partitions=(part,)))
    ['y: (Fused: a, y): /device:CPU:0']
    """
    return [
        f"{ins.op_name}: ({FUSED}: {', '.join(ins.kernel.op_names)}): {p.device}"
        for p in plan.partitions
        for ins in p.program.instructions
        if ins.op_type == FUSED
    ]
