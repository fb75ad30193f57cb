"""Which Dask transport an embedded cluster's connections use: TCP or UCX, and UCX's switches.

``daskgraph.local.protocol`` picks it: ``tcp`` (the default) means Dask's TCP, made TLS by
``daskgraph.local.security: temporary`` (:mod:`daskgraph.cluster.local_security`); ``ucx``
means Dask's UCX transport (the ``distributed-ucxx`` package: the ``ucx-cu12``/``ucx-cu13``
extras), over which a CuPy array that crosses GPU workers is a device-to-device copy (NVLink,
CUDA IPC) instead of a host copy pickled over TCP, as on dask-cuda's ``LocalCUDACluster(
protocol="ucx")``.

UCX carries no Dask TLS: a UCX cluster is open to every user of the machine, as a plain-TCP
one is. So ``protocol: ucx`` needs ``security: none`` said out loud; with the default
``security: temporary`` :func:`cluster_protocol` raises instead of dropping the TLS silently.

``daskgraph.local.ucx`` holds dask-cuda's switches (``LocalCUDACluster``'s
``enable_tcp_over_ucx``, ``enable_nvlink``, ``enable_infiniband``, ``enable_rdmacm``, plus
``cuda-copy``); :meth:`UCXSwitches.dask_config` turns them into ``distributed-ucxx``'s
settings (``distributed-ucxx.tcp``, ``.nvlink``, ...: the package's own namespace, which its
legacy ``distributed.comm.ucx.*`` keys fall back to: its ``environment`` default shadows
theirs), given to every worker process and its nanny. CUDA transports (``nvlink``,
``cuda-copy``, and ``create-cuda-context`` with them) go to real GPU workers only: the client's
process (scheduler, client, in-process CPU worker), CPU and virtual-GPU workers never touch
CUDA. Left all unset, a GPU worker's UCX picks its transports itself (dask-cuda's automatic
configuration); a process without a GPU uses TCP, shared memory and loopback only
(``UCX_TLS=tcp,sm,self``, unless the environment sets ``UCX_TLS``).

>>> UCXSwitches(nvlink=True, tcp=True).dask_config(gpus=True)["distributed-ucxx.nvlink"]
True
>>> UCXSwitches(nvlink=True).dask_config(gpus=False, environ={})["distributed-ucxx.environment.tls"]
'tcp,sm,self'
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

import dask.config

from daskgraph.errors import InvalidArgumentError, quote

__all__ = [
    "CPU_ONLY_TLS",
    "PROTOCOL_CHOICES",
    "PROTOCOL_KEY",
    "UCX_KEY",
    "UCXSwitches",
    "cluster_protocol",
    "transport_settings",
    "ucx_installed",
]

#: the Dask config key that picks the embedded cluster's transport
PROTOCOL_KEY = "daskgraph.local.protocol"
#: its values: Dask's TCP (TLS per ``daskgraph.local.security``), or Dask's UCX
PROTOCOL_CHOICES = ("tcp", "ucx")
#: the Dask config key of the UCX switches (:class:`UCXSwitches`)
UCX_KEY = "daskgraph.local.ucx"
#: UCX's transports on a machine without a GPU: TCP, shared memory, loopback
CPU_ONLY_TLS = "tcp,sm,self"
_SECURITY_KEY = "daskgraph.local.security"
_UCX_NAMESPACE = "distributed-ucxx"
_CUDA_SWITCHES = ("nvlink", "cuda_copy")


@dataclass(frozen=True)
class UCXSwitches:
    """dask-cuda's UCX switches (``None``: unset, UCX decides).

    Attributes
    ----------
    tcp
        TCP over UCX (``LocalCUDACluster``'s ``enable_tcp_over_ucx``).
    nvlink
        NVLink and CUDA IPC between GPUs of one machine (``enable_nvlink``: UCX's
        ``cuda_ipc``; dask-cuda has no separate CUDA IPC switch).
    infiniband
        InfiniBand (``enable_infiniband``).
    rdmacm
        RDMA connection management (``enable_rdmacm``).
    cuda_copy
        Copies between host and GPU memory by UCX (on with ``nvlink``).
    """

    tcp: bool | None = None
    nvlink: bool | None = None
    infiniband: bool | None = None
    rdmacm: bool | None = None
    cuda_copy: bool | None = None

    @classmethod
    def from_config(cls) -> UCXSwitches:
        """The switches of ``daskgraph.local.ucx`` (keys ``tcp``, ``nvlink``, ``infiniband``,
        ``rdmacm``, ``cuda-copy``).

        >>> with dask.config.set({"daskgraph.local.ucx.nvlink": True}):
        ...     UCXSwitches.from_config().nvlink
        True
        """
        config = dask.config.get(UCX_KEY, None) or {}
        known = {f.name for f in fields(cls)}
        values = {str(k).replace("-", "_"): v for k, v in dict(config).items()}
        unknown = sorted(set(values) - known)
        if unknown:
            raise InvalidArgumentError(
                f"{UCX_KEY} has unknown switches {unknown}: give only "
                f"{', '.join(k.replace('_', '-') for k in sorted(known))} (true, false or null).",
                key=UCX_KEY,
                found=sorted(config),
            )
        return cls(**{k: None if v is None else bool(v) for k, v in values.items()})

    @classmethod
    def from_dask_cuda(
        cls,
        enable_tcp_over_ucx: bool | None = None,
        enable_nvlink: bool | None = None,
        enable_infiniband: bool | None = None,
        enable_rdmacm: bool | None = None,
        enable_cuda_copy: bool | None = None,
    ) -> UCXSwitches:
        """The switches from ``LocalCUDACluster``'s argument names.

        >>> UCXSwitches.from_dask_cuda(enable_tcp_over_ucx=True).tcp
        True
        """
        return cls(enable_tcp_over_ucx, enable_nvlink, enable_infiniband, enable_rdmacm,
                   enable_cuda_copy)  # fmt: skip

    def dask_config(self, gpus: bool, environ: Mapping[str, str] | None = None) -> dict[str, Any]:
        """``distributed-ucxx``'s settings for a cluster whose workers have real GPUs
        (``gpus``) or not, given the process environment ``environ`` (``os.environ``).

        Without GPUs no CUDA transport is switched on and, where neither a switch nor the
        environment's ``UCX_TLS`` says otherwise, UCX uses :data:`CPU_ONLY_TLS`; with GPUs,
        the switches set (and ``create-cuda-context``, as dask-cuda does), or nothing: UCX's
        own choice.

        >>> quiet = {"UCX_WARN_UNUSED_ENV_VARS": "y"}
        >>> UCXSwitches().dask_config(gpus=True, environ=quiet)
        {}
        >>> UCXSwitches().dask_config(gpus=False, environ={"UCX_TLS": "tcp", **quiet})
        {}
        >>> UCXSwitches(tcp=True, nvlink=True).dask_config(gpus=False, environ=quiet)
        {'distributed-ucxx.tcp': True}
        """
        environ = os.environ if environ is None else environ
        values = asdict(self)
        if not gpus:
            values.update(dict.fromkeys(_CUDA_SWITCHES))  # no CUDA transport without a GPU
        config = {
            f"{_UCX_NAMESPACE}.{name.replace('_', '-')}": value
            for name, value in values.items()
            if value is not None
        }
        if gpus and config:
            config[f"{_UCX_NAMESPACE}.create-cuda-context"] = True
        if not gpus and not any(config.values()) and "UCX_TLS" not in environ:
            config[f"{_UCX_NAMESPACE}.environment.tls"] = CPU_ONLY_TLS
        if "UCX_WARN_UNUSED_ENV_VARS" not in environ:  # (UCXX's own settings, on stderr)
            config[f"{_UCX_NAMESPACE}.environment.warn-unused-env-vars"] = "n"
        return config


def ucx_installed() -> bool:
    """Whether Dask's UCX transport (``distributed-ucxx``) can be imported here (asked
    without importing it).

    >>> isinstance(ucx_installed(), bool)
    True
    """
    try:
        return importlib.util.find_spec("distributed_ucxx") is not None
    except (ImportError, ValueError):
        return False


def cluster_protocol(protocol: str | None = None, security: str | None = None) -> str:
    """The embedded cluster's Dask protocol: ``"tcp"`` (then TLS per ``security``) or
    ``"ucx"``, from ``protocol`` and ``security`` (defaults: ``daskgraph.local.protocol``
    and ``daskgraph.local.security``).

    Raises
    ------
    InvalidArgumentError
        ``protocol`` is none of :data:`PROTOCOL_CHOICES` (fields ``key``, ``found``); or it
        is ``"ucx"`` with ``security`` ``"temporary"``, which UCX cannot carry (fields
        ``protocol``, ``security``: each ``(key, value)``).
    ImportError
        ``"ucx"`` where ``distributed-ucxx`` is not installed (naming the extras).

    Examples
    --------
    >>> cluster_protocol("tcp", "temporary")
    'tcp'
    >>> cluster_protocol("ucx", "temporary")
    Traceback (most recent call last):
    ...
    daskgraph.errors.InvalidArgumentError: daskgraph.local.protocol is 'ucx' and \
daskgraph.local.security is 'temporary': Dask's UCX transport carries no TLS, so the cluster \
would be open to every user of this machine. Set daskgraph.local.security: none to accept \
that (a machine only you use), or daskgraph.local.protocol: tcp to keep TLS.
    """
    if protocol is None:
        protocol = dask.config.get(PROTOCOL_KEY, "tcp")
    if security is None:
        security = dask.config.get(_SECURITY_KEY, "temporary")
    text = str(protocol).lower()
    if text not in PROTOCOL_CHOICES:
        raise InvalidArgumentError(
            f"{PROTOCOL_KEY} is {quote(protocol)}: give one of {', '.join(PROTOCOL_CHOICES)} "
            "('tcp': Dask's TCP, TLS per daskgraph.local.security; 'ucx': Dask's UCX, "
            "GPU to GPU without host copies).",
            key=PROTOCOL_KEY,
            found=protocol,
        )
    if text == "ucx" and str(security).lower() != "none":
        raise InvalidArgumentError(
            f"{PROTOCOL_KEY} is 'ucx' and {_SECURITY_KEY} is {quote(security)}: Dask's UCX "
            "transport carries no TLS, so the cluster would be open to every user of this "
            f"machine. Set {_SECURITY_KEY}: none to accept that (a machine only you use), or "
            f"{PROTOCOL_KEY}: tcp to keep TLS.",
            protocol=(PROTOCOL_KEY, protocol),
            security=(_SECURITY_KEY, security),
        )
    if text == "ucx" and not ucx_installed():
        raise ImportError(
            f"{PROTOCOL_KEY}: ucx needs Dask's UCX transport (distributed-ucxx): install the "
            "extra of your CUDA major version from daskgraph's clone, pip install -e "
            "'.[ucx-cu12]' (or '.[ucx-cu13]') there, or set it back to tcp."
        )
    return text


def transport_settings(protocol: str, switches: UCXSwitches | None, gpus: bool) -> dict[str, Any]:
    """The Dask settings every process of a cluster on ``protocol`` needs before its first
    connection: ``distributed-ucxx``'s (:meth:`UCXSwitches.dask_config`) for ``"ucx"``,
    nothing for ``"tcp"``.

    >>> transport_settings("tcp", UCXSwitches(nvlink=True), gpus=True)
    {}
    >>> sorted(transport_settings("ucx", UCXSwitches(), gpus=False))
    ['distributed-ucxx.environment.tls', 'distributed-ucxx.environment.warn-unused-env-vars']
    >>> transport_settings("ucx", UCXSwitches(nvlink=True), gpus=True)["distributed-ucxx.nvlink"]
    True
    """
    if protocol != "ucx":
        return {}
    return (switches or UCXSwitches()).dask_config(gpus)
