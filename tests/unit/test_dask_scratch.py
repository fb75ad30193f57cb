"""Each test gets Dask scratch space of its own (``daskgraph.testing``'s autouse fixture): Dask's
``temporary-directory`` and ``DASK_TEMPORARY_DIRECTORY`` point under pytest's temporary folder,
a new folder per test, so no test shares the machine's ``dask-scratch-space`` with other Dask
processes (whose purges of stale worker folders made a test fail on ``Failed to remove``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import dask
import pytest
from distributed import Client

from daskgraph.cluster.local import local_cluster

SEEN: list[str] = []


def _under(path: str, root: Path) -> bool:
    return Path(path).resolve().is_relative_to(root.resolve())


@pytest.mark.parametrize("test", ["first", "second"])
def test_each_test_has_a_scratch_folder_of_its_own(test, tmp_path_factory):
    scratch = dask.config.get("temporary-directory")
    assert scratch is not None
    assert _under(scratch, tmp_path_factory.getbasetemp())
    assert os.environ["DASK_TEMPORARY_DIRECTORY"] == scratch
    assert scratch not in SEEN
    SEEN.append(scratch)


def test_processes_a_test_starts_use_it():
    code = "import dask; print(dask.config.get('temporary-directory'))"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout.strip() == dask.config.get("temporary-directory")


def test_workers_make_their_folders_there():
    scratch = Path(dask.config.get("temporary-directory"))
    cluster = local_cluster(virtual_gpus=1, processes=False, cpu_threads=1)
    try:
        with Client(cluster, set_as_default=False) as client:
            folders = client.run(lambda dask_worker: dask_worker.local_directory)
    finally:
        cluster.close()
    assert len(folders) == 2
    assert all(_under(folder, scratch) for folder in folders.values()), folders
