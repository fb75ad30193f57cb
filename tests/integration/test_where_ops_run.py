"""Ops run on the workers that own their devices: checked through traced runs, not logs."""

from __future__ import annotations

import numpy as np
import pytest

import daskgraph as dg
from daskgraph.runtime.client.session import RunMetadata, RunOptions

TRACE = RunOptions(trace_level=RunOptions.FULL_TRACE)


def _worker_of(session: dg.Session, device: str) -> str:
    (found,) = [d.worker for d in session.list_devices() if d.name.endswith(device)]
    return found


@pytest.mark.virtual_gpus(2)
def test_towers_run_on_their_gpus_and_sum_on_cpu(dg_session):
    towers = []
    for i in range(2):
        with dg.device(f"/gpu:{i}"):
            a = dg.constant(np.arange(6, dtype=np.float32).reshape(2, 3) + i)
            b = dg.constant(np.ones((3, 2), np.float32))
            towers.append(dg.matmul(a, b))
    with dg.device("/cpu:0"):
        total = dg.add_n(towers)
    md = RunMetadata()
    result = dg_session.run(total, options=TRACE, run_metadata=md)
    expected = sum(
        (np.arange(6, dtype=np.float32).reshape(2, 3) + i) @ np.ones((3, 2)) for i in range(2)
    )
    np.testing.assert_allclose(result, expected)
    stats = md.step_stats
    assert stats.worker_of(towers[0].op.name) == _worker_of(dg_session, "GPU:0")
    assert stats.worker_of(towers[1].op.name) == _worker_of(dg_session, "GPU:1")
    assert stats.worker_of(total.op.name) == _worker_of(dg_session, "CPU:0")


@pytest.mark.virtual_gpus(1)
def test_a_caching_device_reads_the_variable_there(dg_session):
    """TF1's ``caching_device``: ``v/read`` runs on it, fed by a read where the variable
    lives; an update is seen by the next run's read."""
    import daskgraph.compat.v1 as tf

    with dg.device("/cpu:0"):
        v = tf.Variable([1.0, 2.0], name="v", caching_device="/gpu:0")
        with tf.variable_scope("scope", caching_device="/gpu:0"):
            w = tf.get_variable("w", [2], initializer=tf.ones_initializer())
    with dg.device("/gpu:0"):
        y = v * 3.0 + w
    assert v.value().op.name == "v/read" and v.value().op.device == "/device:GPU:0"
    assert w.value().op.device == "/device:GPU:0" and v.op.device == "/device:CPU:0"
    dg_session.run(dg.global_variables_initializer())
    md = RunMetadata()
    np.testing.assert_allclose(dg_session.run(y, options=TRACE, run_metadata=md), [4.0, 7.0])
    assert md.step_stats.worker_of("v/read") == _worker_of(dg_session, "GPU:0")
    assert md.step_stats.worker_of("v/read/value") == _worker_of(dg_session, "CPU:0")
    dg_session.run(v.assign([5.0, 6.0]))
    np.testing.assert_allclose(dg_session.run(y), [16.0, 19.0])
