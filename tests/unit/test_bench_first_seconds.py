"""The benchmark suite's first-seconds cases (warm-up, session-ready) and its harness: each way
timed back to back in its own process. Shapes and verdicts of records made from given step
times, never timings of this machine."""

from __future__ import annotations

import doctest
import io
import string

import pytest

from benchmarks import common, merge, report, run, session_ready, warm_up


@pytest.mark.parametrize("module", [warm_up, session_ready, common])
def test_doctests(module) -> None:
    """The benchmarks are not collected by pytest: their doctests run here."""
    failed, attempted = doctest.testmod(module)
    assert (failed, attempted > 0) == (0, True)


def _process(step_s: float, seconds: float = 3.0, slow_until: float = 0.0) -> dict:
    """A child's output: steps of ``step_s`` (10x slower before ``slow_until``)."""
    steps, now = [], 0.0
    while now < seconds:
        d = step_s * (10 if now < slow_until else 1)
        steps.append([now, d])
        now = round(now + d, 9)
    return {"setup": {"import_s": 1.0, "build_s": 0.2, "session_s": 0.5}, "steps": steps}


def _warm_up_case(
    cold_slow_until: float = 2.0, tf: dict | None = None, warm_slow_until: float = 0.0
) -> dict:
    round_ = {
        "daskgraph_cold": _process(0.001, slow_until=cold_slow_until),
        "daskgraph_warm": _process(0.001, slow_until=warm_slow_until),
        "tensorflow": tf if tf is not None else _process(0.004),
    }
    return warm_up.case_result([round_], 40, 100, 3.0)


def _targets(case: dict) -> dict:
    return {t["key"]: t for t in case["targets"]}


def test_warm_up_reports_windows_steps_and_set_up_per_process():
    case = _warm_up_case()
    assert list(case["processes"]) == ["daskgraph_cold", "daskgraph_warm", "tensorflow"]
    warm = case["processes"]["daskgraph_warm"]
    assert [w["seconds"] for w in warm["windows"]] == [1.0, 5.0, 30.0]
    assert warm["windows"][0]["median_s"] == 0.001
    assert warm["steps"] == warm["windows"][-1]["steps"] == 3000  # the whole 3 s loop
    assert warm["first_ten_s"] == pytest.approx(0.01)
    assert (warm["import_s"], warm["build_s"], warm["session_s"]) == (1.0, 0.2, 0.5)
    cold = case["processes"]["daskgraph_cold"]
    assert cold["windows"][0]["median_s"] == 0.01  # op by op for the first 2 s
    assert cold["fast_from_s"] == 2.0  # the first whole second at 1 ms a step
    assert cold["per_second"][0] == {"second": 0, "steps": 100, "median_s": 0.01}


def test_warm_up_targets_compare_with_tensorflows_own_process():
    targets = _targets(_warm_up_case())
    assert set(targets) == {
        "warm_up.warm_vs_tensorflow",
        "warm_up.cold_fast_within",
        "warm_up.first_ten_cold",
        "warm_up.first_ten_warm",
    }
    assert targets["warm_up.warm_vs_tensorflow"]["measured"] == 0.25  # 1 ms against 4 ms
    assert targets["warm_up.warm_vs_tensorflow"]["met"] is True
    assert targets["warm_up.cold_fast_within"]["measured"] == 2.0
    assert targets["warm_up.first_ten_cold"]["measured"] == pytest.approx(
        2.5
    )  # 10 ms a step against 4 ms
    assert targets["warm_up.first_ten_cold"]["met"] is False
    assert targets["warm_up.first_ten_warm"]["met"] is True


def test_a_warm_loop_slow_in_its_second_second_misses_though_its_median_is_fast():
    case = _warm_up_case(warm_slow_until=2.0)  # op by op for 2 s of a 3 s loop
    target = _targets(case)["warm_up.warm_vs_tensorflow"]
    assert case["processes"]["daskgraph_warm"]["slowest_second_s"] == 0.01
    assert target["measured"] == pytest.approx(2.5)  # the second second: 10 ms against 4 ms
    assert target["met"] is False


def test_a_cold_loop_never_fast_misses_its_target_whatever_the_loops_length():
    case = _warm_up_case(cold_slow_until=10.0)  # slow for the whole 3 s loop
    target = _targets(case)["warm_up.cold_fast_within"]
    assert case["processes"]["daskgraph_cold"]["fast_from_s"] is None
    assert target["met"] is False
    assert target["note"] == "not reached in the loop"


def test_without_tensorflow_the_warm_up_targets_say_why():
    case = _warm_up_case(tf={"missing": common.TF_MISSING})
    assert case["processes"]["tensorflow"]["status"] == common.TF_MISSING
    assert all(t["met"] is None for t in case["targets"])
    _, rows = warm_up.table(case)
    assert rows[2][:2] == ["TensorFlow 1", common.TF_MISSING]


def _session_ready_case() -> dict:
    timings = {"import": 0.5, "session": 2.0, "first_run": 0.1, "ready": 2.1}
    slow = {"import": 0.5, "session": 8.0, "first_run": 0.2, "ready": 8.2}
    return session_ready.case_result([{"cold": slow, "warm": timings}])


def test_session_ready_reports_cold_and_warm_against_three_seconds():
    case = _session_ready_case()
    assert [w["key"] for w in case["ways"]][:4] == [
        "cold_ready",
        "cold_import",
        "cold_session",
        "cold_first_run",
    ]
    targets = _targets(case)
    assert targets["session_ready.cold"]["met"] is False
    assert targets["session_ready.warm"]["met"] is True
    assert targets["session_ready.warm"]["goal"] == 3.0


def _results(cases: dict) -> dict:
    machine = {
        "cpu_count": 2,
        "processor": "cpu",
        "memory_gib": 8,
        "platform": "linux",
        "python": "3",
        "daskgraph": "0",
        "dask": "0",
        "distributed": "0",
        "numpy": "2",
        "tensorflow": "2",
        "matplotlib": "3",
        "numpy_blas_threads": 1,
    }
    suite = {
        "command": "python -m benchmarks.run --only warm-up --only session-ready",
        "started": "now",
        "finished": "now",
        "repeats": 5,
        "wall_s": 1.0,
    }
    return {"suite": suite, "machine": machine, "cases": cases}


def test_the_report_page_and_verdict_show_both_cases():
    results = _results({"warm_up": _warm_up_case(), "session_ready": _session_ready_case()})
    out = io.StringIO()
    report.print_report(results, out)
    report.print_verdict(results, out)
    text = out.getvalue()
    assert "first 1 s: median (steps)" in text
    assert "warm_up.warm_vs_tensorflow" in text and "session_ready.warm" in text
    fields = report.markdown_fields(results, plotted=False)
    sections = merge._sections(fields["cases"])
    assert list(sections) == ["warm-up", "session ready"]
    assert "| daskgraph, cold cache |" in sections["warm-up"]
    # a partial run of these cases merges into a page that lacks them
    page = report.TEMPLATE.read_text()
    old = _results({"session_ready": _session_ready_case()})
    old_page = string.Template(page).substitute(report.markdown_fields(old, plotted=False))
    merged = merge.merged_fields(old_page, fields, results)
    assert list(merge._sections(merged["cases"])) == ["warm-up", "session ready"]


def test_the_suite_knows_the_new_cases():
    args = run.parse_args(["--only", "warm-up", "--only", "session-ready"])
    assert args.warmup_seconds == warm_up.SECONDS
    assert run.RESULT_KEYS["warm-up"] == "warm_up" and "warm-up" in run.TF_CASES
    assert run.RESULT_KEYS["session-ready"] == "session_ready"


def test_each_way_runs_its_warm_up_and_repeats_back_to_back():
    calls: list[str] = []

    def way(key: str) -> common.Way:
        return common.Way(
            key, key, fn=lambda: calls.append(key), warmup=lambda: calls.append(key + "*")
        )

    ways = [way("a"), way("b"), common.Way("c", "c", unavailable="n/a")]
    common.run_back_to_back(ways, 3, None, quiet_first=False)
    assert calls == ["a*", "a", "a", "a", "b*", "b", "b", "b"]  # no turns between a's repeats
    assert [len(w.times) for w in ways] == [3, 3, 0]
