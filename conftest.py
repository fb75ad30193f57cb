"""The project's own test configuration: daskgraph's pytest plugin (opt-in, as for any user),
and where the suite keeps its compiled kernels.

Kernel cache (``daskgraph.cache-dir``): unless the environment names one
(``DASK_DASKGRAPH__CACHE_DIR``), the suite's kernels go to pytest's own cache folder
(``.pytest_cache/d/daskgraph-kernels``, ignored by git, emptied by ``--cache-clear``), not to
the user's home: the next run of the suite loads them instead of compiling them again (about a
second a chain), and the processes the tests start (workers, compile servers, the programs of
tests/unit/test_kernel_cache.py) inherit it. Without pytest's cache (``-p no:cacheprovider``)
it is a temporary folder of this run, deleted after it. The tests of the cache itself use
folders of their own.
"""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest

pytest_plugins = ["daskgraph.testing"]

_ENV = "DASK_DASKGRAPH__CACHE_DIR"
_made: list[str] = []


def pytest_configure(config: pytest.Config) -> None:
    if os.environ.get(_ENV):
        return
    cache = getattr(config, "cache", None)
    if cache is not None:
        folder = str(cache.mkdir("daskgraph-kernels"))
        os.chmod(folder, 0o700)
    else:
        folder = tempfile.mkdtemp(prefix="daskgraph-kernels-")
        _made.append(folder)
    os.environ[_ENV] = folder
    import dask.config

    dask.config.set({"daskgraph.cache-dir": folder})


def pytest_unconfigure(config: pytest.Config) -> None:
    for folder in _made:
        shutil.rmtree(folder, ignore_errors=True)
