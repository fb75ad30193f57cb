"""What every GPU test needs: the GPU stack installed."""

from __future__ import annotations

import importlib.util

import pytest


@pytest.fixture(autouse=True)
def _gpu_packages() -> None:
    """The GPU tests need the GPU stack; where a GPU is present but a package is missing,
    say so instead of failing somewhere inside a worker's start-up."""
    wanted = ("dask_cuda", "cupy", "rmm", "pynvml")
    missing = [m for m in wanted if importlib.util.find_spec(m) is None]
    if missing:
        pytest.fail(
            f"GPU tests need {', '.join(missing)}: install the extra of this machine's CUDA "
            "version, e.g. pip install -e '.[test,cuda12]'"
        )
