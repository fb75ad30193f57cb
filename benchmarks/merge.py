"""A partial run (``--only CASE``) updates ``docs/benchmarks.md`` in place.

Rendering the page from a partial run's results alone would drop every other case's numbers
(``benchmarks/results/latest.json`` is not committed, so the last full run cannot be
re-read). So a partial run merges its cases into the page as it stands:

* each case it ran replaces that case's section (``### title``) under *Cases*, or is added
  in the suite's order, and says under its heading which run measured it;
* its targets replace that case's rows of the *Targets* table (the count is recounted from
  the rows), and its "what holds it back" paragraphs replace the case's old ones;
* the rest of the page (the run that measured the other cases: when, by which command, how
  many repeats, the machine table) stays as it was; the fixed prose comes from the template.

:func:`merged_fields` works on the template's fields (:mod:`benchmarks.report`); a page it
cannot read raises :class:`ValueError` (render with ``--no-docs`` and merge by hand).
"""

from __future__ import annotations

import re
from typing import Any

#: the cases' titles in the suite's order (``report.CASE_ORDER``); others go last
TITLE_ORDER = (
    "trivial graph",
    "fine-grained",
    "compute-bound",
    "latency",
    "scale",
    "first run",
    "big graph",
    "feeds",
    "feed hand-over",
    "training",
    "tower concurrency",
    "multi-device",
    "sessions",
    "memory",
    "warm-up",
    "session ready",
)
_HEADER = re.compile(
    r"Generated on (?P<generated>.+?) by `(?P<command>.+?)` \((?P<wall>.+?) in all\)"
)
_REPEATS = re.compile(r"the median of (?P<repeats>\d+) timed repeats")


def merged_fields(old_page: str, new: dict[str, str], results: dict[str, Any]) -> dict[str, str]:
    """The template's fields of the page ``old_page`` with the cases of ``results`` (whose own
    fields are ``new``) merged in."""
    header, repeats = _HEADER.search(old_page), _REPEATS.search(old_page)
    if header is None or repeats is None:
        raise ValueError("docs/benchmarks.md: no 'Generated on ... by ...' line to keep")
    old_targets = _between(old_page, "## Targets\n\n", "\n\n## Cases")
    old_cases = _between(old_page, "## Cases\n\n", "\n\n## What holds it back")
    old_holdbacks = old_page.split("## What holds it back\n\n", 1)[1].strip()
    ran = _sections(new["cases"])
    note = provenance(results)
    fresh = {title: _with_note(text, note) for title, text in ran.items()}
    cases = {**_sections(old_cases), **fresh}
    table_head, old_rows = _table(old_targets.split("\n\n", 1)[1])
    _, new_rows = _table(new["target_table"])
    rows = _merge_rows(old_rows, new_rows, set(ran))
    holdbacks = {
        t: text for t, text in _sections(old_holdbacks).items() if t.split(":")[0] not in ran
    }
    holdbacks.update(_sections(new["holdbacks"]))
    return {
        **new,
        **header.groupdict(),
        "repeats": repeats.group("repeats"),
        "machine_table": _between(old_page, "## Machine\n\n", "\n\n## Targets"),
        "target_count": _count(rows),
        "target_table": "\n".join(table_head + rows),
        "cases": "\n\n".join(cases[t] for t in _ordered(cases)),
        "holdbacks": "\n\n".join(holdbacks[t] for t in _ordered(holdbacks))
        or "Every target is met.",
    }


def provenance(results: dict[str, Any]) -> str:
    """The line under a merged case's heading: which run measured it."""
    suite = results["suite"]
    load = suite.get("loadavg_after")
    busy = suite.get("background_busy_before")
    parts = [f"`{suite['command']}`", f"started {suite['started']}", f"{suite['repeats']} repeats"]
    if busy is not None:
        parts.append(f"other processes used {busy:.0%} of the CPUs before it")
    if load:
        parts.append(f"load average {load[0]:.2f} after it")
    return f"_Measured in a later run than the page's: {', '.join(parts)}._"


def _between(text: str, start: str, end: str) -> str:
    if start not in text or end not in text:
        raise ValueError(f"docs/benchmarks.md: no {start.strip()!r} section to merge into")
    return text.split(start, 1)[1].split(end, 1)[0].strip()


def _sections(text: str) -> dict[str, str]:
    """``### title`` sections of ``text`` by title (the text before the first is dropped)."""
    out: dict[str, str] = {}
    for chunk in re.split(r"(?m)^(?=### )", text):
        if chunk.startswith("### "):
            title = chunk[4:].split("\n", 1)[0].strip()
            out[title] = chunk.strip()
    return out


def _with_note(section: str, note: str) -> str:
    heading, _, body = section.partition("\n\n")
    return f"{heading}\n\n{note}\n\n{body}"


def _order_key(title: str) -> int:
    base = title.split(":")[0]
    return TITLE_ORDER.index(base) if base in TITLE_ORDER else len(TITLE_ORDER)


def _ordered(sections: dict[str, str]) -> list[str]:
    """Titles in the suite's order (a case's several in the order they came)."""
    return sorted(sections, key=_order_key)


def _table(text: str) -> tuple[list[str], list[str]]:
    lines = [line for line in text.strip().splitlines() if line.startswith("|")]
    return lines[:2], lines[2:]


def _case_of(row: str) -> str:
    return row.split("|")[1].strip()


def _merge_rows(old: list[str], new: list[str], ran: set[str]) -> list[str]:
    kept = [r for r in old if _case_of(r) not in ran]
    return sorted(kept + new, key=lambda r: _order_key(_case_of(r)))


def _count(rows: list[str]) -> str:
    statuses = [r.rstrip(" |").rsplit("|", 1)[1].strip() for r in rows]
    met = sum(s.startswith("met") for s in statuses)
    unmeasured = sum(not s.startswith(("met", "NOT MET")) for s in statuses)
    extra = f", {unmeasured} not measurable here" if unmeasured else ""
    return f"{met} of {len(rows)} targets met{extra}"
