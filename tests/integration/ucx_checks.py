"""Builds one cluster on Dask's UCX transport and records what each check of
``test_ucx_transport.py`` asserts on, printed as one JSON line (the script those tests run).

It runs in a process whose ``PYTHONPATH`` starts with ``make test``'s UCX site (``.ucx-site``,
where ``distributed-ucxx`` is installed apart from the test venv), so that this process and
its workers can import the transport while every other process of the suite stays without it.
The checks only gather (values, counters, log, page); the tests compare.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
import traceback
import urllib.request
from collections.abc import Callable
from typing import Any

import dask
import numpy as np
from distributed import Client
from worker_probes import cluster_client, step_counts, transitions

import daskgraph as dg

__all__ = ["main"]


def _gpu_to_gpu() -> tuple[Any, Any]:
    """A tensor made on GPU:0 and read on GPU:1, fed from and fetched to the client."""
    a = dg.placeholder(dg.float32, [8, 8], name="a")
    with dg.device("/gpu:0"):
        first = dg.matmul(a, a, name="first")
    with dg.device("/gpu:1"):
        second = dg.tanh(first * 0.01, name="second")
    return a, second


def _listed(value: np.ndarray) -> list:
    return np.asarray(value).tolist()


def two_device_step(client: Client) -> dict[str, Any]:
    """Six steps GPU:0 -> GPU:1 (the last five counted) and the scheduler's transitions."""
    workers = list(client.scheduler_info(n_workers=-1)["workers"])
    value = np.random.default_rng(0).random((8, 8), dtype=np.float32)
    with dg.Graph().as_default(), dg.Session(client) as session:
        a, second = _gpu_to_gpu()
        first_value = session.run(second, {a: value})
        before, steps_before = transitions(client), step_counts(client)
        values = [_listed(session.run(second, {a: value + np.float32(i)})) for i in range(5)]
        after, steps = transitions(client), step_counts(client)
    return {
        "workers": workers,
        "fed": _listed(value),
        "first": _listed(first_value),
        "values": values,
        "transitions": [before, after],
        "steps": {
            d: steps[d]["steps"] - steps_before[d].get("steps", 0) for d in ("GPU:0", "GPU:1")
        },
    }


def placement_log_and_page(client: Client) -> dict[str, Any]:
    """``log_device_placement``'s lines and this session's plan on ``/daskgraph.json``."""
    config = dg.SessionConfig(log_device_placement=True)
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        with dg.Graph().as_default(), dg.Session(client, config=config) as session:
            a, second = _gpu_to_gpu()
            session.run(second, {a: np.ones((8, 8), np.float32)})
            link, sid = session.dashboard_link, session._id
    transports = None
    if link is not None:
        with urllib.request.urlopen(link + ".json", timeout=30) as answer:
            snap = json.loads(answer.read().decode())
        transports = next(p for p in snap["plans"] if p["session"] == sid)["transports"]
    return {"log": err.getvalue(), "link": link, "transports": transports}


def cpu_to_gpu_pair(client: Client) -> dict[str, Any]:
    """CPU:0 -> GPU:0 -> CPU:0 four times; GPU:0's channel steps over the last three."""
    config = dg.SessionConfig(log_device_placement=True)
    value = np.arange(16, dtype=np.float32).reshape(4, 4)
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        with dg.Graph().as_default(), dg.Session(client, config=config) as session:
            with dg.device("/cpu:0"):
                a = dg.placeholder(dg.float32, [4, 4], name="a")
                doubled = a * 2.0
            with dg.device("/gpu:0"):
                product = dg.matmul(doubled, doubled, name="product")
            with dg.device("/cpu:0"):
                total = dg.reduce_sum(product, name="total")
            values = [float(session.run(total, {a: value}))]
            before = step_counts(client)["GPU:0"].get("channel steps", 0)
            values += [float(session.run(total, {a: value})) for _ in range(3)]
            channel_steps = step_counts(client)["GPU:0"]["channel steps"] - before
    return {
        "fed": _listed(value),
        "values": values,
        "channel_steps": channel_steps,
        "log": err.getvalue(),
    }


def session_by_address(client: Client) -> dict[str, Any]:
    """A session made from the scheduler's ``ucx://`` address alone."""
    address = client.scheduler.address
    with dg.Graph().as_default(), dg.Session(address) as session:
        a, second = _gpu_to_gpu()
        value = session.run(second, {a: np.eye(8, dtype=np.float32)})
    return {"address": address, "value": _listed(value)}


CHECKS: dict[str, Callable[[Client], dict[str, Any]]] = {
    "two_device_step": two_device_step,
    "placement_log_and_page": placement_log_and_page,
    "cpu_to_gpu_pair": cpu_to_gpu_pair,
    "session_by_address": session_by_address,
}


def main() -> None:
    """Two virtual GPUs in processes of their own, the CPU worker in this process, on UCX;
    every check on it in turn, each one's record (or its error) in the JSON line printed."""
    report: dict[str, Any] = {}
    with dask.config.set({"daskgraph.local.security": "none"}):
        with cluster_client(
            3, virtual_gpus=2, processes=True, cpu_in_process=True, cpu_threads=1, protocol="ucx"
        ) as client:
            for name, check in CHECKS.items():
                try:
                    report[name] = check(client)
                except Exception as error:  # that check's test shows it
                    report[name] = {"error": "".join(traceback.format_exception(error))}
    print(json.dumps(report), flush=True)


if __name__ == "__main__":
    main()
    sys.exit(0)
