"""daskgraph's step handlers answer authenticated connections only, unless the worker itself
is open to any (issue 32, S1): a plain connection to a TLS worker is refused before a byte of
its message is unpickled; TLS with a certificate, in-process comms, and any connection to a
plain-TCP worker (a cluster run without TLS, where Dask's ``run`` is open anyway) are served.
"""

from __future__ import annotations

import asyncio
import os
import pickle
from types import SimpleNamespace

import pytest

from daskgraph.errors import UnauthenticatedError
from daskgraph.runtime.worker.step_service import StepService
from daskgraph.runtime.worker.wire import envelope


class MakesFolder:
    """Unpickling it makes the folder ``path``."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self) -> tuple:
        return (os.mkdir, (self.path,))


class Comm:
    """What the handlers read of a Dask comm."""

    def __init__(self, peer: str, peercert: dict | None = None) -> None:
        self.peer_address = peer
        self.extra_info = {"peercert": peercert} if peercert else {}


def service(listens_on: str) -> StepService:
    """The step service of a stand-in worker listening at ``listens_on``."""
    worker = SimpleNamespace(
        extensions={},
        handlers={},
        address=listens_on,
        name="/job:localhost/replica:0/task:0/device:GPU:0",
        loop=SimpleNamespace(asyncio_loop=None),
        executors={"default": None},
        listeners=[SimpleNamespace(listen_address=listens_on)],
    )
    return StepService.install(worker)


def step_body(marker: str) -> dict:
    fields = dict(session="s", run="r", token="t", step=MakesFolder(marker), feeds=None)
    return envelope({**fields, "trace": False})


PLAIN = Comm("tcp://127.0.0.1:40000")
CALLS = {
    "daskgraph_step": lambda s, comm, m: asyncio.run(s.step_message(comm, **step_body(m))),
    "daskgraph_step_recv": lambda s, comm, m: s.recv(comm, body=pickle.dumps(MakesFolder(m))),
    "daskgraph_step_channel": lambda s, comm, m: s.channel(comm),
    "daskgraph_step_abort": lambda s, comm, m: s.abort(comm, session="s", run="r"),
    "daskgraph_step_forget": lambda s, comm, m: s.forget(comm, session="s", tokens=["t"]),
    "daskgraph_step_stage": lambda s, comm, m: s.stage(
        comm, body=pickle.dumps({"session": "s", "values": {"t": MakesFolder(m)}})
    ),
}


@pytest.mark.parametrize("handler", sorted(CALLS))
def test_a_tls_worker_refuses_a_plain_connection_before_reading_its_message(handler, tmp_path):
    steps = service("tls://127.0.0.1:4001")
    marker = tmp_path / "made"
    with pytest.raises(UnauthenticatedError) as refused:
        CALLS[handler](steps, PLAIN, str(marker))
    assert not marker.exists()  # nothing was unpickled
    assert refused.value.handler == handler and refused.value.peer == PLAIN.peer_address
    assert steps.channels._listener is None  # no step channel (nor its key) was handed out


@pytest.mark.parametrize(
    "listens_on, comm",
    [
        ("tls://127.0.0.1:4001", Comm("tls://127.0.0.1:40000", peercert={"subject": ()})),
        ("tls://127.0.0.1:4001", Comm("inproc://10.0.0.1/7/1")),
        ("tcp://127.0.0.1:4001", PLAIN),  # a cluster its user runs without TLS
        ("ucx://127.0.0.1:4001", Comm("ucx://127.0.0.1:40000")),  # UCX: no TLS either
    ],
    ids=["tls-with-certificate", "in-process", "plain-tcp-worker", "ucx-worker"],
)
def test_authenticated_connections_and_open_workers_are_served(listens_on, comm, tmp_path):
    steps = service(listens_on)
    marker = tmp_path / "made"
    reply = CALLS["daskgraph_step"](steps, comm, str(marker))
    assert marker.exists()  # the message was read: the step's plan is not loaded here
    assert pickle.loads(reply["body"])["status"] == "missing"
    assert CALLS["daskgraph_step_forget"](steps, comm, "") == "OK"
