"""The scheduler killed mid-run: the run fails within seconds, and so does every later call.

The cluster's scheduler runs in a process of its own (``Session("tcp://...")``), killed with
SIGKILL while a worker is inside a partition of the run. Before, the run waited for the
client's reconnect timeout and raised distributed's ``CancelledError``/``CommClosedError`` (or
``KeyError: 'workers'``), and a second run hung for good; now the run's watchdog sees the
client lose its scheduler within a tick and raises ``UnreachableError`` naming the scheduler,
every later call does at once, ``close()`` returns within a second or two, and a new session
to the dead address fails within ``daskgraph.connect-timeout``. The run under way may also
finish with its right result: a session's client talks to the workers directly
(``direct_to_workers``), so a run that needs no more of the scheduler (a compiled step)
can get its results without it.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest
from distributed import Client
from processes import separate_cluster, wait_until_executing

import daskgraph as dg

N = 300
STEPS = 150  # a few seconds of matmuls on one core: the kill lands inside the run


def _graph(two_devices: bool):
    with dg.device("/cpu:0"):
        a = dg.placeholder(dg.float32, [N, N], name="a")
        y = a
        for _ in range(STEPS):
            y = dg.matmul(y, a) + a
    with dg.device("/cpu:1" if two_devices else "/cpu:0"):
        out = dg.reduce_sum(y * 2.0)
    return a, out


def _expected(value: np.ndarray) -> np.float32:
    y = value
    for _ in range(STEPS):
        y = y @ value + value
    return (y * np.float32(2.0)).sum(dtype=np.float32)


def _value() -> np.ndarray:
    return (np.random.default_rng(0).random((N, N), dtype=np.float32) / N).astype(np.float32)


@pytest.mark.parametrize("two_devices", [False, True], ids=["one-device", "two-devices"])
def test_scheduler_killed_mid_run(tally, two_devices):
    """After a correct run, the scheduler is killed once a worker is inside the next run:
    a clear error (or the right result) within 10 s; then a later run, list_devices and a new
    Session to the same address: clear errors naming the address, within 5 s; close() within
    5 s."""
    scenarios = (
        tally.scenario("scheduler killed mid-run", limit_s=10.0, expect="either"),
        tally.scenario("calls after the scheduler is gone", limit_s=5.0, expect="clear error"),
        tally.scenario("close() after the scheduler is gone", limit_s=5.0),
    )
    for _ in range(2):
        with separate_cluster() as cluster, dg.Graph().as_default() as graph:
            _kill_scheduler_during_a_run(cluster, graph, two_devices, *scenarios)
    for scenario in scenarios:
        scenario.verify()


def _kill_scheduler_during_a_run(cluster, graph, two_devices, mid_run, later, closing) -> None:
    a, out = _graph(two_devices)
    value = _value()
    session = dg.Session(cluster.address, graph=graph)
    np.testing.assert_allclose(session.run(out, {a: value}), _expected(value), rtol=1e-4)
    monitor = Client(cluster.address, set_as_default=False)
    killer = threading.Thread(target=_kill_once_executing, args=(cluster, monitor))
    killer.start()
    with mid_run.trial() as trial:
        trial.run(lambda: session.run(out, {a: value}), 60, ["scheduler"])
    killer.join()
    monitor.close(timeout=2)
    address = cluster.address.split("://")[1]
    for call in (
        lambda: session.run(out, {a: value}),
        session.list_devices,
        lambda: dg.Session(cluster.address, graph=graph),
    ):
        with later.trial() as trial:
            trial.run(call, 30, [address])
    with closing.trial() as trial:
        trial.run(session.close, 30)


def _kill_once_executing(cluster, monitor: Client) -> None:
    wait_until_executing(monitor)
    cluster.kill_scheduler()
