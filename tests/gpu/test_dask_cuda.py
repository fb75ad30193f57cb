"""dask-cuda on a real NVIDIA GPU: the embedded cluster's GPU workers are dask-cuda workers,
a cluster the user started with ``LocalCUDACluster`` maps to GPU devices and runs ops there,
and a ``tls://`` Server's GPU workers talk TLS.

Every test is marked ``gpu`` (skipped where ``nvidia-smi -L`` finds no GPU) and needs the
``cuda12`` or ``cuda13`` extra (dask-cuda, CuPy, RMM, nvidia-ml-py). They use the first
visible GPU only.
"""

from __future__ import annotations

import os
from pathlib import Path

import dask
import numpy as np
import pytest
from distributed import Client

import daskgraph as dg
from daskgraph.cluster.cuda_specs import cuda_worker_probe
from daskgraph.cluster.server import free_ports

LOCAL = "/job:localhost/replica:0/task:0/device:"
CPU0, GPU0 = LOCAL + "CPU:0", LOCAL + "GPU:0"
SMALL_CLUSTER = {
    "daskgraph.virtual-gpus": 0,
    "daskgraph.local.processes": False,
    "daskgraph.local.cpu-threads": 2,
}
FIRST_GPU = dg.GPUOptions(visible_device_list="0", allow_growth=True)


def first_visible_gpu() -> str:
    return os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0].strip()


def square_on_gpu0(sess: dg.Session) -> np.ndarray:
    with dg.device("/gpu:0"):
        m = dg.constant([[1.0, 2.0], [3.0, 4.0]], name="m")
        square = dg.matmul(m, m, name="square")
    metadata = dg.RunMetadata()
    options = dg.RunOptions(trace_level=dg.RunOptions.FULL_TRACE)
    value = sess.run(square, options=options, run_metadata=metadata)
    assert metadata.step_stats.device_of("square") == GPU0
    return value


@pytest.mark.gpu
def test_embedded_gpu_workers_are_dask_cuda_workers() -> None:
    config = dg.SessionConfig(gpu_options=FIRST_GPU)
    with dg.Graph().as_default(), dask.config.set(SMALL_CLUSTER):
        sess = dg.Session(config=config)
        try:
            devices = {d.name: d for d in sess.list_devices()}
            assert list(devices) == [CPU0, GPU0]
            worker = devices[GPU0].worker
            probe = sess.client.run(cuda_worker_probe, workers=[worker])[worker]
            assert {"CPUAffinity", "RMMSetup"} <= set(probe["dask_cuda_plugins"])
            assert probe["cuda_visible_devices"].split(",")[0] == first_visible_gpu()
            assert probe["gpu"]["name"] in devices[GPU0].description
            np.testing.assert_array_equal(square_on_gpu0(sess), [[7.0, 10.0], [15.0, 22.0]])
        finally:
            sess.close()


@pytest.mark.gpu
def test_session_on_a_local_cuda_cluster_lists_its_gpus_and_runs_there() -> None:
    from dask_cuda import LocalCUDACluster

    visible = first_visible_gpu()
    with (
        LocalCUDACluster(
            CUDA_VISIBLE_DEVICES=visible,
            host="127.0.0.1",
            dashboard_address=None,
            rmm_pool_size="256MiB",
        ) as cluster,
        dg.Graph().as_default(),
    ):
        sess = dg.Session(cluster)
        try:
            devices = sess.list_devices()
            assert [(d.name, d.kind, d.array_backend) for d in devices] == [(GPU0, "gpu", "cupy")]
            assert devices[0].description.startswith("device: 0, name: ")
            np.testing.assert_array_equal(square_on_gpu0(sess), [[7.0, 10.0], [15.0, 22.0]])
        finally:
            sess.close()


@pytest.mark.gpu
def test_tls_server_gpu_workers_talk_tls(tmp_path: Path) -> None:
    pytest.importorskip("cryptography")
    from daskgraph.cluster.tls import make_certificates, security_from_dir

    make_certificates(tmp_path)
    security = security_from_dir(tmp_path)
    (port,) = free_ports(1)
    config = dg.SessionConfig(gpu_options=FIRST_GPU)
    spec = {"local": [f"127.0.0.1:{port}"]}
    with dg.Server(spec, "local", 0, config=config, security=security, virtual_gpus=0) as srv:
        with Client(srv.target, security=security, timeout=30) as client:
            client.wait_for_workers(2, timeout=120)
            workers = client.scheduler_info(n_workers=-1)["workers"]
            by_name = {info["name"]: address for address, info in workers.items()}
            gpu = by_name["/job:local/replica:0/task:0/device:GPU:0"]
            assert gpu.startswith("tls://")
            probe = client.run(cuda_worker_probe, workers=[gpu])[gpu]
            assert "RMMSetup" in probe["dask_cuda_plugins"]
