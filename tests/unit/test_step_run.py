"""One compiled step on one worker, without Dask: inputs, early messages, failures, aborts."""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np
import pytest

from daskgraph.errors import InvalidArgumentError
from daskgraph.kernels.math import _add
from daskgraph.runtime.program import Instruction, PartitionProgram, RunStep, StepPart, WorkerStep
from daskgraph.runtime.worker.execution import RunFailure
from daskgraph.runtime.worker.step_run import StepHost, StepRun
from daskgraph.runtime.worker.worker_state import WorkerState


class FakeHost(StepHost):
    """Runs everything inline; records what it sends."""

    def __init__(self, inline: bool = True) -> None:
        self.state, self.address = WorkerState(), "here"
        self.sent: list[tuple[str, int, Any]] = []
        self.kept: dict[str, list] = {}
        self._inline = inline

    async def in_thread(self, fn):
        return await asyncio.get_running_loop().run_in_executor(None, fn)

    async def send(self, address, key, producer, value):
        self.sent.append((address, producer, value))

    def capture(self, address, key, producer, value):
        if address in self.kept:
            self.kept[address].append((producer, value))
            return True
        return False

    def inline(self, token, part):
        return self._inline

    def ran(self, token, part, seconds):
        pass


def _doubler(inputs=(), feeds=((0, 0),)) -> PartitionProgram:
    """slot1 = slot0 + slot0, slot0 fed or received."""
    add = Instruction("double", "Add", _add, {}, (0, 0), 1, False, ())
    return PartitionProgram(
        "/device:CPU:0", "CPU", "numpy", 2, inputs, feeds, (add,), ((1, False),)
    )


def _run(plan, early=None, feeds=None, host=None, near=frozenset()):
    host = host or FakeHost()
    step = RunStep("s", 1)

    async def go():
        run = StepRun(host, ("s", "r"), "t", plan, {"cpu": "cpu-address", "gpu": "gpu-address"},
                      step, feeds or {}, False, early or {}, near)  # fmt: skip
        return await run.run()

    return asyncio.run(go()), host


def test_a_partition_sends_its_consumer_worker_just_what_it_reads():
    first = StepPart(0, _doubler(), (), (0,), (("gpu", (0,)),), (0,), True)
    reply, host = _run(WorkerStep("cpu", (first,), ()), feeds={0: np.float32(2.0)})
    assert host.sent == [("gpu-address", 0, {0: np.float32(4.0)})]
    assert reply["outputs"] == {0: {0: np.float32(4.0)}} and reply["failure"] is None


def test_a_message_that_arrived_early_is_read_and_a_failure_passes_on():
    reader = StepPart(1, _doubler(inputs=((0, 0, 0),), feeds=()), (0,), (), (), (0,), True)
    plan = WorkerStep("gpu", (reader,), (0,))
    reply, _ = _run(plan, early={0: {0: np.float32(5.0)}})
    assert reply["outputs"] == {1: {0: np.float32(10.0)}}
    failure = RunFailure(InvalidArgumentError("boom", op="x"))
    reply, _ = _run(plan, early={0: failure})
    assert reply["failure"] == (1, failure) and reply["outputs"] == {}


def test_outputs_for_the_clients_process_ride_in_the_reply_or_the_clients_message():
    first = StepPart(0, _doubler(), (), (0,), (("cpu", (0,)),), (), True)
    plan = WorkerStep("gpu", (first,), ())
    reply, host = _run(plan, feeds={0: np.float32(1.0)}, near=frozenset({"cpu"}))
    assert reply["forward"] == [("cpu", 0, {0: np.float32(2.0)})] and host.sent == []
    kept = FakeHost()
    kept.kept["gpu-address"] = []
    to_gpu = StepPart(0, _doubler(), (), (0,), (("gpu", (0,)),), (), True)
    _run(WorkerStep("cpu", (to_gpu,), ()), feeds={0: np.float32(3.0)}, host=kept)
    assert kept.kept["gpu-address"] == [(0, {0: np.float32(6.0)})] and kept.sent == []


def test_an_aborted_step_stops_waiting():
    reader = StepPart(1, _doubler(inputs=((0, 0, 0),), feeds=()), (0,), (), (), (0,), True)
    plan = WorkerStep("gpu", (reader,), (0,))

    async def go():
        run = StepRun(FakeHost(), ("s", "r"), "t", plan, {}, RunStep("s", 1), {}, False, {})
        waiting = asyncio.ensure_future(run.run())
        await asyncio.sleep(0.01)
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting

    asyncio.run(go())
