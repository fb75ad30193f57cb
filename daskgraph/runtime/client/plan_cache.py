"""A session's compiled plans, bounded: the least recently used is evicted and released.

A plan (:class:`~daskgraph.runtime.client.dispatch.CompiledRun`) is compiled once per fetch and
feed signature and reused by every later run of it, as TensorFlow's ``make_callable``. What it
holds outlives the client's copy: its programs resident on the workers (futures of the
scheduler's path, plans loaded by compiled steps). A program that generates many
signatures (fetching a different tensor each step, say) would keep every one of them, so the
cache keeps ``daskgraph.plan-cache-size`` plans and hands each one it evicts or clears to a
``release`` callback, which frees it on the workers.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

__all__ = ["PlanCache"]

P = TypeVar("P")


class PlanCache(Generic[P]):
    """An LRU mapping of plan keys to plans, calling ``release(plan)`` for each plan it drops.

    >>> released = []
    >>> cache = PlanCache(2, released.append)
    >>> cache.put("a", "plan a"); cache.put("b", "plan b")
    >>> cache.get("a")
    'plan a'
    >>> cache.put("c", "plan c")  # "b" is the least recently used
    >>> released, len(cache)
    (['plan b'], 2)
    >>> cache.clear(); sorted(released)
    ['plan a', 'plan b', 'plan c']
    """

    def __init__(self, size: int, release: Callable[[P], None]) -> None:
        if size < 1:
            raise ValueError(f"daskgraph.plan-cache-size must be at least 1; got {size!r}")
        self.size = size
        self._release = release
        self._plans: OrderedDict[Hashable, P] = OrderedDict()
        self._lock = threading.Lock()  # runs from several threads share the cache

    def get(self, key: Hashable) -> P | None:
        """The plan of ``key`` (now the most recently used), or None."""
        with self._lock:
            plan = self._plans.get(key)
            if plan is not None:
                self._plans.move_to_end(key)
            return plan

    def put(self, key: Hashable, plan: P) -> None:
        """Keep ``plan`` under ``key``, releasing the least recently used beyond the size."""
        with self._lock:
            self._plans[key] = plan
            self._plans.move_to_end(key)
            evicted = [self._plans.popitem(last=False)[1] for _ in range(len(self) - self.size)]
        for old in evicted:
            self._release(old)

    def clear(self, release: bool = True) -> None:
        """Drop every plan (the graph was placed again, or the session closes), releasing
        each unless ``release`` is false (a closing session frees all it has at once)."""
        with self._lock:
            plans = list(self._plans.values())
            self._plans.clear()
        for plan in plans if release else ():
            self._release(plan)

    def values(self) -> list[P]:
        """The plans kept, the least recently used first."""
        with self._lock:
            return list(self._plans.values())

    def __len__(self) -> int:
        return len(self._plans)
