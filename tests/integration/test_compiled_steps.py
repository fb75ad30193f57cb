"""Compiled steps: repeated multi-device runs without the scheduler, tensors worker to worker.

Most tests run on a cluster of process workers (the embedded cluster's shape: a CPU worker
in this process, each virtual GPU a process of its own), where a step really crosses
processes; each compares with the scheduler's path (``daskgraph.compiled-steps: false``)
where there is something to compare.
"""

from __future__ import annotations

import threading
import time

import dask
import numpy as np
import pytest
from distributed import Client
from worker_probes import cluster_client, step_counts, transitions

import daskgraph as dg
from daskgraph.runtime.client.session import RunMetadata, RunOptions
from daskgraph.runtime.worker.step_service import ENDED_RUNS, EXTENSION
from daskgraph.testing import within


@pytest.fixture(scope="module")
def cluster():
    """Two virtual GPUs in processes of their own, the CPU worker in this process."""
    with cluster_client(3, virtual_gpus=2, processes=True, cpu_threads=1) as client:
        yield client


def _two_gpus_and_a_sum():
    a = dg.placeholder(dg.float32, [64, 64], name="a")
    products = []
    for i in range(2):
        with dg.device(f"/gpu:{i}"):
            products.append(dg.matmul(a, a * float(i + 1), name=f"mm{i}"))
    with dg.device("/cpu:0"):
        total = dg.add_n(products, name="total")
    return a, total


def test_repeated_steps_skip_the_scheduler_and_are_right(cluster):
    value = np.random.default_rng(0).random((64, 64), dtype=np.float32)
    expected = value @ value + value @ (value * 2)
    with dg.Graph().as_default(), dg.Session(cluster) as session:
        a, total = _two_gpus_and_a_sum()
        np.testing.assert_allclose(session.run(total, {a: value}), expected, rtol=1e-5)
        before, steps_before = transitions(cluster), step_counts(cluster)
        for _ in range(20):
            np.testing.assert_allclose(session.run(total, {a: value}), expected, rtol=1e-5)
        assert transitions(cluster) == before  # not one task went through the scheduler
        steps = step_counts(cluster)
        for device in ("GPU:0", "GPU:1", "CPU:0"):
            assert steps[device]["steps"] - steps_before[device].get("steps", 0) == 20
        # with the switch off, the same runs are the scheduler's tasks again
        with dask.config.set({"daskgraph.compiled-steps": False}):
            np.testing.assert_allclose(session.run(total, {a: value}), expected, rtol=1e-5)
        assert transitions(cluster) > before


def test_tensors_go_worker_to_worker(cluster):
    value = np.arange(16, dtype=np.float32).reshape(4, 4)
    with dg.Graph().as_default(), dg.Session(cluster) as session:
        a = dg.placeholder(dg.float32, [4, 4], name="a")
        with dg.device("/gpu:0"):
            first = dg.matmul(a, a, name="first")
        with dg.device("/gpu:1"):
            second = dg.tanh(first * 0.001, name="second")
        with dg.device("/cpu:0"):
            out = dg.reduce_sum(second, name="out")
        expected = np.tanh((value @ value) * np.float32(0.001)).sum()
        session.run(out, {a: value})
        before = step_counts(cluster)
        for _ in range(10):
            np.testing.assert_allclose(session.run(out, {a: value}), expected, rtol=1e-5)
        after = step_counts(cluster)
    gpu0 = next(
        a for a, w in cluster.scheduler_info()["workers"].items() if w["id"].endswith("GPU:0")
    )
    sent_by_gpu0 = after["GPU:1"].get(f"from {gpu0}", 0) - before["GPU:1"].get(f"from {gpu0}", 0)
    assert sent_by_gpu0 == 10  # GPU:0's product went straight to GPU:1, once a step


def _mlp_towers(n_towers: int, batch: int = 32):
    """Sync training: parameters on the CPU, a tower per virtual GPU, mean of gradients."""
    rng = np.random.default_rng(7)
    w1 = rng.standard_normal((8, 16)).astype(np.float32) * 0.3
    w2 = rng.standard_normal((16, 3)).astype(np.float32) * 0.3
    x = dg.placeholder(dg.float32, [batch, 8], name="x")
    y = dg.placeholder(dg.int32, [batch], name="y")
    with dg.device("/cpu:0"):
        v1, v2 = dg.Variable(w1, name="w1"), dg.Variable(w2, name="w2")
        opt = dg.train.GradientDescentOptimizer(0.1)
    grads, losses = [], []
    per = batch // n_towers
    for i in range(n_towers):
        with dg.device(f"/gpu:{i}"):
            xs, ys = x[i * per : (i + 1) * per], y[i * per : (i + 1) * per]
            logits = dg.matmul(dg.nn.relu(dg.matmul(xs, v1)), v2)
            loss = dg.reduce_mean(
                dg.nn.sparse_softmax_cross_entropy_with_logits(labels=ys, logits=logits)
            )
            losses.append(loss)
            grads.append(opt.compute_gradients(loss, [v1, v2]))
    with dg.device("/cpu:0"):
        mean = [
            (dg.add_n([g[k][0] for g in grads]) / float(n_towers), grads[0][k][1]) for k in range(2)
        ]
        train = opt.apply_gradients(mean)
        loss = dg.add_n(losses) / float(n_towers)
    return x, y, train, loss


def _losses(client: Client, compiled: bool, steps: int = 15) -> list[float]:
    rng = np.random.default_rng(3)
    batches = [
        (rng.standard_normal((32, 8)).astype(np.float32), rng.integers(0, 3, 32).astype(np.int32))
        for _ in range(steps)
    ]
    with dask.config.set({"daskgraph.compiled-steps": compiled}):
        with dg.Graph().as_default(), dg.Session(client) as session:
            x, y, train, loss = _mlp_towers(2)
            session.run(dg.global_variables_initializer())
            return [float(session.run([train, loss], {x: bx, y: by})[1]) for bx, by in batches]


def test_training_losses_match_the_schedulers_path_step_by_step(cluster):
    compiled = _losses(cluster, compiled=True)
    scheduled = _losses(cluster, compiled=False)
    assert compiled == scheduled
    assert compiled[-1] < compiled[0]


def test_steps_from_many_threads_never_mix_and_assign_once_each(cluster):
    with dg.Graph().as_default(), dg.Session(cluster) as session:
        with dg.device("/cpu:0"):
            counter = dg.Variable(np.float32(0.0), name="counter")
        feeds, bumps = [], []
        for i in range(2):
            with dg.device(f"/gpu:{i}"):
                fed = dg.placeholder(dg.float32, [], name=f"fed{i}")
                doubled = fed * 2.0
            with dg.device("/cpu:0"):
                bumps.append(counter.assign_add(doubled))
            feeds.append((fed, doubled))
        session.run(counter.initializer)
        errors: list[BaseException] = []

        def tower(i: int) -> None:
            fed, doubled = feeds[i]
            try:
                for k in range(25):
                    got, _ = session.run([doubled, bumps[i]], {fed: float(k + 100 * i)})
                    assert got == 2.0 * (k + 100 * i)
            except BaseException as exc:  # reported below
                errors.append(exc)

        threads = [threading.Thread(target=tower, args=(i % 2,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert not errors, errors
        expected = 2 * sum(2.0 * (k + 100 * i) for i in range(2) for k in range(25))
        assert session.run(counter) == expected


def test_a_deadline_aborts_the_step_everywhere_and_the_session_goes_on(cluster):
    big = np.eye(600, dtype=np.float32)
    with dg.Graph().as_default(), dg.Session(cluster) as session:
        a = dg.placeholder(dg.float32, [600, 600], name="a")
        with dg.device("/gpu:0"):
            y = a
            for _ in range(300):  # seconds of work on one thread
                y = dg.matmul(y, a)
        with dg.device("/gpu:1"):
            quick = a * 2.0
        with dg.device("/cpu:0"):
            out = dg.reduce_sum(y) + dg.reduce_sum(quick)
            fast = dg.reduce_sum(quick)
        late = within(30, lambda: session.run(out, {a: big}, options=RunOptions(timeout_in_ms=300)))
        assert isinstance(late.get("error"), dg.errors.DeadlineExceededError), late
        assert late["elapsed"] < 5  # not the seconds GPU:0 still spends on it
        box = within(60, lambda: session.run(fast, {a: big}))
        assert "error" not in box, box
        assert box["value"] == pytest.approx(1200.0)


def test_nothing_is_left_behind_by_many_steps(cluster):
    value = np.ones((64, 64), np.float32)
    with dg.Graph().as_default(), dg.Session(cluster) as session:
        a, total = _two_gpus_and_a_sum()
        for _ in range(300):
            session.run(total, {a: value})
        sid = session._id

        def left(dask_worker):
            service = dask_worker.extensions[EXTENSION]
            steps = service.state.session(sid).steps
            return len(service.runs), len(service.early), len(service.ended), len(steps)

        for runs, early, ended, plans in cluster.run(left).values():
            assert (runs, early) == (0, 0)
            assert ended <= ENDED_RUNS and plans == 1


def test_a_failing_op_on_a_gpu_is_raised_and_the_session_goes_on(cluster):
    with dg.Graph().as_default(), dg.Session(cluster) as session:
        a = dg.placeholder(dg.float32, None, name="a")
        b = dg.placeholder(dg.float32, None, name="b")
        with dg.device("/gpu:0"):
            product = dg.matmul(a, b, name="product")
        with dg.device("/cpu:0"):
            out = dg.reduce_sum(product, name="out")
        with pytest.raises(dg.errors.InvalidArgumentError, match="product"):
            session.run(out, {a: np.ones((2, 3)), b: np.ones((2, 3))})
        assert session.run(out, {a: np.ones((2, 3)), b: np.ones((3, 2))}) == 12.0


def test_a_traced_compiled_step_says_where_each_partition_ran(cluster):
    with dg.Graph().as_default(), dg.Session(cluster) as session:
        a, total = _two_gpus_and_a_sum()
        value = np.ones((64, 64), np.float32)
        session.run(total, {a: value})
        metadata = RunMetadata()
        session.run(
            total,
            {a: value},
            options=RunOptions(trace_level=RunOptions.FULL_TRACE),
            run_metadata=metadata,
        )
    workers = {w["id"]: a for a, w in cluster.scheduler_info()["workers"].items()}
    seen = {}
    for stats in metadata.step_stats.dev_stats:
        seen[stats.device[-5:]] = stats.worker
        assert stats.node_stats
    assert {d: workers[f"/job:localhost/replica:0/task:0/device:{d}"] for d in seen} == seen
    assert set(seen) == {"GPU:0", "GPU:1", "CPU:0"}


def test_a_restarted_worker_takes_its_partitions_again(cluster):
    value = np.ones((64, 64), np.float32)
    with dg.Graph().as_default(), dg.Session(cluster) as session:
        a, total = _two_gpus_and_a_sum()
        expected = session.run(total, {a: value})
        (gpu1,) = [
            a for a, w in cluster.scheduler_info()["workers"].items() if w["id"].endswith("GPU:1")
        ]
        cluster.restart_workers([gpu1])
        cluster.wait_for_workers(3, timeout=60)
        box = within(60, lambda: session.run(total, {a: value}))
        assert "error" not in box, box
        np.testing.assert_array_equal(box["value"], expected)
        np.testing.assert_array_equal(session.run(total, {a: value}), expected)


def _until(condition, seconds: float = 60.0) -> None:
    """Wait until ``condition()`` holds (another thread makes it so)."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "the condition never held"
        threading.Event().wait(0.005)


@pytest.mark.virtual_gpus(2)
def test_an_update_waiting_for_its_variables_lock_leaves_the_event_loop_free(
    dg_session, monkeypatch
):
    """A step whose partition updates a variable whose lock another thread holds waits on a
    worker thread, small as the partition is: the worker's event loop goes on answering (a
    ``Client.run`` on it), and the update applies, once, when the lock is free."""
    from daskgraph.runtime.worker.step_service import local_service

    client = dg_session.client
    services = [local_service(address) for address in client.scheduler_info()["workers"]]
    for service in services:  # (a cluster of threads)
        # "small" by a limit no run reaches even on a loaded machine: the rule, not the clock
        monkeypatch.setattr(service, "inline_limit", 60.0)
    with dg.device("/gpu:0"):
        v = dg.Variable(np.float32(0.0), name="counted")
        bump = dg.assign_add(v, 1.0)
    with dg.device("/gpu:1"):
        other = dg.constant(np.float32(2.0)) * 3.0
    deadline = RunOptions(timeout_in_ms=120_000)  # (Dask's comm: the steps' event loops)
    dg_session.run(v.initializer)
    for _ in range(3):  # the first runs time the partitions
        dg_session.run([bump, other], options=deadline)
    gpu0 = next(s for s in services if s.counts["steps"] and s.worker.name.endswith("GPU:0"))
    (device,) = gpu0.state.session(dg_session._id).stores
    store = gpu0.state.session(dg_session._id).store(device)
    (name,) = store.names()
    lock = store.variable_lock(name)
    lock.acquire()  # as a long update of the variable in another run would
    try:
        runner = threading.Thread(
            target=dg_session.run, args=([bump, other],), kwargs={"options": deadline}
        )
        runner.start()
        _until(lambda: gpu0.runs)  # the step reached the worker, its update waits
        answered = within(60, lambda: client.run(lambda: "here", workers=[gpu0.address]))
        assert answered.get("value") == {gpu0.address: "here"}, answered
        assert store.read(name) == 3.0  # (it cannot apply without the lock)
    finally:
        lock.release()
    runner.join(60)
    assert not runner.is_alive() and store.read(name) == 4.0
