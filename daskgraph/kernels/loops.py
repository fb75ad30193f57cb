"""Loop kernels: ``While``, a traced body run until its condition fails, and the plans a loop
op carries (:class:`WhilePlan`, :class:`ScanPlan` for ``map_fn``, ``scan`` and the folds).

The kernels of :mod:`daskgraph.ops.loops`'s ops, each ``kernel(xp, *inputs, **attrs)``; a plan
holds its traced functions as :class:`~daskgraph.kernels.subgraph.Subgraph` objects, so a
worker runs a loop importing no graph builder.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from daskgraph.errors import InvalidArgumentError
from daskgraph.kernels.subgraph import Subgraph

__all__ = ["ScanPlan", "WhilePlan"]

#: a static shape: a size (None: unknown) per dimension
Shape = tuple[int | None, ...]


def _loop_kernel(xp, store, *inputs, plan):
    return plan.run(xp, store, inputs)


def _stateless_loop_kernel(xp, *inputs, plan):
    return plan.run(xp, None, inputs)


@dataclass(frozen=True, slots=True)
class WhilePlan:
    """A ``while_loop``: inputs are the loop variables, the iteration limit (if any), then
    the captured tensors."""

    n_vars: int
    has_limit: bool
    cond: Subgraph
    body: Subgraph

    def run(self, xp: Any, store: Any, inputs: Sequence[Any]) -> tuple:
        """The loop variables once ``cond`` is false (or the limit is reached)."""
        n = self.n_vars
        values = list(inputs[:n])
        limit = int(inputs[n]) if self.has_limit else None
        captures = list(inputs[n + self.has_limit :])
        cond = self.cond.bind(xp, store, captures)
        body = self.body.bind(xp, store, captures)
        count = 0
        while limit is None or count < limit:
            if not bool(cond(values)[0]):
                break
            values = body(values)
            count += 1
        return tuple(values)


@dataclass(frozen=True, slots=True)
class ScanPlan:
    """A ``map_fn`` (``mode="map"``), ``scan`` or fold (``"fold"``) over the first dimension of
    ``n_elems`` tensors; inputs are those, the ``n_init`` initial accumulators, then the
    captured tensors. ``outputs`` are the results' NumPy dtypes and static shapes (to make
    empty results)."""

    name: str
    mode: str
    n_elems: int
    n_init: int
    reverse: bool
    fn: Subgraph
    outputs: tuple[tuple[Any, Shape | None], ...]

    def run(self, xp: Any, store: Any, inputs: Sequence[Any]) -> tuple:
        """The stacked results (map, scan) or the last accumulator (fold)."""
        elems = list(inputs[: self.n_elems])
        acc = list(inputs[self.n_elems : self.n_elems + self.n_init])
        captures = list(inputs[self.n_elems + self.n_init :])
        order = list(range(self._length(elems)))
        if self.reverse:
            order.reverse()
        fn = self.fn.bind(xp, store, captures)
        if self.mode == "map":
            return self._stacked(xp, [(i, fn([e[i] for e in elems])) for i in order])
        rows = []
        if not acc:
            if not order:
                raise InvalidArgumentError(
                    f"{self.name}: elems has no element and no initializer was given",
                    op=self.name,
                )
            first = order.pop(0)
            acc = [e[first] for e in elems]
            rows.append((first, acc))
        for i in order:
            acc = fn(acc + [e[i] for e in elems])
            rows.append((i, acc))
        return tuple(acc) if self.mode == "fold" else self._stacked(xp, rows)

    def _length(self, elems: list[Any]) -> int:
        lengths = {int(e.shape[0]) if getattr(e, "ndim", 0) else -1 for e in elems}
        if len(lengths) != 1 or -1 in lengths:
            raise InvalidArgumentError(
                f"{self.name}: the elements must be tensors of rank >= 1 with one size of "
                f"their first dimension; got first dimensions {sorted(lengths)} (-1: a scalar)",
                op=self.name,
            )
        return lengths.pop()

    def _stacked(self, xp: Any, rows: list[tuple[int, list[Any]]]) -> tuple:
        rows.sort(key=lambda row: row[0])
        out = []
        for k, (dtype, shape) in enumerate(self.outputs):
            if not rows:
                dims = () if shape is None else tuple(d or 0 for d in shape)
                out.append(xp.zeros((0, *dims), dtype=dtype))
                continue
            stacked = xp.stack([xp.asarray(values[k]) for _, values in rows])
            out.append(stacked.astype(dtype, copy=False))
        return tuple(out)
