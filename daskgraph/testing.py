"""pytest support for daskgraph users: local clusters with virtual GPUs, sessions, a ``gpu`` marker.

An opt-in pytest plugin (no ``pytest11`` entry point: projects installed beside daskgraph do
not import it, or Dask, in their own test runs). A project turns it on in its top-level
``conftest.py`` with ``pytest_plugins = ["daskgraph.testing"]`` (or runs ``pytest -p
daskgraph.testing``), and its tests can then ask for the fixtures::

    import pytest
    import daskgraph as dg

    @pytest.mark.virtual_gpus(2)
    def test_towers(dg_session):
        with dg.device("/gpu:1"):
            x = dg.constant(2.0) * 3.0
        assert dg_session.run(x) == 6.0

Fixtures
--------
``dg_cluster``
    A running embedded cluster (threads, loopback only) with as many virtual GPUs as the
    test's ``@pytest.mark.virtual_gpus(N)`` asks for (default 2). Clusters are shared by the
    tests of a pytest session that ask for the same size.
``dg_client``
    A ``distributed.Client`` of ``dg_cluster``.
``dg_session``
    A :class:`~daskgraph.Session` on ``dg_client`` over a fresh graph, which is the default
    graph for the duration of the test. It has 2 virtual GPUs unless the test asks otherwise,
    where a plain ``Session()`` has as many GPUs as the machine (0 without one).
``dg_cluster_factory``
    ``make(virtual_gpus=0, processes=False)`` starts a private cluster, closed after the test
    (for tests that break their cluster).

Every test also gets Dask scratch space of its own (automatically): Dask's
``temporary-directory``, where workers make their folders, and ``DASK_TEMPORARY_DIRECTORY``
for the processes a test starts point to a fresh folder under pytest's ``tmp_path_factory``,
never to the folder that every other Dask process of the machine shares.

Markers
-------
``gpu``
    The test needs a real NVIDIA GPU; it is skipped where none is found.
``virtual_gpus(n)``
    Size of ``dg_cluster``.
"""

from __future__ import annotations

import functools
import itertools
import os
import shutil
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from typing import Any

import dask
import pytest
from distributed import Client, SpecCluster

from daskgraph.cluster.liveness import cluster_workers
from daskgraph.cluster.local import local_cluster
from daskgraph.cluster.shutdown import quiet_close
from daskgraph.config import SessionConfig
from daskgraph.framework.graph import Graph
from daskgraph.runtime.client.session import Session

__all__ = ["gpu_available", "within"]

DEFAULT_VIRTUAL_GPUS = 2
SCRATCH_ENV = "DASK_TEMPORARY_DIRECTORY"
_SCRATCH_NUMBERS = itertools.count()


@functools.lru_cache(maxsize=1)
def gpu_available() -> bool:
    """Whether this machine has an NVIDIA GPU (asks ``nvidia-smi``; creates no CUDA context)."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return False
    try:
        out = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=20, check=False)
    except (OSError, subprocess.SubprocessError):
        return False
    return out.returncode == 0 and "GPU" in out.stdout


def within(seconds: float, fn: Callable[[], Any]) -> dict[str, Any]:
    """Call ``fn`` in a thread and fail the test if it has not returned after ``seconds``.

    For checks that something "never hangs". Returns ``{"value": ..., "elapsed": s}``, or
    ``{"error": exc, "elapsed": s}`` when ``fn`` raised.

    >>> within(5, lambda: 1 + 1)["value"]
    2
    """
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:
            box["error"] = exc

    thread = threading.Thread(target=target, daemon=True, name="daskgraph-within")
    start = time.monotonic()
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        frame = sys._current_frames().get(thread.ident or -1)
        stack = "".join(traceback.format_stack(frame)) if frame is not None else "(gone)"
        pytest.fail(
            f"did not finish within {seconds} s (it would have hung); it was waiting in:\n{stack}"
        )
    box["elapsed"] = time.monotonic() - start
    return box


def pytest_configure(config: pytest.Config) -> None:
    """Register the ``gpu`` and ``virtual_gpus(n)`` markers (a pytest hook)."""
    config.addinivalue_line("markers", "gpu: needs a real NVIDIA GPU (skipped without one)")
    config.addinivalue_line(
        "markers", "virtual_gpus(n): number of virtual GPUs of the dg_cluster fixture"
    )


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Skip a ``gpu``-marked test when the machine has no NVIDIA GPU (a pytest hook)."""
    if item.get_closest_marker("gpu") is not None and not gpu_available():
        pytest.skip("needs an NVIDIA GPU; none was found (nvidia-smi -L)")


@pytest.fixture(autouse=True)
def _dg_dask_scratch(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Dask's scratch space for this test alone: ``temporary-directory`` in this process (the
    nannies pass it on to their workers) and ``DASK_TEMPORARY_DIRECTORY`` for the processes
    the test starts. Dask creates the folder when a worker first needs it."""
    path = str(tmp_path_factory.getbasetemp() / "dask" / f"test{next(_SCRATCH_NUMBERS)}")
    before = os.environ.get(SCRATCH_ENV)
    os.environ[SCRATCH_ENV] = path
    try:
        with dask.config.set({"temporary-directory": path}):
            yield path
    finally:
        if before is None:
            os.environ.pop(SCRATCH_ENV, None)
        else:
            os.environ[SCRATCH_ENV] = before


class _ClusterPool:
    """Embedded clusters shared across tests, one per number of virtual GPUs."""

    def __init__(self) -> None:
        self._clusters: dict[int, tuple[SpecCluster, Client]] = {}

    def get(self, virtual_gpus: int) -> tuple[SpecCluster, Client]:
        entry = self._clusters.get(virtual_gpus)
        if entry is not None and entry[1].status == "running":
            live = len(cluster_workers(entry[1]))
            if live == virtual_gpus + 1:
                return entry
            self._close(entry)
        cluster = local_cluster(virtual_gpus=virtual_gpus, processes=False, cpu_threads=2)
        client = Client(cluster, set_as_default=False)
        client.wait_for_workers(virtual_gpus + 1, timeout=60)
        self._clusters[virtual_gpus] = (cluster, client)
        return cluster, client

    @staticmethod
    def _close(entry: tuple[SpecCluster, Client]) -> None:
        cluster, client = entry
        with quiet_close(cluster.loop):  # what Dask logs while closing is no test's output
            client.close()
            cluster.close()

    def close(self) -> None:
        for entry in self._clusters.values():
            self._close(entry)
        self._clusters.clear()


@pytest.fixture(scope="session")
def _dg_cluster_pool() -> Iterator[_ClusterPool]:
    pool = _ClusterPool()
    yield pool
    pool.close()


def _virtual_gpus(request: pytest.FixtureRequest) -> int:
    marker = request.node.get_closest_marker("virtual_gpus")
    if marker is None:
        return DEFAULT_VIRTUAL_GPUS
    if len(marker.args) != 1 or not isinstance(marker.args[0], int) or marker.args[0] < 0:
        raise pytest.UsageError(
            f"@pytest.mark.virtual_gpus expects one int >= 0; got {marker.args!r}"
        )
    return marker.args[0]


@pytest.fixture
def dg_cluster(request: pytest.FixtureRequest, _dg_cluster_pool: _ClusterPool) -> SpecCluster:
    """A shared embedded cluster with ``@pytest.mark.virtual_gpus(N)`` virtual GPUs."""
    return _dg_cluster_pool.get(_virtual_gpus(request))[0]


@pytest.fixture
def dg_client(request: pytest.FixtureRequest, _dg_cluster_pool: _ClusterPool) -> Client:
    """A client of ``dg_cluster``."""
    return _dg_cluster_pool.get(_virtual_gpus(request))[1]


@pytest.fixture
def dg_session(dg_client: Client) -> Iterator[Session]:
    """A Session on ``dg_client`` over a fresh graph, made the default graph of the test."""
    graph = Graph()
    with graph.as_default():
        session = Session(dg_client, graph=graph, config=SessionConfig())
        try:
            yield session
        finally:
            session.close()


@pytest.fixture
def dg_cluster_factory() -> Iterator[Callable[..., SpecCluster]]:
    """Start private embedded clusters: ``make(virtual_gpus=0, processes=False)``."""
    started: list[SpecCluster] = []

    def make(virtual_gpus: int = 0, processes: bool = False, **kwargs: Any) -> SpecCluster:
        cluster = local_cluster(virtual_gpus=virtual_gpus, processes=processes, **kwargs)
        started.append(cluster)
        return cluster

    yield make
    for cluster in started:
        cluster.close()
