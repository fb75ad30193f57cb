"""The package's import contracts hold: import-linter checks ``[tool.importlinter]`` of
pyproject.toml (the stage order, the framework's and the worker side's isolation, the cluster
machinery's ignorance of graphs) on the package as it is on disk."""

from __future__ import annotations

import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]

pytest.importorskip("importlinter")


def test_the_import_contracts_hold() -> None:
    code = (
        "import sys; from importlinter.cli import lint_imports; "
        f"sys.exit(lint_imports(config_filename={str(ROOT / 'pyproject.toml')!r}, "
        "no_cache=True, no_logo=True))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": ""},
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert result.returncode == 0, result.stdout + result.stderr
