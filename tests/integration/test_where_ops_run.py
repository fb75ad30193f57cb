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
