"""The scheduler's board of placements and runs, fed by hand-made events, and what the
``/daskgraph`` page draws from it."""

from __future__ import annotations

import dask
import pytest

from daskgraph.diagnostics.board import TOPIC, PlacementBoard
from daskgraph.diagnostics.dashboard import _drawing, _op_rows, layered_layout, plan_title

CPU = "/job:localhost/replica:0/task:0/device:CPU:0"
GPU = "/job:localhost/replica:0/task:0/device:GPU:0"


def _plan_event(session: str = "s1", number: int = 1, nbytes: int | None = 256) -> dict:
    ops = [
        {"name": "x", "type": "Const", "requested": "", "assigned": CPU,
         "reason": "automatic", "detail": "", "inputs": []},
        {"name": "y", "type": "MatMul", "requested": "/device:GPU:0", "assigned": GPU,
         "reason": "explicit", "detail": "", "inputs": ["x"]},
    ]  # fmt: skip
    return {
        "kind": "plan",
        "session": session,
        "plan": number,
        "label": "y:0",
        "devices": [
            {"name": CPU, "kind": "cpu", "worker": "tcp://h:1", "description": "threads: 2"},
            {"name": GPU, "kind": "virtual-gpu", "worker": "tcp://h:2", "description": ""},
        ],
        "placement": {
            "ops": ops,
            "partitions": [],
            "transfers": [
                {
                    "tensor": "x:0",
                    "source": 0,
                    "target": 1,
                    "source_device": CPU,
                    "target_device": GPU,
                    "nbytes": nbytes,
                },
            ],
        },
        "partitions": [
            {
                "index": 0,
                "device": CPU,
                "worker": "cpu",
                "label": "Const",
                "n_ops": 1,
                "ops": ["x"],
            },
            {
                "index": 1,
                "device": GPU,
                "worker": "gpu0",
                "label": "MatMul",
                "n_ops": 1,
                "ops": ["y"],
            },
        ],
        "n_ops": 2,
        "at": 0.0,
    }


def _runs_event(runs: int, paths: dict, session: str = "s1", number: int = 1) -> dict:
    return {"kind": "runs", "session": session, "plan": number, "keys": ["k"], "runs": runs,
            "failed": 1, "seconds": {GPU: 0.5}, "paths": paths, "at": 1.0}  # fmt: skip


def test_plans_and_runs_add_up_per_device() -> None:
    board = PlacementBoard()
    board.log_event(TOPIC, _plan_event())
    board.log_event(TOPIC, _runs_event(3, {"scheduler": 3}))
    board.log_event(TOPIC, _runs_event(2, {"scheduler": 1, "actor": 1}))
    snap = board.snapshot()
    devices = {d["name"]: d for d in snap["devices"]}
    assert devices[GPU]["runs"] == 5 and devices[CPU]["runs"] == 5
    assert devices[GPU]["bytes_in"] == 5 * 256 and devices[CPU]["bytes_in"] == 0
    assert devices[GPU]["seconds"] == pytest.approx(1.0)
    assert devices[GPU]["marks"] == "virtual" and devices[CPU]["marks"] == ""
    assert devices[GPU]["ops"] == 1 and devices[GPU]["partitions"] == 1
    (plan,) = snap["plans"]
    assert plan["runs"] == 5 and plan["failed"] == 2
    assert plan["paths"] == {"scheduler": 4, "actor": 1}


def test_the_scheduler_s_runs_are_timed_from_their_tasks() -> None:
    board = PlacementBoard()
    board.log_event(TOPIC, _plan_event())
    stops = [{"action": "compute", "start": 1.0, "stop": 1.25},
             {"action": "transfer", "start": 0.0, "stop": 1.0}]  # fmt: skip
    board.transition(("dg-localhost-0-gpu0", "dg-s1-1-MatMul", 1), "processing", "memory",
                     startstops=stops)  # fmt: skip
    # a resident program's task and other people's tasks are not runs
    board.transition(("dg-localhost-0-gpu0", "program-abc", 1), "processing", "memory",
                     startstops=stops)  # fmt: skip
    board.transition("inc-123", "processing", "memory", startstops=stops)
    devices = {d["name"]: d for d in board.snapshot()["devices"]}
    assert devices[GPU]["seconds"] == pytest.approx(0.25)


def test_other_topics_and_malformed_events_change_nothing(caplog) -> None:
    board = PlacementBoard()
    board.log_event("workers", {"kind": "plan"})
    board.log_event(TOPIC, "not a dict")
    board.log_event(TOPIC, {"kind": "plan", "session": "s"})  # no devices, no plan number
    assert board.snapshot()["plans"] == [] and board.version == 0
    assert "malformed daskgraph event" in caplog.text


def test_the_board_keeps_the_newest_plans() -> None:
    board = PlacementBoard()
    with dask.config.set({"daskgraph.dashboard.plans": 3}):
        for n in range(1, 6):
            board.log_event(TOPIC, _plan_event(number=n))
    assert [p["plan"] for p in board.snapshot()["plans"]] == [3, 4, 5]


def test_a_large_plan_is_shown_by_its_partitions() -> None:
    board = PlacementBoard()
    event = {**_plan_event(), "placement": None, "n_ops": 5000}
    for p in event["partitions"]:
        p.pop("ops")
        p["n_ops"] = 2500
    board.log_event(TOPIC, event)
    board.log_event(TOPIC, _runs_event(1, {"scheduler": 1}))
    devices = {d["name"]: d for d in board.snapshot()["devices"]}
    assert devices[CPU]["ops"] == 2500 and devices[GPU]["bytes_in"] == 0


def test_the_page_rows_and_drawing_of_a_plan() -> None:
    placement = _plan_event()["placement"]
    rows = _op_rows(placement)
    assert rows["name"] == ["x", "y"] and rows["assigned"] == ["CPU:0", "GPU:0"]
    assert rows["reason"] == ["automatic", "explicit"] and rows["requested"][0] == "-"
    nodes, edges = _drawing(placement, {CPU: "blue", GPU: "orange"})
    assert nodes["color"] == ["blue", "orange"] and nodes["label"] == ["x", "y"]
    assert edges["color"] == ["#d62728"] and edges["width"] == [3]  # x -> y crosses devices
    assert plan_title(_plan_event()) == "session s1 · plan 1 · y:0"


def test_the_layout_puts_each_op_after_its_inputs() -> None:
    ops = [{"name": n, "inputs": i} for n, i in
           [("a", []), ("b", ["a"]), ("c", ["a"]), ("d", ["b", "c", "outside"])]]  # fmt: skip
    at = layered_layout(ops)
    assert at["a"][0] == 0 and at["b"][0] == at["c"][0] == 1 and at["d"][0] == 2
    assert at["b"][1] != at["c"][1]
