"""What carries tensors between two devices' workers, by name: the one place that names a
device pair's transport for ``log_device_placement`` and the ``/daskgraph`` page.

A pair of workers exchanges tensors

* ``in-process``: both in one process (the embedded CPU worker and the client, or two CPU
  devices there): by reference, nothing copied;
* ``local socket``: one in this (the client's) process, the other in a process of this
  machine, where compiled steps go through that worker's step channel
  (:data:`LOCAL_CHANNEL`);
* otherwise over Dask's comm, named by the workers' address scheme: ``ucx`` (GPU to GPU
  without host copies, :mod:`daskgraph.cluster.protocols`), ``tls``, ``tcp``.

>>> pair_transport("ucx://127.0.0.1:1", "ucx://127.0.0.1:2", same_process=False, same_host=True)
'ucx'
>>> pair_transport("tls://127.0.0.1:1", "tls://127.0.0.1:2", same_process=True, same_host=True)
'in-process'
"""

from __future__ import annotations

import functools
import socket
from typing import Any

import dask.config

__all__ = [
    "IN_PROCESS",
    "LOCAL_CHANNEL",
    "address_scheme",
    "local_channels_on",
    "on_this_host",
    "pair_transport",
    "process_worker_addresses",
]

#: two workers of one process
IN_PROCESS = "in-process"
#: a worker of this machine reached from the client's process through its step channel
LOCAL_CHANNEL = "local socket"
_LOOPBACK = {"127.0.0.1", "localhost", "::1", "0.0.0.0"}


def address_scheme(address: str) -> str:
    """The transport of a Dask address (``tcp`` where it names none, as Dask reads it).

    >>> address_scheme("ucx://10.0.0.1:8786"), address_scheme("10.0.0.1:8786")
    ('ucx', 'tcp')
    """
    text = str(address)
    return text.split("://", 1)[0].lower() if "://" in text else "tcp"


def pair_transport(
    address_a: str,
    address_b: str,
    same_process: bool,
    same_host: bool,
    local_channel: bool = False,
) -> str:
    """The name of what carries tensors between the workers at ``address_a`` and
    ``address_b`` (see the module).

    Parameters
    ----------
    address_a, address_b
        The two workers' Dask addresses.
    same_process
        Both workers live in one process.
    same_host
        Both live on one machine.
    local_channel
        One of them lives in the client's process and compiled steps reach the other through
        its step channel (a local socket; only counted with ``same_host``).

    Returns
    -------
    str
        :data:`IN_PROCESS`, :data:`LOCAL_CHANNEL`, or the addresses' scheme (``ucx``,
        ``tls``, ``tcp``, ...; ``"tcp/ucx"`` where they differ).

    Examples
    --------
    >>> pair_transport("tcp://127.0.0.1:1", "tcp://127.0.0.1:2", False, True, local_channel=True)
    'local socket'
    >>> pair_transport("tcp://10.0.0.1:1", "tcp://10.0.0.2:2", False, False, local_channel=True)
    'tcp'
    >>> pair_transport("tcp://10.0.0.1:1", "ucx://10.0.0.2:2", False, False)
    'tcp/ucx'
    """
    if same_process:
        return IN_PROCESS
    if local_channel and same_host:
        return LOCAL_CHANNEL
    a, b = address_scheme(address_a), address_scheme(address_b)
    return a if a == b else "/".join(sorted((a, b)))


def local_channels_on() -> bool:
    """Whether runs may take step channels: they are compiled steps' transport, so not
    where ``daskgraph.compiled-steps`` is off (every run then goes through the scheduler).

    >>> with dask.config.set({"daskgraph.compiled-steps": False}):
    ...     local_channels_on()
    False
    """
    return bool(dask.config.get("daskgraph.compiled-steps", True))


def address_host(address: str) -> str:
    """The host of a Dask address.

    >>> address_host("ucx://127.0.0.1:8786"), address_host("tcp://[::1]:1")
    ('127.0.0.1', '::1')
    """
    rest = str(address).split("://", 1)[-1]
    host = rest.rsplit(":", 1)[0] if ":" in rest else rest
    return host.strip("[]")


def on_this_host(address: str) -> bool:
    """Whether the worker at ``address`` listens on this machine (loopback, or one of its
    interfaces' addresses).

    >>> on_this_host("tcp://127.0.0.1:1"), on_this_host("tcp://192.0.2.1:1")
    (True, False)
    """
    host = address_host(address)
    return host in _LOOPBACK or host in _local_hosts()


@functools.lru_cache(maxsize=1)
def _local_hosts() -> frozenset[str]:
    hosts = {socket.gethostname()}
    try:
        import psutil

        for entries in psutil.net_if_addrs().values():
            hosts.update(e.address.split("%", 1)[0] for e in entries)
    except Exception:  # pragma: no cover - without psutil: the host name alone
        pass
    return frozenset(hosts)


def process_worker_addresses() -> frozenset[str]:
    """The addresses of the Dask workers running in this process (the embedded CPU worker,
    a ``LocalCluster(processes=False)``'s, a :class:`~daskgraph.cluster.server.Server`'s).

    >>> isinstance(process_worker_addresses(), frozenset)
    True
    """
    from distributed import Worker

    instances: Any = getattr(Worker, "_instances", ())  # (Dask's registry of live workers)
    return frozenset(str(w.address) for w in list(instances) if getattr(w, "address", None))
