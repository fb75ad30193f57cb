"""GPU workers from dask-cuda, end to end without a GPU: a stand-in ``dask_cuda`` package.

The stand-in has dask-cuda's module layout and the signatures daskgraph uses
(``dask_cuda.plugins.RMMSetup``/``CPUAffinity``, ``dask_cuda.utils.get_cpu_affinity``, the
``dask_cuda.initialize`` preload with ``--create-cuda-context``), and touches no GPU: its
plugins note on the worker what they were asked to do. It is put on the workers' path only
(``PYTHONPATH`` of the processes the embedded cluster starts); this process treats dask-cuda
as installed (``daskgraph.cluster.local.dask_cuda_installed``) but never imports it.

Checked: the embedded cluster's GPU workers are started from JSON specs by
:class:`~daskgraph.cluster.nanny_setup.DeviceNanny`, carry dask-cuda's plugins with the RMM pool of
the session's ``GPUOptions``, keep their device names and ``GPU`` resources, and on a
``tls://`` :class:`~daskgraph.Server` talk TLS; and a worker carrying dask-cuda's plugins but no
resource (as ``dask cuda worker`` starts them) is a GPU device of ``Session(client)``.
"""

from __future__ import annotations

import os
import textwrap
from pathlib import Path
from typing import Any

import pytest
from distributed import Client, LocalCluster

import daskgraph as dg
from daskgraph.cluster import local as cluster
from daskgraph.cluster import server
from daskgraph.cluster.cuda_specs import cuda_worker_probe
from daskgraph.cluster.gpus import GPUInfo
from daskgraph.cluster.local import EmbeddedCluster, scheduler_spec, worker_specs
from daskgraph.cluster.topology import devices_from_workers
from daskgraph.config import GPUOptions

LOCAL = "/job:localhost/replica:0/task:0/device:"
MiB, GiB = 2**20, 2**30
FAKE_GPU = GPUInfo("0", "Stand-in GPU", 8 * GiB, "00000000:01:00.0")

FAKE_DASK_CUDA = {
    "__init__.py": "",
    "plugins.py": """
        from distributed import WorkerPlugin


        class RMMSetup(WorkerPlugin):
            def __init__(self, initial_pool_size, maximum_pool_size, managed_memory,
                         async_alloc, release_threshold, log_directory, track_allocations,
                         external_lib_list):
                self.pool = (initial_pool_size, maximum_pool_size)
                self.external_lib_list = external_lib_list

            def setup(self, worker=None):
                worker.stand_in_rmm = (self.pool, self.external_lib_list)


        class CPUAffinity(WorkerPlugin):
            def __init__(self, cores):
                self.cores = cores

            def setup(self, worker=None):
                worker.stand_in_cores = self.cores
    """,
    "utils.py": """
        def get_cpu_affinity(device_index=None):
            return [0]
    """,
    "initialize.py": """
        import click


        @click.command()
        @click.option("--create-cuda-context/--no-create-cuda-context", default=False)
        def dask_setup(worker, create_cuda_context):
            worker.stand_in_context = create_cuda_context
    """,
}


@pytest.fixture
def stand_in_dask_cuda(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    package = tmp_path / "dask_cuda"
    package.mkdir()
    for name, text in FAKE_DASK_CUDA.items():
        (package / name).write_text(textwrap.dedent(text))
    path = os.environ.get("PYTHONPATH")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path) + (os.pathsep + path if path else ""))
    monkeypatch.setattr(cluster, "dask_cuda_installed", lambda: True)
    return tmp_path


def what_the_worker_noted(client: Client, address: str) -> dict[str, Any]:
    """What the stand-in's plugins and preload noted on the worker, and its environment."""

    def noted(dask_worker: Any) -> dict[str, Any]:  # defined here: pickled by value
        import os

        return {
            "rmm": getattr(dask_worker, "stand_in_rmm", None),
            "cores": getattr(dask_worker, "stand_in_cores", None),
            "context": getattr(dask_worker, "stand_in_context", None),
            "threads": os.environ.get("OMP_NUM_THREADS"),
            "visible": os.environ.get("CUDA_VISIBLE_DEVICES"),
        }

    return client.run(noted, workers=[address])[address]


def gpu_worker_of(client: Client, name: str) -> str:
    workers = client.scheduler_info(n_workers=-1)["workers"]
    (address,) = [a for a, info in workers.items() if info["name"] == name]
    return address


def test_embedded_gpu_workers_are_dask_cuda_workers(stand_in_dask_cuda) -> None:
    options = GPUOptions(per_process_gpu_memory_fraction=0.5, allow_growth=True)
    specs = worker_specs(gpus=[FAKE_GPU], gpu_options=options, cpu_threads=1, processes=False)
    with EmbeddedCluster(specs, scheduler_spec()) as local, Client(local) as client:
        client.wait_for_workers(2, timeout=60)
        address = gpu_worker_of(client, LOCAL + "GPU:0")
        probe = client.run(cuda_worker_probe, workers=[address])[address]
        assert probe["dask_cuda_plugins"] == ["CPUAffinity", "RMMSetup"]
        assert probe["cuda_visible_devices"] == "0"
        assert what_the_worker_noted(client, address) == {
            "rmm": ((256 * MiB, 4 * GiB), ["cupy"]),
            "cores": [0],
            "context": True,
            "threads": "1",
            "visible": "0",
        }
        workers = client.scheduler_info(n_workers=-1)["workers"]
        assert workers[address]["resources"] == {"GPU": 1}
        devices = {d.name: d for d in devices_from_workers(workers)}
        assert list(devices) == [LOCAL + "CPU:0", LOCAL + "GPU:0"]
        assert devices[LOCAL + "GPU:0"].kind == "gpu"


def test_tls_server_starts_tls_gpu_workers(stand_in_dask_cuda, monkeypatch, tmp_path) -> None:
    pytest.importorskip("cryptography")
    from daskgraph.cluster.tls import make_certificates, security_from_dir

    make_certificates(tmp_path / "certs")
    security = security_from_dir(tmp_path / "certs")
    monkeypatch.setattr(server, "visible_gpus", lambda: [FAKE_GPU])
    (port,) = server.free_ports(1)
    spec = {"local": [f"127.0.0.1:{port}"]}
    with server.Server(spec, "local", 0, security=security, virtual_gpus=0) as srv:
        assert srv.target.startswith("tls://")
        with Client(srv.target, security=security, timeout=30) as client:
            client.wait_for_workers(2, timeout=60)
            workers = client.scheduler_info(n_workers=-1)["workers"]
            names = {info["name"]: address for address, info in workers.items()}
            gpu = names["/job:local/replica:0/task:0/device:GPU:0"]
            assert gpu.startswith("tls://")
            assert all(address.startswith("tls://") for address in workers)
            probe = client.run(cuda_worker_probe, workers=[gpu])[gpu]
            assert probe["dask_cuda_plugins"] == ["CPUAffinity", "RMMSetup"]


def test_session_maps_a_dask_cuda_worker_without_resources_to_a_gpu() -> None:
    """As dask-cuda starts them: no resource, dask-cuda's plugins; here with two threads, so
    that its record alone would make it a CPU. The session asks the workers
    (cuda_worker_probe), and that tells."""
    rmm_setup = type("RMMSetup", (), {"__module__": "dask_cuda.plugins"})
    with (
        LocalCluster(
            n_workers=2, threads_per_worker=2, processes=False, dashboard_address=None
        ) as local,
        Client(local) as client,
    ):
        cpu, gpu = local.workers[0], local.workers[1]
        gpu.plugins["RMMSetup-stand-in"] = rmm_setup()  # where a nanny's plugins end up
        with dg.Graph().as_default():
            sess = dg.Session(client)
            try:
                devices = {d.name: d for d in sess.list_devices()}
            finally:
                sess.close()
    assert list(devices) == [LOCAL + "CPU:0", LOCAL + "GPU:0"]
    assert (devices[LOCAL + "GPU:0"].worker, devices[LOCAL + "GPU:0"].kind) == (gpu.address, "gpu")
    assert devices[LOCAL + "GPU:0"].restriction == 1
    assert devices[LOCAL + "CPU:0"].worker == cpu.address
