"""Unit tests of a worker process's start-up: the name wait, and the environment the nanny
sets before spawning the worker (allocator and BLAS threads).

The allocator check runs in a fresh interpreter started with the environment Dask's nanny
gives a worker (``MALLOC_TRIM_THRESHOLD_=65536``), or with daskgraph's worker environment, and
counts the page faults of making and dropping 16 MB arrays: one per op of a partition.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from daskgraph.cluster import local
from daskgraph.cluster.local import process_environment
from daskgraph.cluster.nanny_setup import DeviceNanny, pre_spawn_values
from daskgraph.cluster.worker_preload import name_is_free

FAULTS_PER_ARRAY = """
import json, resource, sys
import numpy as np
a = np.ones(4_000_000, np.float32)  # 16 MB, as a 2000x2000 float32 op output
for _ in range(3):
    a = a + 1.0
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(20):
    a = a + 1.0  # a new 16 MB array each time, the old one freed
after = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
print(json.dumps({"faults": (after - before) / 20}))
"""


def _faults_per_array(worker_env: dict[str, str]) -> dict:
    env = {**os.environ, "MALLOC_TRIM_THRESHOLD_": "65536", **worker_env}  # Dask's, then ours
    done = subprocess.run(
        [sys.executable, "-c", FAULTS_PER_ARRAY],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's MALLOC_ variables")
def test_large_arrays_are_reused_from_the_heap_instead_of_faulted_in_again() -> None:
    dask_default = _faults_per_array({})
    tuned = _faults_per_array(pre_spawn_values(process_environment(2)))
    # Dask's setting: fresh pages for every 16 MB array (hundreds of faults; how many depends
    # on the kernel's fault-around and huge pages); tuned: the heap's pages are reused
    assert dask_default["faults"] > 100, dask_default
    assert tuned["faults"] < 10, tuned


def test_worker_environment_uses_the_workers_threads_for_blas() -> None:
    env = process_environment(3)
    assert {env[v] for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")} == {"3"}


def test_worker_environment_sizes_numbas_pool_to_the_workers_threads_before_the_spawn() -> None:
    # (read when Numba is imported: set before the worker process starts, as BLAS's are)
    assert pre_spawn_values(process_environment(3))["NUMBA_NUM_THREADS"] == "3"


def test_no_threshold_leaves_the_allocator_to_dask(monkeypatch) -> None:
    monkeypatch.setattr(local, "WORKER_MALLOC_MMAP_THRESHOLD", None)
    env = process_environment(1)
    assert "MALLOC_MMAP_THRESHOLD_" not in env and "MALLOC_TRIM_THRESHOLD_" not in env


def test_device_nanny_sets_the_specs_values_before_the_spawn() -> None:
    env = {"OMP_NUM_THREADS": "4", "CUDA_VISIBLE_DEVICES": "1", "MALLOC_TRIM_THRESHOLD_": "9"}
    nanny = DeviceNanny("tcp://127.0.0.1:1", env=env)  # not started: nothing connects
    assert nanny.pre_spawn_env["OMP_NUM_THREADS"] == "4"
    assert nanny.pre_spawn_env["MALLOC_TRIM_THRESHOLD_"] == "9"
    assert "CUDA_VISIBLE_DEVICES" not in nanny.pre_spawn_env  # set in the worker, as Dask does


@pytest.mark.parametrize(
    ("names", "name", "free"),
    [
        ([], "/job:a/replica:0/task:0/device:CPU:0", True),
        (["/job:a/replica:0/task:0/device:GPU:0"], "/job:a/replica:0/task:0/device:CPU:0", True),
        (["/job:a/replica:0/task:0/device:CPU:0"], "/job:a/replica:0/task:0/device:CPU:0", False),
    ],
    ids=["empty", "other-name", "taken"],
)
def test_name_is_free(names, name, free) -> None:
    identity = {"workers": {f"tcp://w:{i}": {"name": n} for i, n in enumerate(names)}}
    assert name_is_free(identity, name) is free
