"""The README's first example prints what the README says it prints: on a machine without a
GPU (no virtual GPU), and with one virtual GPU, as the README shows both (ports and the CPU
worker's thread count, which differ by run and machine, aside)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"
VARYING = [
    (r"(tcp|tls)://127\.0\.0\.1:\d+", r"\1://127.0.0.1:PORT"),
    (r"threads: \d+", "threads: N"),
]


def _blocks() -> tuple[str, list[list[str]]]:
    """The README's first Python block, and the two plain blocks after it (its outputs)."""
    text = README.read_text()
    code = re.search(r"```python\n(.*?)```", text, re.S)
    assert code is not None
    outputs = re.findall(r"\n```\n(.*?)```", text[code.end() :], re.S)[:2]
    return code.group(1), [block.splitlines() for block in outputs]


def _normal(lines: list[str]) -> list[str]:
    for pattern, replacement in VARYING:
        lines = [re.sub(pattern, replacement, line) for line in lines]
    return lines


@pytest.mark.parametrize(("virtual_gpus", "shown"), [("0", 0), ("1", 1)], ids=["no-gpu", "vgpu"])
def test_the_first_example_prints_what_the_readme_shows(tmp_path, virtual_gpus, shown):
    code, outputs = _blocks()
    assert ("device:GPU" in "".join(outputs[shown])) == bool(shown)  # the block of this case
    (tmp_path / "example.py").write_text(code)
    env = {
        **os.environ,
        "DASK_DASKGRAPH__VIRTUAL_GPUS": virtual_gpus,
        "CUDA_VISIBLE_DEVICES": "",  # the README's case: no real GPU seen
    }
    done = subprocess.run(
        [sys.executable, "example.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    expected = _normal(outputs[shown])
    printed = [line for line in expected if line.startswith(("[", " ["))]  # the result
    logged = [line for line in expected if line not in printed]
    assert _normal(done.stdout.splitlines()) == printed
    assert _normal(done.stderr.splitlines()) == logged
