"""Where the time of one traced step goes, hop by hop: compute per device, and the rest.

A traced step (``RunOptions(trace_level=FULL_TRACE)`` and a ``RunMetadata``, TensorFlow's or
daskgraph's) records per partition device the ops it ran, each with its start (wall clock,
microseconds) and duration; :func:`benchmarks.peer.trace_data` turns either into plain data,
with the wall-clock start and end of the ``Session.run`` call around it. :func:`summarize`
cuts the step into:

* *client -> first op*: from the call to the first op starting on any device (feeds, the
  plan, sending the step to the devices);
* per device, the time its ops computed, when its first op started and its last one ended;
* *between devices*: the time from the first op's start to the last op's end when no device
  computed (tensors in flight from one device to the next, tasks waiting to be scheduled);
* *last op -> client*: from the last op's end to the call's return (the fetches coming back).

Tracing makes a step slower than an untraced one (daskgraph's traced partitions take the
interpreted loop, not the generated function), so a traced step shows where the time goes,
not how long an untraced step takes: the medians in the case's table say that.
:func:`hop_rows` renders the summaries of one row's ways side by side.
"""

from __future__ import annotations

import re
from typing import Any

_DEVICE = re.compile(r"device:([A-Za-z]+):(\d+)$")
#: TensorFlow's ops that move tensors between devices of one process (its timeline labels)
_TRANSFER = ("_Recv", "_Send", "_HostRecv", "_HostSend")


def short_device(name: str, gpu_offset: int | None = None) -> str:
    """``/job:.../device:GPU:1`` -> ``/gpu:1``; with ``gpu_offset`` (TensorFlow's logical CPUs
    standing for GPUs), ``/device:CPU:k`` for ``k >= gpu_offset`` -> ``/gpu:{k - gpu_offset}``."""
    match = _DEVICE.search(name)
    if match is None:
        return name
    kind, index = match.group(1).lower(), int(match.group(2))
    if kind == "cpu" and gpu_offset is not None and index >= gpu_offset:
        return f"/gpu:{index - gpu_offset}"
    return f"/{kind}:{index}"


def summarize(trace: dict[str, Any], gpu_offset: int | None = None) -> dict[str, Any]:
    """The parts of one traced step (microseconds): ``wall_us``, ``before_us`` (client ->
    first op), ``compute_us`` (some device computing), ``between_us``, ``after_us`` (last op
    -> client), and ``devices``: per device (in the order they started; a device's second
    partition as ``/cpu:0 #2``) its ``first_us`` and ``last_us`` (from the call's start),
    ``compute_us`` and ``ops``."""
    start = trace["start_us"]
    wall = trace["end_us"] - start
    busy: list[tuple[float, float]] = []
    devices = []
    for dev in trace["devices"]:
        nodes = [n for n in dev["nodes"] if not n[0].startswith("_SOURCE")]
        ops = [n for n in nodes if not any(t in n[1] for t in _TRANSFER)]
        if not ops:
            continue
        spans = [(n[2] - start, n[2] + n[3] - start) for n in ops]
        busy += spans
        devices.append(
            {
                "device": short_device(dev["device"], gpu_offset),
                "first_us": min(s for s, _ in spans),
                "last_us": max(e for _, e in spans),
                "compute_us": float(sum(n[3] for n in ops)),
                "ops": len(ops),
            }
        )
    devices.sort(key=lambda d: d["first_us"])
    seen: dict[str, int] = {}
    for d in devices:  # a device with several partitions (daskgraph's, kept acyclic)
        seen[d["device"]] = count = seen.get(d["device"], 0) + 1
        if count > 1:
            d["device"] += f" #{count}"
    if not devices:
        return {"wall_us": wall, "devices": []}
    first = min(d["first_us"] for d in devices)
    last = max(d["last_us"] for d in devices)
    computing = _union(busy)
    return {
        "wall_us": wall,
        "before_us": max(0.0, first),
        "compute_us": computing,
        "between_us": max(0.0, last - first - computing),
        "after_us": max(0.0, wall - last),
        "devices": devices,
    }


def _union(spans: list[tuple[float, float]]) -> float:
    """Total length of the union of ``spans``."""
    total, end = 0.0, float("-inf")
    for s, e in sorted(spans):
        if e <= end:
            continue
        total += e - max(s, end)
        end = e
    return total


def _ms(us: float | None) -> str:
    return "" if us is None else f"{us / 1e3:.3f} ms"


def hop_rows(summaries: dict[str, dict[str, Any] | None], ways: list[str]) -> list[list[str]]:
    """[part of the step, one cell per way] for one row's traced steps (a way without a
    trace gets empty cells)."""
    devices: list[str] = []
    for key in ways:
        for d in (summaries.get(key) or {}).get("devices", []):
            if d["device"] not in devices:
                devices.append(d["device"])

    def cells(part: str) -> list[str]:
        return [_ms((summaries.get(k) or {}).get(part)) for k in ways]

    rows = [["client -> first op", *cells("before_us")]]
    for device in devices:
        row = [f"compute on {device}"]
        for key in ways:
            found = [
                d for d in (summaries.get(key) or {}).get("devices", []) if d["device"] == device
            ]
            row.append(_device_cell(found[0]) if found else "")
        rows.append(row)
    rows += [
        ["some device computing", *cells("compute_us")],
        ["between devices (transfers, waiting)", *cells("between_us")],
        ["last op -> client", *cells("after_us")],
        ["the traced step", *cells("wall_us")],
    ]
    return rows


def _device_cell(d: dict[str, Any]) -> str:
    return (
        f"{d['compute_us'] / 1e3:.3f} ms, {d['ops']} op{'s' if d['ops'] != 1 else ''} "
        f"(+{d['first_us'] / 1e3:.2f} .. +{d['last_us'] / 1e3:.2f} ms)"
    )
