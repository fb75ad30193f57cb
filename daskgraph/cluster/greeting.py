"""What answers at an address: a Dask scheduler's greeting, or something else, named.

A Dask server sends its handshake the moment it accepts a connection, so one look at the first
bytes tells a scheduler from an HTTP, SSH or TLS server, or from a server that closes at once
or says nothing. :mod:`daskgraph.cluster.master` uses these checks before it makes a ``Client``, so
that a session to a wrong address fails within seconds with a message naming what answered.

>>> what_answers(b"HTTP/1.1 400 Bad Request")
"an HTTP server (it sent b'HTTP/1.1 400 Bad Request')"
"""

from __future__ import annotations

import asyncio
import socket
import ssl
import threading
from typing import Any

from daskgraph.errors import InvalidArgumentError, UnreachableError

__all__ = [
    "GREETING_SHARE",
    "is_dask_greeting",
    "listen_to",
    "not_dask_error",
    "probe",
    "reach",
    "requires_encryption",
    "silent_server_error",
    "tls_answer",
    "what_answers",
]


def requires_encryption(security: Any) -> bool:
    """Whether ``security`` (a ``distributed.Security`` or ``None``) requires TLS."""
    return bool(security is not None and getattr(security, "require_encryption", False))


#: the share of ``daskgraph.connect-timeout`` to wait for what a server says first: a Dask
#: server sends its handshake the moment it accepts a connection (within milliseconds, unless
#: it is very busy), so a server that says nothing for that long is no Dask scheduler
GREETING_SHARE = 0.3


def reach(host: str, port: int, timeout: float, security: Any = None) -> bytes | None:
    """Open and close a TCP connection to ``host:port`` (raising ``OSError`` if nothing
    listens, at once where the port is closed), returning what the server sent first within
    :data:`GREETING_SHARE` of ``timeout`` (``None``: nothing); with ``security``, shake hands
    in TLS instead, so that a TLS scheduler does not log the probe as a failed handshake. A failed
    TLS handshake is left to the Dask handshake that follows, which explains it.

    Without ``security`` the probe sends nothing and closes its side at once (a TCP
    half-close): a Dask server greets all the same, and a TLS server answers the end of its
    handshake with an alert (``\\x15\\x03...``) at once instead of waiting for a ``ClientHello``,
    so that a plain client of a TLS cluster learns within milliseconds that it speaks TLS
    (:func:`not_dask_error`). A server that closes without a word is then asked with a line
    of HTTP (:func:`listen_to`), as an HTTP server waits for a request and closes at its end.
    """
    with socket.create_connection((host, port), timeout=timeout) as sock:
        context = security.get_connection_args("client").get("ssl_context") if security else None
        if context is None:
            return _first_words(sock, host, port, GREETING_SHARE * timeout)
        try:
            with context.wrap_socket(sock, server_hostname=host):
                pass
        except (OSError, ValueError):
            pass
        return None


def _first_words(sock: socket.socket, host: str, port: int, wait: float) -> bytes | None:
    """What a server says to a plain client that sends nothing and half-closes (see
    :func:`reach`); what it answers to a line of HTTP where it closed without a word."""
    try:
        sock.shutdown(socket.SHUT_WR)
    except OSError:  # it closed already: what it said is still there to read
        pass
    said = _first_bytes(sock, wait)
    if said == b"":
        said = listen_to(host, port, min(wait, 0.5), greets=False)
    if said == b"":  # no Dask server (it greets before it reads): safe to say TLS's hello
        said = tls_answer(host, port, min(wait, 0.5))
    return said


def tls_answer(host: str, port: int, wait: float = 0.5) -> bytes:
    """What ``host:port`` answers to a TLS ``ClientHello`` (a TLS server: a record starting
    ``\\x16\\x03``, its ``ServerHello``, or ``\\x15\\x03``, an alert); ``b""`` for no answer
    within ``wait`` seconds. Never send it to a Dask server: it reads the hello as a message
    length of petabytes."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE  # nothing is verified: only the answer's first bytes
    outgoing = ssl.MemoryBIO()
    hello = context.wrap_bio(ssl.MemoryBIO(), outgoing)
    try:
        hello.do_handshake()
    except ssl.SSLWantReadError:  # the hello is written, the answer awaited
        pass
    try:
        with socket.create_connection((host, port), timeout=wait) as sock:
            sock.sendall(outgoing.read())
            return _first_bytes(sock, wait) or b""
    except OSError:
        return b""


def _first_bytes(sock: socket.socket, wait: float) -> bytes | None:
    """Up to 64 bytes the peer sends within ``wait`` seconds; ``b""`` if it closed the
    connection, ``None`` if it said nothing."""
    sock.settimeout(wait)
    try:
        return sock.recv(64)
    except TimeoutError:
        return None
    except OSError:  # reset by the peer
        return b""


def is_dask_greeting(data: bytes) -> bool:
    """Whether ``data`` starts as a Dask message does: the message's length, then its number
    of frames, as little-endian 64-bit integers (a handshake is one small frame).

    >>> is_dask_greeting(bytes([58, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 42]))
    True
    >>> is_dask_greeting(b"HTTP/1.1 400 Bad Request")
    False
    """
    if len(data) < 16:
        return False
    length, frames = int.from_bytes(data[:8], "little"), int.from_bytes(data[8:16], "little")
    return 0 < length < 1 << 20 and 0 < frames <= 64


def listen_to(host: str, port: int, wait: float = 0.5, greets: bool = True) -> bytes:
    """What a server that is not Dask says: its greeting (unless it is known to send none),
    or its answer to a line of HTTP (most servers answer something); ``b""`` when it says
    nothing within ``wait`` seconds for each."""
    try:
        with socket.create_connection((host, port), timeout=wait) as sock:
            said = _first_bytes(sock, wait) if greets else None
            if said is None:
                sock.sendall(b"GET / HTTP/1.0\r\n\r\n")
                said = _first_bytes(sock, wait)
            return said or b""
    except OSError:
        return b""


def what_answers(data: bytes) -> str:
    """A description of a server from the first bytes it sent.

    >>> what_answers(b"SSH-2.0-OpenSSH_9.6")
    "an SSH server (it sent b'SSH-2.0-OpenSSH_9.6')"
    """
    kinds = {
        b"HTTP/": "an HTTP server",
        b"SSH-": "an SSH server",
        b"\x15\x03": "a TLS server",  # an alert
        b"\x16\x03": "a TLS server",  # a handshake
    }
    kind = next((k for prefix, k in kinds.items() if data.startswith(prefix)), None)
    return f"{kind or 'a server that is not Dask'} (it sent {data[:48]!r})"


def silent_server_error(
    head: str, address: str, host: str, port: int, waited: float
) -> InvalidArgumentError | UnreachableError:
    """The error for a server that sent nothing on connecting (a Dask server greets at once):
    described by its answer to a line of HTTP, if it gives one."""
    said = listen_to(host, port, greets=False)
    if said:
        return not_dask_error(head, address, host, port, said)  # a TLS server: says so
    return UnreachableError(
        f"{head}: something at {host}:{port} accepted the connection but said nothing within "
        f"{waited:g} s, nor when asked (a Dask scheduler greets every connection at once). Is "
        "it a TLS scheduler? Then connect with tls://host:port and security=... . A very busy "
        "scheduler may need a longer daskgraph.connect-timeout.",
        target=address,
        found="no answer",
    )


def not_dask_error(
    head: str, address: str, host: str, port: int, data: bytes
) -> InvalidArgumentError:
    """The error for a server at ``host:port`` that answered with ``data``, not Dask's
    greeting: it names what answered (:func:`what_answers`); a TLS server is taken for a TLS
    cluster reached over ``tcp://``, and the message says how to connect (field ``wants``).

    >>> alert = b"\\x15\\x03\\x03\\x00\\x02\\x02\\x32"
    >>> error = not_dask_error("Cannot connect", "tcp://h:1", "h", 1, alert)
    >>> str(error)[:74], error.wants
    ('Cannot connect: the server at h:1 speaks TLS: this cluster wants tls://h:1', 'tls://h:1')
    """
    what = what_answers(data)
    if data.startswith((b"\x15\x03", b"\x16\x03")):  # a TLS record: an alert, a handshake
        return InvalidArgumentError(
            f"{head}: the server at {host}:{port} speaks TLS: this cluster wants "
            f"tls://{host}:{port} and the cluster's certificates, not a plain tcp:// "
            "connection. Connect with Session('tls://HOST:PORT', "
            "security=daskgraph.cluster.tls.security_from_dir(DIR)), "
            "or `daskgraph devices --tls-dir "
            "DIR tls://HOST:PORT`, where DIR holds the certificates of `daskgraph certs DIR`.",
            target=address,
            found=what,
            wants=f"tls://{host}:{port}",
        )
    return InvalidArgumentError(
        f"{head}: the server at {host}:{port} is not a Dask scheduler: it is {what}. Give the "
        "address of the scheduler (server.target, or the ClusterSpec's first task) instead.",
        target=address,
        found=what,
    )


async def _identity(address: str, connection_args: dict, timeout: float) -> Any:
    """One Dask handshake and ``identity`` call to ``address`` over a comm of our own."""
    from distributed.comm import connect as dask_connect

    comm = await dask_connect(address, timeout=timeout, **connection_args)
    try:
        await comm.write({"op": "identity", "reply": True})
        return await comm.read()
    finally:
        comm.abort()


def probe(address: str, security: Any, timeout: float) -> Any:
    """Ask ``address`` who it is, in a thread and event loop of our own that end with the call
    (nothing of it can outlive a failure). Returns the reply or raises what the attempt raised
    (:class:`TimeoutError` after ``timeout``)."""
    connection_args = security.get_connection_args("client") if security is not None else {}
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["reply"] = asyncio.run(
                asyncio.wait_for(_identity(address, connection_args, timeout), timeout)
            )
        except BaseException as exc:  # handed to the caller
            box["error"] = exc

    thread = threading.Thread(target=run, name="daskgraph-connect", daemon=True)
    thread.start()
    thread.join(timeout + 5)
    if thread.is_alive():
        raise TimeoutError(f"no answer within {timeout:g} s")
    if "error" in box:
        raise box["error"]
    return box["reply"]
