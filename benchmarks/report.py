"""The suite's outputs, all from one results dictionary: table, JSON, plot and Markdown page.

* :func:`print_report` prints every case's ways (median, minimum, time relative to
  daskgraph) and the targets, each marked met or not met with its measured ratio;
* :func:`write_json` writes the results (machine, versions, every repeat);
* :func:`plot_scale` renders the scale case as a log-log plot (matplotlib, Agg backend);
* :func:`write_markdown` fills ``benchmarks/templates/benchmarks.md`` into the page
  ``benchmarks.md``, with a "what holds it back" paragraph from :mod:`benchmarks.findings`
  for each missed target;
* :func:`print_verdict` ends the output with one line per target: met or not met, and the
  measured value over the goal.

The page and the plot go to ``benchmarks/results/`` (untracked) unless asked to update the
tracked ``docs/benchmarks.md`` and ``docs/scale.png`` (``--update-docs``, ``make bench
UPDATE_DOCS=1``). Re-render them from the last results without running anything::

    .venv/bin/python -m benchmarks.report [--update-docs] [benchmarks/results/latest.json]

Results of a partial run (``--only``) are merged into the page as it stands, each case they
hold replacing its old section and target rows (:mod:`benchmarks.merge`); a full run renders
the whole page.
"""

from __future__ import annotations

import json
import pathlib
import string
import sys
from typing import Any

from benchmarks import hops, merge, warm_up
from benchmarks.common import fmt_bytes, fmt_time
from benchmarks.findings import FINDINGS

ROOT = pathlib.Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
DEFAULT_JSON = RESULTS / "latest.json"
DOCS = ROOT / "docs"
TEMPLATE = pathlib.Path(__file__).resolve().parent / "templates" / "benchmarks.md"
CASE_ORDER = (
    "trivial",
    "fine_grained",
    "fusion",
    "fusion_adam",
    "compute_bound",
    "latency",
    "scale",
    "first_run",
    "big_graph",
    "feeds",
    "handover",
    "training",
    "towers",
    "multi_device",
    "sessions",
    "memory",
    "warm_up",
    "session_ready",
)


# -- shared cell formatting -----------------------------------------------------------------------
def fmt_measured(target: dict[str, Any]) -> str:
    value = target["measured"]
    if value is None:
        return "n/a"
    if target["unit"] == " B":
        return fmt_bytes(value)
    if target["unit"] == "x":
        if value < 0.1:  # two significant digits: 0.0045x, not 0.00x
            return f"{value:.2g}x"
        return f"{value:.2f}x" if value < 100 else f"{value:.0f}x"
    return f"{value:.2f}{target['unit']}"


def fmt_goal(target: dict[str, Any]) -> str:
    op = {"<=": "≤", ">=": "≥"}[target["op"]]
    if target.get("goal_text"):
        return f"{op} {target['goal_text']}"
    goal = target["goal"]
    if target["unit"] == " B":
        return f"{op} {fmt_bytes(goal)}"
    return f"{op} {goal:g}{target['unit']}"


NOISY = 2.0  # a timed way whose slowest repeat is this many times its fastest makes a case noisy


def spread(way: dict[str, Any]) -> float | None:
    """Slowest repeat / fastest repeat of a way (None with fewer than two repeats)."""
    times = way["times_s"]
    return max(times) / min(times) if len(times) > 1 and min(times) > 0 else None


def case_spread(case: dict[str, Any]) -> float | None:
    """The largest spread among a case's measured ways (what-if rows aside), or among the
    rounds of the scale case's sizes."""
    spreads = [
        s for w in case.get("ways", []) if not w.get("diagnostic") and (s := spread(w)) is not None
    ]
    spreads += [
        s
        for r in case.get("rows", [])
        if (s := spread({"times_s": r["place_lower_s"]})) is not None
    ]
    return max(spreads) if spreads else None


def status(target: dict[str, Any], case: dict[str, Any] | None = None) -> str:
    if target["met"] is None:
        return target["note"] or "n/a"
    text = "met" if target["met"] else "NOT MET"
    noise = case_spread(case) if case is not None and target.get("timed", True) else None
    if noise is not None and noise > NOISY:
        text += f" (noisy: {noise:.1f}x spread)"
    return text


def relative(way: dict[str, Any], case: dict[str, Any]) -> str:
    """This way's median time relative to daskgraph's (how many times daskgraph's time)."""
    dg = next((w for w in case["ways"] if w["key"] == "daskgraph"), None)
    if dg is None or way["median_s"] is None or not dg["median_s"]:
        return ""
    value = way["median_s"] / dg["median_s"]
    return f"{value:.3f}x" if value < 0.1 else f"{value:.2f}x" if value < 100 else f"{value:.0f}x"


def way_rows(case: dict[str, Any]) -> list[list[str]]:
    """[way, median, min, spread, relative to daskgraph, per item] for each way of a case."""
    rows = []
    for way in case["ways"]:
        label = way["label"] + (" *" if way.get("diagnostic") else "")
        if way["status"] != "ok":
            rows.append([label, way["status"], "", "", "", ""])
            continue
        per = ""
        if way.get("per_item_s") is not None:
            per = f"{way['per_item_s'] * 1e6:.2f} us/{way['per_item']}"
        s = spread(way)
        rows.append(
            [
                label,
                fmt_time(way["median_s"]),
                fmt_time(way["min_s"]),
                f"{s:.2f}x" if s is not None else "",
                relative(way, case),
                per,
            ]
        )
    return rows


def scale_rows(case: dict[str, Any]) -> list[list[str]]:
    rows = []
    for r in case["rows"]:
        rows.append(
            [
                f"{r['graph_ops']:,}",
                str(r["partitions"]),
                str(len(r["place_lower_s"])),
                fmt_time(_med(r["build_s"])),
                fmt_time(_med(r["place_s"])),
                fmt_time(_med(r["lower_s"])),
                fmt_time(r["place_lower_median_s"]),
                f"{s:.2f}x" if (s := spread({"times_s": r["place_lower_s"]})) else "",
                f"{r['us_per_op']:.2f}",
            ]
        )
    return rows


SCALE_HEADER = [
    "ops",
    "parts",
    "rounds",
    "build",
    "place",
    "lower",
    "place+lower",
    "max/min",
    "us/op",
]
WAY_HEADER = ["way", "median", "min", "max/min", "time / daskgraph's", "per op"]
TARGET_HEADER = ["case", "target", "measured", "goal", "status"]


def multi_header(case: dict[str, Any]) -> list[str]:
    labels = case["way_labels"]
    ways = case["ways_order"]
    ratios = [f"{labels[k]} / TF" for k in ways if k != "tensorflow"]
    return ["row", *(labels[k] for k in ways), *ratios, "max/min"]


def multi_rows(case: dict[str, Any]) -> list[list[str]]:
    """[row, median per way, each daskgraph way / TensorFlow's, largest spread] of the
    multi-device case."""
    rows = []
    for row in case["steps"]:
        ways = [row["ways"][k] for k in case["ways_order"]]
        cells = [fmt_time(w["median_s"]) if w["status"] == "ok" else w["status"] for w in ways]
        ratios = [
            f"{v:.2f}x" if (v := row["vs_tensorflow"].get(k)) is not None else "n/a"
            for k in case["ways_order"]
            if k != "tensorflow"
        ]
        spreads = [s for w in ways if (s := spread(w)) is not None]
        rows.append([row["label"], *cells, *ratios, f"{max(spreads):.2f}x" if spreads else ""])
    return rows


def multi_hops_md(case: dict[str, Any]) -> str:
    """One table per row: where the time of a traced step goes, hop by hop, per way."""
    ways = case["ways_order"]
    header = ["part of the step", *(case["way_labels"][k] for k in ways)]
    parts = [
        "#### Where the time of a step goes, hop by hop",
        "",
        "One traced step per way and row (`RunOptions(trace_level=FULL_TRACE)`, its "
        "`RunMetadata.step_stats`; the median of 3 by wall time), after the timed repeats: "
        "the time from the call to the "
        "first op, each device's compute (its ops' time, when its first op started and its "
        "last ended, from the call), the time between the first op and the last when no "
        "device computed (tensors in flight between devices, tasks waiting to be scheduled), "
        "and from the last op to the call's return. A traced step is slower than an untraced "
        "one (daskgraph's traced partitions take the interpreted loop); TensorFlow's "
        "`/cpu:{i + 1}` is shown as `/gpu:{i}`.",
    ]
    for row in case["steps"]:
        parts += ["", f"*{row['label']}*", ""]
        parts.append(_md_table(header, hops.hop_rows(row["trace"], ways)))
    return "\n".join(parts)


def _med(values: list[float]) -> float:
    import statistics

    return statistics.median(values)


def traffic_rows(case: dict[str, Any]) -> list[list[str]]:
    rows = []
    labels = {w["key"]: w["label"] for w in case["ways"]}
    for key, t in case["traffic"].items():
        rows.append(
            [
                labels[key],
                f"{fmt_bytes(t['client_to_scheduler_bytes'])} "
                f"({int(t['client_to_scheduler_messages'])} msgs)",
                fmt_bytes(t["scheduler_out_bytes"]),
                fmt_bytes(t["client_to_workers_bytes"]),
                fmt_bytes(t.get("other_bytes", 0)),
            ]
        )
    return rows


TRAFFIC_HEADER = [
    "way (median per run)",
    "client -> scheduler",
    "scheduler -> out",
    "client -> workers (direct)",
    "other",
]


def memory_rows(case: dict[str, Any]) -> list[list[str]]:
    """Per process of the memory case: resident memory (after trimming the heap) after the
    warm-up and at the end, growth and slope over the last half, and the untrimmed slope."""
    rows = []
    raw = case.get("processes_untrimmed", {})
    for name, p in case["processes"].items():
        untrimmed = raw.get(name, {}).get("slope_bytes_per_run")
        rows.append(
            [
                name,
                fmt_bytes(p["rss_start"]),
                fmt_bytes(p["rss_end"]),
                f"{p['growth_last_half'] / 2**20:+.2f} MiB",
                f"{p['slope_bytes_per_run']:+.0f}",
                f"{untrimmed:+.0f}" if untrimmed is not None else "",
            ]
        )
    return rows


MEMORY_HEADER = [
    "process",
    "RSS after warm-up",
    "RSS at the end",
    "growth, last half",
    "B/run, last half",
    "B/run, untrimmed",
]


def target_rows(results: dict[str, Any]) -> list[list[str]]:
    rows = []
    for key in CASE_ORDER:
        case = results["cases"].get(key)
        if case is None:
            continue
        for t in case["targets"]:
            rows.append([case["title"], t["text"], fmt_measured(t), fmt_goal(t), status(t, case)])
    return rows


# -- console --------------------------------------------------------------------------------------
def _text_table(header: list[str], rows: list[list[str]], indent: str = "  ", left: int = 1) -> str:
    header, rows = _drop_empty_columns(header, rows)
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = [indent + "  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True))]
    lines.append(indent + "  ".join("-" * w for w in widths))
    for row in rows:
        cells = [
            c.ljust(w) if i < left else c.rjust(w)
            for i, (c, w) in enumerate(zip(row, widths, strict=True))
        ]
        lines.append(indent + "  ".join(cells).rstrip())
    return "\n".join(lines)


def machine_line(m: dict[str, Any]) -> str:
    return (
        f"{m['cpu_count']} CPUs ({m['processor']}), {m['memory_gib']} GiB, {m['platform']}; "
        f"python {m['python']}, daskgraph {m['daskgraph']}, dask {m['dask']}, "
        f"distributed {m['distributed']}, numpy {m['numpy']}, tensorflow {m['tensorflow']}"
    )


def load_line(suite: dict[str, Any]) -> str:
    busy = suite.get("background_busy_before")
    load = suite.get("loadavg_after")
    parts = []
    if busy is not None:
        parts.append(f"other processes used {busy:.0%} of the CPUs just before the run")
    if load:
        parts.append(f"load average at the end {load[0]:.2f}")
    return "; ".join(parts) or "unknown"


def print_report(results: dict[str, Any], out=None) -> None:
    out = out or sys.stdout
    suite = results["suite"]

    def say(text: str = "") -> None:
        print(text, file=out)

    say()
    say("daskgraph benchmark suite")
    say(f"  machine: {machine_line(results['machine'])}")
    say(f"  load: {load_line(suite)}")
    say(
        f"  medians of {suite['repeats']} repeats after a warm-up, each way's back to back in "
        "its own process; time / daskgraph's > 1 means slower than daskgraph"
    )
    for key in CASE_ORDER:
        case = results["cases"].get(key)
        if case is None:
            continue
        say()
        say(f"{case['title']}: {case['summary']}")
        if key == "scale":
            say(_text_table(SCALE_HEADER, scale_rows(case)))
            for note in case.get("notes", []):
                say(f"  note: {note}")
        elif key == "multi_device":
            say(_text_table(multi_header(case), multi_rows(case)))
        elif key == "warm_up":
            say(_text_table(*warm_up.table(case)))
        else:
            say(_text_table(WAY_HEADER, way_rows(case)))
            if any(w.get("diagnostic") for w in case["ways"]):
                say("  * a what-if row, not the target's measurement (see docs/benchmarks.md)")
        if key == "feeds":
            say(_text_table(TRAFFIC_HEADER, traffic_rows(case)))
        if key == "memory":
            say(_text_table(MEMORY_HEADER, memory_rows(case)))
    say()
    say("targets")
    say(_text_table(TARGET_HEADER, target_rows(results), left=2))
    for key in CASE_ORDER:
        for t in results["cases"].get(key, {}).get("targets", []):
            if t["note"] and t["met"] is not None:
                say(f"  {t['key']}: {t['note']}")
    say()
    say(f"total wall time: {suite['wall_s']:.1f} s")


VERDICT_HEADER = ["target", "measured", "goal", "measured / goal", "verdict"]


def goal_ratio(target: dict[str, Any]) -> str:
    """The measured value over the goal (at most 1 meets a "≤" goal, at least 1 a "≥" one);
    empty where either is missing or the goal is 0."""
    measured, goal = target["measured"], target["goal"]
    if measured is None or not goal:
        return ""
    return f"{measured / goal:.2f}"


def verdict_rows(results: dict[str, Any]) -> list[list[str]]:
    """One row per target of ``results``: its key, measured value, goal, ratio, verdict."""
    rows = []
    for key in CASE_ORDER:
        for t in results["cases"].get(key, {}).get("targets", []):
            verdict = "n/a" if t["met"] is None else "met" if t["met"] else "not met"
            rows.append([t["key"], fmt_measured(t), fmt_goal(t), goal_ratio(t), verdict])
    return rows


def print_verdict(results: dict[str, Any], out=None) -> None:
    """The run's short verdict, printed last: how many targets were met, then each target.

    >>> t = {"key": "trivial.vs_tensorflow", "measured": 0.5, "op": "<=", "goal": 1.0,
    ...      "unit": "x", "met": True, "note": ""}
    >>> print_verdict({"cases": {"trivial": {"targets": [t]}}})
    <BLANKLINE>
    verdict: 1 of 1 targets met, 0 not met
      target                 measured  goal  measured / goal  verdict
      ---------------------  --------  ----  ---------------  -------
      trivial.vs_tensorflow     0.50x  ≤ 1x             0.50      met
    """
    out = out or sys.stdout
    rows = verdict_rows(results)
    met = sum(row[-1] == "met" for row in rows)
    missed = sum(row[-1] == "not met" for row in rows)
    unmeasured = len(rows) - met - missed
    line = f"verdict: {met} of {len(rows)} targets met, {missed} not met"
    if unmeasured:
        line += f", {unmeasured} not measured here"
    print(file=out)
    print(line, file=out)
    if rows:
        print(_text_table(VERDICT_HEADER, rows), file=out)


# -- JSON -----------------------------------------------------------------------------------------
def write_json(results: dict[str, Any], path: pathlib.Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=2) + "\n")


# -- plot -----------------------------------------------------------------------------------------
def plot_scale(case: dict[str, Any], path: pathlib.Path) -> bool:
    """Time vs ops, log-log, with a linear reference line; False where matplotlib is missing."""
    try:
        import matplotlib
    except ImportError:
        return False
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = case["rows"]
    ops = [r["graph_ops"] for r in rows]
    series = [
        ("place + lower", [r["place_lower_median_s"] for r in rows], "o-", "C0"),
        ("place", [_med(r["place_s"]) for r in rows], "s--", "C1"),
        ("lower", [_med(r["lower_s"]) for r in rows], "^--", "C2"),
        ("graph build (not timed by the target)", [_med(r["build_s"]) for r in rows], "x:", "C7"),
    ]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for label, times, style, color in series:
        ax.plot(ops, times, style, color=color, label=label)
    lo, hi = min(ops), max(ops)
    first = rows[0]["place_lower_median_s"]
    ax.plot(
        [lo, hi], [first, first * hi / lo], color="0.5", lw=1, label="linear reference (slope 1)"
    )
    goal = case["targets"][0]["goal"] * 1e-6
    ax.plot([lo, hi], [goal * lo, goal * hi], color="C3", lw=1, ls="-.", label="10 us/op target")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("ops in the graph")
    ax.set_ylabel("seconds (median)")
    ax.set_title("daskgraph placement + lowering time vs graph size")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


# -- Markdown -------------------------------------------------------------------------------------
def _drop_empty_columns(header: list[str], rows: list[list[str]]) -> tuple[list, list]:
    keep = [i for i in range(len(header)) if any(row[i] for row in rows)]
    return [header[i] for i in keep], [[row[i] for i in keep] for row in rows]


def _md_table(header: list[str], rows: list[list[str]], left: int = 1) -> str:
    """A Markdown table: the first ``left`` columns aligned left, the others right."""
    header, rows = _drop_empty_columns(header, rows)
    align = ["---"] * left + ["---:"] * (len(header) - left)
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(align) + " |"]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _case_section(key: str, case: dict[str, Any], plotted: bool) -> str:
    parts = [f"### {case['title']}", "", case["summary"] + ".", ""]
    if key == "scale":
        parts.append(_md_table(SCALE_HEADER, scale_rows(case)))
        for note in case.get("notes", []):
            parts += ["", f"Note: {note}."]
        if case.get("loglog_slope") is not None:
            parts += [
                "",
                f"Log-log slope of place + lower time vs ops: {case['loglog_slope']:.2f}.",
            ]
        parts += [""]
        parts.append(
            "![placement + lowering time vs ops](scale.png)"
            if plotted
            else "_(plot not rendered: matplotlib is not installed)_"
        )
    elif key == "multi_device":
        parts.append(_md_table(multi_header(case), multi_rows(case)))
        parts += ["", multi_hops_md(case)]
    elif key == "warm_up":
        parts.append(_md_table(*warm_up.table(case)))
    else:
        parts.append(_md_table(WAY_HEADER, way_rows(case)))
        if any(w.get("diagnostic") for w in case["ways"]):
            parts += ["", "\\* a what-if row, not the target's measurement."]
    if key == "feeds":
        parts += ["", "Bytes on the wire, median per run:", ""]
        parts.append(_md_table(TRAFFIC_HEADER, traffic_rows(case)))
    if key == "memory":
        parts += ["", "Resident memory of each process (after `malloc_trim`):", ""]
        parts.append(_md_table(MEMORY_HEADER, memory_rows(case)))
    params = ", ".join(f"{k}={v}" for k, v in case.get("params", {}).items())
    parts += ["", f"Parameters: {params}."]
    for t in case["targets"]:
        if t["note"] and t["met"] is not None:
            parts += ["", f"{t['text']}: {t['note']}."]
    return "\n".join(parts)


def _holdbacks(results: dict[str, Any]) -> str:
    missed = [
        (case, t)
        for key in CASE_ORDER
        if (case := results["cases"].get(key)) is not None
        for t in case["targets"]
        if t["met"] is False
    ]
    if not missed:
        return "Every target is met."
    parts = []
    for case, t in missed:
        parts.append(f"### {case['title']}: {t['text']} = {fmt_measured(t)} (goal {fmt_goal(t)})")
        parts.append("")
        parts.append(
            FINDINGS.get(
                t["key"],
                f"_No profile recorded yet for `{t['key']}` "
                "(add one in `benchmarks/findings.py`)._",
            )
        )
        parts.append("")
    return "\n".join(parts).rstrip()


def write_markdown(
    results: dict[str, Any], path: pathlib.Path, plotted: bool, partial: bool = False
) -> None:
    """Fill the template with ``results``; ``partial`` (a run of some cases): merge them into
    the page as it stands (:mod:`benchmarks.merge`), keeping the other cases' numbers."""
    fields = markdown_fields(results, plotted)
    if partial and path.exists():
        fields = merge.merged_fields(path.read_text(), fields, results)
    text = string.Template(TEMPLATE.read_text()).substitute(fields)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def markdown_fields(results: dict[str, Any], plotted: bool) -> dict[str, str]:
    """The template's fields for ``results``."""
    m = results["machine"]
    suite = results["suite"]
    machine_rows = [
        ["machine", f"{m['cpu_count']} CPUs ({m['processor']}), {m['memory_gib']} GiB memory"],
        ["platform", m["platform"]],
        ["python", m["python"]],
        ["daskgraph", m["daskgraph"]],
        ["dask / distributed", f"{m['dask']} / {m['distributed']}"],
        ["numpy", f"{m['numpy']} (OpenBLAS threads in the client: {m['numpy_blas_threads']})"],
        ["tensorflow", m["tensorflow"]],
        ["matplotlib", m["matplotlib"]],
        ["load", load_line(suite)],
    ]
    met = [t for key in CASE_ORDER for t in results["cases"].get(key, {}).get("targets", [])]
    counts = f"{sum(t['met'] is True for t in met)} of {len(met)} targets met" + (
        f", {sum(t['met'] is None for t in met)} not measurable here"
        if any(t["met"] is None for t in met)
        else ""
    )
    return {
        "generated": suite["finished"],
        "command": suite["command"],
        "repeats": str(suite["repeats"]),
        "wall": f"{suite['wall_s']:.0f} s",
        "machine_table": _md_table(["", ""], machine_rows, left=2),
        "target_count": counts,
        "target_table": _md_table(TARGET_HEADER, target_rows(results), left=2),
        "cases": "\n\n".join(
            _case_section(key, results["cases"][key], plotted)
            for key in CASE_ORDER
            if key in results["cases"]
        ),
        "holdbacks": _holdbacks(results),
    }


def render_docs(
    results: dict[str, Any], docs: pathlib.Path = DOCS, partial: bool = False
) -> list[pathlib.Path]:
    """Render ``docs/scale.png`` (when the scale case ran) and ``docs/benchmarks.md`` (from
    a partial run: its cases merged into the page, see :func:`write_markdown`)."""
    written = []
    plotted = False
    if "scale" in results["cases"]:
        plotted = plot_scale(results["cases"]["scale"], docs / "scale.png")
        if plotted:
            written.append(docs / "scale.png")
    write_markdown(results, docs / "benchmarks.md", plotted, partial)
    written.append(docs / "benchmarks.md")
    return written


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    update_docs = "--update-docs" in argv
    paths = [a for a in argv if a != "--update-docs"]
    path = pathlib.Path(paths[0]) if paths else DEFAULT_JSON
    results = json.loads(path.read_text())
    print_report(results)
    partial = bool(results["suite"].get("args", {}).get("only"))  # a run of some cases
    for written in render_docs(results, DOCS if update_docs else RESULTS, partial=partial):
        print(f"wrote {written.relative_to(ROOT)}")
    print_verdict(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
