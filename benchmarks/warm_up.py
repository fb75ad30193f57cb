"""Case *warm-up*: the first seconds of a user's loop, in a fresh process, cold and warm cache.

A user's program does not start in its steady state: it starts a process, builds its graph,
opens a session and calls ``sess.run`` in a loop. This case runs the fine-grained case's graph
(:func:`benchmarks.fine_grained.build_daskgraph`: 40 chains x 100 add/multiply on 16x16
float32, joined by ``add_n``) exactly so, each way in a process of its own started for it
(nothing imported, compiled or warmed before), one after the other so that no other process of
the suite runs beside it:

* ``daskgraph_cold`` -- daskgraph with an empty kernel cache (``daskgraph.cache-dir``, env
  ``DASK_DASKGRAPH__CACHE_DIR``, and Numba's ``NUMBA_CACHE_DIR`` pointed at a fresh temporary
  folder);
* ``daskgraph_warm`` -- the same program again, in a new process, with the cache the cold
  process filled;
* ``tensorflow`` -- TensorFlow 1's same loop (``tf.compat.v1`` graph mode, intra- and
  inter-op threads = CPU count).

Each process times its set-up (the import, the graph's build, the ``Session()``) apart, then
calls ``sess.run`` back to back for ``--warmup-seconds`` (30) from its first call, timing every
call. Reported: the median step and the steps done over the first 1, 5 and 30 s; the median
from the second second on, and the slowest second's median step from then on; the second from
which every later second's median step is at most :data:`TF_GOAL` of TensorFlow's
(``fast_from``); and the first ten runs' total.

Targets (issue 34): warm cache, every second's median step from the second second on (the
slowest's) <= 0.33x TensorFlow's median step; cold cache, fast (as above) within 10 s; the
first ten runs of a fresh process <= 2x TensorFlow's first ten, cold and warm.
``--warmup-repeats`` runs the three processes that many times (a fresh cache folder each time)
and takes medians.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from typing import Any

import numpy as np

from benchmarks.common import TF_MISSING, fmt_time, quiet, ratio, run_json, target_record

PROCESSES = ("daskgraph_cold", "daskgraph_warm", "tensorflow")
LABELS = {
    "daskgraph_cold": "daskgraph, cold cache",
    "daskgraph_warm": "daskgraph, warm cache",
    "tensorflow": "TensorFlow 1",
}
WINDOWS = (1.0, 5.0, 30.0)  # the first 1, 5 and 30 s of the loop
STEADY_FROM = 1.0  # "from the second second on"
FIRST = 10  # the first ten runs
TF_GOAL = 1 / 3  # warm: at most 0.33x TensorFlow's step time
COLD_GOAL_S = 10.0  # cold: that fast within 10 s
FIRST_GOAL = 2.0  # the first ten runs: at most 2x TensorFlow's
SECONDS = 30.0
TIMEOUT = 600.0


# -- inside the child process ---------------------------------------------------------------------
def _daskgraph_loop(chains: int, length: int, seconds: float) -> dict[str, Any]:
    """Set-up times, then every step of a ``seconds``-long ``sess.run`` loop."""
    start = time.perf_counter()
    import daskgraph as dg
    from benchmarks.fine_grained import build_daskgraph

    import_s = time.perf_counter() - start
    return _timed_loop(
        import_s,
        lambda: build_daskgraph(chains, length),
        lambda graph: dg.Session(graph=graph),
        chains,
        length,
        seconds,
    )


def _tensorflow_loop(chains: int, length: int, seconds: float) -> dict[str, Any]:
    """As :func:`_daskgraph_loop`, in TensorFlow 1 graph mode (``{"missing": why}`` without it)."""
    from benchmarks.common import load_tensorflow, tf_session
    from benchmarks.fine_grained import build_tensorflow

    start = time.perf_counter()
    tf, missing = load_tensorflow()
    if tf is None:
        return {"missing": missing}
    import_s = time.perf_counter() - start
    record = _timed_loop(
        import_s,
        lambda: build_tensorflow(tf, chains, length),
        lambda graph: tf_session(tf, graph, os.cpu_count() or 1),
        chains,
        length,
        seconds,
    )
    return {**record, "version": tf.__version__}


def _timed_loop(
    import_s: float, build: Any, open_session: Any, chains: int, length: int, seconds: float
) -> dict[str, Any]:
    """Build the graph (``build()``: graph, placeholder, result), open its session
    (``open_session(graph)``) and run it for ``seconds``, checked against NumPy's result:
    the set-up times and every step."""
    from benchmarks.fine_grained import SIZE, numpy_loop

    setup = {"import_s": import_s}
    x_value = np.random.default_rng(0).standard_normal((SIZE, SIZE)).astype(np.float32)
    start = time.perf_counter()
    graph, x, total = build()
    setup["build_s"] = time.perf_counter() - start
    start = time.perf_counter()
    sess = open_session(graph)
    setup["session_s"] = time.perf_counter() - start
    try:
        steps, value = _loop(lambda: sess.run(total, {x: x_value}), seconds)
    finally:
        sess.close()
    np.testing.assert_allclose(value, numpy_loop(x_value, chains, length), rtol=1e-5, atol=1e-5)
    return {"setup": setup, "steps": steps}


def _loop(step, seconds: float) -> tuple[list[list[float]], Any]:
    """``[[start, duration], ...]`` of back-to-back ``step()`` calls for ``seconds`` (starts
    from the first call), and the last result."""
    steps: list[list[float]] = []
    value = None
    first = time.perf_counter()
    now = first
    while now - first < seconds:
        start = now
        value = step()
        now = time.perf_counter()
        steps.append([round(start - first, 6), round(now - start, 7)])
    return steps, value


def child(argv: list[str]) -> None:
    """``python -m benchmarks.warm_up daskgraph|tensorflow CHAINS LENGTH SECONDS``: print the
    set-up times and every step as JSON."""
    way, chains, length, seconds = argv[0], int(argv[1]), int(argv[2]), float(argv[3])
    loop = _daskgraph_loop if way == "daskgraph" else _tensorflow_loop
    print(json.dumps(loop(chains, length, seconds)))


# -- summaries (in the suite's process) -----------------------------------------------------------
def summarize(steps: list[list[float]], reference: float | None = None) -> dict[str, Any]:
    """Windows, steady median, first ten and (given TensorFlow's steady ``reference``) the
    second from which the loop is fast, of one process's ``[[start, duration], ...]`` steps.

    >>> steps = [[i * 0.01, 0.01] for i in range(500)]  # 5 s of 10 ms steps
    >>> s = summarize(steps, reference=0.05)
    >>> s["windows"][1], s["steady_s"], s["slowest_second_s"], s["fast_from_s"]
    ({'seconds': 5.0, 'steps': 500, 'median_s': 0.01}, 0.01, 0.01, 0.0)
    >>> round(s["first_ten_s"], 3)
    0.1
    """
    windows = []
    for limit in WINDOWS:
        inside = [d for start, d in steps if start + d <= limit]
        windows.append({"seconds": limit, "steps": len(inside), "median_s": _median(inside)})
    seconds = _per_second(steps)
    return {
        "steps": len(steps),
        "loop_s": steps[-1][0] + steps[-1][1] if steps else 0.0,
        "windows": windows,
        "steady_s": _median([d for start, d in steps if start >= STEADY_FROM]),
        "slowest_second_s": max(
            (e["median_s"] for e in seconds if e["second"] >= STEADY_FROM), default=None
        ),
        "first_ten_s": sum(d for _, d in steps[:FIRST]) if len(steps) >= FIRST else None,
        "per_second": seconds,
        "fast_from_s": fast_from(seconds, reference * TF_GOAL) if reference else None,
    }


def _per_second(steps: list[list[float]]) -> list[dict[str, Any]]:
    """The median step and steps started in each second of the loop."""
    buckets: dict[int, list[float]] = {}
    for start, d in steps:
        buckets.setdefault(int(start), []).append(d)
    return [
        {"second": s, "steps": len(buckets[s]), "median_s": _median(buckets[s])}
        for s in sorted(buckets)
    ]


def fast_from(seconds: list[dict[str, Any]], goal_s: float) -> float | None:
    """The first second from which every second's median step is at most ``goal_s`` (None:
    not by the end of the loop).

    >>> per = [{"second": s, "median_s": m} for s, m in enumerate([9, 9, 1, 9, 1, 1])]
    >>> fast_from(per, 2), fast_from(per, 0.5)
    (4.0, None)
    """
    found = None
    for entry in seconds:
        if entry["median_s"] <= goal_s:
            found = float(entry["second"]) if found is None else found
        else:
            found = None
    return found


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


# -- in the suite's process -----------------------------------------------------------------------
def _processes(args, tf_missing: str) -> dict[str, dict[str, Any]]:
    """One round: the cold process, the warm one (the cache the cold one filled), TF's."""
    params = [str(args.chains), str(args.length), str(args.warmup_seconds)]
    cache = tempfile.mkdtemp(prefix="daskgraph-warm-up-cache-")
    env = {"DASK_DASKGRAPH__CACHE_DIR": cache, "NUMBA_CACHE_DIR": os.path.join(cache, "numba")}
    out: dict[str, dict[str, Any]] = {}
    try:
        for key in PROCESSES[:2]:
            out[key] = _fresh("daskgraph", params, env)
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    out["tensorflow"] = {"missing": tf_missing} if tf_missing else _fresh("tensorflow", params, {})
    return out


def _fresh(way: str, params: list[str], env: dict[str, str]) -> dict[str, Any]:
    """One fresh child process of ``way``, started once the suite's processes are quiet (no
    earlier process's work running beside it)."""
    quiet()
    env = {**env, "TF_CPP_MIN_LOG_LEVEL": os.environ.get("TF_CPP_MIN_LOG_LEVEL", "2")}
    return run_json("benchmarks.warm_up", way, *params, env=env, timeout=TIMEOUT)


def run(args, tf_missing: str = "") -> dict[str, Any]:
    """Run the case: ``args.warmup_repeats`` rounds of three fresh processes."""
    rounds = [_processes(args, tf_missing) for _ in range(args.warmup_repeats)]
    return case_result(rounds, args.chains, args.length, args.warmup_seconds)


def case_result(
    rounds: list[dict[str, dict[str, Any]]], chains: int, length: int, seconds: float
) -> dict[str, Any]:
    """The case's record from the processes' outputs (``rounds``: one dict per round, keyed
    by :data:`PROCESSES`; a process without TensorFlow is ``{"missing": why}``)."""
    tf_missing = rounds[0]["tensorflow"].get("missing", "")
    processes = {}
    for key in PROCESSES:
        outs = [r[key] for r in rounds if "steps" in r[key]]
        refs = [_tf_reference(r) for r in rounds if "steps" in r[key]]
        summaries = [summarize(o["steps"], ref) for o, ref in zip(outs, refs, strict=True)]
        processes[key] = _process_record(key, outs, summaries, tf_missing)
    return {
        "title": "warm-up",
        "summary": f"the fine-grained graph ({chains} chains x {length} add/multiply on 16x16 "
        f"float32, add_n) in a continuous sess.run loop of {seconds:g} s from its first call, "
        f"each way in a fresh process of its own ({len(rounds)} round"
        f"{'s' if len(rounds) > 1 else ''}); cold: an empty kernel cache, warm: the cache the "
        "cold process filled",
        "params": {"chains": chains, "length": length, "loop_s": seconds, "rounds": len(rounds)},
        "processes": processes,
        "targets": _targets(processes, tf_missing),
    }


def _tf_reference(round_: dict[str, dict[str, Any]]) -> float | None:
    tf = round_["tensorflow"]
    return summarize(tf["steps"])["steady_s"] if "steps" in tf else None


def _process_record(
    key: str, outs: list[dict], summaries: list[dict], tf_missing: str
) -> dict[str, Any]:
    """One process's medians over the rounds."""
    record: dict[str, Any] = {"key": key, "label": LABELS[key]}
    if not outs:
        record["status"] = tf_missing or TF_MISSING
        return record
    record["status"] = "ok"
    for name in ("import_s", "build_s", "session_s"):
        record[name] = _median([o["setup"][name] for o in outs])
    for name in ("steps", "loop_s", "steady_s", "slowest_second_s", "first_ten_s", "fast_from_s"):
        values = [s[name] for s in summaries]
        record[name] = _median(values) if None not in values else None
    record["windows"] = [
        {
            "seconds": w,
            "steps": _median([s["windows"][i]["steps"] for s in summaries]),
            "median_s": _median(
                [m for s in summaries if (m := s["windows"][i]["median_s"]) is not None]
            ),
        }
        for i, w in enumerate(WINDOWS)
    ]
    record["per_second"] = summaries[0]["per_second"]  # the first round's, for a plot
    return record


def _targets(processes: dict[str, dict], tf_missing: str) -> list[dict[str, Any]]:
    cold, warm, tf = (processes[k] for k in PROCESSES)
    cold_fast = cold.get("fast_from_s")
    loop = cold.get("loop_s")
    targets = [
        target_record(
            "warm_up.warm_vs_tensorflow",
            "warm cache: slowest second's median step from the second second on / "
            "TensorFlow's median step",
            ratio(warm.get("slowest_second_s"), tf.get("steady_s")),
            "<=",
            TF_GOAL,
            note=tf_missing,
            goal_text="0.33x",
        ),
        target_record(
            "warm_up.cold_fast_within",
            "cold cache: every second's median step ≤ 0.33x TensorFlow's from second",
            cold_fast if cold_fast is not None or tf_missing else loop,
            "<=",
            COLD_GOAL_S,
            unit=" s",
            note=tf_missing or ("" if cold_fast is not None else "not reached in the loop"),
        ),
    ]
    if cold_fast is None and not tf_missing and loop is not None:
        targets[-1]["met"] = False  # not fast by the end of the loop, however short it was
    for key, process in (("cold", cold), ("warm", warm)):
        targets.append(
            target_record(
                f"warm_up.first_ten_{key}",
                f"{key} cache: first ten runs of a fresh process / TensorFlow's",
                ratio(process.get("first_ten_s"), tf.get("first_ten_s")),
                "<=",
                FIRST_GOAL,
                note=tf_missing,
            )
        )
    return targets


# -- the report's table ----------------------------------------------------------------------------
def table(case: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """(header, rows) of the case's table for the console and the page: one row per process.

    >>> steps = [[i * 0.01, 0.01] for i in range(300)]
    >>> out = {"setup": {"import_s": 1.0, "build_s": 0.5, "session_s": 0.1}, "steps": steps}
    >>> case = case_result([{k: out for k in PROCESSES}], 40, 100, 3.0)
    >>> header, rows = table(case)
    >>> dict(zip(header, rows[0]))["first 1 s: median (steps)"]
    '10.00 ms (100)'
    """
    header = [
        "process",
        "import",
        "build",
        "Session()",
        "first ten runs",
        *(f"first {w:g} s: median (steps)" for w in WINDOWS),
        f"from {STEADY_FROM:g} s on",
        f"slowest second from {STEADY_FROM:g} s",
        "≤ 0.33x TF from second",
    ]
    rows = []
    for key in PROCESSES:
        p = case["processes"][key]
        if p["status"] != "ok":
            rows.append([p["label"], p["status"], *[""] * (len(header) - 2)])
            continue
        windows = [f"{fmt_time(w['median_s'])} ({w['steps']:.0f})" for w in p["windows"]]
        fast = p["fast_from_s"]
        rows.append(
            [
                p["label"],
                fmt_time(p["import_s"]),
                fmt_time(p["build_s"]),
                fmt_time(p["session_s"]),
                fmt_time(p["first_ten_s"]),
                *windows,
                fmt_time(p["steady_s"]),
                fmt_time(p["slowest_second_s"]),
                "" if key == "tensorflow" else "never" if fast is None else f"{fast:g} s",
            ]
        )
    return header, rows


if __name__ == "__main__":
    child(sys.argv[1:])
