"""The embedded cluster's nannies fork their worker processes from a warm template
(``daskgraph.local.multiprocessing-method: forkserver``): a worker process starts with the
template's modules imported, gets its own environment from its spec all the same, and a
worker that dies is forked again from the same template.
"""

from __future__ import annotations

import os
import sys

import pytest
from worker_probes import cluster_client, kill, wait_for_devices

#: a module of the template's list that nothing imports in a worker before its first run
TEMPLATE_ONLY = "daskgraph.kernels.math"


def _facts(client, worker: str) -> dict:
    """What the process of ``worker`` knows of where it came from (a nested function travels
    by value: one of this module would import the module on the worker)."""

    def facts() -> dict:
        return {
            "parent": os.getppid(),
            "imported": TEMPLATE_ONLY in sys.modules,
            "blas_threads": os.environ.get("OPENBLAS_NUM_THREADS"),
            "mmap_threshold": os.environ.get("MALLOC_MMAP_THRESHOLD_"),
        }

    (value,) = client.run(facts, workers=[worker]).values()
    return value


@pytest.fixture(scope="module")
def cluster():
    """One virtual GPU in a process of its own (the CPU worker in this process)."""
    with cluster_client(2, virtual_gpus=1, processes=True, cpu_threads=1) as client:
        yield client


def _gpu_worker(client) -> str:
    (address,) = [a for a, w in client.scheduler_info()["workers"].items() if "GPU" in w["name"]]
    return address


def test_a_worker_process_is_forked_from_the_template_with_its_own_environment(cluster):
    gpu = _gpu_worker(cluster)
    facts = _facts(cluster, gpu)
    (nanny,) = cluster.run(os.getpid, workers=[gpu], nanny=True).values()
    assert facts["parent"] != nanny  # the template's child, not the nanny's
    assert facts["imported"]  # the template's modules, before any run
    assert facts["blas_threads"] == "1"  # the spec's environment (a virtual GPU: 1 thread)
    assert facts["mmap_threshold"] == str(32 * 2**20)


def test_a_killed_worker_is_forked_again_from_the_same_template(cluster):
    gpu = _gpu_worker(cluster)
    before = _facts(cluster, gpu)
    kill(cluster, gpu)
    wait_for_devices(cluster, devices=2, nannies=2)  # (the CPU worker answers for itself)
    gpu = _gpu_worker(cluster)
    after = _facts(cluster, gpu)
    assert after["parent"] == before["parent"] and after["imported"]
