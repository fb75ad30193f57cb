"""Pictures of placement plans: a :class:`~daskgraph.diagnostics.inspection.PlacementPlan` drawn
with Graphviz.

This module's one job is to draw where the ops of a run would go, in the spirit of
``dask.visualize``. :func:`to_graphviz` turns a plan into a ``graphviz.Digraph``: one box per
op (its name and type), filled with its device's colour and grouped in one frame per device
(labelled ``CPU:0``, ``GPU:1``, ...); an arrow from each op to the ops that read it; arrows
between devices (transfers) bold and red, labelled with the bytes sent where known; ops moved
by colocation or by soft placement outlined with dashes, their tooltip saying requested ->
assigned and why. :func:`visualize` plans some fetches with a session (running nothing),
draws them and renders the picture to a file.

Building the ``Digraph`` needs only the ``graphviz`` Python package (the ``daskgraph[viz]``
extra); rendering it to SVG, PNG or PDF also needs Graphviz's ``dot`` program.
"""

from __future__ import annotations

import os
import pathlib
from collections.abc import Iterable, Mapping
from types import ModuleType
from typing import TYPE_CHECKING, Any

from daskgraph.diagnostics.inspection import OpPlacement, PlacementPlan
from daskgraph.framework import default_session
from daskgraph.framework.device import DeviceSpec

if TYPE_CHECKING:
    import graphviz

__all__ = ["to_graphviz", "visualize"]

#: Fill colours of CPU devices (greys), then of GPUs and other devices (light, qualitative).
CPU_COLOURS = ("#e0e0e0", "#c8c8c8", "#f2f2f2", "#b0b0b0")
DEVICE_COLOURS = (
    "#a6cee3",
    "#b2df8a",
    "#fdbf6f",
    "#cab2d6",
    "#ffff99",
    "#8dd3c7",
    "#fccde5",
    "#bc80bd",
)
TRANSFER_COLOUR = "#d62728"
RANKDIRS = ("TB", "LR", "BT", "RL")
#: Formats written as the DOT source itself, with no Graphviz program.
SOURCE_FORMATS = ("dot", "gv")
_PLAN_KEYS = frozenset({"ops", "partitions", "transfers"})
_UNITS = ("KiB", "MiB", "GiB", "TiB", "PiB")


def _size(nbytes: int) -> str:
    """``nbytes`` for a label.

    >>> _size(256), _size(4096), _size(4_000_000)
    ('256 B', '4.0 KiB', '3.8 MiB')
    """
    if nbytes < 1024:
        return f"{nbytes} B"
    value = float(nbytes)
    for unit in _UNITS:
        value /= 1024
        if value < 1024 or unit == _UNITS[-1]:
            break
    return f"{value:.1f} {unit}"


def _spec(device: str) -> DeviceSpec | None:
    try:
        return DeviceSpec.from_string(device)
    except (TypeError, ValueError):
        return None


def _device_order(device: str) -> tuple:
    """Sort key of a device: job, replica, task, CPUs first, then the index."""
    spec = _spec(device)
    if spec is None or spec.device_type is None:
        return (1, device)
    fields = (spec.job or "", spec.replica or 0, spec.task or 0)
    kind = {"CPU": 0, "GPU": 1}.get(spec.device_type, 2)
    return (0, *fields, kind, spec.device_type, spec.device_index or 0)


def _short_names(devices: Iterable[str]) -> dict[str, str]:
    """Device -> its short name (``GPU:1``), with its job and task where several share it.

    >>> _short_names(["/job:localhost/replica:0/task:0/device:GPU:1", "odd"])
    {'/job:localhost/replica:0/task:0/device:GPU:1': 'GPU:1', 'odd': 'odd'}
    >>> sorted(_short_names(["/job:w/task:0/device:GPU:0", "/job:w/task:1/device:GPU:0"]).values())
    ['w/task:0 GPU:0', 'w/task:1 GPU:0']
    """
    short = {}
    for device in devices:
        spec = _spec(device)
        if spec is None or spec.device_type is None:
            short[device] = device
        else:
            index = "*" if spec.device_index is None else spec.device_index
            short[device] = f"{spec.device_type}:{index}"
    counts: dict[str, int] = {}
    for name in short.values():
        counts[name] = counts.get(name, 0) + 1
    for device, name in short.items():
        spec = _spec(device)
        if counts[name] > 1 and spec is not None:
            short[device] = f"{spec.job or ''}/task:{spec.task or 0} {name}"
    return short


def _colours(devices: list[str]) -> dict[str, str]:
    """Device -> fill colour: greys for CPUs, a qualitative palette for the others.

    ``GPU:i`` gets the i-th colour (the same one in every plan), unless several devices of
    the plan share an index (several tasks); then colours go in device order.
    """
    colours = {}
    for cpu, palette in ((True, CPU_COLOURS), (False, DEVICE_COLOURS)):
        group = [d for d in devices if (_kind(d) == "CPU") == cpu]
        indices = [_index(d) for d in group]
        if None in indices or len(set(indices)) < len(indices):
            indices = list(range(len(group)))
        for device, index in zip(group, indices, strict=True):
            colours[device] = palette[index % len(palette)]
    return colours


def _kind(device: str) -> str | None:
    spec = _spec(device)
    return None if spec is None else spec.device_type


def _index(device: str) -> int | None:
    spec = _spec(device)
    return None if spec is None else spec.device_index


def _transfer_sizes(plan: PlacementPlan) -> dict[tuple[str, str], int | None]:
    """(producing op, target device) -> bytes sent (None when any tensor's size is unknown)."""
    sizes: dict[tuple[str, str], int | None] = {}
    for transfer in plan.transfers:
        key = (transfer.tensor.rpartition(":")[0] or transfer.tensor, transfer.target_device)
        if key not in sizes:
            sizes[key] = transfer.nbytes
        elif sizes[key] is not None and transfer.nbytes is not None:
            sizes[key] += transfer.nbytes
        else:
            sizes[key] = None
    return sizes


def _escape(text: str) -> str:
    """``text`` for a Graphviz label (backslashes start Graphviz escapes)."""
    return text.replace("\\", "\\\\")


def _node_attrs(op: OpPlacement, short: Mapping[str, str], fed: bool) -> dict[str, str]:
    """The label, tooltip and outline of one op's node."""
    label = [_escape(op.name), _escape(op.type + (" (fed)" if fed else ""))]
    requested = op.requested or "(none)"
    why = f"{op.reason}: {op.detail}" if op.detail else op.reason
    tooltip = [
        f"{op.name} ({op.type}){' - fed' if fed else ''}",
        f"{requested} → {op.assigned}",
        f"reason: {why}",
    ]
    attrs = {"tooltip": "\\n".join(_escape(line) for line in tooltip)}
    if op.reason.startswith("soft"):
        wanted = _short_names([op.requested])[op.requested] if op.requested else "(none)"
        label.append(_escape(f"requested {wanted}"))
        attrs.update(style="rounded,filled,dashed", color=TRANSFER_COLOUR, penwidth="2.5")
    elif op.reason == "colocated":
        attrs.update(style="rounded,filled,dashed", penwidth="1.5")
    attrs["label"] = "\\n".join(label)
    return attrs


def _as_plan(plan: Any) -> PlacementPlan:
    """``plan``, or the plan its dict (:meth:`PlacementPlan.to_dict`) describes."""
    if isinstance(plan, PlacementPlan):
        return plan
    if isinstance(plan, Mapping) and _PLAN_KEYS <= set(plan):
        try:
            return PlacementPlan.from_dict(dict(plan))
        except (KeyError, TypeError) as exc:
            raise ValueError(f"plan: not a placement plan's dict ({exc})") from None
    raise TypeError(
        "plan must be a daskgraph.diagnostics.inspection.PlacementPlan (from Session.placement) "
        "or its "
        f"dict (PlacementPlan.to_dict()), got {type(plan).__name__}"
    )


def _import_graphviz() -> ModuleType:
    """The ``graphviz`` package, or an ImportError naming the extra that installs it."""
    try:
        import graphviz
    except ImportError as exc:
        raise ImportError(
            "Drawing placement plans needs the graphviz Python package: "
            "pip install graphviz (or, in daskgraph's clone, pip install -e '.[viz]')"
        ) from exc
    return graphviz


def _legend(plan: PlacementPlan, fed: set[str]) -> str:
    """A key to the markings the plan's picture uses (empty when it uses none)."""
    lines = []
    if plan.transfers:
        lines.append("bold red arrow: a transfer between devices (bytes, where known)")
    reasons = {o.reason for o in plan.ops}
    if "colocated" in reasons:
        lines.append("dashed outline: placed by colocation")
    if any(r.startswith("soft") for r in reasons):
        lines.append("red dashed outline: moved by soft placement")
    if fed:
        lines.append("(fed): a value from feed_dict")
    return "\\l".join(lines) + "\\l" if lines else ""


def to_graphviz(
    plan: PlacementPlan | Mapping[str, Any], *, rankdir: str = "TB", **graph_attr: Any
) -> graphviz.Digraph:
    """Draw a placement plan as a ``graphviz.Digraph`` (needs no Graphviz program).

    Parameters
    ----------
    plan
        A :class:`~daskgraph.diagnostics.inspection.PlacementPlan` (``Session.placement``), or its
        dict.
    rankdir
        Direction of the arrows: ``"TB"`` (top to bottom), ``"LR"``, ``"BT"`` or ``"RL"``.
    **graph_attr
        Graphviz graph attributes (``size="8,8"``, ``label=""`` drops the key, ...).

    Returns
    -------
    graphviz.Digraph
        One node per op, in one ``cluster_`` subgraph per device; render it with ``.pipe()``,
        ``.render()``, or show it in a notebook.

    Examples
    --------
    >>> from daskgraph.diagnostics.inspection import OpPlacement, PartitionPlan, Transfer
    >>> cpu, gpu = "/job:localhost/task:0/device:CPU:0", "/job:localhost/task:0/device:GPU:0"
    >>> plan = PlacementPlan(
    ...     (OpPlacement("x", "Const", "/device:GPU:0", gpu, "explicit"),
    ...      OpPlacement("y", "Sum", "/device:CPU:0", cpu, "explicit", inputs=("x",))),
    ...     (PartitionPlan(0, gpu, gpu, ("x",)), PartitionPlan(1, cpu, cpu, ("y",))),
    ...     (Transfer("x:0", 0, 1, gpu, cpu, 4096),),
    ... )
    >>> dot = to_graphviz(plan, rankdir="LR")
    >>> [line.strip() for line in dot.source.splitlines() if "->" in line]
    ['n0 -> n1 [label="4.0 KiB" color="#d62728" fontcolor="#d62728" penwidth=2.5 style=bold]']
    >>> 'label="GPU:0"' in dot.source and 'label="CPU:0"' in dot.source
    True
    """
    graphviz = _import_graphviz()
    plan = _as_plan(plan)
    if rankdir not in RANKDIRS:
        raise ValueError(f"rankdir must be one of {', '.join(RANKDIRS)}; got {rankdir!r}")
    devices = sorted({o.assigned for o in plan.ops}, key=_device_order)
    short, colour = _short_names(devices), _colours(devices)
    running = {name for p in plan.partitions for name in p.ops}
    fed = {o.name for o in plan.ops if running and o.name not in running}
    attrs = {"rankdir": rankdir, "fontname": "Helvetica", "labeljust": "l", "labelloc": "b"}
    attrs.update(label=_legend(plan, fed), fontsize="10")
    attrs.update({key: str(value) for key, value in graph_attr.items()})
    dot = graphviz.Digraph(
        "placement",
        graph_attr=attrs,
        node_attr={"shape": "box", "style": "rounded,filled", "fontname": "Helvetica"},
        edge_attr={"color": "#404040", "arrowsize": "0.7", "fontname": "Helvetica"},
    )
    ids = {op.name: f"n{i}" for i, op in enumerate(plan.ops)}
    for k, device in enumerate(devices):
        with dot.subgraph(name=f"cluster_{k}") as frame:
            frame.attr(label=_escape(short[device]), tooltip=_escape(device), style="rounded")
            frame.attr(color="#606060", fontsize="14", labelloc="t", labeljust="l")
            for op in plan.ops:
                if op.assigned == device:
                    node = _node_attrs(op, short, op.name in fed)
                    frame.node(ids[op.name], fillcolor=colour[device], **node)
    _draw_edges(dot, plan, ids)
    return dot


def _draw_edges(dot: graphviz.Digraph, plan: PlacementPlan, ids: Mapping[str, str]) -> None:
    """An arrow from each op to each op of the plan that reads it; transfers bold and red."""
    sizes = _transfer_sizes(plan)
    device = {op.name: op.assigned for op in plan.ops}
    for op in plan.ops:
        for source in op.inputs:
            if source not in ids:
                continue  # read from outside the plan
            if device[source] == op.assigned:
                dot.edge(ids[source], ids[op.name])
                continue
            nbytes = sizes.get((source, op.assigned))
            label = {} if nbytes is None else {"label": _size(nbytes)}
            dot.edge(
                ids[source],
                ids[op.name],
                **label,
                color=TRANSFER_COLOUR,
                fontcolor=TRANSFER_COLOUR,
                penwidth="2.5",
                style="bold",
            )


def _is_plan(value: Any) -> bool:
    return isinstance(value, PlacementPlan) or (
        isinstance(value, Mapping) and set(value) == _PLAN_KEYS
    )


def _plan_from(fetches_or_plan: Any, session: Any, feed_dict: Any) -> PlacementPlan:
    """The plan given, or the one ``session`` (else the default session) makes of fetches."""
    if _is_plan(fetches_or_plan):
        if session is not None or feed_dict is not None:
            raise TypeError(
                "visualize: session= and feed_dict= apply to fetches, not to a plan already made"
            )
        return _as_plan(fetches_or_plan)
    if session is None:
        try:
            session = default_session.get_default_session()
        except ValueError:
            raise ValueError(
                "visualize(fetches) needs a session to place them: pass session=sess, or call "
                "it inside `with sess.as_default():` (or `with dg.Session() as sess:`)"
            ) from None
    placement = getattr(session, "placement", None)
    if not callable(placement):
        raise TypeError(
            "session must be a daskgraph Session (with .placement(fetches, feed_dict)); got "
            f"{type(session).__name__}"
        )
    return placement(fetches_or_plan, feed_dict)


def _output(
    filename: str | os.PathLike[str], format: str | None, formats: Iterable[str]
) -> tuple[pathlib.Path, str]:
    """The path to write and the format to write it in (from the extension, else ``format``)."""
    if not isinstance(filename, (str, os.PathLike)):
        raise TypeError(
            f"filename must be a str, an os.PathLike or None; got {type(filename).__name__}"
        )
    path = pathlib.Path(filename)
    formats = set(formats)
    if format is not None:
        if not isinstance(format, str) or format.lower() not in formats:
            raise ValueError(
                f"format={format!r} is not a Graphviz output format (e.g. svg, png, pdf, dot)"
            )
        fmt = format.lower()
    elif not path.suffix:
        fmt = "svg"
    else:
        fmt = path.suffix[1:].lower()
        if fmt not in formats:
            raise ValueError(
                f"filename={str(filename)!r}: {fmt!r} is not a Graphviz output format; use an "
                "extension such as .svg, .png, .pdf or .dot, or pass format="
            )
    if not path.suffix:
        path = path.with_name(f"{path.name}.{fmt}")
    return path, fmt


def _render(dot: graphviz.Digraph, path: pathlib.Path, fmt: str, graphviz: ModuleType) -> None:
    """Write ``dot`` to ``path`` in ``fmt`` (the DOT source itself for ``dot`` and ``gv``)."""
    if fmt in SOURCE_FORMATS:
        path.write_text(dot.source)
        return
    try:
        data = dot.pipe(format=fmt)
    except graphviz.ExecutableNotFound as exc:
        raise RuntimeError(
            f"Cannot render {str(path)!r}: Graphviz's `dot` program was not found on PATH. "
            "Install Graphviz itself (apt-get install graphviz, brew install graphviz or "
            "conda install -c conda-forge graphviz), or pass filename=None to get the "
            "graphviz.Digraph, or a .dot filename to write its source."
        ) from exc
    path.write_bytes(data)


def visualize(
    fetches_or_plan: Any,
    filename: str | os.PathLike[str] | None = "placement.svg",
    *,
    session: Any = None,
    feed_dict: Mapping[Any, Any] | None = None,
    format: str | None = None,
    rankdir: str = "TB",
    **graph_attr: Any,
) -> graphviz.Digraph:
    """Draw where the ops of a run would go, and write the picture to ``filename``.

    Nothing runs: fetches are planned with ``session.placement(fetches, feed_dict)``.

    Parameters
    ----------
    fetches_or_plan
        What ``Session.run`` would fetch (a tensor, an op, or a list, tuple or dict of them),
        or a :class:`~daskgraph.diagnostics.inspection.PlacementPlan` (or its dict) to draw as it
        is.
    filename
        Where to write the picture; its extension gives the format (``.svg``, ``.png``,
        ``.pdf``, ... any Graphviz output format; ``.dot`` and ``.gv`` write the DOT source,
        which needs no Graphviz program). Without an extension, ``.svg`` (or ``.format``) is
        added. ``None`` renders nothing.
    session
        The session that plans fetches; by default the default session
        (``with sess.as_default():`` or ``with Session() as sess:``).
    feed_dict
        The feeds of the run (only which tensors are fed matters).
    format
        The output format, whatever the extension.
    rankdir, **graph_attr
        As for :func:`to_graphviz`.

    Returns
    -------
    graphviz.Digraph
        The picture (see :func:`to_graphviz`).

    Raises
    ------
    ImportError
        When the ``graphviz`` package is missing (``pip install 'daskgraph[viz]'``).
    RuntimeError
        When rendering needs Graphviz's ``dot`` program and it is not installed.

    Examples
    --------
    >>> import os, tempfile
    >>> from daskgraph.diagnostics.inspection import OpPlacement
    >>> cpu = "/job:localhost/replica:0/task:0/device:CPU:0"
    >>> plan = PlacementPlan((OpPlacement("c", "Const", "", cpu, "automatic"),), (), ())
    >>> dot = visualize(plan, filename=None)  # the picture, not rendered
    >>> 'label="CPU:0"' in dot.source, dot.source.count("fillcolor=")
    (True, 1)
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     _ = visualize(plan.to_dict(), os.path.join(tmp, "plan.dot"))
    ...     print(open(os.path.join(tmp, "plan.dot")).read().splitlines()[0])
    digraph placement {
    """
    graphviz = _import_graphviz()
    if filename is None and format is not None:
        raise TypeError("visualize: format= needs a filename (filename=None renders nothing)")
    target = None if filename is None else _output(filename, format, graphviz.FORMATS)
    plan = _plan_from(fetches_or_plan, session, feed_dict)
    dot = to_graphviz(plan, rankdir=rankdir, **graph_attr)
    if target is not None:
        _render(dot, *target, graphviz)
    return dot
