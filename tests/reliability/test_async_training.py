"""Async towers while a GPU worker is killed: exactly one update per tower step, none lost.

Two towers train asynchronously (:meth:`~daskgraph.training.replicate.Replicas.run_async`) on
``/gpu:0`` and ``/gpu:1``, with the parameters, the global step and one update counter per
tower on ``/cpu:0``; each tower's train op applies its gradients, then adds one to its counter
(in the same CPU partition). Every worker is a process under a nanny, and a GPU worker is
SIGKILLed while training is under way, at a moment read from the training itself (a tower's
``on_step``, a worker reporting what it runs), never after a sleep. Afterwards the global step
is the sum of the steps the towers completed, each tower's counter is its completed steps (no
update lost, none applied twice by a run repeated after the loss), the parameters are finite
and the loss went down.

- **killed at a random point**: the run in flight on the dead worker's tower is repeated on
  the restarted worker; the other tower never waits for it.
- **killed after its tower's update was applied**: tower 0's run is repeated although its
  update already ran on the CPU, and tower 1's updates went on there meanwhile (newer runs of
  the session): the repeat must not apply it again.
- **gone for good** (its nanny killed too: known gone at once, although
  ``daskgraph.worker-restart-grace`` is an hour): tower 0's run fails with an error naming the
  device, and tower 1 stops after its current step, as
  TensorFlow's ``Coordinator`` stops every thread at the first failure (``run_async`` raises
  it). The failed run may have applied its update before the device was lost (a failed run's
  side effects stand, as in TensorFlow), but nothing is lost or doubled: the global step is
  the sum of the counters, and tower 1's counter is its completed steps.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import signal
import sys
import threading
import time

import dask
import numpy as np
import pytest
from distributed import Client
from logs import capture_logs
from processes import wait_until_executing

import daskgraph as dg
from daskgraph.cluster.local import local_cluster
from daskgraph.training.replicate import Replicas

DEVICE = "/job:localhost/replica:0/task:0/device:"
CPU0, GPU0, GPU1 = DEVICE + "CPU:0", DEVICE + "GPU:0", DEVICE + "GPU:1"
STEPS = 30  # per tower
KILL_AT = 8  # the step of a tower that sets the kill off
BUSY = 12  # matmuls of each tower's busy work on its GPU
SLOW, SLOW_OPS = 1000, 24  # the slow step's work after its update: about 1 s on 2 cores
TICK = {"daskgraph.liveness-check-interval": 0.1}
LIMIT_S = 60.0  # a trial: the training, a worker restart (or the grace) in it; 2 busy cores
RNG = np.random.default_rng(0)
X = RNG.normal(size=(64, 8)).astype(np.float32)
Y = (X @ RNG.normal(size=(8, 1)) + 0.5).astype(np.float32)
WIDE = RNG.normal(size=(8, 400)).astype(np.float32)
SQUARE = (RNG.normal(size=(400, 400)) / 20).astype(np.float32)


def _processes() -> tuple[object, Client]:
    """A cluster of processes (the CPU worker's too) with two virtual GPUs, and a client."""
    cluster = local_cluster(virtual_gpus=2, processes=True, cpu_threads=2, cpu_in_process=False)
    client = Client(cluster, set_as_default=False, direct_to_workers=True)
    _wait_for_all(client)
    return cluster, client


@pytest.fixture(scope="module")
def cluster():
    """A process cluster and its client, started with their output captured."""
    with capture_logs() as logs:
        cluster, client = _processes()
        try:
            yield client, logs
        finally:
            client.close()
            cluster.close()


# -- the training --------------------------------------------------------------------------------
@dataclasses.dataclass
class Training:
    """Async towers whose train ops count their updates, what they are fed, and what
    happened, in order: ``("step", tower, step)`` from ``on_step``, ``("kill",)``."""

    towers: Replicas
    counters: list[dg.Variable]
    step: dg.Variable
    feeds: dict
    slow: dg.Tensor  # the size of the work after a tower's update, fed each step
    events: list[tuple] = dataclasses.field(default_factory=list)
    lock: threading.Lock = dataclasses.field(default_factory=threading.Lock)

    def note(self, *event: object) -> None:
        with self.lock:
            self.events.append(event)


def _model(x, y):
    """Linear regression, plus busy work on the tower's device that leaves the loss as it is
    (so that a kill lands inside a partition of the device rather than between two)."""
    w = dg.get_variable("w", [8, 1], initializer=dg.zeros_initializer())
    b = dg.get_variable("b", [1], initializer=dg.zeros_initializer())
    busy = dg.matmul(x, dg.constant(WIDE))
    for _ in range(BUSY):
        busy = dg.tanh(dg.matmul(busy, dg.constant(SQUARE)))
    loss = dg.reduce_mean(dg.square(dg.matmul(x, w) + b - y))
    return loss + 0.0 * dg.reduce_mean(busy)


def _build() -> Training:
    """The towers, in the default graph. Each tower's train op applies its update, then adds
    one to its counter, then does work of the fed size (``[1, 1]``: next to none), all on the
    CPU after the update."""
    with dg.device("/cpu:0"):  # the inputs on the parameter device: no tower needs GPU:0
        x = dg.placeholder(dg.float32, [64, 8], name="x")
        y = dg.placeholder(dg.float32, [64, 1], name="y")
        slow = dg.placeholder(dg.int32, [2], name="slow")
        counters = [dg.Variable(np.int32(0), False, f"updates_{i}") for i in range(2)]
    step = dg.train.get_or_create_global_step()
    towers = dg.train.replicate(
        _model, ["/gpu:0", "/gpu:1"], "async", parameter_device="/cpu:0", inputs=(x, y),
        optimizer=dg.train.GradientDescentOptimizer(0.05), global_step=step,
    )  # fmt: skip
    counted = []
    for i, (update, counter) in enumerate(zip(towers.tower_train_ops, counters, strict=True)):
        with dg.device("/cpu:0"), dg.name_scope(f"after_update_{i}"):
            with dg.control_dependencies([update]):
                bump = counter.assign_add(1)
            with dg.control_dependencies([bump]):
                work = dg.fill(slow, 0.01)
                for _ in range(SLOW_OPS):
                    work = dg.tanh(dg.matmul(work, work))
            counted.append(dg.group(bump, dg.reduce_sum(work), name="train"))
    towers = dataclasses.replace(towers, tower_train_ops=counted)
    return Training(towers, counters, step, {x: X, y: Y}, slow)


def _train(
    session: dg.Session,
    training: Training,
    slow_at: tuple[int, int] | None = None,
    signal_at: tuple[int, int, threading.Event] | None = None,
) -> list[int]:
    """``run_async`` for :data:`STEPS` steps a tower; returns the steps each tower completed,
    as ``on_step`` counted them (also when ``run_async`` raises: then they are the error's
    ``completed``). ``slow_at=(tower, step)``: that step's work after its update is slow;
    ``signal_at=(tower, step, event)``: the event is set once that step is done."""
    completed = [0, 0]

    def feed(tower: int, step: int) -> dict:
        size = SLOW if (tower, step) == slow_at else 1
        return {**training.feeds, training.slow: np.array([size, size], np.int32)}

    def on_step(tower: int, step: int, loss: float) -> None:
        completed[tower] += 1
        training.note("step", tower, step)
        if signal_at is not None and signal_at[:2] == (tower, step):
            signal_at[2].set()

    try:
        training.towers.run_async(session, STEPS, feed_fn=feed, on_step=on_step)
    except Exception as error:
        error.completed = completed
        raise
    return completed


def _loss(w: np.ndarray, b: np.ndarray) -> float:
    return float(np.mean(np.square(X @ w + b - Y)))


def _counts(session, training: Training, completed: list[int], doubtful=None) -> tuple:
    """``[global step, counter of tower 0, of tower 1]``, and what they must be: ``[sum of the
    counters, steps tower 0 completed, steps tower 1 completed]`` (tower ``doubtful``'s
    failed run may have applied its update: its counter may be one more). Also checks that
    the parameters are finite and that the loss went down."""
    w, b = dg.trainable_variables()
    got = session.run({"step": training.step, "counters": training.counters, "w": w, "b": b})
    counters = [int(c) for c in got["counters"]]
    expected = [sum(counters), *completed]
    if doubtful is not None and counters[doubtful] == completed[doubtful] + 1:
        expected[1 + doubtful] += 1  # that run's update was applied before it failed
    assert np.isfinite(got["w"]).all() and np.isfinite(got["b"]).all()
    assert _loss(got["w"], got["b"]) < 0.5 * _loss(np.zeros((8, 1)), np.zeros(1))
    return [int(got["step"]), *counters], expected


# -- the scenarios -------------------------------------------------------------------------------
def test_a_gpu_worker_killed_at_a_random_point(tally, cluster):
    """Once tower 0 completed step :data:`KILL_AT`, GPU:1's worker is killed as soon as it is
    inside a partition: tower 1's run is repeated on the restarted worker."""
    client, logs = cluster
    scenario = tally.scenario("async training: GPU worker killed at a random point", LIMIT_S)
    _wait_for_all(client)
    since = logs.mark()
    with dg.Graph().as_default(), dg.Session(client) as session, dask.config.set(TICK):
        training = _build()
        session.run(dg.global_variables_initializer())
        reached = threading.Event()
        address, pid = _address_and_pid(client, GPU1)

        def kill() -> None:
            reached.wait(60)
            wait_until_executing(client, workers=[address])
            os.kill(pid, signal.SIGKILL)
            training.note("kill")

        killer = _watcher(kill)
        with scenario.trial() as trial:
            completed = trial.run(
                lambda: _train(session, training, None, (0, KILL_AT, reached)), 120
            )
            killer.join(60)
            assert ("kill",) in training.events
            assert completed == [STEPS, STEPS]
            trial.check(*_counts(session, training, completed), rtol=0, atol=0)
    scenario.verify()
    _assert_one_recovery(logs, since, quiet=False)


def test_a_gpu_worker_killed_after_its_towers_update_was_applied(tally, cluster):
    """Tower 0's step :data:`KILL_AT` is slow after its update: GPU:0's worker is killed while
    the CPU does that slow work, so the run is repeated although its update (and counter
    increment) already ran on the CPU, while tower 1's updates went on there."""
    client, logs = cluster
    scenario = tally.scenario("async training: GPU worker killed after its update", LIMIT_S)
    _wait_for_all(client)
    since = logs.mark()
    with dg.Graph().as_default(), dg.Session(client) as session, dask.config.set(TICK):
        training = _build()
        session.run(dg.global_variables_initializer())
        cpu, _ = _address_and_pid(client, CPU0)
        gpu, pid = _address_and_pid(client, GPU0)

        def kill() -> None:
            _wait_until(client, cpu, _running_op("after_update_0/"))
            os.kill(pid, signal.SIGKILL)
            training.note("kill")
            _wait_for_restart(client, GPU0, gpu)
            training.note("back")

        killer = _watcher(kill)
        with scenario.trial() as trial:
            completed = trial.run(lambda: _train(session, training, (0, KILL_AT)), 120)
            killer.join(60)
            events = training.events
            killed, repeated = events.index(("kill",)), events.index(("step", 0, KILL_AT))
            assert killed < events.index(("back",)) < repeated, events  # it ran again
            # tower 1 went on updating (newer runs) while tower 0's run was repeated
            assert any(e[:2] == ("step", 1) for e in events[killed:repeated]), events
            assert completed == [STEPS, STEPS]
            trial.check(*_counts(session, training, completed), rtol=0, atol=0)
    scenario.verify()
    _assert_one_recovery(logs, since)


def test_a_gpu_worker_gone_for_good(tally):
    """GPU:0's nanny and worker are killed once tower 0 completed step :data:`KILL_AT`: with
    no nanny to restart it, tower 0's run fails at once naming the device (an hour's restart
    grace is not waited for), tower 1 trains on meanwhile
    and stops after its current step (or is done), and ``run_async`` raises the failure; no
    update is lost or doubled."""
    scenario = tally.scenario("async training: GPU worker gone for good", LIMIT_S, "clear error")
    cluster, client = _processes()
    try:
        settings = {"daskgraph.worker-restart-grace": "3600s", **TICK}
        with dg.Graph().as_default(), dg.Session(client) as session, dask.config.set(settings):
            training = _build()
            session.run(dg.global_variables_initializer())
            reached = threading.Event()
            address, pid = _address_and_pid(client, GPU0)
            nanny = client.run(os.getpid, workers=[address], nanny=True)[address]
            assert nanny != pid

            def kill() -> None:
                reached.wait(60)
                wait_until_executing(client, workers=[address])
                os.kill(nanny, signal.SIGKILL)  # nothing restarts the worker
                with contextlib.suppress(ProcessLookupError):  # gone with its nanny
                    os.kill(pid, signal.SIGKILL)
                training.note("kill")

            killer = _watcher(kill)
            failed = {}

            def train() -> list[int]:
                try:
                    return _train(session, training, None, (0, KILL_AT, reached))
                except Exception as error:
                    failed["error"] = error
                    raise

            with scenario.trial() as trial:
                trial.run(train, 120, mentions=["GPU:0", "left the cluster during a run for good"])
            killer.join(60)
            scenario.verify()
            error = failed["error"]
            assert isinstance(error, dg.errors.InvalidArgumentError), repr(error)
            assert error.completed[0] < STEPS
            # tower 1 went on training while tower 0 waited for its device, then stopped
            events = training.events
            assert ("step", 1, error.completed[1] - 1) in events[events.index(("kill",)) :]
            counts, expected = _counts(session, training, error.completed, doubtful=0)
            assert counts == expected, (counts, expected)
    finally:
        client.close()
        cluster.close()


# -- helpers -------------------------------------------------------------------------------------
def _workers(client: Client) -> dict:
    return client.scheduler_info(n_workers=-1)["workers"]


def _address_and_pid(client: Client, name: str) -> tuple[str, int]:
    """The address of the worker named ``name``, and its process id."""
    (address,) = [a for a, w in _workers(client).items() if w["name"] == name]
    return address, client.run(os.getpid, workers=[address])[address]


def _watcher(target) -> threading.Thread:
    thread = threading.Thread(target=target, daemon=True, name="killer")
    thread.start()
    return thread


def _running_op(prefix: str):
    """A function for ``client.run``: whether a thread of the worker is inside the kernel of
    an op whose name starts with ``prefix`` (made here, so that it travels by value)."""

    def inside() -> bool:
        for frame in sys._current_frames().values():
            while frame is not None:
                code, local = frame.f_code, frame.f_locals
                if code.co_name == "_run" and code.co_filename.endswith("execution.py"):
                    ins = local.get("ins")  # the generic loop (traced runs)
                    if ins is not None and ins.op_name.startswith(prefix):
                        return True
                if code.co_name == "run" and code.co_filename.endswith("variable_steps.py"):
                    name = local.get("name")  # the loop of programs with variables
                    if isinstance(name, str) and name.startswith(prefix):
                        return True
                frame = frame.f_back
        return False

    return inside


def _wait_until(client: Client, address: str, probe, timeout: float = 60.0) -> None:
    """Until ``probe()``, run on the worker at ``address``, says true."""
    deadline = time.monotonic() + timeout
    while not client.run(probe, workers=[address])[address]:
        if time.monotonic() > deadline:
            raise AssertionError(f"{address}: nothing to see within {timeout} s")
        time.sleep(0.005)


def _wait_for_restart(client: Client, name: str, dead: str, timeout: float = 60.0) -> None:
    """Until the worker named ``name`` runs again, at an address other than ``dead``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        running = {
            a: w["name"] for a, w in _workers(client).items() if w.get("status") == "running"
        }
        if any(n == name and a != dead for a, n in running.items()):
            return
        time.sleep(0.01)
    raise AssertionError(f"{name} was not restarted within {timeout} s")


def _assert_one_recovery(logs, since, quiet: bool = True) -> None:
    """daskgraph's one INFO line for the recovery, and no ERROR of its own; if ``quiet``, no
    ERROR and no traceback anywhere. (A kill at a random point may cut a transfer from the
    dead worker short: Dask's scheduler and workers log that at ERROR, as they always do.)"""
    ours = [r for r in logs.records[since[0] :] if r.name.startswith("daskgraph")]
    assert [r.getMessage() for r in ours if r.levelno >= logging.ERROR or r.exc_info] == []
    if quiet:
        assert logs.problems(since) == []
    said = logs.daskgraph_info(since)
    assert len(said) == 1 and "their workers restarted; running it again" in said[0], said


def _wait_for_all(client: Client, timeout: float = 60) -> None:
    """Until the three devices' workers run, and so do their nannies (a nanny still starting
    does not restart a worker that dies)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        running = {w["name"] for w in _workers(client).values() if w.get("status") == "running"}
        if running == {CPU0, GPU0, GPU1}:
            nannies = client.run(lambda dask_worker: dask_worker.status.name, nanny=True)
            if len(nannies) == 3 and set(nannies.values()) == {"running"}:
                return
        time.sleep(0.05)
    raise AssertionError(f"the workers did not come back within {timeout} s")
