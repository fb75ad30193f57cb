"""Counting the fault-and-fuzz suite: trials of a scenario, their outcomes, and the report.

A scenario is one kind of fault or fuzzed input ("scheduler killed mid-run", "fuzzed device
strings"); each of its trials ends in exactly one outcome:

``correct``
    the call returned and its value matches NumPy;
``clear error``
    the call raised a daskgraph error, a ``ValueError`` or a ``TypeError`` (or a type the
    scenario adds) whose message names what it should;
``wrong``
    the call returned a value that does not match NumPy: silent corruption;
``unclear error``
    the call raised anything else (``AttributeError``, ``KeyError``, ``RecursionError``,
    distributed's ``CommClosedError``, ...), or a clear type whose message misses the input;
``hang``
    the call had not returned after its timeout.

:meth:`Scenario.verify` fails the test on any wrong result, hang or unclear error, on an
outcome other than the scenario's ``expect``, and on a trial slower than ``limit_s``. The
plugin in ``conftest.py`` prints every scenario's counts at the end of the run and, with
``DASKGRAPH_RELIABILITY_REPORT=path``, writes them as the Markdown page ``docs/reliability.md``
(``make reliability``).
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from daskgraph.errors import DaskgraphError

__all__ = ["OUTCOMES", "Scenario", "Tally", "Trial"]

OUTCOMES = ("correct", "clear error", "wrong", "unclear error", "hang")
CLEAR = (DaskgraphError, ValueError, TypeError)


class _Failed(Exception):
    """Raised out of :meth:`Trial.run` so that the rest of a failed trial's body is skipped."""


@dataclass
class Trial:
    """One attempt of a scenario; see :meth:`run` and :meth:`check`."""

    scenario: Scenario
    outcome: str | None = None
    elapsed: float = 0.0
    detail: str = ""

    def run(
        self,
        fn: Callable[[], Any],
        timeout: float | None = None,
        mentions: Iterable[str] = (),
        clear: tuple[type[BaseException], ...] = (),
    ) -> Any:
        """Call ``fn`` and return its value; time it; record an error or hang as the outcome.

        With a ``timeout`` the call runs in a daemon thread, and a call still running after it
        is a hang. An error is clear when it is one of the clear types (plus ``clear``) and its
        message contains every string of ``mentions``. After an error or a hang the rest of
        the ``with scenario.trial()`` body is skipped.
        """
        start = time.perf_counter()
        value, error, hung = _call(fn, timeout)
        self.elapsed += time.perf_counter() - start
        if hung:
            self._end("hang", f"no answer after {timeout} s")
        if error is not None:
            missing = [m for m in mentions if m not in str(error)]
            is_clear = isinstance(error, CLEAR + tuple(clear)) and not missing
            detail = f"{type(error).__name__}: {str(error)[:300]}"
            if missing:
                detail += f" (does not mention {missing})"
            self._end("clear error" if is_clear else "unclear error", detail)
        return value

    def check(self, value: Any, expected: Any, rtol: float = 1e-5, atol: float = 1e-6) -> None:
        """Compare ``value`` with NumPy's ``expected`` (nested lists/tuples/dicts of arrays):
        the trial is correct when every leaf matches in shape, dtype kind and value."""
        if _matches(value, expected, rtol, atol):
            self.outcome = "correct"
        else:
            self._end("wrong", f"got {_short(value)}, expected {_short(expected)}")

    def _end(self, outcome: str, detail: str) -> None:
        self.outcome, self.detail = outcome, detail
        raise _Failed


@dataclass
class Scenario:
    """The trials of one scenario and what they should all end in."""

    name: str
    limit_s: float
    expect: str  # "correct", "clear error" or "either"
    trials: list[Trial] = field(default_factory=list)

    @contextmanager
    def trial(self) -> Iterator[Trial]:
        """A new trial; its body calls :meth:`Trial.run` and (for values) :meth:`Trial.check`.
        A body that neither raised nor checked a value counts as correct."""
        trial = Trial(self)
        self.trials.append(trial)
        try:
            yield trial
        except _Failed:
            pass
        if trial.outcome is None:
            trial.outcome = "correct"

    def counts(self) -> Counter:
        """How many trials ended in each outcome."""
        return Counter(t.outcome for t in self.trials)

    @property
    def slowest(self) -> float:
        """The longest trial, in seconds."""
        return max((t.elapsed for t in self.trials), default=0.0)

    def verify(self, min_trials: int = 1) -> None:
        """Fail on any wrong result, hang, unclear error, unexpected outcome or slow trial."""
        bad = [t for t in self.trials if not self._acceptable(t)]
        slow = [t for t in self.trials if t.elapsed > self.limit_s]
        problems = [f"{t.outcome} after {t.elapsed:.2f} s: {t.detail}" for t in bad]
        problems += [f"{t.outcome} took {t.elapsed:.2f} s > {self.limit_s} s" for t in slow]
        if len(self.trials) < min_trials:
            problems.append(f"only {len(self.trials)} trials ran; expected {min_trials}")
        if problems:
            head = f"scenario {self.name!r}: {dict(self.counts())}; problems:\n  "
            raise AssertionError(head + "\n  ".join(problems[:10]))

    def _acceptable(self, trial: Trial) -> bool:
        if trial.outcome not in ("correct", "clear error"):
            return False
        return self.expect == "either" or trial.outcome == self.expect


class Tally:
    """Every scenario of a test run, in the order they started."""

    def __init__(self) -> None:
        self.scenarios: dict[str, Scenario] = {}

    def scenario(self, name: str, limit_s: float, expect: str = "correct") -> Scenario:
        """A new scenario (or the one of that name, for scenarios spread over tests)."""
        if expect not in ("correct", "clear error", "either"):
            raise ValueError(f"expect must be 'correct', 'clear error' or 'either'; got {expect!r}")
        if name not in self.scenarios:
            self.scenarios[name] = Scenario(name, limit_s, expect)
        return self.scenarios[name]

    def rows(self) -> list[dict[str, Any]]:
        """One summary row per scenario, as the report shows them."""
        rows = []
        for s in self.scenarios.values():
            counts = s.counts()
            rows.append(
                {"scenario": s.name, "trials": len(s.trials), "expect": s.expect}
                | {o: counts.get(o, 0) for o in OUTCOMES}
                | {"slowest_s": round(s.slowest, 3), "limit_s": s.limit_s}
            )
        return rows


def _call(fn: Callable[[], Any], timeout: float | None) -> tuple[Any, BaseException | None, bool]:
    """``(value, error, hung)`` of calling ``fn``, in a daemon thread when timed out."""
    if timeout is None:
        try:
            return fn(), None, False
        except Exception as exc:
            return None, exc, False
    box: dict[str, Any] = {}
    done = threading.Event()

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:
            box["error"] = exc
        finally:
            done.set()

    threading.Thread(target=target, daemon=True, name="reliability-trial").start()
    if not done.wait(timeout):
        return None, None, True
    return box.get("value"), box.get("error"), False


def _matches(value: Any, expected: Any, rtol: float, atol: float) -> bool:
    if isinstance(expected, dict):
        return (
            isinstance(value, dict)
            and value.keys() == expected.keys()
            and all(_matches(value[k], expected[k], rtol, atol) for k in expected)
        )
    if isinstance(expected, (list, tuple)):
        return (
            isinstance(value, (list, tuple))
            and len(value) == len(expected)
            and all(_matches(v, e, rtol, atol) for v, e in zip(value, expected, strict=True))
        )
    if expected is None:
        return value is None
    got, want = np.asarray(value), np.asarray(expected)
    if got.shape != want.shape or got.dtype.kind != want.dtype.kind:
        return False
    if want.dtype.kind in "fc":
        return bool(np.allclose(got, want, rtol=rtol, atol=atol, equal_nan=True))
    return bool(np.array_equal(got, want))


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) < 120 else text[:117] + "..."
