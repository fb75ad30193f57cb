"""What runs leave behind in Dask, and how a long program's memory stays flat.

A TensorFlow 1 program calls ``Session.run`` in a loop, and every multi-device run is a graph
submitted to Dask. Dask keeps some bookkeeping per graph, per task group and per task key:
nothing for one computation, but a leak for a program that runs a million steps. What there
is, and what daskgraph does about each (:file:`benchmarks/memory.py` measures it):

*Task groups.* The scheduler groups tasks by their key's first element, drops a group when its
last task is forgotten, and makes a new one for the next task of that name; distributed's span
extension keeps every group it ever saw. A device's tasks are in one group
(:func:`daskgraph.runtime.planner.lowering.task_group`) that also holds the programs resident on
its worker,
so the group lives as long as the session's plans and runs reuse it.

*Spans.* Tasks without a span get a new *default* span per computation, each kept for good;
daskgraph's tasks share one span per process (:func:`daskgraph.runtime.client.dispatch.in_span`).
But the
scheduler's span extension also adds each graph's metadata to its span for good (a dict, and
an id in a set all spans share: about 300 bytes per graph), and Dask offers no way to drop
it. The schedulers daskgraph starts itself (the embedded cluster's, a
:class:`~daskgraph.cluster.server.Server`'s) run :class:`LeanSpans` instead, Dask's extension
without
that metadata (which nothing in Dask reads); a scheduler someone else started keeps its own,
and with it those 300 bytes per multi-device run.

*The key memo.* ``dask.utils.key_split`` remembers the prefix of the last 100,000 task keys
each process saw, about 330 bytes a key: every run's keys are new, so the scheduler and the
workers would each grow by some 30 MiB before that memo is full. daskgraph clears the memo
where it holds more than :data:`KEY_MEMO_LIMIT` keys (1,024): on the workers as a
partition starts (:func:`bound_key_memo`, called by :mod:`daskgraph.runtime.worker.execution`), on
the
scheduler when a graph arrives (:class:`KeyMemoBound`, a scheduler plugin the first session of
a client registers, :func:`install`). Clearing only costs the next lookups of each key's
prefix (about a microsecond each).

*Dask's low-level logs.* For its developers, Dask keeps the last
``distributed.admin.low-level-log-length`` (1,000) entries of several logs: every batch of
messages a client, scheduler or worker sent on its batched streams (whole, up to 1 MB), the
scheduler's transitions and event topics, the workers' state-machine stimuli. They level off,
but the first are not small: a run's graph carries its feeds below
:data:`daskgraph.runtime.client.dispatch.DIRECT_FEED_BYTES` (1 MiB), so that a program feeding
256 KiB per run kept 200 MiB in its client and 130 MiB in the scheduler. Where daskgraph runs
Dask (the embedded cluster and its workers, a :class:`~daskgraph.cluster.server.Server`, the
client of a session to an address), those logs keep :data:`DASK_LOG_LENGTH` entries (32;
:func:`shorten_dask_logs`, :func:`worker_settings`). That is a setting of the whole process:
other Dask clients made in it afterwards keep as many.

Other logs are small and level off too: the last 100 computations on the scheduler
(``distributed.diagnostics.computations.max-history``), and the log records of every process
(``distributed.admin.log-length``, 10,000).

>>> bound_key_memo(limit=None)
False
"""

from __future__ import annotations

import gc
import logging
import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import dask.config
from dask.utils import key_split
from distributed import Client, SchedulerPlugin
from distributed.scheduler import DEFAULT_EXTENSIONS
from distributed.spans import SpansSchedulerExtension

__all__ = [
    "KeyMemoBound",
    "LeanSpans",
    "bound_key_memo",
    "cyclic_gc_paused",
    "install",
    "scheduler_extensions",
    "shorten_dask_logs",
    "trim_heap",
    "worker_settings",
]

logger = logging.getLogger("daskgraph.cluster.footprint")

#: Dask's setting for the length of its low-level logs
LOG_LENGTH = "distributed.admin.low-level-log-length"
#: Clear a process's memo of task-key prefixes once it holds more than this many keys. Every
#: run's keys are new, so the memo is only worth its current run's keys (a few per partition);
#: 1,024 keeps it under half a MiB (about 330 bytes a key) against Dask's 100,000 (30 MiB),
#: and clearing costs the next lookups a microsecond each. Read at each call, so a test may
#: patch it.
KEY_MEMO_LIMIT = 1024
#: Entries Dask's low-level logs keep where daskgraph runs Dask (Dask's default: 1,000). One
#: of them keeps every batch of messages sent, feeds included, so 1,000 can be hundreds of
#: MiB; 32 still shows a developer the last few runs' messages.
DASK_LOG_LENGTH = 32
#: the name the scheduler plugin is registered under (one per scheduler)
PLUGIN_NAME = "daskgraph-key-memo"

_installed: weakref.WeakSet[Client] = weakref.WeakSet()
_lock = threading.Lock()


def bound_key_memo(limit: int | str | None = "default") -> bool:
    """Clear this process's memo of task-key prefixes (``dask.utils.key_split``) if it holds
    more than ``limit`` keys (:data:`KEY_MEMO_LIMIT` by default; ``None``: never).
    Returns whether it was cleared."""
    if limit == "default":
        limit = KEY_MEMO_LIMIT
    if limit is None or key_split.cache_info().currsize <= int(limit):
        return False
    key_split.cache_clear()
    return True


class KeyMemoBound(SchedulerPlugin):
    """A scheduler plugin: bound the scheduler's key memo each time a graph arrives.

    The limit is :data:`KEY_MEMO_LIMIT` of the scheduler's process.
    """

    idempotent = True  # one per scheduler, whichever session registers it first
    name = PLUGIN_NAME

    def update_graph(self, scheduler: Any, **kwargs: Any) -> None:
        """Clear the memo if it grew past :data:`KEY_MEMO_LIMIT`."""
        bound_key_memo()


def install(client: Client) -> None:
    """Register :class:`KeyMemoBound` on ``client``'s scheduler, once per client.

    A scheduler that refuses it (one that cannot import daskgraph, say) only keeps Dask's
    own bound on its memo (100,000 keys): that is logged, and the session goes on.
    """
    with _lock:
        if client in _installed:
            return
        _installed.add(client)
    try:
        client.register_plugin(KeyMemoBound(), name=PLUGIN_NAME)
    except Exception as exc:
        logger.warning(
            "the scheduler at %s did not take daskgraph's key-memo plugin (%r): its memo of "
            "task keys grows to Dask's own bound (about 30 MiB)",
            getattr(client.scheduler, "address", "?"),
            exc,
        )


class LeanSpans(SpansSchedulerExtension):
    """Dask's span extension (spans, their task groups, code and metrics), without the
    metadata of every graph submitted, which it would keep for good (``Span.metadata``: the
    collections each graph came from, read by nothing in Dask itself)."""

    def observe_tasks(self, tss: Any, code: Any, span_metadata: Any = None) -> Any:
        """As Dask's, with no graph metadata."""
        return super().observe_tasks(tss, code=code, span_metadata=None)


def scheduler_extensions() -> dict[str, Any]:
    """The extensions of a scheduler daskgraph starts: Dask's defaults, with
    :class:`LeanSpans` as the span extension.

    >>> extensions = scheduler_extensions()
    >>> extensions["spans"].__name__, "stealing" in extensions
    ('LeanSpans', True)
    """
    return {**DEFAULT_EXTENSIONS, "spans": LeanSpans}


def shorten_dask_logs() -> None:
    """Make the Dask objects this process creates from now on keep :data:`DASK_LOG_LENGTH`
    entries in their low-level logs (``distributed.admin.low-level-log-length``). Called where
    daskgraph starts a scheduler, workers or a client here."""
    dask.config.set({LOG_LENGTH: DASK_LOG_LENGTH})


def worker_settings() -> dict[str, Any]:
    """The Dask settings a worker process daskgraph starts gets from its nanny: its low-level
    logs' length (:data:`DASK_LOG_LENGTH`).

    >>> worker_settings()
    {'distributed.admin.low-level-log-length': 32}
    """
    return {LOG_LENGTH: DASK_LOG_LENGTH}


def trim_heap(*_: Any) -> int:
    """Give this process's free heap back to the system (glibc's ``malloc_trim(0)``), so that
    resident memory is what the process keeps, not what its allocator holds in reserve; for
    measurements (``client.run(trim_heap)``, ``client.run_on_scheduler(trim_heap)``).
    Returns ``malloc_trim``'s answer, or -1 where there is no glibc.

    >>> trim_heap() in (-1, 0, 1)
    True
    """
    import ctypes

    try:
        return int(ctypes.CDLL("libc.so.6").malloc_trim(0))
    except (OSError, AttributeError):
        return -1


@contextmanager
def cyclic_gc_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector in the block (lowering a plan, compiling a
    program), and turn it back on after if it was on.

    Those steps allocate a few small, acyclic objects per op and keep most of them; with a
    large graph alive, every full collection that those allocations trigger walks the whole
    graph again (it doubled the time of lowering a million ops). Nothing they make is cyclic,
    so there is nothing for the collector to find; reference counting still frees everything.

    >>> with cyclic_gc_paused():
    ...     gc.isenabled()
    False
    >>> gc.isenabled()
    True
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
