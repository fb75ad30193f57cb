"""Which connections a worker's daskgraph handlers answer: authenticated ones, or any where
the worker itself is open to any.

daskgraph's step handlers (:mod:`~daskgraph.runtime.worker.step_service`) unpickle what they
receive and hand out the step channel's key: whoever they answer can run code as the worker's
user. They answer a message when

* its connection is authenticated: TLS with the peer's certificate checked against the
  cluster's CA (Dask's TLS asks every peer for one; the embedded cluster's are made for it
  alone, :mod:`daskgraph.cluster.local_security`), or in-process (``inproc://``); or
* the worker listens only on plain, unauthenticated transports (``tcp://``, ``ws://``,
  ``ucx://``: Dask's UCX carries no TLS): a cluster its user runs without TLS (``daskgraph
  server`` without ``--tls-dir``, a plain ``dask scheduler``, ``daskgraph.local.security:
  none``, ``daskgraph.local.protocol: ucx``, dask-cuda's ``LocalCUDACluster(protocol="ucx")``).
  There anyone who reaches the worker runs code through Dask's own handlers (``Client.run``)
  anyway: who may connect is the network's business, and refusing daskgraph's messages would
  protect nothing.

Anything else (a plain connection to a worker that listens with TLS) is refused before a
byte of its message is unpickled, with :class:`~daskgraph.errors.UnauthenticatedError`.

>>> class Comm:  # (the parts of a Dask comm read here)
...     def __init__(self, peer, cert=None):
...         self.peer_address, self.extra_info = peer, {"peercert": cert} if cert else {}
>>> authenticated(Comm("inproc://10.0.0.1/42/1")), authenticated(Comm("tcp://127.0.0.1:5"))
(True, False)
>>> authenticated(Comm("tls://127.0.0.1:5", cert={"subject": ()}))
True
"""

from __future__ import annotations

from typing import Any

from daskgraph.errors import UnauthenticatedError

__all__ = ["OPEN_PROTOCOLS", "authenticated", "check_comm", "open_to_any"]

#: transports that authenticate nobody (``ucxx`` is distributed-ucxx's other name for ``ucx``)
OPEN_PROTOCOLS = ("tcp", "ws", "ucx", "ucxx")


def authenticated(comm: Any) -> bool:
    """Whether ``comm`` (a Dask comm) comes from this process or from a peer that showed a
    certificate the cluster's CA signed (a TLS comm keeps it as ``peercert``)."""
    peer = str(getattr(comm, "peer_address", "") or "")
    if peer.startswith("inproc://"):
        return True
    info = getattr(comm, "extra_info", None) or {}
    return bool(info.get("peercert"))


def open_to_any(server: Any) -> bool:
    """Whether the Dask ``server`` (a worker) listens only on transports that authenticate
    nobody (and at least on one), so that anyone who reaches it runs code through Dask's own
    handlers.

    >>> from types import SimpleNamespace as Listener
    >>> open_to_any(Listener(listeners=[Listener(listen_address="tcp://127.0.0.1:1")]))
    True
    >>> open_to_any(Listener(listeners=[Listener(listen_address="tls://127.0.0.1:1")]))
    False
    >>> open_to_any(Listener(listeners=[Listener(listen_address="ucx://127.0.0.1:1")]))
    True
    """
    addresses = [str(getattr(li, "listen_address", "")) for li in getattr(server, "listeners", ())]
    if not addresses:
        return False
    return all(a.split("://", 1)[0] in OPEN_PROTOCOLS for a in addresses)


def check_comm(server: Any, comm: Any, handler: str, open_any: bool | None = None) -> None:
    """Refuse ``comm``'s message to ``handler`` unless the rule of the module lets it in
    (``open_any``: :func:`open_to_any` of ``server``, where its caller keeps it; read from
    ``server`` otherwise, and only for a comm that is not authenticated).

    Raises
    ------
    UnauthenticatedError
        Naming the handler and the peer (fields ``handler``, ``peer``).

    Examples
    --------
    >>> from types import SimpleNamespace as Stub
    >>> tls_worker = Stub(listeners=[Stub(listen_address="tls://127.0.0.1:1")])
    >>> check_comm(tls_worker, Stub(peer_address="tcp://127.0.0.1:2", extra_info={}), "x")
    Traceback (most recent call last):
    ...
    daskgraph.errors.UnauthenticatedError: daskgraph's x handler refused a message from \
tcp://127.0.0.1:2: this worker listens with TLS, and the connection showed no certificate of \
the cluster. Connect with the cluster's credentials (the Security its client has).
    """
    if comm is None or authenticated(comm):
        return
    if open_any is None:
        open_any = open_to_any(server)
    if open_any:
        return
    peer = str(getattr(comm, "peer_address", "?"))
    raise UnauthenticatedError(
        f"daskgraph's {handler} handler refused a message from {peer}: this worker listens "
        "with TLS, and the connection showed no certificate of the cluster. Connect with the "
        "cluster's credentials (the Security its client has).",
        handler=handler,
        peer=peer,
    )
