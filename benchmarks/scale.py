"""Case *scale*: placement and lowering time as graphs grow to a million ops.

Graph build, :func:`daskgraph.runtime.planner.placement.place` and
:func:`daskgraph.runtime.planner.lowering.lower` (pure
functions, no cluster) for graphs of about 10k, 100k and 1M ops over one CPU and two
virtual-GPU devices (hand-made :class:`daskgraph.cluster.topology.Device` objects). The graph has
100
chains, each cut into 4 segments under device scopes that rotate over CPU:0, GPU:0 and GPU:1
(so edges cross devices and the plan has several partitions), every segment with its own two
constants, joined by ``add_n``.

Each graph is built once (timed, reported, not part of the target); then ``place`` and
``lower`` get an untimed warm-up round and ``repeats`` timed rounds, except at 1M ops, which by
default get a single timed round and no warm-up (building and placing and lowering a million
ops takes about 20 s here; the smaller sizes have already warmed the code paths up).

Targets: place + lower <= 10 us/op at every size; linear: us/op at 1M / us/op at 10k <= 2 (a
quadratic step would show ~100x over this 100x size range; the log-log slope is reported too).
"""

from __future__ import annotations

import gc
import math
import time
from typing import Any

import numpy as np

from benchmarks.common import LOCAL, median, target_record

SIZE = 16
SCOPES = ("/cpu:0", "/gpu:0", "/gpu:1")
LINEARITY_GOAL = 2.0
US_PER_OP_GOAL = 10.0


def devices():
    from daskgraph.cluster.topology import Device

    return [
        Device(LOCAL + "CPU:0", "tcp://127.0.0.1:40001", "cpu"),
        Device(LOCAL + "GPU:0", "tcp://127.0.0.1:40002", "virtual-gpu"),
        Device(LOCAL + "GPU:1", "tcp://127.0.0.1:40003", "virtual-gpu"),
    ]


def build_graph(n_ops: int, n_chains: int = 100, segments: int = 4):
    """About ``n_ops`` ops: chains cut into segments under rotating device scopes; AddN."""
    import daskgraph as dg

    graph = dg.Graph()
    per_segment = max(3, n_ops // (n_chains * segments))
    with graph.as_default():
        x = dg.placeholder(dg.float32, shape=(SIZE, SIZE), name="x")
        ends = []
        for c in range(n_chains):
            y = x
            for s in range(segments):
                with dg.device(SCOPES[(c + s) % len(SCOPES)]):
                    a = dg.constant(np.float32(0.01))
                    m = dg.constant(np.float32(0.99))
                    for j in range(per_segment - 2):
                        y = dg.add(y, a) if j % 2 == 0 else dg.multiply(y, m)
            ends.append(y)
        total = dg.add_n(ends)
    return graph, x, total


def measure(n_ops: int, repeats: int, warmup: bool) -> dict[str, Any]:
    """Build the graph once, then time ``place`` and ``lower`` of it in every round (both are
    pure: a round leaves the graph as it found it)."""
    from daskgraph.runtime.planner.lowering import lower
    from daskgraph.runtime.planner.placement import place

    devs = devices()
    gc.collect()
    t0 = time.perf_counter()
    graph, x, total = build_graph(n_ops)
    build_s = time.perf_counter() - t0
    place_s: list[float] = []
    lower_s: list[float] = []
    info: dict[str, Any] = {}
    for i in range(repeats + int(warmup)):
        gc.collect()
        t1 = time.perf_counter()
        placement = place(graph, devs)
        t2 = time.perf_counter()
        plan = lower(placement, [total], [x])
        t3 = time.perf_counter()
        if i or not warmup:
            place_s.append(t2 - t1)
            lower_s.append(t3 - t2)
        info = {
            "graph_ops": len(graph),
            "partitions": len(plan.partitions),
            "devices_used": len({p.device for p in plan.partitions}),
        }
        del placement, plan
    del graph, x, total
    gc.collect()
    place_lower = [p + w for p, w in zip(place_s, lower_s, strict=True)]
    n = info["graph_ops"]
    return {
        "n_ops": n_ops,
        **info,
        "repeats": repeats,
        "warmup": warmup,
        "build_s": [build_s],
        "place_s": place_s,
        "lower_s": lower_s,
        "place_lower_s": place_lower,
        "place_lower_median_s": median(place_lower),
        "place_lower_min_s": min(place_lower),
        "us_per_op": median(place_lower) / n * 1e6,
        "build_us_per_op": build_s / n * 1e6,
    }


def run(args) -> dict[str, Any]:
    sizes = list(args.scale_sizes)
    rows = []
    notes = []
    for n in sizes:
        big = n >= 1_000_000
        repeats = args.big_repeats if big else args.repeats
        rows.append(measure(n, repeats, warmup=not big))
        if big and repeats < args.repeats:
            notes.append(
                f"{n:,} ops: {repeats} timed round(s) of place + lower and no warm-up (to keep "
                "the suite short); the smaller sizes warm the code paths up"
            )
    first, last = rows[0], rows[-1]
    linearity = last["us_per_op"] / first["us_per_op"] if len(rows) > 1 else None
    slope = None
    if len(rows) > 1:
        xs = [math.log10(r["graph_ops"]) for r in rows]
        ys = [math.log10(r["place_lower_median_s"]) for r in rows]
        slope = float(np.polyfit(xs, ys, 1)[0])
    worst = max(r["us_per_op"] for r in rows)
    return {
        "title": "scale",
        "summary": "graph build, place() and lower() of "
        + ", ".join(f"{r['graph_ops']:,}" for r in rows)
        + " ops over CPU:0, GPU:0, GPU:1 (pure functions, no cluster)",
        "params": {"sizes": sizes, "devices": 3, "chains": 100, "segments": 4},
        "rows": rows,
        "loglog_slope": slope,
        "notes": notes,
        "targets": [
            target_record(
                "scale.us_per_op",
                "place + lower, worst us/op over the sizes",
                worst,
                "<=",
                US_PER_OP_GOAL,
                unit=" us/op",
            ),
            target_record(
                "scale.linearity",
                f"linear: us/op at {last['graph_ops']:,} / at {first['graph_ops']:,} ops",
                linearity,
                "<=",
                LINEARITY_GOAL,
                note=f"log-log slope {slope:.2f} (1 = linear)" if slope is not None else "",
            ),
        ],
    }
