"""Case *big-graph*: a TF1 program's graph of up to a million ops, built, run twice, measured.

What a user of ``import daskgraph.compat.v1 as tf`` waits for, and how much memory the process
takes, with a graph of ``n`` ops: ``chains`` name-scoped chains of elementwise ``tf.add`` /
``tf.multiply`` on 4x4 float32 from one placeholder, a ``tf.tanh`` every
:data:`TANH_EVERY` ops, each chain ending in a ``tf.matmul`` by a per-chain constant and a
``tf.reduce_sum``, the chains joined by ``tf.add_n``. Each size runs in a fresh Python process
(:func:`child`), which times:

* ``build`` -- the graph built in Python (TF1 names, name scopes, constants);
* ``session`` -- ``tf.Session(graph=graph)``, the process's first (starts the cluster);
* ``first_run`` -- the first ``Session.run`` (placement, lowering, the program compiled and run);
* ``second_run`` -- the same fetch again (the plan cached);
* ``close`` -- ``Session.close()``;

(``build_cpu`` and ``first_run_cpu``: the process's CPU time in those phases, every thread,
steadier than wall time on a shared machine) and the process's resident memory: after the
build (``rss_build``), after the first run (``rss_first``), and its peak (``peak_rss``,
``ru_maxrss``). The result is checked against
the same computation in NumPy, untimed.

Run one size by hand (prints one JSON object)::

    PYTHONPATH=$PWD .venv/bin/python -m benchmarks.big_graph 1000000 [--chains 100]

Target (issue 32, B1): at 1M ops, build + first run <= 20 s and peak RSS <= 1.5 GB.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import sys
import time
from typing import Any

import numpy as np

from benchmarks.common import run_json, target_record

SIZE = 4
TANH_EVERY = 50
DEFAULT_SIZES = (100_000, 1_000_000)
DEFAULT_CHAINS = 100
GOAL_S = 20.0
GOAL_RSS = 1.5e9
PHASES = ("build", "session", "first_run", "second_run", "close")
LABELS = {
    "build": "graph build (TF1 names)",
    "session": "first tf.Session() (starts the cluster)",
    "first_run": "first Session.run",
    "second_run": "second Session.run (cached)",
    "close": "Session.close()",
}


def chain_ops(length: int) -> list[str]:
    """The op types of one chain, in order (the chain's own ops, ``length`` of them)."""
    kinds = []
    for j in range(length - 2):
        if j % TANH_EVERY == TANH_EVERY - 1:
            kinds.append("tanh")
        else:
            kinds.append("add" if j % 2 == 0 else "mul")
    return [*kinds, "matmul", "sum"]


def constants(c: int) -> tuple[np.float32, np.float32, np.ndarray]:
    """(addend, factor, matrix) of chain ``c``: distinct per chain, to catch mis-wiring."""
    w = np.eye(SIZE, dtype=np.float32) * np.float32(0.5 + 0.001 * c)
    return np.float32(0.01 + 0.0001 * c), np.float32(0.99 - 0.0001 * c), w


def build(n_ops: int, chains: int):
    """(graph, placeholder, fetch) of about ``n_ops`` ops, written as a TF1 program would."""
    import daskgraph.compat.v1 as tf

    length = max(4, n_ops // chains - 3)  # + 3 per chain: its two constants and the matrix
    kinds = chain_ops(length)
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, shape=(SIZE, SIZE), name="x")
        ends = []
        for c in range(chains):
            addend, factor, w = constants(c)
            with tf.name_scope(f"chain{c}"):
                a = tf.constant(addend, name="a")
                m = tf.constant(factor, name="m")
                y = x
                for kind in kinds:
                    if kind == "add":
                        y = tf.add(y, a)
                    elif kind == "mul":
                        y = tf.multiply(y, m)
                    elif kind == "tanh":
                        y = tf.tanh(y)
                    elif kind == "matmul":
                        y = tf.matmul(y, tf.constant(w, name="w"))
                    else:
                        y = tf.reduce_sum(y)
                ends.append(y)
        total = tf.add_n(ends, name="total")
    return graph, x, total


def numpy_value(x: np.ndarray, n_ops: int, chains: int) -> np.float32:
    """The fetch's value computed by NumPy (the same ops in the same order)."""
    length = max(4, n_ops // chains - 3)
    kinds = chain_ops(length)
    total = np.float32(0)
    for c in range(chains):
        addend, factor, w = constants(c)
        y = x
        for kind in kinds:
            if kind == "add":
                y = y + addend
            elif kind == "mul":
                y = y * factor
            elif kind == "tanh":
                y = np.tanh(y)
            elif kind == "matmul":
                y = y @ w
            else:
                y = y.sum(dtype=np.float32)
        total = total + y
    return total


# -- inside the child process ---------------------------------------------------------------------
def _rss() -> int:
    """Resident bytes of this process now."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _peak_rss() -> int:
    """Peak resident bytes of this process so far (``ru_maxrss`` is in KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def measure(n_ops: int, chains: int) -> dict[str, Any]:
    """The child's timings (seconds), memory (bytes) and the graph's size."""
    import daskgraph.compat.v1 as tf

    x_value = np.random.default_rng(0).standard_normal((SIZE, SIZE)).astype(np.float32)
    gc.collect()
    out: dict[str, Any] = {"rss_start": _rss()}
    start, cpu = time.perf_counter(), time.process_time()
    graph, x, total = build(n_ops, chains)
    out["build"] = time.perf_counter() - start
    out["build_cpu"] = time.process_time() - cpu
    out["rss_build"] = _rss()
    out["graph_ops"] = len(graph)
    start = time.perf_counter()
    sess = tf.Session(graph=graph)
    out["session"] = time.perf_counter() - start
    try:
        start, cpu = time.perf_counter(), time.process_time()
        value = sess.run(total, {x: x_value})
        out["first_run"] = time.perf_counter() - start
        out["first_run_cpu"] = time.process_time() - cpu
        out["rss_first"] = _rss()
        start = time.perf_counter()
        again = sess.run(total, {x: x_value})
        out["second_run"] = time.perf_counter() - start
    finally:
        start = time.perf_counter()
        sess.close()
        out["close"] = time.perf_counter() - start
    out["peak_rss"] = _peak_rss()
    out["build_first_run"] = out["build"] + out["first_run"]
    expected = numpy_value(x_value, n_ops, chains)
    np.testing.assert_allclose([value, again], [expected, expected], rtol=1e-3)
    return out


def child(argv: list[str]) -> None:
    """``python -m benchmarks.big_graph N_OPS [--chains C]``: print the measures as JSON.

    The process ends with ``os._exit`` once they are printed: its exit (which may wait for a
    background compile) is not this case's measure.
    """
    parser = argparse.ArgumentParser(prog="python -m benchmarks.big_graph")
    parser.add_argument("n_ops", type=int)
    parser.add_argument("--chains", type=int, default=DEFAULT_CHAINS)
    args = parser.parse_args(argv)
    print(json.dumps(measure(args.n_ops, args.chains)), flush=True)
    sys.stderr.flush()
    os._exit(0)


# -- in the suite's process -----------------------------------------------------------------------
def _gb(n: float) -> str:
    return f"{n / 1e9:.2f} GB"


def run(args) -> dict[str, Any]:
    """Run the case: one fresh process per size (``args.big_graph_sizes``)."""
    rows = [
        run_json("benchmarks.big_graph", str(n), "--chains", str(DEFAULT_CHAINS), timeout=1800)
        for n in args.big_graph_sizes
    ]
    big = rows[-1]
    sizes = ", ".join(f"{r['graph_ops']:,}" for r in rows)
    ways = [
        {
            "key": f"{key}@{row['graph_ops']}",
            "label": f"{LABELS[key]}, {row['graph_ops']:,} ops",
            "times_s": [row[key]],
            "median_s": row[key],
            "min_s": row[key],
            "status": "ok",
        }
        for row in rows
        for key in PHASES
    ]
    note = ", ".join(
        f"{row['graph_ops']:,} ops: build {row['build']:.2f} s, "
        f"first run {row['first_run']:.2f} s, second run {row['second_run']:.2f} s, "
        f"peak RSS {_gb(row['peak_rss'])}"
        for row in rows
    )
    return {
        "title": "big graph",
        "summary": f"TF1 programs of {sizes} ops "
        f"({DEFAULT_CHAINS} name-scoped chains of add/multiply on {SIZE}x{SIZE} float32, a tanh "
        f"every {TANH_EVERY} ops, a matmul and a reduce_sum each, joined by add_n) built, run "
        "twice, in a fresh process each",
        "params": {"sizes": [r["graph_ops"] for r in rows], "chains": DEFAULT_CHAINS},
        "processes": rows,
        "ways": ways,
        "targets": [
            target_record(
                "big_graph.time",
                f"{big['graph_ops']:,}-op TF1 graph: build + first run",
                big["build_first_run"],
                "<=",
                GOAL_S,
                unit=" s",
                note=note,
            ),
            target_record(
                "big_graph.rss",
                f"{big['graph_ops']:,}-op TF1 graph: peak RSS",
                big["peak_rss"],
                "<=",
                GOAL_RSS,
                unit=" B",
                timed=False,
            ),
        ],
    }


if __name__ == "__main__":
    child(sys.argv[1:])
