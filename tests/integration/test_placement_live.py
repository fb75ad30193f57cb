"""Placement on a live cluster with two virtual GPUs, checked where ops actually ran."""

from __future__ import annotations

import logging

import dask
import numpy as np
import pytest

import daskgraph as dg
from daskgraph.errors import InvalidArgumentError
from daskgraph.runtime.client.session import RunMetadata, RunOptions
from daskgraph.testing import within as _within

pytestmark = pytest.mark.virtual_gpus(2)

TRACE = RunOptions(trace_level=RunOptions.FULL_TRACE)
PREFIX = "/job:localhost/replica:0/task:0/device:"
LIMIT_S = 60  # for a call that must not hang: only a hang runs past it, not a busy machine


def _worker_of(session: dg.Session, device: str) -> str:
    (found,) = [d.worker for d in session.list_devices() if d.name.endswith(device)]
    return found


def _traced(session: dg.Session, fetches):
    md = RunMetadata()
    return session.run(fetches, options=TRACE, run_metadata=md), md.step_stats


@pytest.fixture
def configured(dg_client, dg_session):
    """``make(**config)``: a Session on the test's graph with that SessionConfig."""
    opened: list[dg.Session] = []

    def make(**config) -> dg.Session:
        session = dg.Session(dg_client, graph=dg_session.graph, config=dg.SessionConfig(**config))
        opened.append(session)
        return session

    yield make
    for session in opened:
        session.close()


def _matmul():
    a = dg.constant(np.arange(6, dtype=np.float32).reshape(2, 3), name="a")
    b = dg.constant(np.ones((3, 2), np.float32), name="b")
    return dg.matmul(a, b, name="mm"), np.arange(6, dtype=np.float32).reshape(2, 3) @ np.ones(
        (3, 2)
    )


@pytest.mark.parametrize(
    ("request_", "expected"),
    [
        (None, "GPU:0"),
        ("/gpu:0", "GPU:0"),
        ("/gpu:1", "GPU:1"),
        ("/device:GPU:1", "GPU:1"),
        ("/GPU:1", "GPU:1"),
        ("/cpu:0", "CPU:0"),
        ("/job:localhost/replica:0/task:0/device:GPU:1", "GPU:1"),
        ("/gpu:*", "GPU:0"),
        ("/job:localhost", "GPU:0"),
    ],
    ids=[
        "default",
        "gpu0",
        "gpu1",
        "device-gpu1",
        "upper-gpu1",
        "cpu0",
        "full-name",
        "gpu-any",
        "job-only",
    ],
)
def test_op_runs_on_the_worker_of_its_device(dg_session, request_, expected):
    if request_ is None:
        mm, want = _matmul()
    else:
        with dg.device(request_):
            mm, want = _matmul()
    result, stats = _traced(dg_session, mm)
    np.testing.assert_allclose(result, want)
    assert stats.worker_of("mm") == _worker_of(dg_session, expected)
    assert stats.device_of("mm") == PREFIX + expected
    assert stats.worker_of("a") == _worker_of(dg_session, expected)


def test_ops_of_one_run_spread_over_all_three_workers(dg_session):
    with dg.device("/cpu:0"):
        x = dg.constant([1.0, 2.0], name="x")
    with dg.device("/gpu:1"):
        y = dg.multiply(x, 3.0, name="y")
    z = dg.add(y, x, name="z")  # default: GPU:0
    with dg.device("/cpu:0"):
        total = dg.reduce_sum(z, name="total")
    (zv, tv), stats = _traced(dg_session, [z, total])
    np.testing.assert_array_equal(zv, [4.0, 8.0])
    assert tv == 12.0
    assert stats.worker_of("x") == _worker_of(dg_session, "CPU:0")
    assert stats.worker_of("y") == _worker_of(dg_session, "GPU:1")
    assert stats.worker_of("z") == _worker_of(dg_session, "GPU:0")
    assert stats.worker_of("total") == _worker_of(dg_session, "CPU:0")
    assert len({stats.worker_of(n) for n in ("x", "y", "z")}) == 3


def test_string_op_without_request_runs_on_the_cpu(dg_session):
    s = dg.constant("text", name="s")
    result, stats = _traced(dg_session, s)
    assert result == b"text"  # strings come back as bytes, as in TensorFlow
    assert stats.worker_of("s") == _worker_of(dg_session, "CPU:0")


def test_int32_matmul_without_request_runs_on_the_cpu(dg_session):
    # no GPU kernel for an int32 MatMul: automatic placement picks the CPU, without error
    a = dg.constant(np.arange(4, dtype=np.int32).reshape(2, 2), name="ia")
    product = dg.matmul(a, a, name="imm")
    result, stats = _traced(dg_session, product)
    np.testing.assert_array_equal(result, np.arange(4).reshape(2, 2) @ np.arange(4).reshape(2, 2))
    assert result.dtype == np.int32
    assert stats.worker_of("imm") == _worker_of(dg_session, "CPU:0")


@pytest.mark.parametrize(
    ("request_", "soft_device"),
    [("/gpu:2", "GPU:0"), ("/cpu:1", "CPU:0"), ("/job:worker/gpu:0", None)],
    ids=["gpu2", "cpu1", "unknown-job"],
)
def test_unsatisfiable_device_raises_quickly(dg_session, configured, request_, soft_device):
    with dg.device(request_):
        bad = dg.multiply(dg.constant(2.0), 3.0, name="bad")
    # "quickly": refused at placement, not after waiting for the device to (re)appear. With
    # that wait made far longer than the limit, the limit can leave a busy machine a minute.
    with dask.config.set({"daskgraph.worker-restart-grace": 3600}):
        box = _within(LIMIT_S, lambda: dg_session.run(bad))
    assert isinstance(box.get("error"), InvalidArgumentError), box
    message = str(box["error"])
    assert "'bad'" in message or "'Const'" in message
    assert dg.DeviceSpec.from_string(request_).to_string() in message
    assert "allow_soft_placement" in message
    assert box["error"].available == [d.name for d in dg_session.list_devices()]

    # with soft placement the op falls back to a device of the requested type first, keeping
    # the requested job (so an unknown job still fails, as in TensorFlow)
    soft = configured(allow_soft_placement=True)
    box = _within(LIMIT_S, lambda: _traced(soft, bad))
    if soft_device is None:
        assert isinstance(box.get("error"), InvalidArgumentError), box
        assert "/job:worker" in str(box["error"])
        return
    assert "error" not in box, box.get("error")
    result, stats = box["value"]
    assert result == 6.0
    assert stats.worker_of("bad") == _worker_of(soft, soft_device)


def test_int32_variable_on_gpu_soft_placed_on_the_cpu_worker(dg_session, configured):
    with dg.device("/gpu:0"):
        v = dg.Variable(3, name="iv")
        step = v.assign_add(1)
    init = v.initializer
    with pytest.raises(InvalidArgumentError, match="int32"):
        dg_session.run(init)  # no GPU kernel for integer variables, and no soft placement

    soft = configured(allow_soft_placement=True)
    soft.run(init)
    result, stats = _traced(soft, step)
    assert result == 4 and isinstance(result, np.int32)
    cpu = _worker_of(soft, "CPU:0")
    assert stats.worker_of("iv") == cpu
    assert stats.worker_of(step.op.name) == cpu
    assert soft.run(v) == 4


def test_log_device_placement_prints_and_logs_the_mapping(configured, capsys, caplog):
    mm, _ = _matmul()
    eye = dg.constant(np.eye(2, dtype=np.float32))
    matmul = dg.matmul(eye, eye)
    assert matmul.op.name == "MatMul"
    caplog.set_level(logging.INFO, logger="daskgraph.placement")
    sess = configured(log_device_placement=True)
    (result, _), stats = _traced(sess, [matmul, mm])
    np.testing.assert_allclose(result, np.eye(2))

    line = "MatMul: (MatMul): /job:localhost/replica:0/task:0/device:GPU:0"
    err = capsys.readouterr().err
    assert "Device mapping:" in err
    assert line in err.splitlines()
    for d in sess.list_devices():
        assert d.name in err
    messages = [r.getMessage() for r in caplog.records if r.name == "daskgraph.placement"]
    assert "Device mapping:" in messages
    assert line in messages
    assert "mm: (MatMul): /job:localhost/replica:0/task:0/device:GPU:0" in messages
    # what was logged is where it actually ran
    assert stats.worker_of("MatMul") == _worker_of(sess, "GPU:0")


def test_log_device_placement_logs_soft_fallbacks(configured, capsys):
    with dg.device("/gpu:0"):
        v = dg.Variable(1, name="iv")
    sess = configured(log_device_placement=True, allow_soft_placement=True)
    sess.run(v.initializer)
    lines = capsys.readouterr().err.splitlines()
    mine = [line for line in lines if line.startswith("iv: ")]
    assert len(mine) == 1, lines  # one line per op: its device, then why it was moved there
    assert mine[0].startswith(
        "iv: (VariableV2): /job:localhost/replica:0/task:0/device:CPU:0 "
        "(soft placement: requested '/device:GPU:0'"
    ), mine


def test_no_placement_log_by_default(dg_session, capsys, caplog):
    caplog.set_level(logging.INFO, logger="daskgraph.placement")
    mm, _ = _matmul()
    dg_session.run(mm)
    assert "Device mapping:" not in capsys.readouterr().err
    assert not [r for r in caplog.records if r.name == "daskgraph.placement"]


def test_device_count_gpu_zero_puts_everything_on_the_cpu(configured):
    mm, want = _matmul()
    total = dg.reduce_sum(mm, name="total")
    sess = configured(device_count={"GPU": 0})
    assert [d.name for d in sess.list_devices()] == [PREFIX + "CPU:0"]
    (result, summed), stats = _traced(sess, [mm, total])
    np.testing.assert_allclose(result, want)
    assert summed == want.sum()
    cpu = _worker_of(sess, "CPU:0")
    assert {stats.worker_of(n) for n in ("a", "b", "mm", "total")} == {cpu}


def test_device_count_gpu_zero_refuses_explicit_gpu_unless_soft(configured):
    with dg.device("/gpu:1"):
        y = dg.multiply(dg.constant(2.0), 5.0, name="y")
    with pytest.raises(InvalidArgumentError, match="GPU:1"):
        configured(device_count={"GPU": 0}).run(y)
    soft = configured(device_count={"GPU": 0}, allow_soft_placement=True)
    result, stats = _traced(soft, y)
    assert result == 10.0
    assert stats.worker_of("y") == _worker_of(soft, "CPU:0")


def test_device_count_gpu_one_keeps_only_gpu0(configured):
    sess = configured(device_count={"GPU": 1})
    assert [d.name for d in sess.list_devices()] == [PREFIX + "CPU:0", PREFIX + "GPU:0"]
    mm, want = _matmul()
    result, stats = _traced(sess, mm)
    np.testing.assert_allclose(result, want)
    assert stats.worker_of("mm") == _worker_of(sess, "GPU:0")
