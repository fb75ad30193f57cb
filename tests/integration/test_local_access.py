"""Another user of the machine cannot run code through an embedded cluster (issue 32, S1).

A process of uid 65534 (``nobody``: a child forked from the test and dropped to that user
before it connects, where the test runs as root; elsewhere a child of the same user that
holds only credentials of its own) reaches every worker, nanny and the scheduler
of the embedded cluster a ``Session()`` starts and of ``local_cluster`` (threads and
processes) at their loopback ports, as it would find them with ``ss -ltn``. It tries, over
plain TCP and over TLS with credentials of its own: daskgraph's ``daskgraph_step`` with a
pickled object whose unpickling makes a folder, ``daskgraph_step_channel`` (and the channel it
names, with the key), Dask's ``run`` on each worker and nanny, and ``Client(scheduler).run``.
None may make the folder, and each attempt must fail.

A session (and a plain ``distributed.Client``) of the test's own process still reaches the
cluster by its address.
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import os
import pickle
from collections.abc import Iterator
from multiprocessing.connection import Client as ChannelClient
from pathlib import Path
from typing import Any

import dask.config
import numpy as np
import pytest
from distributed import Client, Security
from distributed.core import rpc
from distributed.protocol.pickle import dumps as dumps_function

import daskgraph as dg
from daskgraph.cluster import embedded
from daskgraph.cluster.local import local_cluster

NOBODY = 65534
ATTEMPT_S = 5

#: the attacker's user: ``nobody`` where the test may become it (as root)
ATTACKER = NOBODY if os.name == "posix" and os.geteuid() == 0 else os.getuid()


class MakesFolder:
    """Unpickling it makes the folder ``path`` (what an attacker's payload would do)."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self) -> tuple:
        return (os.mkdir, (self.path,))


def _addresses(client: Client) -> list[str]:
    """The scheduler, every worker and every nanny of ``client``'s cluster."""
    info = client.scheduler_info(n_workers=-1)
    found = [client.scheduler.address]
    for address, worker in info["workers"].items():
        found += [address] + ([worker["nanny"]] if worker.get("nanny") else [])
    return found


def _forms(address: str) -> list[str]:
    """``address`` as plain TCP and as TLS (the attacker tries both)."""
    rest = address.split("://", 1)[-1]
    return [f"tcp://{rest}", f"tls://{rest}"]


async def _attempt(address: str, marker: str, what: str) -> str:
    """One attempt to run code at ``address``; ``'ran'`` where it got an answer."""
    foreign = Security.temporary() if address.startswith("tls") else None  # its own CA
    args = foreign.get_connection_args("client") if foreign else {}
    target = rpc(address, connection_args=args, timeout=ATTEMPT_S)
    try:
        if what == "step":
            body = pickle.dumps({"session": "s", "run": "r", "x": MakesFolder(marker)})
            await target.daskgraph_step(body=body)
        elif what == "channel":
            endpoint = await target.daskgraph_step_channel()
            with ChannelClient(endpoint["path"], "AF_UNIX", authkey=endpoint["authkey"]) as conn:
                conn.send_bytes(pickle.dumps(MakesFolder(marker)))
        elif what == "run":
            await target.run(function=dumps_function(os.mkdir), args=(marker,))
        else:
            client = Client(address, security=foreign, asynchronous=True, timeout=ATTEMPT_S)
            async with client:
                await client.run(os.mkdir, marker)
        return "ran"
    except BaseException as exc:  # any failure is the refusal asked for
        return f"{type(exc).__name__}: {exc}"[:200]
    finally:
        await target.close_rpc()


async def _attack(addresses: list[str], scheduler: str, marker: str) -> dict[str, str]:
    results = {}
    for address in addresses:
        for form in _forms(address):
            for what in ("step", "channel", "run"):
                coro = _attempt(form, marker, what)
                try:
                    results[f"{what} {form}"] = await asyncio.wait_for(coro, 3 * ATTEMPT_S)
                except asyncio.TimeoutError:
                    results[f"{what} {form}"] = "timed out"
    for form in _forms(scheduler):
        results[f"Client.run {form}"] = await _attempt(form, marker, "client")
    return results


def _as_attacker(addresses: list[str], scheduler: str, marker: str, out: Any) -> None:
    """The forked child: become the :data:`ATTACKER`, attack, report the results as JSON."""
    code = 1
    try:
        if ATTACKER != os.getuid():
            os.setgroups([])
            os.setgid(ATTACKER)
            os.setuid(ATTACKER)
        results = asyncio.run(_attack(addresses, scheduler, marker))
        out.send_bytes(json.dumps({"uid": os.getuid(), "results": results}).encode())
        code = 0
    finally:
        os._exit(code)


def attack_as_another_user(client: Client, tmp_path: Path) -> tuple[dict[str, str], Path]:
    """Attack every address of ``client``'s cluster from a process of the :data:`ATTACKER`."""
    marker = tmp_path / "made-by-an-attacker"
    tmp_path.chmod(0o755)  # (the attacker may look at the folder; only a worker may write)
    context = multiprocessing.get_context("fork")
    here, there = context.Pipe(duplex=False)
    child = context.Process(
        target=_as_attacker, args=(_addresses(client), client.scheduler.address, str(marker), there)
    )
    child.start()
    there.close()
    try:
        assert here.poll(180), "the attacking process gave no answer"
        report = json.loads(here.recv_bytes())
    finally:
        child.join(30)
    assert report["uid"] == ATTACKER
    return report["results"], marker


def assert_refused(results: dict[str, str], marker: Path) -> None:
    ran = [attempt for attempt, result in results.items() if result == "ran"]
    assert not marker.exists(), f"another user ran code; answered: {ran}"
    assert not ran, results
    assert any(k.startswith("step ") for k in results) and len(results) >= 12


@pytest.fixture
def session() -> Iterator[dg.Session]:
    """A session on the embedded cluster: its CPU worker here, a virtual GPU in a process."""
    settings = {"daskgraph.virtual-gpus": 1, "daskgraph.local.processes": True}
    with dg.Graph().as_default(), dask.config.set(settings):
        sess = dg.Session()
        try:
            yield sess
        finally:
            sess.close()
            embedded.shutdown()


def test_another_user_cannot_run_code_through_the_embedded_cluster(session, tmp_path):
    with dg.device("/gpu:0"):
        x = dg.placeholder(dg.float32, [2], name="x")
        y = x * 2.0
    with dg.device("/cpu:0"):
        z = y + 1.0
    assert session.run(z, {x: np.ones(2, np.float32)}).tolist() == [3.0, 3.0]
    results, marker = attack_as_another_user(session.client, tmp_path)
    assert_refused(results, marker)
    # the session still runs its steps, and this process reaches the cluster by address
    assert session.run(z, {x: np.zeros(2, np.float32)}).tolist() == [1.0, 1.0]
    address = session.client.scheduler.address
    with dg.Session(address.split("://", 1)[1]) as again:
        assert again.run(z, {x: np.ones(2, np.float32)}).tolist() == [3.0, 3.0]
    with Client(address, set_as_default=False, timeout=30) as plain:  # (Dask's own, too)
        assert len(plain.scheduler_info(n_workers=-1)["workers"]) == 2


@pytest.mark.parametrize("processes", [True, False], ids=["processes", "threads"])
def test_another_user_cannot_run_code_through_local_cluster(processes, tmp_path):
    with local_cluster(virtual_gpus=1, processes=processes, cpu_threads=1) as cluster:
        with Client(cluster, set_as_default=False) as client:
            client.wait_for_workers(2, timeout=60)
            with dg.Graph().as_default(), dg.Session(client) as sess:
                with dg.device("/gpu:0"):
                    x = dg.placeholder(dg.float32, [2], name="x")
                    y = x * 3.0
                assert sess.run(y, {x: np.ones(2, np.float32)}).tolist() == [3.0, 3.0]
            results, marker = attack_as_another_user(client, tmp_path)
    assert_refused(results, marker)
