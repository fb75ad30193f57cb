"""``daskgraph.local.protocol`` and the UCX switches: what the embedded cluster's specs carry,
the conflict with ``daskgraph.local.security: temporary``, and UCX without a GPU (issue 33)."""

from __future__ import annotations

import dask
import pytest

from daskgraph.cluster import embedded, protocols
from daskgraph.cluster.cuda_specs import CudaWorker, dask_cuda_worker_options
from daskgraph.cluster.gpus import GPUInfo
from daskgraph.cluster.local import local_cluster, scheduler_spec, worker_options, worker_specs
from daskgraph.cluster.protocols import UCXSwitches, cluster_protocol
from daskgraph.config import SessionConfig
from daskgraph.errors import InvalidArgumentError

UCX_OPEN = {"daskgraph.local.protocol": "ucx", "daskgraph.local.security": "none"}


def test_ucx_with_temporary_security_is_an_error_naming_both_settings():
    with dask.config.set({"daskgraph.local.protocol": "ucx"}):
        with pytest.raises(InvalidArgumentError) as refused:
            embedded.shape_for(SessionConfig())  # (what Session() does first)
    err = refused.value
    assert err.protocol == ("daskgraph.local.protocol", "ucx")
    assert err.security == ("daskgraph.local.security", "temporary")
    assert "daskgraph.local.security: none" in str(err) and "no TLS" in str(err)
    with pytest.raises(InvalidArgumentError, match="carries no TLS"):
        local_cluster(protocol="ucx", virtual_gpus=0, processes=False)  # (nothing started)


def test_an_unknown_protocol_is_named():
    with pytest.raises(InvalidArgumentError, match="'udp': give one of tcp, ucx") as refused:
        cluster_protocol("udp", "none")
    assert refused.value.key == "daskgraph.local.protocol" and refused.value.found == "udp"


def test_ucx_without_distributed_ucxx_says_which_extra(monkeypatch):
    monkeypatch.setattr(protocols, "ucx_installed", lambda: False)
    with pytest.raises(ImportError, match=r"pip install -e '\.\[ucx-cu12\]'"):
        cluster_protocol("ucx", "none")
    assert cluster_protocol("tcp", "temporary") == "tcp"  # TCP never needs it


def test_the_embedded_shape_carries_protocol_and_switches(monkeypatch):
    monkeypatch.setattr(protocols, "ucx_installed", lambda: True)
    assert embedded.shape_for(SessionConfig()).protocol == "tcp"
    with dask.config.set({**UCX_OPEN, "daskgraph.local.ucx.tcp": True}):
        shape = embedded.shape_for(SessionConfig())
    assert (shape.protocol, shape.security, shape.ucx) == ("ucx", "none", UCXSwitches(tcp=True))


def test_every_worker_and_the_scheduler_listen_on_ucx_with_its_settings():
    specs = worker_specs(
        virtual_gpus=1,
        processes=True,
        cpu_in_process=True,
        protocol="ucx",
        ucx=UCXSwitches(nvlink=True),
    )
    cpu, gpu = (worker_options(s) for s in specs.values())
    assert cpu["protocol"] == gpu["protocol"] == "ucx"
    # a process worker (and its nanny, DeviceNanny) gets UCX's settings; a virtual GPU has no
    # CUDA: TCP, shared memory, loopback
    assert gpu["config"]["distributed-ucxx.environment.tls"] == "tcp,sm,self"
    assert "distributed-ucxx.nvlink" not in gpu["config"]
    assert "config" not in cpu  # a thread worker shares this process's
    assert scheduler_spec(protocol="ucx")["options"]["protocol"] == "ucx"
    tcp = worker_options(next(iter(worker_specs(processes=True).values())))
    assert "protocol" not in tcp and not any(
        k.startswith("distributed-ucxx") for k in tcp["config"]
    )


@pytest.mark.parametrize(
    "switches, gpus, expected",
    [
        (UCXSwitches(), True, {}),  # UCX picks its transports, as dask-cuda's automatic mode
        (
            UCXSwitches(tcp=True, nvlink=True),
            True,
            {"tcp": True, "nvlink": True, "create-cuda-context": True},
        ),
        (UCXSwitches(nvlink=True, cuda_copy=True), False, {"environment.tls": "tcp,sm,self"}),
        (UCXSwitches(infiniband=True, rdmacm=True), False, {"infiniband": True, "rdmacm": True}),
    ],
    ids=["auto", "nvlink", "no-gpu-no-cuda", "infiniband"],
)
def test_switches_as_distributed_ucxx_settings(switches, gpus, expected):
    environ = {"UCX_WARN_UNUSED_ENV_VARS": "y"}
    found = switches.dask_config(gpus, environ=environ)
    assert found == {f"distributed-ucxx.{k}": v for k, v in expected.items()}


def test_the_environments_ucx_tls_wins_without_a_gpu():
    assert "distributed-ucxx.environment.tls" not in UCXSwitches().dask_config(
        False, environ={"UCX_TLS": "tcp,cuda_copy"}
    )


def test_unknown_switches_are_named():
    with dask.config.set({"daskgraph.local.ucx.nvlnk": True}):
        with pytest.raises(InvalidArgumentError, match=r"unknown switches \['nvlnk'\]"):
            UCXSwitches.from_config()


def test_a_dask_cuda_worker_takes_the_protocol_and_switches():
    worker = CudaWorker("0", 2**28, 2**30, "name: NVIDIA H100")
    options = dask_cuda_worker_options(
        worker,
        name="gpu",
        host="127.0.0.1",
        resources={"GPU": 1},
        memory_limit=2**33,
        protocol="ucx",
        ucx=UCXSwitches.from_dask_cuda(enable_tcp_over_ucx=True, enable_nvlink=True),
    )
    assert options["protocol"] == "ucx"
    assert options["config"]["distributed-ucxx.nvlink"] is True
    assert options["config"]["distributed-ucxx.tcp"] is True
    plain = dask_cuda_worker_options(
        worker, name="gpu", host="127.0.0.1", resources={"GPU": 1}, memory_limit=2**33
    )
    assert "protocol" not in plain and "config" not in plain


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # (no dask-cuda here: a warning says so)
def test_only_real_gpu_workers_get_cuda_transports():
    specs = worker_specs(
        gpus=[GPUInfo("0", "NVIDIA H100", 2**34)],
        processes=True,
        protocol="ucx",
        ucx=UCXSwitches(tcp=True, nvlink=True),
    )
    cpu, gpu = (worker_options(s)["config"] for s in specs.values())
    assert gpu["distributed-ucxx.nvlink"] is True and gpu["distributed-ucxx.create-cuda-context"]
    assert cpu["distributed-ucxx.tcp"] is True and "distributed-ucxx.nvlink" not in cpu
