"""Runs show on the cluster's dashboard: the ``/daskgraph`` page and its JSON, Dask's event
log and task stream, for runs through the scheduler and runs that skip it alike."""

from __future__ import annotations

import json
import urllib.request

import dask
import numpy as np
import pytest
from distributed import Client, get_task_stream

import daskgraph as dg
from daskgraph.diagnostics.board import TOPIC


def _read(url: str) -> tuple[int, str]:
    with urllib.request.urlopen(url, timeout=30) as answer:
        return answer.status, answer.read().decode()


def _events_of(client: Client, session_id: str, kind: str) -> list[dict]:
    return [
        msg
        for _, msg in client.get_events(TOPIC)
        if msg.get("session") == session_id and msg.get("kind") == kind
    ]


@pytest.mark.virtual_gpus(0)
def test_a_one_device_run_is_in_the_event_log(dg_client):
    with dg.Graph().as_default():
        a = dg.constant(np.full((3, 3), 2.0, np.float32), name="a")
        y = dg.matmul(a, a, name="y")
        with dg.Session(dg_client) as session:
            for _ in range(3):
                np.testing.assert_allclose(session.run(y), np.full((3, 3), 12.0))
            sid = session._id
    # closing published the last runs: every run is counted, by the path it took
    runs = _events_of(dg_client, sid, "runs")
    assert sum(r["runs"] for r in runs) == 3
    assert {path for r in runs for path in r["paths"]} == {"in-process"}
    (key,) = runs[-1]["keys"]  # named as the partition's task would be: device, main ops
    assert "dg-localhost-0-cpu0" in key and "MatMul" in key
    (plan,) = _events_of(dg_client, sid, "plan")
    assert {o["name"]: o["assigned"][-5:] for o in plan["placement"]["ops"]} == {
        "a": "CPU:0",
        "y": "CPU:0",
    }


@pytest.mark.virtual_gpus(0)
def test_dasks_own_pages_link_to_the_page(dg_client):
    with dg.Session(dg_client) as session:  # the first session installs the page
        link = session.dashboard_link
    assert link is not None
    root = link.removesuffix("daskgraph")
    for page in ("status", "workers"):  # Dask's main page, and another of its pages
        status, html = _read(root + page)
        assert status == 200 and '<a href="daskgraph">Daskgraph</a>' in html, html[:3000]
    status, html = _read(link)
    assert status == 200


@pytest.mark.virtual_gpus(1)
def test_the_page_shows_every_client_the_plans_and_devices(dg_client):
    with dg.Graph().as_default():
        with dg.device("/cpu:0"):
            a = dg.constant(np.ones((4, 4), np.float32), name="a")
        with dg.device("/gpu:0"):
            y = dg.matmul(a, a, name="y")
        with dg.device("/gpu:5"):  # no such GPU: soft placement falls back
            z = dg.add(y, 1.0, name="z")
        config = dg.SessionConfig(allow_soft_placement=True)
        with get_task_stream(client=dg_client) as stream:
            # the scheduler's path (not compiled steps): its tasks are on the task stream
            with dask.config.set({"daskgraph.compiled-steps": False}):
                with dg.Session(dg_client, config=config) as session:
                    np.testing.assert_allclose(session.run(z), np.full((4, 4), 5.0))
                    link, sid = session.dashboard_link, session._id
    # the scheduler ran the two-device run: its tasks' keys name the device and main ops
    keys = [str(t["key"]) for t in stream.data]
    assert any("dg-localhost-0-gpu0" in k and "MatMul" in k for k in keys), keys

    assert link is not None and link.endswith("/daskgraph")
    status, html = _read(link)
    assert status == 200 and "bokeh" in html.lower()
    status, text = _read(link + ".json")  # anyone reaching the dashboard reads the same
    snap = json.loads(text)
    plan = next(p for p in snap["plans"] if p["session"] == sid)
    ops = {o["name"]: o for o in plan["placement"]["ops"]}
    assert ops["y"]["assigned"].endswith("GPU:0") and ops["y"]["reason"] == "explicit"
    assert ops["z"]["assigned"].endswith("GPU:0") and ops["z"]["reason"] == "soft"
    assert ops["a"]["assigned"].endswith("CPU:0")
    assert plan["runs"] == 1 and plan["paths"] == {"scheduler": 1}
    # the pair's transport: this cluster's workers are threads of this process
    ((source, target, transport),) = [tuple(t.values()) for t in plan["transports"]]
    assert (source[-5:], target[-5:], transport) == ("CPU:0", "GPU:0", "in-process")
    devices = {d["name"][-5:]: d for d in snap["devices"]}
    assert devices["GPU:0"]["marks"] == "virtual" and devices["CPU:0"]["marks"] == ""
    assert devices["GPU:0"]["bytes_in"] >= 4 * 4 * 4  # a:0 crossed from CPU:0
    assert devices["GPU:0"]["seconds"] > 0  # timed from the scheduler's tasks


@pytest.mark.virtual_gpus(0)
def test_failed_runs_are_counted(dg_client):
    with dg.Graph().as_default():
        v = dg.Variable(np.zeros(2, np.float32), name="never_initialized")
        y = v * 2.0
        with dg.Session(dg_client) as session:
            with pytest.raises(dg.errors.FailedPreconditionError):
                session.run(y)
            sid = session._id
    (runs,) = _events_of(dg_client, sid, "runs")
    assert runs["runs"] == 1 and runs["failed"] == 1


@pytest.mark.virtual_gpus(0)
def test_publishing_can_be_switched_off(dg_client):
    with dask.config.set({"daskgraph.dashboard.enabled": False}), dg.Graph().as_default():
        y = dg.constant(1.0) + 1.0
        with dg.Session(dg_client) as session:
            assert session.run(y) == 2.0
            assert session.dashboard_link is None
            sid = session._id
    assert _events_of(dg_client, sid, "plan") == [] and _events_of(dg_client, sid, "runs") == []


@pytest.mark.virtual_gpus(0)
def test_runs_from_many_threads_are_all_counted(dg_client):
    from concurrent.futures import ThreadPoolExecutor

    with dg.Graph().as_default():
        y = dg.constant(np.arange(4, dtype=np.float32)) * 2.0
        with dg.Session(dg_client) as session:
            with ThreadPoolExecutor(8) as pool:
                results = list(pool.map(lambda _: session.run(y), range(400)))
            sid = session._id
    assert all(np.array_equal(r, [0.0, 2.0, 4.0, 6.0]) for r in results)
    assert sum(r["runs"] for r in _events_of(dg_client, sid, "runs")) == 400
