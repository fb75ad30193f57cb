"""When a partition's program frees its slots: each instruction drops the values it reads last.

Its one job is to mark every instruction of a program with the slots to free once it has run
(:func:`with_frees`), so that intermediates go as soon as they are used up (on a GPU, memory
returns to the pool during the partition, as TensorFlow frees a tensor after its last reader).
"""

from __future__ import annotations

from itertools import count, repeat
from operator import add, itemgetter

from daskgraph.runtime.program import Instruction

__all__ = ["with_frees"]


def with_frees(
    fields: list[tuple], kept: set[int], n_slots: int, read_at: dict[int, int]
) -> tuple[Instruction, ...]:
    """The instructions, each marked with the slots it reads last, which are dropped once it
    has run: intermediates are freed as soon as they are used up (on a GPU, memory returns to
    the pool during the partition, as TensorFlow frees a tensor after its last reader).
    ``read_at`` maps received slots to the instruction first reading them."""
    frees = _frees(fields, kept, n_slots, read_at)
    new = tuple.__new__  # Instruction(*fields, free) without its Python-level __new__
    return tuple(map(new, repeat(Instruction), map(add, fields, zip(frees))))


def _frees(
    fields: list[tuple], kept: set[int], n_slots: int, read_at: dict[int, int]
) -> list[tuple[int, ...]]:
    """Every instruction's slots to free: those it reads last, and its output if nobody reads
    it, but none in ``kept``. One sweep from the last instruction back; a slot's first sight
    is its last use. Several slots freed at once are in the order they were first used."""
    seen = bytearray(n_slots)
    for s in kept:
        seen[s] = 1
    frees: list[tuple[int, ...]] = [()] * len(fields)
    several: list[int] = []
    for i in range(len(fields) - 1, -1, -1):
        ins = fields[i]
        free: tuple[int, ...] = ()
        for s in ins[4]:  # args
            if not seen[s]:
                seen[s] = 1
                free += (s,)
        out = ins[5]
        if out >= 0 and not seen[out]:  # a value nobody reads is dropped at once
            seen[out] = 1
            free += (out,)
        if free:
            frees[i] = free
            if len(free) > 1:
                several.append(i)
    if several:
        _order_frees(fields, frees, several, read_at)
    return frees


def _order_frees(
    fields: list[tuple], frees: list[tuple[int, ...]], several: list[int], read_at: dict[int, int]
) -> None:
    """Sort each instruction's slots to free (of those in ``several``, freeing more than one)
    by first use: where the instruction writing it ran, or, for a slot no instruction writes
    (a feed, a value received from another partition), where it was first read."""
    made = dict(zip(map(itemgetter(5), fields), count()))  # out slot -> its instruction
    first: dict[int, tuple[int, int, int]] = {}
    pending: set[int] = set()  # feeds: where they are first read is looked for
    for s in {s for i in several for s in frees[i] if s not in made}:
        i = read_at.get(s)
        if i is None:
            pending.add(s)
        else:
            first[s] = (i, 0, fields[i][4].index(s))
    for i, ins in enumerate(fields):
        if not pending:
            break
        if pending.isdisjoint(ins[4]):
            continue
        for k, s in enumerate(ins[4]):
            if s in pending:
                first[s] = (i, 0, k)
                pending.discard(s)

    def first_use(s: int) -> tuple[int, int, int]:
        i = made.get(s)
        return first[s] if i is None else (i, 1, 0)  # written: after the instruction's reads

    for i in several:
        frees[i] = tuple(sorted(frees[i], key=first_use))
