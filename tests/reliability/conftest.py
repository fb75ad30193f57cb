"""The fault-and-fuzz suite's plugin: one :class:`~tally.Tally` per run, and its report.

Every test asks for the ``tally`` fixture and counts its trials in a scenario. At the end of
the run the counts are printed; with ``DASKGRAPH_RELIABILITY_REPORT=docs/reliability.md`` (what
``make reliability`` sets) they are also written as that Markdown page.
"""

from __future__ import annotations

import datetime
import os
import platform
from pathlib import Path

import dask
import distributed
import numpy as np
import pytest
from tally import OUTCOMES, Tally

REPORT_ENV = "DASKGRAPH_RELIABILITY_REPORT"
_TALLY = pytest.StashKey[Tally]()


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_TALLY] = Tally()


@pytest.fixture(scope="session")
def tally(request: pytest.FixtureRequest) -> Tally:
    """The run's tally of scenarios and trials."""
    return request.config.stash[_TALLY]


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    tally = config.stash.get(_TALLY, None)
    if tally is None or not tally.scenarios:
        return
    terminalreporter.section("reliability: trials and outcomes")
    for line in _table(tally.rows()):
        terminalreporter.write_line(line)
    path = os.environ.get(REPORT_ENV)
    if path:
        Path(path).write_text(render(tally.rows()))
        terminalreporter.write_line(f"written to {path}")


HEADER = ["Scenario", "Trials", "Expected", *(o.capitalize() for o in OUTCOMES), "Slowest (s)"]


def _table(rows: list[dict]) -> list[str]:
    lines = ["| " + " | ".join(HEADER) + " | Limit (s) |", "|" + "---|" * (len(HEADER) + 1)]
    for row in rows:
        cells = [row["scenario"], row["trials"], row["expect"], *(row[o] for o in OUTCOMES)]
        cells += [f"{row['slowest_s']:.2f}", f"{row['limit_s']:g}"]
        lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    return lines


def render(rows: list[dict]) -> str:
    """The Markdown page of a run's scenarios (``docs/reliability.md``)."""
    total = sum(r["trials"] for r in rows)
    bad = sum(r["wrong"] + r["hang"] + r["unclear error"] for r in rows)
    machine = (
        f"{os.cpu_count()} CPUs, {platform.system()} {platform.machine()}, Python "
        f"{platform.python_version()}, dask {dask.__version__}, distributed "
        f"{distributed.__version__}, NumPy {np.__version__}"
    )
    return "\n".join(
        [
            "# Reliability: the fault-and-fuzz suite",
            "",
            "Written by `make reliability` (`tests/reliability/`, also part of `make test`).",
            "Each scenario counts its trials by outcome: a *correct* result matches NumPy; a",
            "*clear error* is a daskgraph error, `ValueError` or `TypeError` naming the input;",
            "*wrong* is a returned value that does not match NumPy; *unclear error* is any other",
            "exception; a *hang* is a call with no answer within its timeout. *Slowest* is the",
            "longest trial (time to the result, the error or the recovery); the scenario fails",
            "when it exceeds *Limit*.",
            "",
            f"Run of {datetime.date.today().isoformat()} on {machine}: {len(rows)} scenarios, "
            f"{total} trials, {bad} wrong results, hangs or unclear errors.",
            "",
            *_table(rows),
            "",
        ]
    )
