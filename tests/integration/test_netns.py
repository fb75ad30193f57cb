"""Two hosts of one cluster, each in a network namespace of its own, joined by a veth pair.

Task 0 (the scheduler and its workers) lives at 10.231.7.1 in one namespace, task 1 at
10.231.7.2 in another; a session in the first namespace places an op on task 1 across the
link, and `daskgraph devices` from the second lists both tasks. Needs root and iproute2: the
test is skipped cleanly where namespaces cannot be made.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid

import pytest

from daskgraph.cluster.server import free_ports

A_IP, B_IP = "10.231.7.1", "10.231.7.2"


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=20)


@pytest.fixture
def namespaces():
    tag = uuid.uuid4().hex[:6]
    a, b = f"dg{tag}a", f"dg{tag}b"
    veth_a, veth_b = f"v{tag}a", f"v{tag}b"
    made: list[str] = []
    try:
        for ns in (a, b):
            _ip("netns", "add", ns)
            made.append(ns)
        _ip("link", "add", veth_a, "type", "veth", "peer", "name", veth_b)
        _ip("link", "set", veth_a, "netns", a)
        _ip("link", "set", veth_b, "netns", b)
        for ns, veth, ip in ((a, veth_a, A_IP), (b, veth_b, B_IP)):
            _ip("-n", ns, "addr", "add", f"{ip}/24", "dev", veth)
            _ip("-n", ns, "link", "set", veth, "up")
            _ip("-n", ns, "link", "set", "lo", "up")
    except (OSError, subprocess.SubprocessError) as exc:
        for ns in made:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, check=False)
        pytest.skip(f"cannot make network namespaces here: {exc}")
    yield a, b
    for ns in (a, b):
        subprocess.run(["ip", "netns", "del", ns], capture_output=True, check=False)


def _in(ns: str, *cmd: str) -> list[str]:
    return ["ip", "netns", "exec", ns, *cmd]


SESSION = """
import daskgraph as dg
with dg.device("/job:worker/task:1/cpu:0"):
    c = dg.constant("computed on the other host")
with dg.Session("tcp://{a}:{port}", config=dg.SessionConfig(log_device_placement=True)) as s:
    print(s.run(c))
"""


def test_a_cluster_across_two_network_namespaces(namespaces, tmp_path):
    ns_a, ns_b = namespaces
    p0, p1 = free_ports(2)
    spec = tmp_path / "cluster.json"
    spec.write_text(json.dumps({"worker": [f"{A_IP}:{p0}", f"{B_IP}:{p1}"]}))
    cli = [sys.executable, "-m", "daskgraph.cli", "server", "--cluster-spec", str(spec)]
    env = {"DASK_DASKGRAPH__VIRTUAL_GPUS": "0", "PATH": "/usr/bin:/bin"}
    servers = [
        subprocess.Popen(
            _in(ns, *cli, "--job-name", "worker", "--task-index", str(i)),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for i, ns in enumerate((ns_a, ns_b))
    ]
    try:
        listed = ""
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            devices = subprocess.run(
                _in(ns_b, sys.executable, "-m", "daskgraph.cli", "devices", f"{A_IP}:{p0}"),
                capture_output=True,
                text=True,
                timeout=30,
                env=env,
            )
            listed = devices.stdout
            if "task:0/device:CPU:0" in listed and "task:1/device:CPU:0" in listed:
                break
            time.sleep(0.5)
        assert "/job:worker/replica:0/task:0/device:CPU:0" in listed, listed
        assert "/job:worker/replica:0/task:1/device:CPU:0" in listed, listed
        session = subprocess.run(
            _in(ns_a, sys.executable, "-c", SESSION.format(a=A_IP, port=p0)),
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
        )
        assert "computed on the other host" in session.stdout, session.stdout + session.stderr
        assert "Const: (Const): /job:worker/replica:0/task:1/device:CPU:0" in session.stderr
    finally:
        for server in reversed(servers):
            server.terminate()
        for server in servers:
            try:
                server.wait(timeout=20)
            except subprocess.TimeoutExpired:
                server.kill()
