"""Unit tests of the threads a kernel may use: the worker's count, set around each partition
run, and fused loops over large arrays split into pieces on at most that many threads, with
the bits of the whole loop, several callers at once."""

from __future__ import annotations

import threading

import dask
import numpy as np
import pytest

import daskgraph as dg
from daskgraph.kernels import fused, split_loops
from daskgraph.kernels.fused import PARALLEL_ELEMENTS, FusedKernel, compile_now
from daskgraph.kernels.kernel_threads import UNSIZED, kernel_threads, threads_for
from daskgraph.runtime.program import Instruction, PartitionProgram, RunStep
from daskgraph.runtime.worker.execution import run_partition
from daskgraph.runtime.worker.worker_state import WorkerState

#: seconds a barrier waits: a hang fails the test instead of blocking the suite
WAIT = 60


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


@pytest.fixture
def splits(monkeypatch):
    """The thread counts of the split calls fused loops make (run_split, recorded)."""
    seen: list[int] = []
    run_split = split_loops.run_split

    def recording(loop, out, inputs, threads, *args):
        seen.append(threads)
        return run_split(loop, out, inputs, threads, *args)

    monkeypatch.setattr(fused, "run_split", recording)
    return seen


@pytest.mark.parametrize("threads", [2, 3])
@pytest.mark.parametrize("size", [PARALLEL_ELEMENTS + 7, 3 * PARALLEL_ELEMENTS + 1])
def test_a_split_chain_has_the_bits_of_its_ops_one_by_one(splits, size, threads):
    # x * s - y / x + sqrt(y) * t, scalars s and t between the arrays
    steps = (
        ("m", "multiply", (0, 1)),
        ("d", "divide", (2, 0)),
        ("s", "subtract", (4, 5)),
        ("r", "sqrt", (2,)),
        ("n", "multiply", (7, 3)),
        ("a", "add", (6, 8)),
    )
    kernel = FusedKernel(steps, 4)
    rng = np.random.default_rng(size)
    x = rng.random(size, dtype=np.float32) + np.float32(0.5)
    y = rng.random(size, dtype=np.float32)
    inputs = (x, np.float32(1.0001), y, np.float32(0.5))
    assert compile_now(kernel, *inputs) is not None
    with threads_for(threads):
        out = kernel(np, *inputs)
    assert splits == [threads]  # run in pieces on the worker's threads
    assert _same_bits(out, kernel.one_by_one(np, inputs))


def test_a_large_loop_outside_a_worker_runs_on_the_calling_thread_alone(splits):
    kernel = FusedKernel((("m", "multiply", (0, 1)), ("a", "add", (2, 0))), 2)
    x = np.ones(PARALLEL_ELEMENTS, np.float32)
    compile_now(kernel, x, np.float32(2))
    assert kernel_threads() == UNSIZED == 1
    out = kernel(np, x, np.float32(2))
    assert splits == [] and float(out[-1]) == 3.0


def _recording_loop(seen: set, barrier: threading.Barrier | None = None):
    """A loop(out, x) recording the threads that run its pieces; each thread's first piece
    waits at ``barrier``."""

    def loop(out, x):
        me = threading.get_ident()
        if me not in seen:
            seen.add(me)
            if barrier is not None:
                barrier.wait(WAIT)
        np.negative(x, out=out)

    return loop


def test_a_split_call_runs_on_as_many_threads_as_it_may_and_no_more():
    x = np.arange(64 * 1024, dtype=np.float64)
    for threads in (1, 2):
        seen: set[int] = set()
        barrier = threading.Barrier(threads)  # each thread's first piece: all of them at once
        out = np.empty_like(x)
        split_loops.run_split(_recording_loop(seen, barrier), out, (x,), threads, 1024)
        assert _same_bits(out, -x)
        assert len(seen) == threads and threading.get_ident() in seen


def test_large_loops_of_two_callers_run_at_the_same_time():
    """Two workers' partitions (threads here) each split a large loop: the first piece of
    each waits for the other's (a process-wide lock around such loops would hang)."""
    barrier = threading.Barrier(2)
    results, errors = {}, []

    def caller(name: str) -> None:
        try:
            arrived = threading.Event()

            def loop(out, x):
                if not arrived.is_set():
                    arrived.set()
                    barrier.wait(WAIT)
                np.add(x, 1.0, out=out)

            compiled = fused._Loop(loop, np.dtype(np.float32))
            x = np.zeros(PARALLEL_ELEMENTS, np.float32)
            out = np.empty_like(x)
            with threads_for(2):
                compiled(out, x)
            results[name] = out
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=caller, args=(n,)) for n in "ab"]
    for t in threads:
        t.start()
    for t in threads:
        t.join(2 * WAIT)
    assert not errors and sorted(results) == ["a", "b"]
    assert all(float(r.min()) == float(r.max()) == 1.0 for r in results.values())


def test_a_piece_that_fails_fails_the_call():
    def loop(out, x):
        raise TypeError("not compiled for these inputs")

    out = np.empty(4096)
    with pytest.raises(TypeError, match="not compiled"):
        split_loops.run_split(loop, out, (out,), 2, 1024)


def _probe_program() -> PartitionProgram:
    """One instruction whose kernel returns the threads it may use."""

    def probe(xp, x):
        return np.int64(kernel_threads())

    ins = Instruction("probe", "Probe", probe, {}, (0,), 1, False, ())
    return PartitionProgram(
        "/device:CPU:0", "CPU", "numpy", 2, (), ((0, 0),), (ins,), ((1, False),)
    )


def test_a_partition_run_lets_its_kernels_use_the_workers_threads():
    program, step = _probe_program(), RunStep("threads", 1)
    (threads,) = run_partition(WorkerState(threads=3), "", program, step, (np.int64(0),), False)
    assert threads == 3
    (unsized,) = run_partition(WorkerState(), "", program, step, (np.int64(0),), False)
    assert unsized == UNSIZED and kernel_threads() == UNSIZED  # and nothing leaks out


def test_a_session_runs_kernels_with_its_cpu_workers_threads():
    with (
        dg.Graph().as_default(),
        dask.config.set({"daskgraph.local.processes": False, "daskgraph.local.cpu-threads": 3}),
        dg.Session() as sess,
    ):
        threads = dg.py_func(kernel_threads, [], dg.int64)
        assert sess.run(threads) == 3
