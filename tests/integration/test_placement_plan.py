"""``Session.placement``: the plan of a run, per op, partition and transfer, without running."""

from __future__ import annotations

import json

import numpy as np
import pytest

import daskgraph as dg


def _graph():
    x = dg.placeholder(dg.float32, [8, 8], name="x")
    with dg.device("/gpu:0"):
        y = dg.matmul(x, x, name="y")
        v = dg.Variable(np.zeros((8, 8), np.float32), name="v")
    with dg.colocate_with(v):
        z = dg.add(y, v, name="z")
    with dg.device("/cpu:0"):
        total = dg.reduce_sum(z, name="total")
    return x, v, total


@pytest.mark.virtual_gpus(2)
def test_the_plan_says_where_each_op_goes_and_why_without_running(dg_session):
    x, _, total = _graph()
    plan = dg_session.placement(total, {x: np.ones((8, 8), np.float32)})
    by_name = {o.name: o for o in plan.ops}
    assert by_name["y"].assigned.endswith("GPU:0") and by_name["y"].reason == "explicit"
    assert by_name["y"].requested.endswith("GPU:0")
    assert by_name["z"].reason == "colocated" and by_name["z"].assigned.endswith("GPU:0")
    assert by_name["total"].assigned.endswith("CPU:0")
    assert by_name["x"].reason == "automatic"
    devices = {p.device[-5:] for p in plan.partitions}
    assert devices == {"CPU:0", "GPU:0"}
    sizes = {t.tensor: t.nbytes for t in plan.transfers}
    assert sizes["z:0"] == 8 * 8 * 4  # GPU:0 -> CPU:0, known before the run
    assert dg_session._runs == 0  # nothing ran
    with pytest.raises(dg.errors.FailedPreconditionError, match="v"):
        dg_session.run(total, {x: np.ones((8, 8), np.float32)})  # v was never initialized
    again = json.loads(plan.to_json())
    assert {o["name"] for o in again["ops"]} == set(by_name)
    text = str(plan)
    assert "colocated" in text and "transfer z:0" in text and "256 bytes" in text


@pytest.mark.virtual_gpus(1)
def test_a_soft_fallback_is_named_in_the_plan(dg_cluster_factory):
    from distributed import Client

    cluster = dg_cluster_factory(virtual_gpus=1)
    with (
        Client(cluster, set_as_default=False) as client,
        dg.Graph().as_default(),
    ):
        with dg.device("/gpu:7"):
            y = dg.constant(np.ones(3, np.float32)) * 2.0
        config = dg.SessionConfig(allow_soft_placement=True)
        with dg.Session(client, config=config) as session:
            plan = session.placement(y)
    (mul,) = [o for o in plan.ops if o.type == "Mul"]
    assert mul.requested.endswith("GPU:7") and mul.reason == "soft"
    assert mul.detail
