"""``make bench`` (``python -m benchmarks.run``) writes its page and plot to the untracked
results folder unless asked to update docs/, and ends with a short verdict: each target met
or not met, with its measured value over its goal."""

from __future__ import annotations

import subprocess

import pytest

from benchmarks import report, run

RESULTS = report.RESULTS


@pytest.fixture
def folders(tmp_path, monkeypatch):
    """The results folder and docs/ of this test (the repository's stay untouched)."""
    results, docs = tmp_path / "results", tmp_path / "docs"
    monkeypatch.setattr(report, "RESULTS", results)
    monkeypatch.setattr(report, "DOCS", docs)
    return results, docs


def test_a_run_renders_into_the_results_folder_and_ends_with_the_verdict(folders, capsys):
    results, docs = folders
    argv = ["--only", "scale", "--scale-sizes", "100,200", "--repeats", "1"]
    assert run.main([*argv, "--json", str(results / "latest.json")]) == 0
    assert sorted(p.name for p in results.iterdir()) == [
        "benchmarks.md",
        "latest.json",
        "scale.png",
    ]
    assert not docs.exists()
    out = capsys.readouterr().out.rstrip().splitlines()
    verdict = next(i for i, line in enumerate(out) if line.startswith("verdict: "))
    header, rows = out[verdict + 1], out[verdict + 3 :]  # the run's last lines: one per target
    assert header.split() == ["target", "measured", "goal", "measured", "/", "goal", "verdict"]
    assert [row.split()[0] for row in rows] == ["scale.us_per_op", "scale.linearity"]
    missed = sum(row.endswith(" not met") for row in rows)
    assert all(row.endswith(" met") for row in rows)
    assert out[verdict] == f"verdict: {2 - missed} of 2 targets met, {missed} not met"


def test_docs_are_rendered_only_when_asked(folders):
    results, docs = folders
    assert run.docs_folder(run.parse_args([])) == results
    assert run.docs_folder(run.parse_args(["--update-docs"])) == docs
    page = (RESULTS / "benchmarks.md").relative_to(report.ROOT)  # the real results folder
    ignored = subprocess.run(["git", "check-ignore", "-q", str(page)], cwd=report.ROOT, check=False)
    assert ignored.returncode == 0, "the results folder should be in .gitignore"


def test_the_verdict_gives_the_ratio_to_the_goal(capsys):
    targets = [
        {"key": "a", "measured": 0.25, "op": "<=", "goal": 0.5, "unit": "x", "met": True},
        {"key": "b", "measured": 3.0, "op": ">=", "goal": 4.0, "unit": "x", "met": False},
        {"key": "c", "measured": None, "op": "<=", "goal": 1.0, "unit": "x", "met": None},
    ]
    report.print_verdict({"cases": {"trivial": {"targets": targets}}})
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0] == "verdict: 1 of 3 targets met, 1 not met, 1 not measured here"
    assert [line.split()[0] for line in lines[3:]] == ["a", "b", "c"]
    assert lines[3].split()[-2:] == ["0.50", "met"]  # 0.25x against a goal of at most 0.5x
    assert lines[4].split()[-3:] == ["0.75", "not", "met"]  # 3x against at least 4x
    assert lines[5].split()[-1] == "n/a"
