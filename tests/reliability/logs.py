"""What a test's processes log: this process's records, and its child processes' stderr.

:class:`LogCapture` keeps every record of the ``distributed`` and ``daskgraph`` loggers
emitted in this process (daskgraph's from INFO up) and points file descriptor 2 at a file of
its own, so that processes started meanwhile (the embedded cluster's nannies and workers, and
the workers their nannies restart) write their stderr there. :meth:`LogCapture.problems` lists
what a quiet shutdown or an expected worker loss must not produce: ERROR (or worse) records,
and tracebacks or ERROR lines in the children's output.
"""

from __future__ import annotations

import logging
import os
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["LogCapture", "capture_logs"]

LOGGERS = ("distributed", "daskgraph")


class LogCapture(logging.Handler):
    """The records and child-process output of a :func:`capture_logs` block."""

    def __init__(self, children: str) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []
        self.children = children  # the file the children's stderr goes to

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def mark(self) -> tuple[int, int]:
        """Where the capture is now (for :meth:`problems` of what follows only)."""
        return len(self.records), os.path.getsize(self.children)

    def child_output(self, since: tuple[int, int] = (0, 0)) -> str:
        """What the child processes wrote to stderr (since ``since``)."""
        with open(self.children, errors="replace") as file:
            file.seek(since[1])
            return file.read()

    def daskgraph_info(self, since: tuple[int, int] = (0, 0)) -> list[str]:
        """daskgraph's records of level INFO and above (since ``since``), as text."""
        records = self.records[since[0] :]
        return [r.getMessage() for r in records if r.name.startswith("daskgraph")]

    def problems(self, since: tuple[int, int] = (0, 0)) -> list[str]:
        """ERROR records, records with a traceback, and ERROR or traceback lines of the child
        processes (since ``since``)."""
        found = [
            f"{r.name} {r.levelname}: {r.getMessage()[:300]}"
            for r in self.records[since[0] :]
            if r.levelno >= logging.ERROR or r.exc_info
        ]
        lines = self.child_output(since).splitlines()
        found += [f"child: {line[:300]}" for line in lines if _bad(line)]
        return found


def _bad(line: str) -> bool:
    return " ERROR " in line or "- ERROR -" in line or line.startswith("Traceback")


@contextmanager
def capture_logs() -> Iterator[LogCapture]:
    """Capture this process's ``distributed``/``daskgraph`` records and the stderr of child
    processes started inside the block (see the module)."""
    fd, children = tempfile.mkstemp(prefix="daskgraph-children-", suffix=".log")
    os.close(fd)
    capture = LogCapture(children)
    loggers = [logging.getLogger(name) for name in LOGGERS]
    daskgraph_level = loggers[1].level
    loggers[1].setLevel(logging.INFO)
    for logger in loggers:
        logger.addHandler(capture)
    sys.stderr.flush()
    saved = os.dup(2)
    with open(children, "a") as sink:
        os.dup2(sink.fileno(), 2)
    try:
        yield capture
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        for logger in loggers:
            logger.removeHandler(capture)
        loggers[1].setLevel(daskgraph_level)
        os.unlink(children)
