"""Case *session-ready*: a fresh process's first ``Session()`` with 4 virtual GPU workers.

The seeds' multi-tower program (a tower per GPU, their sum on the CPU) starts with
``Session()`` on an embedded cluster of a CPU worker and 4 virtual GPU workers
(``DASK_DASKGRAPH__VIRTUAL_GPUS=4``, each virtual GPU a worker process). What its user waits
for before the first result, in a fresh process (nothing imported, no cluster running):

* ``import`` -- ``import daskgraph`` (reported apart, not in the target);
* ``session`` -- the process's first ``dg.Session()`` (starts the cluster);
* ``first_run`` -- the first ``sess.run`` of a 2x3 @ 3x2 ``matmul`` on each of ``/gpu:0`` ..
  ``/gpu:3`` and their ``add_n`` on ``/cpu:0`` (every worker used, the compute negligible);
* ``ready`` -- ``session`` + ``first_run``: ready for, and through, its first run.

Twice: with an empty kernel cache (``daskgraph.cache-dir``, env ``DASK_DASKGRAPH__CACHE_DIR``,
and ``NUMBA_CACHE_DIR`` pointed at a fresh temporary folder: *cold*), then a new process with
the cache the first filled (*warm*); ``--session-ready-repeats`` rounds (medians). Target
(issue 34): ``ready`` <= 3 s, cold and warm.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import tempfile
import time
from typing import Any

from benchmarks.common import quiet, run_json, target_record

GPUS = 4
GOAL_S = 3.0
PHASES = ("ready", "import", "session", "first_run")
LABELS = {
    "ready": "Session() + first run",
    "import": "import daskgraph",
    "session": "first Session() (starts the cluster)",
    "first_run": "first sess.run (4 towers and their sum)",
}
TIMEOUT = 300.0


# -- inside the child process ---------------------------------------------------------------------
def _measure() -> dict[str, float]:
    """The child's timings (seconds)."""
    start = time.perf_counter()
    import numpy as np

    import daskgraph as dg

    out = {"import": time.perf_counter() - start}
    graph = dg.Graph()
    with graph.as_default():
        towers = []
        for gpu in range(GPUS):
            with dg.device(f"/gpu:{gpu}"):
                a = dg.constant(np.arange(6, dtype=np.float32).reshape(2, 3) + gpu)
                b = dg.constant(np.arange(6, dtype=np.float32).reshape(3, 2))
                towers.append(dg.matmul(a, b))
        with dg.device("/cpu:0"):
            total = dg.add_n(towers)
    start = time.perf_counter()
    sess = dg.Session(graph=graph)
    out["session"] = time.perf_counter() - start
    try:
        start = time.perf_counter()
        value = sess.run(total)
        out["first_run"] = time.perf_counter() - start
    finally:
        sess.close()
    b = np.arange(6, dtype=np.float32).reshape(3, 2)
    expected = sum((np.arange(6, dtype=np.float32).reshape(2, 3) + g) @ b for g in range(GPUS))
    np.testing.assert_allclose(value, expected, rtol=1e-6)
    out["ready"] = out["session"] + out["first_run"]
    return out


def child() -> None:
    """``python -m benchmarks.session_ready``: print the timings as JSON."""
    print(json.dumps(_measure()))


# -- in the suite's process -----------------------------------------------------------------------
def _round() -> dict[str, dict[str, float]]:
    cache = tempfile.mkdtemp(prefix="daskgraph-session-ready-cache-")
    env = {
        "DASK_DASKGRAPH__VIRTUAL_GPUS": str(GPUS),
        "DASK_DASKGRAPH__CACHE_DIR": cache,
        "NUMBA_CACHE_DIR": os.path.join(cache, "numba"),
    }
    out = {}
    try:
        for key in ("cold", "warm"):
            quiet()  # the previous process's workers gone
            out[key] = run_json("benchmarks.session_ready", env=env, timeout=TIMEOUT)
        return out
    finally:
        shutil.rmtree(cache, ignore_errors=True)


def run(args) -> dict[str, Any]:
    """Run the case: ``args.session_ready_repeats`` rounds of a cold and a warm process."""
    return case_result([_round() for _ in range(args.session_ready_repeats)])


def case_result(rounds: list[dict[str, dict[str, float]]]) -> dict[str, Any]:
    """The case's record from the processes' timings (one ``{"cold": ..., "warm": ...}`` a
    round).

    >>> t = {"import": 0.2, "session": 2.5, "first_run": 0.1, "ready": 2.6}
    >>> [(x["key"], x["met"]) for x in case_result([{"cold": t, "warm": t}])["targets"]]
    [('session_ready.cold', True), ('session_ready.warm', True)]
    """
    ways = [
        _way(
            f"{cache}_{phase}", f"{cache} cache: {LABELS[phase]}", [r[cache][phase] for r in rounds]
        )
        for cache in ("cold", "warm")
        for phase in PHASES
    ]
    by = {w["key"]: w for w in ways}
    return {
        "title": "session ready",
        "summary": f"the first dg.Session() of a fresh process with {GPUS} virtual GPU workers "
        "and its first run (a matmul on each virtual GPU, their add_n on the CPU); cold: an "
        "empty kernel cache, warm: the cache the cold process filled "
        f"({len(rounds)} round{'s' if len(rounds) > 1 else ''})",
        "params": {"virtual_gpus": GPUS, "rounds": len(rounds)},
        "ways": ways,
        "targets": [
            target_record(
                f"session_ready.{cache}",
                f"{cache} cache: Session() with {GPUS} virtual GPUs + first run",
                by[f"{cache}_ready"]["median_s"],
                "<=",
                GOAL_S,
                unit=" s",
                note=", ".join(
                    f"{LABELS[p]} {by[f'{cache}_{p}']['median_s']:.2f} s" for p in PHASES[1:]
                ),
            )
            for cache in ("cold", "warm")
        ],
    }


def _way(key: str, label: str, times: list[float]) -> dict[str, Any]:
    return {
        "key": key,
        "label": label,
        "times_s": times,
        "median_s": statistics.median(times),
        "min_s": min(times),
        "status": "ok",
    }


if __name__ == "__main__":
    child()
