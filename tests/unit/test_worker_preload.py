"""Unit tests for daskgraph.worker_preload: the name wait, and the allocator set-up.

The allocator check runs in a fresh interpreter started as Dask's nanny starts a worker
(``MALLOC_TRIM_THRESHOLD_=65536``), and counts the page faults of making and dropping 16 MB
arrays: one per op of a partition.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from daskgraph.worker_preload import keep_large_blocks_in_the_heap, name_is_free

FAULTS_PER_ARRAY = """
import json, resource, sys
import numpy as np
from daskgraph.worker_preload import keep_large_blocks_in_the_heap
applied = keep_large_blocks_in_the_heap(None if sys.argv[1] == "none" else int(sys.argv[1]))
a = np.ones(4_000_000, np.float32)  # 16 MB, as a 2000x2000 float32 op output
for _ in range(3):
    a = a + 1.0
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(20):
    a = a + 1.0  # a new 16 MB array each time, the old one freed
after = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
print(json.dumps({"applied": applied, "faults": (after - before) / 20}))
"""


def _faults_per_array(threshold: str) -> dict:
    env = {**os.environ, "MALLOC_TRIM_THRESHOLD_": "65536"}  # as Dask's nanny sets it
    done = subprocess.run(
        [sys.executable, "-c", FAULTS_PER_ARRAY, threshold],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_large_arrays_are_reused_from_the_heap_instead_of_faulted_in_again() -> None:
    dask_default = _faults_per_array("none")
    tuned = _faults_per_array(str(32 * 2**20))
    assert dask_default["applied"] is False and tuned["applied"] is True
    # Dask's setting: fresh pages for every 16 MB array (hundreds of faults; how many depends
    # on the kernel's fault-around and huge pages); tuned: the heap's pages are reused
    assert dask_default["faults"] > 100, dask_default
    assert tuned["faults"] < 10, tuned


def test_no_threshold_changes_nothing() -> None:
    assert keep_large_blocks_in_the_heap(None) is False


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
