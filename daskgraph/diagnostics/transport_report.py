"""Which transport each device pair of a plan uses, for ``log_device_placement`` and the
``/daskgraph`` page.

A multi-device plan sends tensors between the devices whose partitions read one another's
outputs; :func:`plan_transports` names what carries them for each such pair (by
:func:`daskgraph.cluster.transports.pair_transport`, from the workers' addresses and where
they live), and :func:`format_transport_log` prints them after the plan's placement:

>>> print("\\n".join(format_transport_log(
...     [{"source": "/device:GPU:0", "target": "/device:GPU:1", "transport": "ucx"}])))
Transports between devices:
/device:GPU:0 <-> /device:GPU:1: ucx
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from daskgraph.cluster.topology import Device
from daskgraph.cluster.transports import (
    local_channels_on,
    on_this_host,
    pair_transport,
    process_worker_addresses,
)

__all__ = ["device_pairs", "format_transport_log", "plan_transports"]


def device_pairs(plan: Any) -> list[tuple[str, str]]:
    """The pairs of devices of ``plan`` (a lowered plan) that send one another tensors, each
    once, names in order.

    >>> from types import SimpleNamespace as P
    >>> parts = (P(device="b", dependencies=()), P(device="a", dependencies=(0,)),
    ...          P(device="b", dependencies=(1,)))
    >>> device_pairs(P(partitions=parts))
    [('a', 'b')]
    """
    parts = plan.partitions
    pairs = {
        tuple(sorted((parts[d].device, p.device)))
        for p in parts
        for d in p.dependencies
        if parts[d].device != p.device
    }
    return sorted(pairs)  # type: ignore[arg-type]


def plan_transports(
    plan: Any,
    devices: Iterable[Device],
    local: frozenset[str] | None = None,
    channels: bool | None = None,
) -> list[dict[str, str]]:
    """``{"source", "target", "transport"}`` for each pair of :func:`device_pairs`.

    Parameters
    ----------
    plan
        A lowered plan.
    devices
        The session's devices (their workers' addresses).
    local
        The addresses of the workers in this process (default: found now).
    channels
        Whether compiled steps may use step channels (default: the setting).
    """
    address = {d.name: d.worker for d in devices}
    local = process_worker_addresses() if local is None else local
    channels = local_channels_on() if channels is None else channels
    rows = []
    for a, b in device_pairs(plan):
        wa, wb = address.get(a, ""), address.get(b, "")
        in_a, in_b = wa in local, wb in local
        here_a, here_b = on_this_host(wa), on_this_host(wb)
        transport = pair_transport(
            wa,
            wb,
            same_process=in_a and in_b,
            same_host=here_a and here_b,
            local_channel=channels and in_a != in_b and (here_b if in_a else here_a),
        )
        rows.append({"source": a, "target": b, "transport": transport})
    return rows


def format_transport_log(rows: Sequence[dict[str, str]]) -> list[str]:
    """The lines ``log_device_placement`` prints for :func:`plan_transports`' rows (none for
    a one-device plan)."""
    if not rows:
        return []
    lines = ["Transports between devices:"]
    lines += [f"{r['source']} <-> {r['target']}: {r['transport']}" for r in rows]
    return lines
