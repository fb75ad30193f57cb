"""Run every program of examples/ as a user would, on the embedded cluster, and check its output.

Each example is started as ``python examples/NAME.py`` in a subprocess. It must exit with 0
(the examples check their own results against NumPy), and its output (the result on stdout,
the placement log on stderr) must show each op on the device TensorFlow's placer would choose.
"""

from __future__ import annotations

import ast
import os
import pathlib
import re
import subprocess
import sys

import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"
REPO = EXAMPLES.parent
TIMEOUT_S = 120
DEVICE = "/job:localhost/replica:0/task:0/device:"
CPU0, GPU0, GPU1 = f"{DEVICE}CPU:0", f"{DEVICE}GPU:0", f"{DEVICE}GPU:1"


def placed(op: str, op_type: str, device: str) -> str:
    """A line of the placement log, in TensorFlow's format."""
    return f"{op}: ({op_type}): {device}"


CASES = [
    pytest.param(
        "log_device_placement.py",
        [],
        [
            "a + b = [2. 4. 6.]",
            placed("a", "Const", GPU0),
            placed("b", "Const", GPU0),
            placed("x", "Const", GPU0),
            placed("y", "Const", GPU0),
            placed("MatMul", "MatMul", GPU0),
        ],
        id="log_device_placement",
    ),
    pytest.param(
        "manual_placement.py",
        [],
        [
            " [49. 64.]]",
            placed("a", "Const", CPU0),
            placed("b", "Const", CPU0),
            placed("MatMul", "MatMul", GPU0),
        ],
        id="manual_placement",
    ),
    pytest.param(
        "soft_placement.py",
        [],
        [
            # with soft placement, /gpu:2 falls back to GPU:0 and the int32 Variable to the CPU
            placed("a", "Const", GPU0),
            placed("MatMul", "MatMul", GPU0),
            placed("counter", "VariableV2", CPU0),
            placed("counter/Assign", "Assign", CPU0),
            placed("AssignAdd", "AssignAdd", CPU0),
            "counter = 3",
        ],
        id="soft_placement",
    ),
    pytest.param(
        "multi_tower.py",
        [],
        [
            placed("Const", "Const", GPU0),
            placed("MatMul", "MatMul", GPU0),
            placed("Const_2", "Const", GPU1),
            placed("MatMul_1", "MatMul", GPU1),
            placed("AddN", "AddN", CPU0),
        ],
        id="multi_tower",
    ),
    pytest.param(
        "matpow.py",
        ["--size", "200"],
        [
            "A^10 + B^10 for 200x200 float32 matrices",
            placed("A", "Placeholder", GPU0),
            placed("MatMul", "MatMul", GPU0),
            placed("MatMul_8", "MatMul", GPU0),
            placed("B", "Placeholder", GPU1),
            placed("MatMul_9", "MatMul", GPU1),
            placed("MatMul_17", "MatMul", GPU1),
            placed("AddN", "AddN", CPU0),
        ],
        id="matpow",
    ),
]


def run_example(
    name: str, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(EXAMPLES / name), *args],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        cwd=REPO,
        check=False,
        env=None if env is None else {**os.environ, **env},
    )


@pytest.mark.parametrize(("name", "args", "expected_lines"), CASES)
def test_example_runs_and_places_like_tensorflow(
    name: str, args: list[str], expected_lines: list[str]
) -> None:
    proc = run_example(name, *args)
    output = f"--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}"
    assert proc.returncode == 0, f"{name} exited with {proc.returncode}\n{output}"
    assert "OK: result" in proc.stdout, output
    lines = (proc.stdout + "\n" + proc.stderr).splitlines()
    lines = [line.split(" (soft placement: ")[0] for line in lines]  # TF's part of the line
    for expected in expected_lines:
        assert expected in lines, f"{name}: no line {expected!r} in the output\n{output}"


def test_soft_placement_reports_the_unsatisfiable_request() -> None:
    """Without soft placement, the printed error names the op, the request and the devices."""
    proc = run_example("soft_placement.py")
    output = f"--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}"
    assert proc.returncode == 0, output
    errors = [line for line in proc.stdout.splitlines() if line.startswith("InvalidArgumentError:")]
    assert len(errors) == 1, output
    message = errors[0]
    assert "'a'" in message, message  # the first op created under /gpu:2
    assert "'/device:GPU:2'" in message, message
    assert "available devices:" in message, message
    for device in (CPU0, GPU0, GPU1):
        assert device in message, message
    assert f"{DEVICE}GPU:2" not in message, message
    assert "soft placement: requested '/device:GPU:2'" in proc.stderr, output
    assert "soft placement: requested '/device:GPU:0'" in proc.stderr, output


def test_matpow_prints_its_wall_time() -> None:
    proc = run_example("matpow.py", "--size", "50", "--n", "3")
    output = f"--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}"
    assert proc.returncode == 0, output
    assert "A^3 + B^3 for 50x50 float32 matrices" in proc.stdout, output
    assert "session.run wall time: " in proc.stdout, output
    assert placed("MatMul_3", "MatMul", GPU1) in proc.stderr.splitlines(), output


def test_train_digits_trains_both_modes_saves_restores_and_plots(tmp_path) -> None:
    """A short run of the training example: both modes learn (a lower bar than the full
    run's 95%, for fewer steps), every checkpoint restores to the same model, the plot is
    written."""
    plot = tmp_path / "curves.png"
    proc = run_example(
        "train_digits.py", "--steps", "25", "--min-accuracy", "0.8", "--plot", str(plot)
    )
    output = f"--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}"
    assert proc.returncode == 0, output
    assert "OK: every mode reached 80% test accuracy" in proc.stdout, output
    for mode, step in (("sync", 25), ("async", 100)):  # async: 4 towers x 25 steps
        line = next(line for line in proc.stdout.splitlines() if line.startswith(f"{mode}:"))
        assert f"global step {step}, test accuracy" in line, line
        assert "restored in a fresh session" in line and f"global step {step}" in line, line
    assert plot.stat().st_size > 10_000
    assert "step/s" in proc.stderr  # the progress bar


def _documented_digits_command() -> list[str]:
    """The command that the digits example's docstring gives to run it (and the README)."""
    docstring = ast.get_docstring(ast.parse((EXAMPLES / "train_digits.py").read_text()))
    (command,) = re.findall(r"Run: ``python (examples/train_digits\.py[^`]*)``", docstring)
    assert f"`python {command}`" in (REPO / "README.md").read_text(), "the README differs"
    return command.split()


def _repository_files() -> dict[str, tuple[int, int]]:
    """Every file git tracks or would list as new (not ignored): its mtime and size."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=False,
    )
    if listed.returncode != 0:
        pytest.skip(f"not a git checkout: {listed.stderr.decode().strip()}")
    stats = {}
    for name in filter(None, listed.stdout.decode().split("\0")):
        if (REPO / name).is_file():
            stat = (REPO / name).stat()
            stats[name] = (stat.st_mtime_ns, stat.st_size)
    return stats


def test_the_documented_digits_command_writes_nothing_among_the_repositorys_files(tmp_path):
    """The README's command for the digits example leaves every tracked file as it was and
    adds none: the plot goes to the temporary folder (here ``TMPDIR``), and says where."""
    script, *documented = _documented_digits_command()
    before = _repository_files()
    shorter = ["--steps", "3", "--modes", "sync", "--min-accuracy", "0"]  # the same outputs
    proc = run_example(
        pathlib.Path(script).name, *documented, *shorter, env={"TMPDIR": str(tmp_path)}
    )
    output = f"--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}"
    assert proc.returncode == 0, output
    after = _repository_files()
    changed = sorted(
        name for name in before.keys() | after.keys() if before.get(name) != after.get(name)
    )
    assert not changed, f"the example wrote among the repository's files: {changed}"
    plot = tmp_path / "daskgraph-examples" / "train_digits.png"
    assert plot.stat().st_size > 10_000 and f"loss curves: {plot}" in proc.stdout, output
