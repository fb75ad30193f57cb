"""Step channels: one-round compiled steps reach the workers of this machine through a local
socket each, from the calling thread, and give what the other paths give.

The cluster has the embedded cluster's shape: the CPU worker in this process, each virtual
GPU a process of its own, so that towers fed and updated from ``/cpu:0`` (and products summed
there) are one-round steps. Every test compares with Dask's comm (a run with a deadline,
which a channel does not carry) or the scheduler's path.
"""

from __future__ import annotations

import json
import os
import threading
import time
import urllib.request

import dask
import numpy as np
import psutil
import pytest
from distributed import Client
from worker_probes import kill, step_counts, transitions, wait_for_devices

import daskgraph as dg
from daskgraph.cluster.local import local_cluster
from daskgraph.runtime.client import channel_steps, dispatch
from daskgraph.runtime.client.session import RunOptions
from daskgraph.runtime.worker.step_service import EXTENSION
from daskgraph.runtime.worker.worker_state import state_of
from daskgraph.testing import within

GPUS = 2
#: a run with a deadline: a call from this thread cannot be abandoned, so Dask's comm carries it
DEADLINE = RunOptions(timeout_in_ms=120_000)


@pytest.fixture(scope="module")
def cluster():
    """Two virtual GPUs in processes of their own, the CPU worker in this process."""
    cluster = local_cluster(virtual_gpus=GPUS, processes=True, cpu_threads=1, cpu_in_process=True)
    client = Client(cluster, set_as_default=False)
    client.wait_for_workers(GPUS + 1, timeout=60)
    yield client
    client.close()
    cluster.close()


def _gained(before: dict, after: dict, device: str, counter: str) -> int:
    return after[device].get(counter, 0) - before[device].get(counter, 0)


def _products_summed_on_the_cpu():
    with dg.device("/cpu:0"):
        a = dg.placeholder(dg.float32, [64, 64], name="a")
    products = []
    for i in range(GPUS):
        with dg.device(f"/gpu:{i}"):
            products.append(dg.matmul(a, a * float(i + 1)))
    with dg.device("/cpu:0"):
        total = dg.add_n(products)
    return a, total


def test_one_round_steps_go_through_the_channels(cluster):
    value = np.random.default_rng(0).random((64, 64), dtype=np.float32)
    expected = value @ value + value @ (value * 2)
    with dg.Graph().as_default(), dg.Session(cluster) as session:
        a, total = _products_summed_on_the_cpu()
        np.testing.assert_allclose(session.run(total, {a: value}), expected, rtol=1e-5)
        before, moved = step_counts(cluster), transitions(cluster)
        for _ in range(20):
            np.testing.assert_allclose(session.run(total, {a: value}), expected, rtol=1e-5)
        after = step_counts(cluster)
        assert transitions(cluster) == moved  # no task through the scheduler
        for gpu in ("GPU:0", "GPU:1"):
            assert _gained(before, after, gpu, "channel steps") == 20
            assert _gained(before, after, gpu, "steps") == 20
        assert _gained(before, after, "CPU:0", "steps") == 20
        for _ in range(5):  # Dask's comm again
            got = session.run(total, {a: value}, options=DEADLINE)
            np.testing.assert_allclose(got, expected, rtol=1e-5)
        off = step_counts(cluster)
        assert _gained(after, off, "GPU:0", "channel steps") == 0
        assert _gained(after, off, "GPU:0", "steps") == 5


def test_a_worker_that_lost_the_plan_gets_it_again_through_its_channel(cluster):
    """A GPU worker that dropped a loaded plan (as one restarted in place would have none)
    answers ``missing``; the channel sends the plan again and the step goes on there."""
    value = np.random.default_rng(5).random((64, 64), dtype=np.float32)
    expected = value @ value + value @ (value * 2)
    gpus = [a for n, a in _addresses(cluster).items() if "GPU" in n]

    def drop_plans(session_id, dask_worker=None):
        from daskgraph.runtime.worker.step_service import EXTENSION

        service = dask_worker.extensions[EXTENSION]
        tokens = list(service.state.session(session_id).steps)
        service.forget(session=session_id, tokens=tokens)
        return len(tokens)

    with dg.Graph().as_default(), dg.Session(cluster) as session:
        a, total = _products_summed_on_the_cpu()
        np.testing.assert_allclose(session.run(total, {a: value}), expected, rtol=1e-5)
        assert set(cluster.run(drop_plans, session._id, workers=gpus).values()) == {1}
        before = step_counts(cluster)
        np.testing.assert_allclose(session.run(total, {a: value}), expected, rtol=1e-5)
        after = step_counts(cluster)
    for gpu in ("GPU:0", "GPU:1"):
        assert _gained(before, after, gpu, "channel steps") == 1


def _towers_training(
    client: Client, towers: int, steps: int, options: RunOptions | None = None
) -> list[float]:
    """Sync training with a tower per GPU, the parameters on /cpu:0: the loss of each step."""
    rng = np.random.default_rng(7)
    x_all = rng.random((64, 16), dtype=np.float32)
    y_all = rng.integers(0, 4, 64)
    with dg.device("/cpu:0"):
        x = dg.placeholder(dg.float32, [64, 16])
        y = dg.placeholder(dg.int64, [64])
        w = dg.Variable(rng.standard_normal((16, 4)).astype(np.float32) * 0.1)
        b = dg.Variable(np.zeros(4, np.float32))
        xs, ys = dg.split(x, towers), dg.split(y, towers)
    optimizer = dg.train.AdamOptimizer(0.01)
    grads, losses = [], []
    for i in range(towers):
        with dg.device(f"/gpu:{i}"):
            logits = dg.matmul(dg.tanh(xs[i]), w) + b
            loss = dg.reduce_mean(
                dg.nn.sparse_softmax_cross_entropy_with_logits(labels=ys[i], logits=logits)
            )
            losses.append(loss)
            grads.append(optimizer.compute_gradients(loss, [w, b]))
    with dg.device("/cpu:0"):
        averaged = [
            (dg.add_n([g[k][0] for g in grads]) / float(towers), grads[0][k][1]) for k in range(2)
        ]
        train = optimizer.apply_gradients(averaged)
        mean_loss = dg.add_n(losses) / float(towers)
    with dg.Session(client) as session:
        session.run(dg.global_variables_initializer())
        feed = {x: x_all, y: y_all}
        return [
            float(session.run([train, mean_loss], feed, options=options)[1]) for _ in range(steps)
        ]


@pytest.mark.parametrize(
    ("switches", "options"),
    [
        ({}, DEADLINE),
        ({"daskgraph.compiled-steps": False}, None),
    ],
    ids=["dask-comm", "scheduler"],
)
def test_tower_losses_are_those_of_the_other_paths(cluster, switches, options):
    before = step_counts(cluster)
    with dg.Graph().as_default():
        channels = _towers_training(cluster, GPUS, 12)
    assert _gained(before, step_counts(cluster), "GPU:1", "channel steps") >= 10
    with dg.Graph().as_default(), dask.config.set(switches):
        other = _towers_training(cluster, GPUS, 12, options)
    assert channels == other  # identical, step by step
    assert channels[-1] < channels[0]


def test_steps_from_many_threads_never_mix_and_assign_once(cluster):
    """4 threads run steps whose GPU products are added to a counter on /cpu:0."""
    with dg.Graph().as_default(), dg.Session(cluster) as session:
        feeds, sums = [], []
        for i in range(GPUS):
            with dg.device(f"/gpu:{i}"):
                f = dg.placeholder(dg.float32, [8])
                feeds.append(f)
                sums.append(dg.reduce_sum(f * 2.0))
        with dg.device("/cpu:0"):
            counter = dg.Variable(np.float32(0.0))
            step_total = dg.add_n(sums)
            bump = counter.assign_add(step_total)
        session.run(counter.initializer)
        errors: list[BaseException] = []
        seen: list[tuple[float, float]] = []

        def worker(k: int) -> None:
            try:
                for n in range(25):
                    value = float(k * 100 + n)
                    got = session.run([step_total, bump], {f: np.full(8, value, np.float32)
                                                           for f in feeds})  # fmt: skip
                    seen.append((value, float(got[0])))
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert not errors, errors
        assert len(seen) == 100
        for value, total in seen:  # each step saw its own feeds
            assert total == value * 2 * 8 * GPUS
        assert session.run(counter) == sum(total for _, total in seen)


def test_a_worker_without_a_channel_here_takes_dask_comm(cluster, monkeypatch):
    """A worker on another machine (here: one whose host differs) gets its steps through
    Dask's comm, with the same results."""
    monkeypatch.setattr(channel_steps, "POOL", channel_steps.ChannelPool())
    monkeypatch.setattr(channel_steps, "host_identity", lambda: "elsewhere/0")
    value = np.ones((64, 64), np.float32)
    with dg.Graph().as_default(), dg.Session(cluster) as session:
        (channel,) = [t for t in session._steps_path.transports if t.name == "channel"]
        channel.pool = channel_steps.POOL
        a, total = _products_summed_on_the_cpu()
        before = step_counts(cluster)
        for _ in range(5):
            np.testing.assert_allclose(session.run(total, {a: value}), value @ value * 3)
        after = step_counts(cluster)
    assert _gained(before, after, "GPU:0", "channel steps") == 0
    assert _gained(before, after, "GPU:0", "steps") == 5


@pytest.mark.parametrize("n", [3, 100_000], ids=["small-feeds-packed", "large-feeds-as-frames"])
def test_one_device_steps_on_a_worker_process_go_through_its_channel(cluster, n):
    """A plan of one partition on a GPU worker's process is a one-device step: through the
    worker's channel, or Dask's comm with a deadline; never the scheduler."""
    value = np.arange(n, dtype=np.float32)
    with dg.Graph().as_default(), dg.Session(cluster) as session:
        with dg.device("/gpu:0"):
            x = dg.placeholder(dg.float32, [None])
            y = dg.reduce_sum(x * 2.0)
            z = x + 1.0
        session.run([y, z], {x: value})  # (the plan is loaded)
        before, moved = step_counts(cluster), transitions(cluster)
        for options in (None, None, DEADLINE):
            got_y, got_z = session.run([y, z], {x: value}, options=options)
            assert got_y == pytest.approx(value.sum() * 2.0, rel=1e-5)
            np.testing.assert_array_equal(got_z, value + 1.0)
        after = step_counts(cluster)
        assert transitions(cluster) == moved  # no task through the scheduler
    assert _gained(before, after, "GPU:0", "channel steps") == 2
    assert _gained(before, after, "GPU:0", "steps") == 3


def test_large_feeds_reach_worker_processes_ahead_of_the_scheduled_graph(cluster, monkeypatch):
    """On the scheduler's path, a feed above ``dispatch.DIRECT_FEED_BYTES`` read on both
    GPU workers' processes is sent ahead to their step services: right results, no actor made
    on any worker, no scattered data, nothing left behind after a failed run."""
    big = np.arange(300_000, dtype=np.float32).reshape(600, 500) / 1e5  # 1.2 MB
    monkeypatch.setattr(dispatch, "DIRECT_FEED_BYTES", 1_000_000)
    settings = {"daskgraph.compiled-steps": False}
    with dg.Graph().as_default(), dg.Session(cluster) as session, dask.config.set(settings):
        x = dg.placeholder(dg.float32, [None, 500])
        with dg.device("/gpu:0"):
            left = dg.reduce_sum(x * 2.0)
        with dg.device("/gpu:1"):
            right = dg.reduce_max(x)
            bad = dg.matmul(x, x)  # fails at run time, after the feed is sent
        got = session.run([left, right], {x: big})
        np.testing.assert_allclose(got, [big.sum() * 2, big.max()], rtol=1e-5)
        with pytest.raises(dg.errors.InvalidArgumentError, match="MatMul"):
            session.run([left, bad], {x: big})
        session_id = session._id

        def staged_and_actors(dask_worker=None) -> tuple[int, int]:
            """Feeds staged for the session not taken yet, and actors the worker holds."""
            staged = state_of(dask_worker).session(session_id).staged
            return len(staged), len(dask_worker.state.actors)

        left_behind = cluster.run(staged_and_actors)
    assert set(left_behind.values()) == {(0, 0)}, left_behind


def _wait_for_all(client: Client, timeout: float = 60) -> None:
    """Until every device's worker, and each GPU worker's nanny, run again."""
    wait_for_devices(client, devices=GPUS + 1, nannies=GPUS, timeout=timeout)


def _kill_once_computing(client: Client, address: str, cpu_s: float = 0.3) -> None:
    """Kill the worker at ``address`` once its process has spent ``cpu_s`` seconds of CPU
    since this call: the step is then under way on it (an idle worker spends milliseconds),
    whatever the machine's speed or load."""
    (pid,) = client.run(os.getpid, workers=[address]).values()
    process = psutil.Process(pid)

    def spent() -> float:
        times = process.cpu_times()
        return times.user + times.system

    start, deadline = spent(), time.monotonic() + 120
    while spent() - start < cpu_s and time.monotonic() < deadline:
        time.sleep(0.01)  # (polling the process's CPU clock, not timing the step)
    kill(client, address)


def test_a_gpu_worker_killed_mid_step_runs_the_step_again_and_assigns_once(cluster, caplog):
    """The GPU worker dies while its channel's thread computes; the step is repeated on the
    restarted worker, and the counter on /cpu:0 (bumped before the message left) goes up by
    one, not two."""
    _wait_for_all(cluster)
    size = 800
    value = (np.random.default_rng(1).random((size, size), dtype=np.float32) / size).astype(
        np.float32
    )
    with dg.Graph().as_default() as g:
        with dg.device("/cpu:0"):
            counter = dg.Variable(np.float32(0.0), name="counter")
            bumped = counter.assign_add(1.0)
        with dg.device("/gpu:0"):
            a = dg.placeholder(dg.float32, [size, size], name="a")
            y = a * bumped
            for _ in range(80):  # seconds of CPU: the kill lands mid-step
                y = dg.matmul(y, a)
            part = dg.reduce_sum(y)
        with dg.device("/cpu:0"):
            out = part + 0.0
        session = dg.Session(cluster, graph=g)
        try:
            session.run(counter.initializer)
            for _ in range(2):  # compiled: the second run goes through the channel
                session.run(out, {a: value})
            (gpu,) = [d.worker for d in session.list_devices() if d.name.endswith("GPU:0")]
            before = step_counts(cluster)["GPU:0"].get("channel steps", 0)
            assert before >= 1
            killer = threading.Thread(target=_kill_once_computing, args=(cluster, gpu))
            killer.start()
            with caplog.at_level("INFO", logger="daskgraph"):
                box = within(120, lambda: session.run(out, {a: value}))
            killer.join()
            assert "error" not in box, box
            assert any("left during a run" in r.getMessage() for r in caplog.records), (
                "the kill did not interrupt the step: nothing was repeated"
            )
            assert session.run(counter) == 3.0
            _wait_for_all(cluster)
            box = within(60, lambda: session.run(out, {a: value}))  # and on it goes
            assert "error" not in box, box
            assert session.run(counter) == 4.0
        finally:
            session.close()
            _wait_for_all(cluster)


def _steps_through_the_event_loop(monkeypatch) -> list[int]:
    """Counts calls of the workers' event-loop step (the path that runs partitions side by
    side), in this process's workers."""
    from daskgraph.runtime.worker.step_service import StepService

    calls = [0]
    original = StepService.step

    async def counted(self, *args, **kwargs):
        calls[0] += 1
        return await original(self, *args, **kwargs)

    monkeypatch.setattr(StepService, "step", counted)
    return calls


@pytest.mark.virtual_gpus(2)
def test_small_steps_on_workers_of_this_process_run_in_the_calling_thread(dg_session, monkeypatch):
    """On a cluster of threads, a step whose partitions are small runs them one after the
    other in the calling thread; a partition whose run time depends on the data (a Python
    function) sends the step back to the event loops, where partitions run side by side."""
    from daskgraph.runtime.worker.step_service import local_service

    for worker in dg_session.client.scheduler_info()["workers"]:
        service = local_service(worker)
        assert service is not None  # (a cluster of threads)
        # "small" by a limit no run reaches even on a loaded machine: the rule, not the clock
        monkeypatch.setattr(service, "inline_limit", 60.0)
    calls = _steps_through_the_event_loop(monkeypatch)
    value = np.random.default_rng(3).random((64, 64), dtype=np.float32)
    a, total = _products_summed_on_the_cpu()
    for _ in range(3):  # the first runs time the partitions
        dg_session.run(total, {a: value})
    before = calls[0]
    expected = value @ value + value @ (value * 2)
    for _ in range(10):
        np.testing.assert_allclose(dg_session.run(total, {a: value}), expected, rtol=1e-5)
    assert calls[0] == before  # no worker's event loop took part
    with dg.device("/cpu:0"):  # (Python functions run on the CPU)
        doubled = dg.py_func(lambda v: v * 2, [total], dg.float32)
    for _ in range(3):
        result = dg_session.run(doubled, {a: value})
    np.testing.assert_allclose(result, expected * 2, rtol=1e-5)
    assert calls[0] >= before + 3 * 2  # each run: a step on each worker, on their loops


def test_nothing_grows_with_the_number_of_steps(cluster):
    """300 steps, from two threads: the workers keep no more threads, runs or plans than
    after the first 20."""

    def held(dask_worker):
        service = dask_worker.extensions.get(EXTENSION)
        state = state_of(dask_worker)
        return (
            threading.active_count(),
            len(service.runs) + len(service.early) if service else 0,
            sum(len(state.session(s).steps) for s in state.session_ids()),
        )

    value = np.ones((64, 64), np.float32)
    with dg.Graph().as_default(), dg.Session(cluster) as session:
        a, total = _products_summed_on_the_cpu()

        def steps(n: int) -> None:
            for _ in range(n):
                session.run(total, {a: value})

        for _ in range(2):
            threads = [threading.Thread(target=steps, args=(10,)) for _ in range(2)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(60)
        before = cluster.run(held)
        threads = [threading.Thread(target=steps, args=(150,)) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        after = cluster.run(held)
    assert after == before


def _thread_probes():
    """Functions for ``Client.run`` (defined here: pickled by value) that start noting the
    thread each partition of a compiled step runs in, and that stop and say which were noted,
    which is a thread of the worker's executor, and how many threads it has."""

    def record(dask_worker):
        from daskgraph.runtime.worker import step_run

        seen: list[int] = []
        original = step_run.run_partition

        def recorded(*args, **kwargs):
            seen.append(threading.get_ident())
            return original(*args, **kwargs)

        step_run.run_partition = recorded
        dask_worker.extensions["test-partition-threads"] = (seen, original)

    def noted(dask_worker):
        from daskgraph.runtime.worker import step_run

        seen, original = dask_worker.extensions.pop("test-partition-threads")
        step_run.run_partition = original
        pool = dask_worker.executors["default"]
        return set(seen), pool.submit(threading.get_ident).result(), dask_worker.state.nthreads

    return record, noted


def _bumped_towers():
    """:func:`_products_summed_on_the_cpu`, each GPU also counting the steps in a variable
    of its own: the GPUs' partitions change state."""
    a, total = _products_summed_on_the_cpu()
    bumps = []
    for i in range(GPUS):
        with dg.device(f"/gpu:{i}"):
            counter = dg.Variable(np.float32(0.0), name=f"steps_{i}")
            bumps.append(dg.assign_add(counter, 1.0))
    return a, total, bumps


def test_channel_steps_run_their_partitions_on_the_workers_executor(cluster):
    """The partitions of a step that came through a channel and updates variables run on
    the threads of the worker's executor, those Dask counts (not the channel's), and show
    per device on the ``/daskgraph`` page: their compiled steps and their time."""
    value = np.random.default_rng(1).random((64, 64), dtype=np.float32)
    expected = value @ value + value @ (value * 2)
    gpus = {n: a for n, a in _addresses(cluster).items() if "GPU" in n}
    with dg.Graph().as_default(), dg.Session(cluster) as session:
        a, total, bumps = _bumped_towers()
        session.run(dg.global_variables_initializer())
        session.run([total, bumps], {a: value})
        before = step_counts(cluster)
        record, noted = _thread_probes()
        cluster.run(record, workers=list(gpus.values()))
        try:
            for i in range(10):
                got, counts = session.run([total, bumps], {a: value})
                np.testing.assert_allclose(got, expected, rtol=1e-5)
                assert counts == [i + 2.0] * GPUS
        finally:
            threads = cluster.run(noted, workers=list(gpus.values()))
        link, sid = session.dashboard_link, session._id
    after = step_counts(cluster)
    for name, address in gpus.items():
        assert _gained(before, after, name[-5:], "channel steps") == 10
        seen, executor, nthreads = threads[address]
        assert nthreads == 1 and seen == {executor}  # (its executor's one thread)
    # closed, the session published its runs: each GPU's partitions, and their time
    snap = json.loads(_read(link + ".json"))
    devices = {d["name"][-5:]: d for d in snap["devices"]}
    plan = next(p for p in snap["plans"] if p["session"] == sid and p["runs"] == 11)
    assert plan["runs"] == 11
    for name in ("GPU:0", "GPU:1"):
        assert devices[name]["compiled_steps"] >= 11
        assert devices[name]["seconds"] > 0


def test_small_stateless_channel_steps_are_answered_in_the_channels_thread(cluster):
    """A channel's step whose partitions may run on the event loop (predictable, no state
    changed, short) is answered in the channel's thread: the hand-off to the executor would
    cost more than the step. The rule, not the clock: the limit is set out of reach."""
    value = np.random.default_rng(2).random((64, 64), dtype=np.float32)
    expected = value @ value + value @ (value * 2)
    gpus = {n: a for n, a in _addresses(cluster).items() if "GPU" in n}

    def limit(seconds, dask_worker=None):
        from daskgraph.runtime.worker.step_service import EXTENSION

        service = dask_worker.extensions[EXTENSION]
        old, service.inline_limit = service.inline_limit, seconds
        return old

    old = cluster.run(limit, 60.0, workers=list(gpus.values()))
    record, noted = _thread_probes()
    try:
        with dg.Graph().as_default(), dg.Session(cluster) as session:
            a, total = _products_summed_on_the_cpu()
            for _ in range(2):  # the first run times the partitions
                session.run(total, {a: value})
            cluster.run(record, workers=list(gpus.values()))
            try:
                for _ in range(5):
                    np.testing.assert_allclose(session.run(total, {a: value}), expected, rtol=1e-5)
            finally:
                threads = cluster.run(noted, workers=list(gpus.values()))
    finally:
        for address, seconds in old.items():
            cluster.run(limit, seconds, workers=[address])
    for address in gpus.values():
        seen, executor, _ = threads[address]
        assert seen and executor not in seen  # (the channel's thread)


def _addresses(client: Client) -> dict[str, str]:
    """Worker address by worker name."""
    return {str(w["id"]): a for a, w in client.scheduler_info()["workers"].items()}


def _read(url: str) -> str:
    with urllib.request.urlopen(url, timeout=30) as answer:
        return answer.read().decode()


def _pause(paused: bool):
    """A function for ``Client.run`` that pauses a worker as Dask's memory monitor does when
    its memory nears the limit (the monitor held off meanwhile: it would resume the worker,
    whose memory is low), or resumes it and gives the monitor its threshold back."""

    def pause(dask_worker):
        from distributed.core import Status

        manager = dask_worker.memory_manager
        if paused:
            dask_worker.extensions["test-pause"] = manager.memory_pause_fraction
            manager.memory_pause_fraction = False
        else:
            manager.memory_pause_fraction = dask_worker.extensions.pop("test-pause")
        dask_worker.status = Status.paused if paused else Status.running

    return pause


def test_a_paused_worker_starts_no_step_from_its_channel(cluster):
    """While Dask has paused a worker (its memory near the limit), steps reaching it through
    its channel are not run there but answered ``paused``: the client takes Dask's comm
    instead, and the results are the same."""
    value = np.random.default_rng(2).random((64, 64), dtype=np.float32)
    expected = value @ value + value @ (value * 2)
    gpu0 = next(a for n, a in _addresses(cluster).items() if n.endswith("GPU:0"))
    with dg.Graph().as_default(), dg.Session(cluster) as session:
        a, total = _products_summed_on_the_cpu()
        session.run(total, {a: value})
        before = step_counts(cluster)
        cluster.run(_pause(True), workers=[gpu0])
        try:
            for _ in range(3):
                np.testing.assert_allclose(session.run(total, {a: value}), expected, rtol=1e-5)
        finally:
            cluster.run(_pause(False), workers=[gpu0])
        paused = step_counts(cluster)
        assert _gained(before, paused, "GPU:0", "channel steps") == 0
        assert _gained(before, paused, "GPU:0", "paused") >= 1
        assert _gained(before, paused, "GPU:0", "steps") == 3  # (through Dask's comm)
        for _ in range(3):  # running again: through the channel again
            np.testing.assert_allclose(session.run(total, {a: value}), expected, rtol=1e-5)
        again = step_counts(cluster)
    assert _gained(paused, again, "GPU:0", "channel steps") >= 1
