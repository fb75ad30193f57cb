"""The ``/daskgraph`` page of the Dask dashboard: where each op of each plan runs, and why.

:func:`install_page` adds the page to a scheduler that serves Dask's dashboard, next to Dask's
own pages, the way Dask adds those: a Bokeh server application on the scheduler's HTTP
server, plus ``/daskgraph.json`` with the same data. The page reads the scheduler's
:class:`~daskgraph.diagnostics.board.PlacementBoard` and redraws whenever it changed:

- the devices (virtual and logical GPUs marked), each with its ops, partitions, runs, time
  spent and bytes received from other devices;
- a plan chosen from the latest ones of every session (the newest by default): its ops with
  the device requested, the device assigned and the reason, the tensors sent between devices,
  and a drawing of its graph with ops coloured by device and transfers in red.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import partial
from typing import Any

import dask
from bokeh.application import Application
from bokeh.application.handlers.function import FunctionHandler
from bokeh.layouts import column
from bokeh.models import (
    ColumnDataSource,
    DataTable,
    Div,
    HoverTool,
    LabelSet,
    Select,
    TableColumn,
)
from bokeh.plotting import figure
from bokeh.server.server import BokehTornado
from bokeh.server.util import create_hosts_allowlist
from tornado import web
from tornado.ioloop import IOLoop

__all__ = [
    "PAGE",
    "install_page",
    "layered_layout",
    "page_document",
    "short_device",
    "transport_of",
]

#: the page's path under the dashboard's prefix
PAGE = "daskgraph"
#: ops drawn at most (a larger plan shows its first ops), and named in the drawing at most
DRAWN_OPS = 300
LABELLED_OPS = 60
_PALETTE = (
    "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2",
    "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac",
)  # fmt: skip


def short_device(name: str) -> str:
    """A device's name without its default job, replica and task: what the page shows.

    >>> short_device("/job:localhost/replica:0/task:0/device:GPU:1")
    'GPU:1'
    >>> short_device("/job:worker/replica:0/task:1/device:CPU:0")
    '/job:worker/task:1/CPU:0'
    """
    parts = dict(p.split(":", 1) for p in name.strip("/").split("/") if ":" in p)
    device = parts.get("device", name)
    if parts.get("job", "localhost") == "localhost" and parts.get("task", "0") == "0":
        return device
    return f"/job:{parts.get('job')}/task:{parts.get('task')}/{device}"


def layered_layout(ops: Sequence[dict[str, Any]]) -> dict[str, tuple[float, float]]:
    """Positions for drawing ops (dicts with ``name`` and ``inputs``, in a topological
    order): ``x`` is the op's depth (longest path from a source), ``y`` spreads the ops of
    one depth around 0.

    >>> layered_layout([{"name": "a", "inputs": []}, {"name": "b", "inputs": []},
    ...                 {"name": "c", "inputs": ["a", "b"]}])
    {'a': (0.0, -0.5), 'b': (0.0, 0.5), 'c': (1.0, 0.0)}
    """
    depth: dict[str, int] = {}
    for op in ops:
        depth[op["name"]] = 1 + max((depth[i] for i in op["inputs"] if i in depth), default=-1)
    layers: dict[int, list[str]] = {}
    for name, d in depth.items():
        layers.setdefault(d, []).append(name)
    positions = {}
    for d, names in layers.items():
        for i, name in enumerate(names):
            positions[name] = (float(d), i - (len(names) - 1) / 2)
    return positions


def plan_title(plan: dict[str, Any]) -> str:
    """How the page names a plan in its list: session, plan number, what it fetches."""
    return f"session {plan['session']} · plan {plan['plan']} · {plan.get('label', '')}"


# -- the document -------------------------------------------------------------------------------
def page_document(board: Any, doc: Any) -> None:
    """Fill a Bokeh document with the page, kept up to date from ``board`` (a
    :class:`~daskgraph.diagnostics.board.PlacementBoard`) every ``daskgraph.dashboard.refresh``."""
    view = _PageView()
    chooser = Select(title="Plan", options=[], width=700)
    header = Div(text="<h2>daskgraph placement</h2>", name="daskgraph-header")
    seen = {"version": -1, "choice": None}

    def update() -> None:
        if board.version == seen["version"] and chooser.value == seen["choice"]:
            return
        snap = board.snapshot()
        titles = [plan_title(p) for p in snap["plans"]]
        chooser.options = titles[::-1]
        if chooser.value not in titles:
            chooser.value = titles[-1] if titles else ""
        chosen = next((p for p in snap["plans"] if plan_title(p) == chooser.value), None)
        view.show(snap, chosen)
        header.text = _header_text(snap)
        seen.update(version=board.version, choice=chooser.value)

    chooser.on_change("value", lambda attr, old, new: update())
    update()
    doc.title = "Dask: daskgraph placement"
    doc.add_root(
        column(
            header,
            view.devices_table,
            chooser,
            view.plan_note,
            view.ops_table,
            view.transfers_table,
            view.figure,
            sizing_mode="stretch_width",
        )
    )
    refresh_ms = 1000 * dask.utils.parse_timedelta(dask.config.get("daskgraph.dashboard.refresh"))
    doc.add_periodic_callback(update, max(50, int(refresh_ms)))


def _header_text(snap: dict[str, Any]) -> str:
    runs = sum(p["runs"] for p in snap["plans"])
    return (
        f"<h2>daskgraph placement</h2><p>{len(snap['devices'])} devices · "
        f"{len(snap['plans'])} plans · {runs} runs of them</p>"
    )


class _PageView:
    """The page's tables and drawing, and how a snapshot fills them."""

    def __init__(self) -> None:
        self.devices = ColumnDataSource(_columns(_DEVICE_COLUMNS))
        self.ops = ColumnDataSource(_columns(_OP_COLUMNS))
        self.transfers = ColumnDataSource(_columns(_TRANSFER_COLUMNS))
        self.nodes = ColumnDataSource(_columns(("x", "y", "name", "type", "device", "reason")))
        self.nodes.data.update(color=[], label=[])
        self.edges = ColumnDataSource({k: [] for k in ("xs", "ys", "color", "width")})
        self.devices_table = _table(self.devices, _DEVICE_COLUMNS, "daskgraph-devices", 160)
        self.ops_table = _table(self.ops, _OP_COLUMNS, "daskgraph-ops", 280)
        self.transfers_table = _table(self.transfers, _TRANSFER_COLUMNS, "daskgraph-transfers", 320)
        self.plan_note = Div(text="", name="daskgraph-plan-note")
        self.figure = self._figure()

    def _figure(self) -> Any:
        fig = figure(
            height=420,
            title="graph: ops coloured by device, transfers in red",
            tools="pan,wheel_zoom,box_zoom,reset",
            sizing_mode="stretch_width",
        )
        fig.multi_line("xs", "ys", source=self.edges, line_color="color", line_width="width")
        nodes = fig.scatter(
            "x",
            "y",
            source=self.nodes,
            size=14,
            fill_color="color",
            line_color="#333",
            legend_field="device",
        )
        fig.add_tools(
            HoverTool(
                renderers=[nodes],
                tooltips=[
                    ("op", "@name"),
                    ("type", "@type"),
                    ("device", "@device"),
                    ("reason", "@reason"),
                ],
            )
        )
        fig.add_layout(
            LabelSet(x="x", y="y", text="label", source=self.nodes, x_offset=8, y_offset=6,
                     text_font_size="9pt", text_color="#333")
        )  # fmt: skip
        fig.add_layout(fig.legend[0], "right")
        fig.axis.visible = False
        fig.grid.visible = False
        fig.x_range.range_padding = fig.y_range.range_padding = 0.15
        return fig

    def show(self, snap: dict[str, Any], plan: dict[str, Any] | None) -> None:
        """Fill every part from a board snapshot and the chosen plan."""
        placement = (plan or {}).get("placement")
        for table, rows in (
            (self.devices_table, _device_rows(snap["devices"])),
            (self.ops_table, _op_rows(placement)),
            (self.transfers_table, _transfer_rows(placement, (plan or {}).get("transports"))),
        ):
            table.source.data = rows
            table.height = 32 + 26 * min(max(len(next(iter(rows.values()))), 1), 12)
        self.plan_note.text = _plan_note(plan)
        colors = {d["name"]: _PALETTE[i % len(_PALETTE)] for i, d in enumerate(snap["devices"])}
        self.nodes.data, self.edges.data = _drawing(placement, colors)


_DEVICE_COLUMNS = (
    ("device", "device"), ("kind", "kind"), ("marks", "virtual / logical"),
    ("worker", "worker"), ("ops", "ops"), ("partitions", "partitions"), ("runs", "runs"),
    ("seconds", "time (s)"), ("bytes_in", "bytes in from other devices"),
    ("compiled_steps", "compiled steps"), ("waiting", "waiting for inputs (s)"),
    ("sending", "sending (s)"),
)  # fmt: skip
_OP_COLUMNS = (
    ("name", "op"), ("type", "type"), ("requested", "requested"), ("assigned", "assigned"),
    ("reason", "reason"), ("detail", "detail"),
)  # fmt: skip
_TRANSFER_COLUMNS = (
    ("tensor", "tensor"), ("source", "from"), ("target", "to"), ("nbytes", "bytes"),
    ("transport", "transport"),
)  # fmt: skip


def _columns(columns: Sequence[Any]) -> dict[str, list[Any]]:
    return {(c[0] if isinstance(c, tuple) else c): [] for c in columns}


def _table(source: Any, columns: Sequence[tuple[str, str]], name: str, height: int) -> Any:
    return DataTable(
        source=source,
        columns=[TableColumn(field=f, title=t) for f, t in columns],
        height=height,
        index_position=None,
        sizing_mode="stretch_width",
        name=name,
    )


def _device_rows(devices: list[dict[str, Any]]) -> dict[str, list[Any]]:
    rows = _columns(_DEVICE_COLUMNS)
    for d in devices:
        rows["device"].append(short_device(d["name"]))
        for key in ("seconds", "waiting", "sending"):
            rows[key].append(round(d.get(key, 0.0), 4))
        for key in ("kind", "marks", "worker", "ops", "partitions", "runs", "bytes_in"):
            rows[key].append(d[key])
        rows["compiled_steps"].append(d.get("compiled_steps", 0))
    return rows


def _op_rows(placement: dict[str, Any] | None) -> dict[str, list[Any]]:
    rows = _columns(_OP_COLUMNS)
    for op in (placement or {}).get("ops", ()):
        for key in rows:
            value = op.get(key, "")
            rows[key].append(short_device(value) if key == "assigned" else value or "-")
    return rows


def transport_of(transports: list[dict[str, str]] | None, source: str, target: str) -> str:
    """What carries tensors from device ``source`` to ``target`` in a plan whose event lists
    ``transports`` (:mod:`daskgraph.diagnostics.transport_report`); ``"-"`` where not known.

    >>> transport_of([{"source": "a", "target": "b", "transport": "ucx"}], "b", "a")
    'ucx'
    """
    pair = sorted((source, target))
    for row in transports or ():
        if [row["source"], row["target"]] == pair:
            return row["transport"]
    return "-"


def _transfer_rows(
    placement: dict[str, Any] | None, transports: list[dict[str, str]] | None = None
) -> dict[str, list[Any]]:
    rows = _columns(_TRANSFER_COLUMNS)
    for t in (placement or {}).get("transfers", ()):
        rows["transport"].append(transport_of(transports, t["source_device"], t["target_device"]))
        rows["tensor"].append(t["tensor"])
        rows["source"].append(short_device(t["source_device"]))
        rows["target"].append(short_device(t["target_device"]))
        rows["nbytes"].append("unknown" if t["nbytes"] is None else t["nbytes"])
    return rows


def _plan_note(plan: dict[str, Any] | None) -> str:
    if plan is None:
        return "<p>No plan yet: run something in a daskgraph Session on this cluster.</p>"
    parts = ", ".join(
        f"{short_device(p['device'])}: {p.get('n_ops', len(p.get('ops', ())))} ops"
        for p in plan["partitions"]
    )
    note = f"<p>{plan['runs']} runs ({plan['failed']} failed) · partitions: {parts}</p>"
    if plan.get("transports"):
        pairs = ", ".join(
            f"{short_device(t['source'])} ↔ {short_device(t['target'])}: {t['transport']}"
            for t in plan["transports"]
        )
        note += f"<p>transports: {pairs}</p>"
    if plan.get("keys"):
        note += f"<p>task keys: {', '.join(map(str, plan['keys']))}</p>"
    if plan.get("placement") is None:
        note += f"<p>{plan['n_ops']} ops: too many to list (daskgraph.dashboard.max-ops).</p>"
    return note


def _drawing(
    placement: dict[str, Any] | None, colors: dict[str, str]
) -> tuple[dict[str, list[Any]], dict[str, list[Any]]]:
    """The nodes and edges of a placement's drawing (its first :data:`DRAWN_OPS` ops)."""
    ops = list((placement or {}).get("ops", ()))[:DRAWN_OPS]
    at = layered_layout(ops)
    device = {op["name"]: op["assigned"] for op in ops}
    nodes: dict[str, list[Any]] = {k: [] for k in ("x", "y", "name", "type", "device")}
    nodes.update(reason=[], color=[], label=[])
    named = len(ops) <= LABELLED_OPS
    for op in ops:
        x, y = at[op["name"]]
        for key, value in (("x", x), ("y", y), ("name", op["name"]), ("type", op["type"])):
            nodes[key].append(value)
        nodes["device"].append(short_device(op["assigned"]))
        nodes["reason"].append(op["reason"])
        nodes["color"].append(colors.get(op["assigned"], "#999999"))
        nodes["label"].append(op["name"] if named else "")
    edges: dict[str, list[Any]] = {"xs": [], "ys": [], "color": [], "width": []}
    for op in ops:
        for source in op["inputs"]:
            if source in at:
                crossing = device[source] != device[op["name"]]
                edges["xs"].append([at[source][0], at[op["name"]][0]])
                edges["ys"].append([at[source][1], at[op["name"]][1]])
                edges["color"].append("#d62728" if crossing else "#aaaaaa")
                edges["width"].append(3 if crossing else 1)
    return nodes, edges


# -- serving ------------------------------------------------------------------------------------
def install_page(scheduler: Any, board: Any) -> bool:
    """Serve the page (and ``/daskgraph.json``) on ``scheduler``'s dashboard; ``False``
    where the scheduler serves no Bokeh dashboard (Dask's dashboard is off)."""
    http = getattr(scheduler, "http_application", None)
    server = getattr(scheduler, "http_server", None)
    apps = getattr(http, "applications", [])
    dask_pages = next((a for a in apps if isinstance(a, BokehTornado)), None)
    if http is None or server is None or dask_pages is None:
        return False
    prefix = dask_pages.prefix.rstrip("/") + "/"
    kwargs = dict(dask.config.get("distributed.scheduler.dashboard.bokeh-application"))
    origins = create_hosts_allowlist(kwargs.pop("allow_websocket_origin"), server.port)
    page = _RelativeBokehTornado(
        {f"/{PAGE}": Application(FunctionHandler(partial(page_document, board)))},
        prefix=prefix,
        use_index=False,
        extra_websocket_origins=origins,
        absolute_url="",
        **kwargs,
    )
    http.add_application(page)
    page.initialize(IOLoop.current())
    page.start()
    http.add_handlers(r".*", [(f"{prefix}{PAGE}.json", _SnapshotHandler, {"board": board})])
    _link_from_dasks_pages(scheduler)
    return True


def _link_from_dasks_pages(scheduler: Any) -> None:
    """List the page in the navigation bar of Dask's own pages (Status, Workers, ...).

    Dask has no public hook for that bar: its pages render the ``pages`` list of
    ``distributed.dashboard.scheduler.template_variables(scheduler)`` (memoized per scheduler,
    the very list their documents were given), so the page is appended to it; where that
    function is missing or says otherwise (another distributed), the bar stays as it is and
    the page is still served. See docs/dask-apis.md."""
    try:
        from distributed.dashboard.scheduler import template_variables
    except ImportError:
        return
    pages = template_variables(scheduler).get("pages")
    if isinstance(pages, list) and PAGE not in pages:
        pages.append(PAGE)


class _RelativeBokehTornado(BokehTornado):
    """Bokeh's server app with resources at relative URLs, as Dask's own pages have them (so
    the page works behind a proxy, ``jupyter-server-proxy`` say)."""

    def resources(self, absolute_url: str | bool | None = True) -> Any:
        """Bokeh's resources, relative unless asked otherwise."""
        return super().resources(absolute_url)


class _SnapshotHandler(web.RequestHandler):
    """``GET /daskgraph.json``: the board's snapshot."""

    def initialize(self, board: Any) -> None:
        """Tornado's hook: the board to read."""
        self.board = board

    def get(self) -> None:
        """The snapshot, as JSON."""
        self.set_header("Content-Type", "application/json")
        self.write(json.dumps(self.board.snapshot(), default=str))
