"""Updates lock the variables they update (TensorFlow's ``use_locking``), not the device, and
a partition that changes state never runs on a worker's event loop."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import numpy as np
import pytest

from daskgraph.kernels.math import _add
from daskgraph.kernels.state import _assign_add_kernel, _variable_kernel
from daskgraph.runtime.program import Instruction, PartitionProgram, RunStep, StepPart
from daskgraph.runtime.worker.execution import run_partition
from daskgraph.runtime.worker.step_service import StepService
from daskgraph.runtime.worker.worker_state import WorkerState
from daskgraph.testing import within

DEVICE = "/device:CPU:0"


def _increment(name: str) -> PartitionProgram:
    """``assign_add(name, 1.0)``, its new value the output."""
    attrs = {"var_name": name, "shape": (), "dtype": None}
    return PartitionProgram(DEVICE, "CPU", "numpy", 3, (), ((0, 0),), (
        Instruction(name, "VariableV2", _variable_kernel, attrs, (), 1, True, ()),
        Instruction(f"{name}/add", "AssignAdd", _assign_add_kernel, {}, (1, 0), 2, True, ()),
    ), ((2, False),))  # fmt: skip


def _run(state: WorkerState, program: PartitionProgram, number: int, trace: bool) -> object:
    return run_partition(state, "", program, RunStep("s", number), (np.float32(1.0),), trace)


@pytest.mark.parametrize("trace", [False, True], ids=["bound-loop", "generic-loop"])
def test_an_update_goes_on_while_another_variables_lock_is_held(trace):
    state = WorkerState()
    store = state.session("s").store(DEVICE)
    store.assign("a", np.float32(0.0))
    store.assign("b", np.float32(0.0))
    held = store.variable_lock("a")
    held.acquire()  # as a long update of ``a`` in another run would
    try:
        # ``b`` on the same device: not held up by ``a``'s lock
        done = within(60, lambda: _run(state, _increment("b"), 1, trace))
        assert done["value"][0] == 1.0 and store.read("b") == 1.0
        # ``a`` itself waits for its lock, in its own thread: it cannot apply meanwhile
        waiting = threading.Thread(target=_run, args=(state, _increment("a"), 2, trace))
        waiting.start()
        within(60, lambda: _run(state, _increment("b"), 3, trace))
        assert waiting.is_alive() and store.read("a") == 0.0
    finally:
        held.release()
    waiting.join(60)
    assert not waiting.is_alive() and store.read("a") == 1.0  # applied once, not lost


def _service() -> StepService:
    worker = SimpleNamespace(
        extensions={}, address="inproc://w", name="w",
        loop=SimpleNamespace(asyncio_loop=None), executors={"default": None},
    )  # fmt: skip
    return StepService(worker)


def test_a_small_partition_that_updates_a_variable_never_runs_on_the_event_loop():
    service = _service()
    stateless = PartitionProgram(DEVICE, "CPU", "numpy", 2, (), ((0, 0),), (
        Instruction("add", "Add", _add, {}, (0, 0), 1, False, ()),
    ), ((1, False),))  # fmt: skip
    small = StepPart(0, stateless, (), (0,), (), (0,), predictable=True)
    update = StepPart(1, _increment("a"), (), (0,), (), (0,), predictable=True)
    for part in (small, update):
        assert not service.inline("t", part)  # not run yet: its length is not known
        service.ran("t", part, 0.0)  # as short as a run can be
    assert service.inline("t", small)
    assert not service.inline("t", update)
    assert service.small("t", update)  # (it may run in a caller's thread, not on a loop)
    service.forget(session="s", tokens=["t"])
    assert service.changing == {}
    service.close()
