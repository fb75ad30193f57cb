"""Who may reach an embedded cluster: per-cluster TLS credentials, held in memory.

An embedded cluster (:mod:`daskgraph.cluster.embedded`,
:func:`daskgraph.cluster.local.local_cluster`) listens on 127.0.0.1, where every user of the
machine can connect. Dask runs pickled code for anyone who reaches a worker or a nanny over
plain TCP (``Client.run``, and daskgraph's own step messages): a plain-TCP cluster lets every
local user run code as the session's user. So by default
(``daskgraph.local.security: temporary``) each embedded cluster gets
``distributed.Security.temporary()``: a key and a self-signed certificate made for this
cluster, held in this process's memory, with encryption and the peer's certificate required
both ways (mutual TLS). Worker processes receive them as files readable by this user only
(:func:`daskgraph.cluster.tls.security_fields`). Another local user has no certificate the
cluster accepts: their connections fail in the TLS handshake, before a message is read.

A session of the same process may still name such a cluster by its address
(``Session("tls://127.0.0.1:PORT")``, or ``host:port``): :func:`known_security` gives the
credentials of this process's embedded clusters by address (:func:`remember`, :func:`forget`),
which :mod:`daskgraph.cluster.master` uses where no ``security`` was given, as does a plain
``distributed.Client(address)`` of this process: :func:`security_loader` is Dask's
``distributed.client.security-loader`` once an embedded cluster has started, unless another
loader was configured. Other processes cannot connect without the credentials (a program of
the same user may pass them on: :func:`daskgraph.cluster.tls.security_fields` writes them to
files only that user can read, and :func:`daskgraph.cluster.tls.security_from_fields` reads
them).

``daskgraph.local.security: none`` opts out (plain TCP: the cluster is then as open as a
``LocalCluster``, to every local user), for a machine where only one user runs anything.

>>> local_security("none") is None
True
>>> security = local_security("temporary")
>>> security.require_encryption
True
>>> remember("tls://127.0.0.1:4001", security)
>>> known_security("localhost:4001") is security, known_security("tcp://127.0.0.1:4002")
(True, None)
>>> forget("tls://127.0.0.1:4001")
"""

from __future__ import annotations

import threading
from typing import Any

import dask.config

from daskgraph.errors import InvalidArgumentError, quote

__all__ = [
    "CONFIG_KEY",
    "SECURITY_CHOICES",
    "forget",
    "known_security",
    "local_security",
    "remember",
    "security_loader",
]

#: the Dask config key that says how embedded clusters are secured
CONFIG_KEY = "daskgraph.local.security"
#: its values: per-cluster mutual TLS (the default), or plain TCP
SECURITY_CHOICES = ("temporary", "none")
#: Dask's setting of the function that finds a new ``Client``'s credentials by address
LOADER_KEY = "distributed.client.security-loader"
_LOOPBACK_NAMES = {"localhost": "127.0.0.1"}

#: this process's embedded clusters' credentials, by the scheduler's ``host:port``
_known: dict[str, Any] = {}
_known_lock = threading.Lock()


def local_security(choice: str | None = None) -> Any:
    """The ``distributed.Security`` of a new embedded cluster, per ``choice`` (default: the
    ``daskgraph.local.security`` config): fresh in-memory TLS credentials for
    ``"temporary"``, ``None`` (plain TCP) for ``"none"``.

    Raises
    ------
    InvalidArgumentError
        ``choice`` is none of :data:`SECURITY_CHOICES` (fields ``key``, ``found``).
    ImportError
        ``"temporary"`` where the ``cryptography`` package is missing (saying how to fix it).

    Examples
    --------
    >>> local_security("temporary").tls_worker_cert.startswith("-----BEGIN CERTIFICATE")
    True
    >>> local_security("open")
    Traceback (most recent call last):
    ...
    daskgraph.errors.InvalidArgumentError: daskgraph.local.security is 'open': give one of \
temporary, none ('temporary': each embedded cluster gets its own TLS certificate, so other \
users of this machine cannot reach it; 'none': plain TCP, open to them).
    """
    if choice is None:
        choice = dask.config.get(CONFIG_KEY, "temporary")
    text = str(choice).lower() if choice is not None else "none"
    if text not in SECURITY_CHOICES:
        raise InvalidArgumentError(
            f"{CONFIG_KEY} is {quote(choice)}: give one of {', '.join(SECURITY_CHOICES)} "
            "('temporary': each embedded cluster gets its own TLS certificate, so other "
            "users of this machine cannot reach it; 'none': plain TCP, open to them).",
            key=CONFIG_KEY,
            found=choice,
        )
    if text == "none":
        return None
    from distributed import Security

    try:
        return Security.temporary()  # (encryption required, both ways)
    except ImportError:
        raise ImportError(
            "daskgraph's embedded cluster secures its connections with TLS "
            f"({CONFIG_KEY}: temporary), which needs the 'cryptography' package: install it "
            f"(pip install cryptography), or set {CONFIG_KEY}: none to run over plain TCP, "
            "open to every user of this machine."
        ) from None


def _host_port(address: str) -> str:
    """``address`` without its protocol, ``localhost`` as ``127.0.0.1``."""
    rest = address.split("://", 1)[-1]
    host, _, port = rest.rpartition(":")
    return f"{_LOOPBACK_NAMES.get(host, host)}:{port}"


def remember(address: str, security: Any) -> None:
    """Note that this process's embedded cluster at ``address`` (its scheduler's) uses
    ``security`` (nothing is noted for ``None``)."""
    if security is not None:
        with _known_lock:
            _known[_host_port(address)] = security
        if dask.config.get(LOADER_KEY, None) is None:  # (a loader of the user's stays)
            dask.config.set({LOADER_KEY: f"{__name__}.security_loader"})


def forget(address: str) -> None:
    """The embedded cluster at ``address`` closed."""
    with _known_lock:
        _known.pop(_host_port(address), None)


def known_security(address: str) -> Any:
    """The credentials of this process's embedded cluster whose scheduler listens at
    ``address`` (any protocol, or none), or ``None``."""
    with _known_lock:
        return _known.get(_host_port(address))


def security_loader(info: dict[str, Any]) -> Any:
    """Dask's ``distributed.client.security-loader``: the credentials of this process's
    embedded cluster at ``info["address"]`` for a ``Client`` given none (``None``
    elsewhere: Dask's default).

    >>> security_loader({"address": "tls://127.0.0.1:1"}) is None
    True
    """
    return known_security(str(info.get("address", "")))
