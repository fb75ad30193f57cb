"""Sessions to addresses where no Dask scheduler answers fail, saying what answered.

A closed loopback port; servers that are not Dask: one that greets every connection with
HTTP, ones that send random bytes, a real HTTP server (which waits for a request), one that
closes every connection at once, and one that accepts and says nothing. Each session fails
with a daskgraph error naming the address and what was found there. (Before, a waiting HTTP
server or a silent one took the whole ``daskgraph.connect-timeout``, 10 s, to be reported as
something that "did not answer as" Dask, and a reply was described as a Dask frame of an
impossible size, "3.07 EiB".)

What tells the fixed behaviour from the old one is the error's words ("said nothing", "an HTTP
server"), which only the greeting check (a share of the connect timeout, about 3 s) produces;
the time limit only catches a hang: the connect timeout with a wide margin, so that a busy
machine does not fail the test.
"""

from __future__ import annotations

import http.server
import random
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest

import daskgraph as dg
from daskgraph.cluster.master import connect_timeout
from daskgraph.cluster.server import free_ports

LIMIT_S = connect_timeout() + 30.0


def _serve(answer: Callable[[socket.socket], None]) -> tuple[str, socket.socket]:
    """A loopback TCP server calling ``answer(connection)`` for every connection."""
    listener = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []

    def loop() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:  # closed: the test is over
                return
            held.append(conn)
            answer(conn)

    threading.Thread(target=loop, daemon=True).start()
    return f"127.0.0.1:{listener.getsockname()[1]}", listener


@contextmanager
def _server(kind: str, seed: int = 0) -> Iterator[str]:
    """``host:port`` of a server of ``kind`` (see the module), closed afterwards."""
    if kind == "http server":
        httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _QuietHandler)
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        try:
            yield f"127.0.0.1:{httpd.server_address[1]}"
        finally:
            httpd.shutdown()
            httpd.server_close()
        return
    rng = random.Random(seed)
    answers = {
        "greets with HTTP": lambda c: c.sendall(b"HTTP/1.1 400 Bad Request\r\n\r\n"),
        "random bytes": lambda c: c.sendall(rng.randbytes(rng.randint(1, 4096))),
        "closes at once": lambda c: c.close(),
        "says nothing": lambda c: None,
    }
    address, listener = _serve(answers[kind])
    try:
        yield address
    finally:
        listener.close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:  # no access log on the test's stderr
        pass


def test_a_dead_loopback_port(tally):
    scenario = tally.scenario("session to a dead loopback port", LIMIT_S, "clear error")
    for port in free_ports(3):
        with scenario.trial() as trial, dg.Graph().as_default():
            trial.run(
                lambda p=port: dg.Session(f"tcp://127.0.0.1:{p}"), LIMIT_S, [f"127.0.0.1:{port}"]
            )
    scenario.verify(min_trials=3)


@pytest.mark.parametrize(
    ("kind", "trials", "says"),
    [
        ("greets with HTTP", 1, "an HTTP server"),
        ("random bytes", 6, "is not a Dask scheduler"),
        ("http server", 1, "an HTTP server"),
        ("closes at once", 1, "closed the connection"),
        ("says nothing", 1, "said nothing"),
    ],
)
def test_a_server_that_is_not_dask(tally, kind, trials, says):
    scenario = tally.scenario("session to a server that is not Dask", LIMIT_S, "clear error")
    for seed in range(trials):
        with _server(kind, seed) as address, scenario.trial() as trial, dg.Graph().as_default():
            trial.run(lambda a=address: dg.Session(f"tcp://{a}"), LIMIT_S, [address, says])
    scenario.verify()
