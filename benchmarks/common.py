"""What every case of the suite shares: timing ways back to back, clusters, peers, records.

A case measures several *ways* of doing one computation (daskgraph and its peers). A way is
timed as its users would run it: its untimed warm-up and then its ``repeats`` timed repeats run
back to back (:func:`run_back_to_back`), a continuous loop with no other way's turn in between,
so that no background work of the way's process (daskgraph's kernel compiler thread) gets idle
time a user's loop would not give it; each repeat is a loop of back-to-back calls
(:func:`per_call`: the median per call), with nothing between the calls that a user's loop
would not have (no garbage collection, no waiting). Before a way starts, the suite's processes
are let go quiet (:func:`quiet`), so that one way's leftover work is not billed to the next.
Peers run in processes of their own (:mod:`benchmarks.peer`). The ways of a case are measured
in one run, one after the other, and compared by their medians. Where one way leaves work
behind on a shared cluster (a plain Dask graph's thousands of keys to release), the case lets
the cluster *settle* after that way (:func:`settle`).

Results are plain dictionaries (they go to JSON as they are): a way is recorded by
:func:`way_record`, a target by :func:`target_record`.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

LOCAL = "/job:localhost/replica:0/task:0/device:"
TF_MISSING = "n/a (tensorflow not installed)"


# -- formatting -----------------------------------------------------------------------------------
def fmt_time(seconds: float | None) -> str:
    """A duration with a unit that keeps three or four significant digits."""
    if seconds is None:
        return "n/a"
    if seconds >= 1.0:
        return f"{seconds:.3f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.1f} us"


def fmt_bytes(n: float) -> str:
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{int(n)} B"


def median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


# -- ways, back to back ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Timed:
    """What a way returns when it times itself (e.g. a median per call over many calls)."""

    seconds: float
    value: Any = None


@dataclass
class Way:
    """One way of doing a case's computation.

    ``fn`` is timed (wall clock), unless it returns a :class:`Timed`. ``warmup`` (default:
    ``fn``) runs once, untimed, before the repeats. ``before`` and ``after`` run untimed around
    every call, warm-up included (they get the repeat number, -1 for the warm-up).
    ``unavailable`` is the reason the way cannot run here (it is then recorded, not run).
    """

    key: str
    label: str
    fn: Callable[[], Any] | None = None
    warmup: Callable[[], Any] | None = None
    before: Callable[[int], None] | None = None
    after: Callable[[int], None] | None = None
    unavailable: str = ""
    times: list[float] = field(default_factory=list)
    result: Any = None


def run_back_to_back(
    ways: list[Way], repeats: int, settle: Callable[[], None] | None, quiet_first: bool = True
) -> None:
    """Run each way in turn: its warm-up, then its ``repeats`` timed repeats back to back.

    A way's process runs a continuous loop, as its user's does: no other way takes a turn
    between its warm-up and its repeats (turns would let a background thread of the way's
    process, daskgraph's kernel compiler, finish while another process runs, hiding its cost).
    Before each way (``quiet_first``), the suite's processes are let go quiet (:func:`quiet`).
    """
    for way in ways:
        if way.unavailable:
            continue
        if quiet_first:
            quiet()
        _call(way, -1, way.warmup or way.fn, settle)
        for repeat in range(repeats):
            seconds, way.result = _call(way, repeat, way.fn, settle)
            way.times.append(seconds)


def quiet(limit: float = 0.35, window: float = 0.5, timeout: float = 20.0) -> float:
    """Wait until this process and its children (the peers, the clusters' worker processes)
    together use at most ``limit`` of a CPU over ``window`` seconds, or ``timeout`` passes;
    return the seconds waited. An idle embedded cluster with 4 virtual GPU workers uses
    0.1-0.2 of a CPU (heartbeats, Dask's profiler); a kernel compile, most of one.

    >>> 0.0 <= quiet(limit=100.0, window=0.01) < 1.0
    True
    """
    import psutil

    me = psutil.Process()
    started = time.monotonic()

    def cpu() -> float:
        total = sum(me.cpu_times()[:2])
        for child in me.children(recursive=True):
            try:
                total += sum(child.cpu_times()[:2])
            except psutil.Error:  # it ended meanwhile
                pass
        return total

    while time.monotonic() - started < timeout:
        before, t0 = cpu(), time.monotonic()
        time.sleep(window)
        if (cpu() - before) / (time.monotonic() - t0) <= limit:
            break
    return time.monotonic() - started


def _call(way: Way, repeat: int, fn: Callable[[], Any] | None, settle) -> tuple[float, Any]:
    assert fn is not None, f"way {way.key} has nothing to run"
    if way.before is not None:
        way.before(repeat)
    if settle is not None:
        settle()
    start = time.perf_counter()
    value = fn()
    seconds = time.perf_counter() - start
    if isinstance(value, Timed):
        seconds, value = value.seconds, value.value
    if way.after is not None:
        way.after(repeat)
    return seconds, value


def per_call(fn: Callable[[], Any], calls: int, seconds: float = 0.0) -> Callable[[], Timed]:
    """A way that makes ``calls`` back-to-back calls (and goes on until ``seconds`` have passed
    since the first) and reports the median per call (and the last result): a user's loop,
    nothing between the calls.

    >>> per_call(lambda: 7, 3)().value
    7
    """

    def run() -> Timed:
        times = []
        result = None
        first = time.perf_counter()
        while len(times) < calls or time.perf_counter() - first < seconds:
            start = time.perf_counter()
            result = fn()
            times.append(time.perf_counter() - start)
        return Timed(statistics.median(times), result)

    return run


def settle(client, timeout: float = 30.0, collect: bool = True) -> None:
    """Wait until the scheduler and workers hold no tasks but the ones this client keeps on
    purpose (a session's programs resident on their workers), then (``collect``) collect
    garbage here and on the workers: releasing thousands of keys after one way is not timed
    in the next one."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        held = set(client.futures)
        on_scheduler = client.run_on_scheduler(
            lambda dask_scheduler, held=held: sum(k not in held for k in dask_scheduler.tasks)
        )
        on_workers = client.run(
            lambda dask_worker, held=held: sum(k not in held for k in dask_worker.state.tasks)
        )
        if not on_scheduler and not any(on_workers.values()):
            break
        time.sleep(0.01)
    if collect:
        client.run(gc.collect)
        gc.collect()


# -- records --------------------------------------------------------------------------------------
def way_record(way: Way, per: int | None = None, per_label: str = "") -> dict[str, Any]:
    """A way's JSON record: every repeat, median and minimum (and a per-item time)."""
    record: dict[str, Any] = {
        "key": way.key,
        "label": way.label,
        "times_s": list(way.times),
        "median_s": median(way.times),
        "min_s": min(way.times) if way.times else None,
        "status": way.unavailable or "ok",
    }
    if per and way.times:
        record["per_item_s"] = median(way.times) / per
        record["per_item"] = per_label
    return record


def target_record(
    key: str,
    text: str,
    measured: float | None,
    op: str,
    goal: float,
    unit: str = "x",
    note: str = "",
    goal_text: str = "",
    timed: bool = True,
) -> dict[str, Any]:
    """A target's JSON record; ``met`` is None when it could not be measured here.
    ``goal_text`` overrides how the goal is printed; ``timed`` says whether timing noise can
    sway it (a byte count cannot)."""
    if measured is None:
        met = None
    elif op == "<=":
        met = measured <= goal
    elif op == ">=":
        met = measured >= goal
    else:
        raise ValueError(f"unknown comparison {op!r}")
    return {
        "key": key,
        "text": text,
        "measured": measured,
        "op": op,
        "goal": goal,
        "unit": unit,
        "met": met,
        "note": note,
        "goal_text": goal_text,
        "timed": timed,
    }


def ratio(numerator: float | None, denominator: float | None) -> float | None:
    if numerator is None or denominator is None or denominator <= 0:
        return None
    return numerator / denominator


# -- peers ----------------------------------------------------------------------------------------
def load_tensorflow() -> tuple[Any, str]:
    """(``tensorflow`` in graph mode, "") or (None, why not): TF is an optional peer."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    # TF's C++ start-up logging ignores that variable: keep it out of the table's way, and
    # show it only if the import fails
    saved = os.dup(2)
    with tempfile.TemporaryFile() as captured:
        os.dup2(captured.fileno(), 2)
        why = ""
        try:
            import tensorflow as tf
        except ImportError:
            why = TF_MISSING
        except Exception as exc:  # installed but broken (e.g. a protobuf mismatch)
            why = f"n/a (tensorflow failed to import: {type(exc).__name__}: {exc})"
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        if why:
            captured.seek(0)
            sys.stderr.write(captured.read().decode(errors="replace")[-2000:])
            return None, why
    tf.compat.v1.disable_eager_execution()
    return tf, ""


def tf_session(tf: Any, graph: Any, threads: int, cpus: int = 1) -> Any:
    """A ``tf.compat.v1.Session`` with ``threads`` intra- and inter-op threads and ``cpus``
    logical CPU devices (``/cpu:0`` .. ``/cpu:{cpus - 1}``, TensorFlow's ``device_count``)."""
    config = tf.compat.v1.ConfigProto(
        intra_op_parallelism_threads=threads,
        inter_op_parallelism_threads=threads,
        device_count={"CPU": cpus},
    )
    return tf.compat.v1.Session(graph=graph, config=config)


# -- clusters -------------------------------------------------------------------------------------
def start_cluster(virtual_gpus: int) -> tuple[Any, Any, dict[str, str]]:
    """(cluster, client, device name -> worker address) of daskgraph's embedded cluster
    (``daskgraph.cluster.local.local_cluster``: one CPU worker process with all cores, plus one
    worker process per virtual GPU)."""
    from distributed import Client

    from daskgraph.cluster.local import local_cluster

    cluster = local_cluster(virtual_gpus=virtual_gpus, processes=True)
    try:
        # as the client of a session's own embedded cluster: it talks to workers directly
        client = Client(cluster, set_as_default=False, direct_to_workers=True)
        client.wait_for_workers(1 + virtual_gpus, timeout=120)
    except BaseException:
        cluster.close()
        raise
    workers = client.scheduler_info(n_workers=-1)["workers"]
    devices = {info["name"]: address for address, info in workers.items()}
    return cluster, client, devices


@contextlib.contextmanager
def default_cluster() -> Iterator[tuple[Any, Any, dict[str, str]]]:
    """(cluster, client, device name -> worker address) of the embedded cluster that a plain
    ``dg.Session()`` of this process gets (:mod:`daskgraph.cluster.embedded`, shaped by the
    ``daskgraph.local.*`` config: by default the CPU worker lives in this process and each GPU
    worker in its own), held while the block runs and closed after it. Sessions made with
    no target inside the block share it, as a user's do; the Dask peers use its client."""
    from daskgraph.cluster import embedded
    from daskgraph.config import SessionConfig

    shape = embedded.shape_for(SessionConfig())
    cluster, client = embedded.acquire(shape)
    try:
        workers = client.scheduler_info(n_workers=-1)["workers"]
        yield cluster, client, {info["name"]: address for address, info in workers.items()}
    finally:
        embedded.release(shape)
        embedded.shutdown()


def cpu_worker(devices: dict[str, str]) -> str:
    return devices[LOCAL + "CPU:0"]


def blas_threads() -> int | None:
    """Threads of the OpenBLAS NumPy uses in this process (None if it cannot be asked)."""
    fn = _openblas_function("get_num_threads")
    return int(fn()) if fn is not None else None


def _openblas_function(name: str):
    import ctypes

    for path in _loaded_libraries("openblas"):
        lib = ctypes.CDLL(path)
        for symbol in (f"scipy_openblas_{name}64_", f"openblas_{name}64_", f"openblas_{name}"):
            fn = getattr(lib, symbol, None)
            if fn is not None:
                return fn
    return None


def _loaded_libraries(fragment: str) -> list[str]:
    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split()[-1] for line in maps if fragment in line.lower()}
    except OSError:
        return []
    return sorted(p for p in paths if p.startswith("/"))


# -- the machine ----------------------------------------------------------------------------------
def machine_info(tf_version: str) -> dict[str, Any]:
    """The machine and the versions of everything measured (TensorFlow's as its peer says)."""
    import dask
    import distributed

    import daskgraph

    try:
        import matplotlib

        mpl = matplotlib.__version__
    except ImportError:
        mpl = "not installed"
    memory = None
    try:
        pages = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        memory = round(pages / 2**30, 1)
    except (ValueError, OSError, AttributeError):
        pass
    return {
        "platform": platform.platform(),
        "machine": platform.machine(),
        "processor": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "memory_gib": memory,
        "python": sys.version.split()[0],
        "daskgraph": daskgraph.__version__,
        "dask": dask.__version__,
        "distributed": distributed.__version__,
        "numpy": np.__version__,
        "tensorflow": tf_version,
        "matplotlib": mpl,
        "numpy_blas_threads": blas_threads(),
    }


def background_busy(seconds: float = 1.0) -> float | None:
    """Fraction of the machine's CPU time used while this process sleeps ``seconds``: what
    other processes take from the measurements (None where /proc/stat is missing)."""

    def sample() -> tuple[int, int] | None:
        try:
            with open("/proc/stat") as f:
                fields = [int(v) for v in f.readline().split()[1:]]
        except (OSError, ValueError):
            return None
        idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
        return sum(fields), idle

    first = sample()
    time.sleep(seconds)
    second = sample()
    if first is None or second is None or second[0] == first[0]:
        return None
    total, idle = second[0] - first[0], second[1] - first[1]
    return round(1.0 - idle / total, 3)


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def run_json(module: str, *args: str, env: dict[str, str] | None = None, timeout: float) -> Any:
    """Run ``python -m module args...`` in a fresh process (for measurements that must not
    share this one's memory or cluster) and return the last JSON object it printed."""
    done = subprocess.run(
        [sys.executable, "-m", module, *args],
        capture_output=True,
        text=True,
        env={**os.environ, **env} if env else None,
        timeout=timeout,
        check=False,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"{module} {' '.join(args)} failed:\n{done.stderr[-3000:]}")
    return json.loads(lines[-1])
