"""A stand-in for dask-cuda's plugin modules, for unit tests on machines without it."""

from __future__ import annotations

import sys
import types
from collections.abc import Callable
from typing import Any

import pytest


class FakeRMMSetup:
    """Records its arguments (the real ``dask_cuda.plugins.RMMSetup`` takes the same names:
    checked against it where dask-cuda is installed)."""

    def __init__(self, **kwargs: Any) -> None:
        self.kwargs = kwargs


class FakeCPUAffinity:
    """Records the cores it was given."""

    def __init__(self, cores: list[int]) -> None:
        self.cores = cores


def install(monkeypatch: pytest.MonkeyPatch, get_cpu_affinity: Callable[[Any], list[int]]) -> None:
    """Put ``dask_cuda``, ``dask_cuda.plugins`` and ``dask_cuda.utils`` fakes in
    ``sys.modules`` for the test, with ``get_cpu_affinity`` as dask-cuda's."""
    package = types.ModuleType("dask_cuda")
    package.__path__ = []  # type: ignore[attr-defined]  # a package
    plugins = types.ModuleType("dask_cuda.plugins")
    plugins.RMMSetup = FakeRMMSetup  # type: ignore[attr-defined]
    plugins.CPUAffinity = FakeCPUAffinity  # type: ignore[attr-defined]
    utils = types.ModuleType("dask_cuda.utils")
    utils.get_cpu_affinity = get_cpu_affinity  # type: ignore[attr-defined]
    for module in (package, plugins, utils):
        monkeypatch.setitem(sys.modules, module.__name__, module)
