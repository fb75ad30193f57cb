"""Case *first-run*: a million-op graph built, a session opened, and run once.

What a user of a big TF1 graph waits for before the first result: build the graph in Python,
open a ``Session()`` (the process's first: it starts the embedded cluster), and run it once
(placement, lowering, the program shipped to its worker and compiled there, then executed).
Every repeat is a fresh Python process (nothing cached, a cluster to start), with the
embedded cluster's defaults.

The graph is the fine-grained case's at scale (:func:`benchmarks.fine_grained.build_daskgraph`):
100 chains of 10,000 elementwise ops on 16x16 float32 from one placeholder, joined by
``add_n`` (1,000,202 ops), all on the CPU. The child times:

* ``build`` -- the graph built in Python;
* ``session`` -- ``dg.Session(graph=graph)``, the process's first (starts the cluster);
* ``place_lower`` -- placement and lowering inside the first run (the session's ``_plan``,
  wrapped by the child for the report only; absent if daskgraph renames it);
* ``first_run`` -- the first ``Session.run``, ``place_lower`` included;
* ``second_run`` -- a second run of the same fetch (everything cached), for reference;
* ``total`` -- build + session + first run.

The result is checked against the same computation in NumPy, untimed. Target: total <= 10 s.
"""

from __future__ import annotations

import functools
import gc
import json
import statistics
import sys
import time
from typing import Any

import numpy as np

from benchmarks.common import run_json, target_record

DEFAULT_OPS = 1_000_000
CHAINS = 100
GOAL_S = 10.0
PHASES = ("build", "session", "place_lower", "first_run", "second_run", "total")
LABELS = {
    "total": "build + Session() + first run",
    "build": "graph build (Python)",
    "session": "first Session() (starts the cluster)",
    "place_lower": "place + lower (inside the first run)",
    "first_run": "first Session.run (place + lower included)",
    "second_run": "second Session.run (cached)",
}

NOTE_NAMES = {
    "build": "build",
    "session": "Session()",
    "place_lower": "place + lower",
    "first_run": "first run",
    "second_run": "second run",
}


# -- inside the child process ---------------------------------------------------------------------
def _timing_plan(times: dict[str, float]) -> None:
    """Wrap ``Session._plan`` (placement and lowering of a run's fetches) to add its time."""
    from daskgraph.runtime.client import session

    original = getattr(session.Session, "_plan", None)
    if original is None:
        return

    @functools.wraps(original)
    def timed(self, *args, **kwargs):
        start = time.perf_counter()
        try:
            return original(self, *args, **kwargs)
        finally:
            times["place_lower"] = times.get("place_lower", 0.0) + time.perf_counter() - start

    session.Session._plan = timed


def _measure(n_ops: int) -> dict[str, Any]:
    """The child's timings (seconds) and the graph's size."""
    import daskgraph as dg
    from benchmarks.fine_grained import SIZE, build_daskgraph, numpy_loop

    length = max(2, n_ops // CHAINS)
    x_value = np.random.default_rng(0).standard_normal((SIZE, SIZE)).astype(np.float32)
    gc.collect()
    out: dict[str, Any] = {}
    start = time.perf_counter()
    graph, x, total = build_daskgraph(CHAINS, length)
    out["build"] = time.perf_counter() - start
    start = time.perf_counter()
    sess = dg.Session(graph=graph)
    out["session"] = time.perf_counter() - start
    plan_times: dict[str, float] = {}
    _timing_plan(plan_times)
    try:
        start = time.perf_counter()
        value = sess.run(total, {x: x_value})
        out["first_run"] = time.perf_counter() - start
        out["place_lower"] = plan_times.get("place_lower")
        start = time.perf_counter()
        sess.run(total, {x: x_value})
        out["second_run"] = time.perf_counter() - start
        partitions = [len(c.plan.partitions) for c in getattr(sess, "_plans", {}).values()]
    finally:
        sess.close()
    out["total"] = out["build"] + out["session"] + out["first_run"]
    np.testing.assert_allclose(value, numpy_loop(x_value, CHAINS, length), rtol=1e-4, atol=1e-4)
    out["graph_ops"] = len(graph)
    out["partitions"] = partitions[0] if partitions else None
    return out


def child(argv: list[str]) -> None:
    """``python -m benchmarks.first_run N_OPS``: print the timings as JSON."""
    print(json.dumps(_measure(int(argv[0]))))


# -- in the suite's process -----------------------------------------------------------------------
def _way(key: str, times: list[float | None]) -> dict[str, Any]:
    kept = [t for t in times if t is not None]
    return {
        "key": key,
        "label": LABELS[key],
        "times_s": kept,
        "median_s": statistics.median(kept) if kept else None,
        "min_s": min(kept) if kept else None,
        "status": "ok" if kept else "n/a (not measured)",
    }


def run(args) -> dict[str, Any]:
    """Run the case: ``args.big_repeats`` fresh processes (one by default: each takes seconds
    and builds a million ops)."""
    runs = [
        run_json("benchmarks.first_run", str(args.first_run_ops), timeout=1800)
        for _ in range(args.big_repeats)
    ]
    ways = [_way(key, [r.get(key) for r in runs]) for key in ("total", *PHASES[:-1])]
    total = ways[0]["median_s"]
    parts = {w["key"]: w["median_s"] for w in ways}
    return {
        "title": "first run",
        "summary": f"a {runs[0]['graph_ops']:,}-op graph ({CHAINS} chains of elementwise ops on "
        "16x16 float32, all on the CPU) built, a first Session() opened and run once, in a "
        f"fresh process ({len(runs)} process{'es' if len(runs) > 1 else ''})",
        "params": {
            "graph_ops": runs[0]["graph_ops"],
            "partitions": runs[0]["partitions"],
            "processes": len(runs),
        },
        "baseline": "total",
        "ways": ways,
        "targets": [
            target_record(
                "first_run.total",
                f"{runs[0]['graph_ops'] / 1e6:.1f}M-op graph: build + Session() + first run",
                total,
                "<=",
                GOAL_S,
                unit=" s",
                note=", ".join(
                    f"{NOTE_NAMES[k]} {v:.2f} s"
                    for k, v in parts.items()
                    if k in NOTE_NAMES and v is not None
                ),
            )
        ],
    }


if __name__ == "__main__":
    child(sys.argv[1:])
