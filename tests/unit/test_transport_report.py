"""Which transport each device pair of a plan uses, as the placement log and the page name it
(issue 33): in-process, local socket (the client's step channel), or Dask's comm by scheme."""

from __future__ import annotations

from types import SimpleNamespace as Part

import pytest

from daskgraph.cluster.topology import Device
from daskgraph.diagnostics.transport_report import (
    device_pairs,
    format_transport_log,
    plan_transports,
)

CPU, GPU0, GPU1 = (
    f"/job:localhost/replica:0/task:0/device:{d}" for d in ("CPU:0", "GPU:0", "GPU:1")
)


def _plan():
    """CPU:0 feeds GPU:0 and GPU:1; GPU:0 also feeds GPU:1; GPU:1's result goes to CPU:0."""
    parts = (
        Part(device=CPU, dependencies=()),
        Part(device=GPU0, dependencies=(0,)),
        Part(device=GPU1, dependencies=(0, 1)),
        Part(device=CPU, dependencies=(2,)),
    )
    return Part(partitions=parts)


def _devices(scheme: str) -> list[Device]:
    return [
        Device(CPU, f"{scheme}://127.0.0.1:1000", "cpu"),
        Device(GPU0, f"{scheme}://127.0.0.1:1001", "virtual-gpu"),
        Device(GPU1, f"{scheme}://127.0.0.1:1002", "virtual-gpu"),
    ]


def test_pairs_are_those_that_exchange_tensors_each_once():
    assert device_pairs(_plan()) == [(CPU, GPU0), (CPU, GPU1), (GPU0, GPU1)]


@pytest.mark.parametrize(
    "scheme, local, channels, expected",
    [
        # the embedded cluster: CPU worker in this process, GPU workers in processes of theirs
        ("ucx", {1000}, True, ["local socket", "local socket", "ucx"]),
        ("tls", {1000}, False, ["tls", "tls", "tls"]),
        ("tcp", {1000, 1001, 1002}, True, ["in-process"] * 3),  # a cluster of threads
        ("tcp", set(), True, ["tcp"] * 3),  # a cluster of another process
    ],
    ids=["ucx-embedded", "tls-no-channels", "threads", "remote-client"],
)
def test_each_pair_is_named_by_where_its_workers_live(scheme, local, channels, expected):
    here = frozenset(f"{scheme}://127.0.0.1:{port}" for port in local)
    rows = plan_transports(_plan(), _devices(scheme), local=here, channels=channels)
    assert [(r["source"], r["target"]) for r in rows] == device_pairs(_plan())
    assert [r["transport"] for r in rows] == expected


def test_the_log_lists_each_pair_and_nothing_for_one_device():
    rows = plan_transports(_plan(), _devices("ucx"), local=frozenset(), channels=True)
    assert format_transport_log(rows) == [
        "Transports between devices:",
        f"{CPU} <-> {GPU0}: ucx",
        f"{CPU} <-> {GPU1}: ucx",
        f"{GPU0} <-> {GPU1}: ucx",
    ]
    one = Part(partitions=(Part(device=CPU, dependencies=()),))
    assert format_transport_log(plan_transports(one, _devices("tcp"))) == []
