"""Unit tests for GPU workers from dask-cuda, without a GPU and without dask-cuda.

The embedded cluster's and a Server's worker specs for (fake) GPUs where dask-cuda is
"installed" (``daskgraph.cluster.local.dask_cuda_installed`` patched, or a fake ``dask_cuda`` in
``sys.modules``): names, resources, environment, ``GPUOptions`` as RMM pools, TLS, JSON; the
warning where dask-cuda is missing; the nanny that builds dask-cuda's plugins; and the devices
of a cluster started with ``LocalCUDACluster`` or ``dask cuda worker`` (worker records as the
scheduler makes them, with and without the workers' own answer).
"""

from __future__ import annotations

import inspect
import json
import os
import stat
import sys
import types
import warnings
from pathlib import Path
from typing import Any

import fake_dask_cuda as fake_dask_cuda_modules
import pytest
from distributed import Nanny, Security, Worker
from distributed.core import Status
from distributed.deploy.subprocess import SubprocessWorker
from distributed.scheduler import WorkerState
from fake_dask_cuda import FakeCPUAffinity, FakeRMMSetup

from daskgraph.cluster import cuda_specs
from daskgraph.cluster import local as cluster
from daskgraph.cluster.cuda_specs import CudaWorker, cuda_worker_options, dask_cuda_installed
from daskgraph.cluster.footprint import worker_settings
from daskgraph.cluster.gpus import GPUInfo
from daskgraph.cluster.local import worker_options, worker_specs
from daskgraph.cluster.nanny_setup import DeviceNanny
from daskgraph.cluster.tls import security_fields, security_from_fields
from daskgraph.cluster.topology import devices_from_workers
from daskgraph.config import GPUOptions, worker_template
from daskgraph.errors import InvalidArgumentError
from daskgraph.runtime.client.connection import cuda_probes

LOCAL = "/job:localhost/replica:0/task:0/device:"
CPU0, GPU0, GPU1 = LOCAL + "CPU:0", LOCAL + "GPU:0", LOCAL + "GPU:1"
MiB, GiB = 2**20, 2**30
H100_MEMORY = 81559 * MiB


def h100(visible_id: str = "0") -> GPUInfo:
    return GPUInfo(visible_id, "NVIDIA H100 80GB HBM3", H100_MEMORY, "00000000:19:00.0")


def gpus(n: int) -> list[GPUInfo]:
    return [h100(str(i)) for i in range(n)]


@pytest.fixture
def with_dask_cuda(monkeypatch: pytest.MonkeyPatch) -> None:
    """dask-cuda counts as installed (nothing here imports it: the nanny does)."""
    monkeypatch.setattr(cluster, "dask_cuda_installed", lambda: True)


@pytest.fixture
def tls_security(tmp_path: Path) -> Security:
    pytest.importorskip("cryptography")
    from daskgraph.cluster.tls import make_certificates, security_from_dir

    make_certificates(tmp_path)
    return security_from_dir(tmp_path)


def gpu_kwargs(specs: dict[str, dict[str, Any]], name: str = GPU0) -> dict[str, Any]:
    spec = specs[name]
    assert spec["cls"] is SubprocessWorker
    assert spec["options"]["worker_class"] == "daskgraph.cluster.nanny_setup.DeviceNanny"
    assert spec["options"]["name"] == name
    return spec["options"]["worker_kwargs"]


# -- the specs -----------------------------------------------------------------------------------
@pytest.mark.parametrize("processes", [True, False], ids=["processes", "threads"])
def test_one_dask_cuda_worker_per_gpu_named_by_its_device(with_dask_cuda, processes) -> None:
    specs = worker_specs(gpus=gpus(2), virtual_gpus=1, cpu_threads=2, processes=processes)
    assert list(specs) == [CPU0, GPU0, GPU1, LOCAL + "GPU:2"]
    for i, name in enumerate([GPU0, GPU1]):
        kwargs = gpu_kwargs(specs, name)  # a process whatever `processes` says
        assert kwargs["name"] == name  # tasks restricted by worker name land here
        assert kwargs["resources"] == {"GPU": 1}  # placement and topology see a GPU
        assert kwargs["nthreads"] == 1
        assert kwargs["host"] == "127.0.0.1"
        assert kwargs["dashboard_address"] == "127.0.0.1:0"
        assert kwargs["preload"] == ["daskgraph.cluster.worker_preload", "dask_cuda.initialize"]
        assert kwargs["preload_argv"] == [[], ["--create-cuda-context"]]
        assert kwargs["cuda_worker"] == cuda_worker_options(gpus(2), GPUOptions())[i].to_fields()
    # the CPU worker and the virtual GPU are as they were
    assert worker_options(specs[CPU0])["resources"] == {"CPU": 1}
    virtual = worker_options(specs[LOCAL + "GPU:2"])
    assert virtual["resources"] == {"GPU": 1, "VIRTUAL_GPU": 1}
    assert "cuda_worker" not in virtual
    assert specs[CPU0]["cls"] is (SubprocessWorker if processes else Worker)


def test_gpu_worker_environment(with_dask_cuda) -> None:
    specs = worker_specs(gpus=gpus(3))
    envs = [gpu_kwargs(specs, f"{LOCAL}GPU:{i}")["env"] for i in range(3)]
    assert [env["CUDA_VISIBLE_DEVICES"] for env in envs] == ["0,1,2", "1,2,0", "2,0,1"]
    for env in envs:
        # one BLAS thread, glibc's mmap threshold: set before the worker starts (DeviceNanny)
        assert (env["OMP_NUM_THREADS"], env["OPENBLAS_NUM_THREADS"]) == ("1", "1")
        assert env["MALLOC_MMAP_THRESHOLD_"] == str(32 * MiB)
        assert env["DASKGRAPH_GPU_DESCRIPTION"] == h100().describe()
        # the memory is RMMSetup's business, not the hand-built preload's
        assert "DASKGRAPH_GPU_MEMORY_LIMIT" not in env


@pytest.mark.parametrize(
    ("options", "pools"),
    [
        (GPUOptions(), [(256 * MiB, None)]),
        (GPUOptions(allow_growth=True), [(256 * MiB, None)]),
        (
            GPUOptions(per_process_gpu_memory_fraction=0.5),
            [(H100_MEMORY // 2, H100_MEMORY // 2)],
        ),
        (
            GPUOptions(per_process_gpu_memory_fraction=0.5, allow_growth=True),
            [(256 * MiB, H100_MEMORY // 2)],
        ),
        (
            GPUOptions(virtual_devices=[1024, 2048], per_process_gpu_memory_fraction=0.9),
            [(1024 * MiB, 1024 * MiB), (2048 * MiB, 2048 * MiB)],
        ),
    ],
    ids=["default", "growth", "fraction", "fraction-growth", "logical-gpus"],
)
def test_gpu_options_become_rmm_pools(with_dask_cuda, options, pools) -> None:
    specs = worker_specs(gpus=gpus(1), gpu_options=options)
    workers = [
        CudaWorker.from_fields(worker_options(spec)["cuda_worker"])
        for spec in specs.values()
        if "cuda_worker" in worker_options(spec)
    ]
    assert [(w.rmm_pool_size, w.rmm_maximum_pool_size) for w in workers] == pools
    assert list(specs) == [CPU0] + [f"{LOCAL}GPU:{i}" for i in range(len(pools))]


def test_visible_device_list_picks_and_renumbers_the_gpus(with_dask_cuda) -> None:
    specs = worker_specs(gpus=gpus(4), gpu_options=GPUOptions(visible_device_list="2,0"))
    assert list(specs) == [CPU0, GPU0, GPU1]
    visible = [gpu_kwargs(specs, name)["env"]["CUDA_VISIBLE_DEVICES"] for name in (GPU0, GPU1)]
    assert visible == ["2,0", "0,2"]


def test_memory_limits_share_the_machine_among_every_worker(with_dask_cuda) -> None:
    from distributed.system import MEMORY_LIMIT

    specs = worker_specs(gpus=gpus(2), gpu_options=GPUOptions(virtual_devices=[512, 512]))
    limits = [worker_options(spec)["memory_limit"] for spec in specs.values()]
    assert len(limits) == 5
    assert limits == [MEMORY_LIMIT // 5] * 5


def test_gpu_worker_spec_is_json_and_nanny_arguments(with_dask_cuda, tls_security) -> None:
    specs = worker_specs(gpus=gpus(2), security=tls_security, host="10.0.0.7")
    for name in (GPU0, GPU1):
        kwargs = gpu_kwargs(specs, name)
        # SubprocessWorker hands its spec to `dask spec` as JSON
        assert json.loads(json.dumps(kwargs)) == kwargs
        accepted = set(inspect.signature(Nanny.__init__).parameters)
        accepted |= set(inspect.signature(Worker.__init__).parameters)
        accepted |= set(inspect.signature(DeviceNanny.__init__).parameters)
        assert set(kwargs) <= accepted
        assert kwargs["host"] == "10.0.0.7"


def test_dask_cuda_worker_spec_options_are_cuda_specs(with_dask_cuda) -> None:
    (worker,) = cuda_worker_options(gpus(1), GPUOptions())
    spec = cluster.gpu_worker_spec(GPU0, worker, host="127.0.0.1", memory_limit=GiB)
    kwargs = dict(spec["options"]["worker_kwargs"])
    assert kwargs.pop("cuda_worker") == worker.to_fields()
    assert kwargs.pop("config") == worker_settings()  # the nanny's Dask settings for its worker
    assert kwargs.pop("template") == worker_template()  # the warm template it forks from
    expected = cuda_specs.dask_cuda_worker_options(
        worker,
        name=GPU0,
        host="127.0.0.1",
        resources={"GPU": 1},
        memory_limit=GiB,
        preload=["daskgraph.cluster.worker_preload"],
        env=kwargs["env"],
    )
    assert kwargs == expected


# -- TLS -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("dask_cuda", [True, False], ids=["dask-cuda", "hand-built"])
def test_tls_reaches_every_worker(monkeypatch, tls_security, dask_cuda: bool) -> None:
    """A tls:// Server's GPU workers are processes started from JSON: they get the Security
    as its fields, which their nanny turns back into a Security (the bug: they got none)."""
    monkeypatch.setattr(cluster, "dask_cuda_installed", lambda: dask_cuda)
    monkeypatch.setattr(cluster, "_warned_no_dask_cuda", True)
    specs = worker_specs(gpus=gpus(1), virtual_gpus=1, processes=False, security=tls_security)
    fields = gpu_kwargs(specs)["security"]
    assert fields == security_fields(tls_security)
    again = security_from_fields(json.loads(json.dumps(fields)))
    assert again.require_encryption is True
    for name in Security.__slots__:
        assert getattr(again, name) == getattr(tls_security, name), name
    assert again.get_connection_args("worker")["require_encryption"]
    # in-process workers get the object itself
    for name in (CPU0, GPU1):
        assert specs[name]["cls"] is Worker
        assert specs[name]["options"]["security"] is tls_security


def test_tls_process_workers_of_every_kind(with_dask_cuda, tls_security) -> None:
    specs = worker_specs(gpus=gpus(1), virtual_gpus=1, processes=True, security=tls_security)
    for spec in specs.values():
        assert worker_options(spec)["security"] == security_fields(tls_security)


def test_no_security_no_security_option(with_dask_cuda) -> None:
    specs = worker_specs(gpus=gpus(1), virtual_gpus=1, processes=False)
    assert gpu_kwargs(specs)["security"] is None
    assert "security" not in specs[CPU0]["options"]


def test_in_memory_certificates_go_to_private_files_not_the_command_line() -> None:
    pytest.importorskip("cryptography")
    security = Security.temporary()
    fields = security_fields(security)
    text = json.dumps(fields)
    assert "PRIVATE KEY" not in text and "BEGIN" not in text
    for name in ("tls_ca_file", "tls_worker_cert", "tls_worker_key"):
        path = Path(fields[name])
        assert path.read_text() == getattr(security, name)
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert security_from_fields(fields).get_connection_args("worker")["require_encryption"]


def test_security_with_extra_arguments_that_are_no_json() -> None:
    security = Security(extra_conn_args={"context": object()})
    with pytest.raises(InvalidArgumentError, match="extra_conn_args") as info:
        security_fields(security)
    assert info.value.field == "extra_conn_args"
    plain = Security(extra_conn_args={"retries": 3})
    assert security_from_fields(security_fields(plain)).extra_conn_args == {"retries": 3}


# -- without dask-cuda ---------------------------------------------------------------------------
@pytest.fixture
def no_dask_cuda(monkeypatch: pytest.MonkeyPatch) -> None:
    """dask-cuda missing (whatever is installed), and no warning given yet in this process."""
    for module in ("dask_cuda", "dask_cuda.plugins", "dask_cuda.utils"):
        monkeypatch.setitem(sys.modules, module, None)
    monkeypatch.setattr(cluster, "_warned_no_dask_cuda", False)


def test_real_gpus_without_dask_cuda_warn_once_and_use_daskgraphs_set_up(no_dask_cuda) -> None:
    assert not dask_cuda_installed()
    with pytest.warns(RuntimeWarning, match=r"pip install -e '\.\[cuda12\]' \(or '\.\[cuda13\]'\)"):
        specs = worker_specs(gpus=gpus(1))
    kwargs = gpu_kwargs(specs)
    assert kwargs["preload"] == ["daskgraph.cluster.worker_preload", "daskgraph.cluster.gpu_worker"]
    assert kwargs["env"]["DASKGRAPH_GPU_MEMORY_LIMIT"] == "0"
    assert "cuda_worker" not in kwargs
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        worker_specs(gpus=gpus(2))  # once per process


def test_no_warning_without_gpus_or_with_dask_cuda(no_dask_cuda, monkeypatch) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        worker_specs(virtual_gpus=2)  # virtual GPUs need neither CUDA nor dask-cuda
        monkeypatch.setattr(cluster, "dask_cuda_installed", lambda: True)
        worker_specs(gpus=gpus(1))


def test_dask_cuda_installed_sees_a_module_put_in_sys_modules(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "dask_cuda", types.ModuleType("dask_cuda"))
    assert dask_cuda_installed()
    monkeypatch.setitem(sys.modules, "dask_cuda", None)
    assert not dask_cuda_installed()


# -- the nanny builds dask-cuda's plugins --------------------------------------------------------
@pytest.fixture
def nanny_arguments(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """A fake dask-cuda, and ``Nanny.__init__`` recording what DeviceNanny gives it."""
    fake_dask_cuda_modules.install(monkeypatch, lambda device: [device, 7])
    seen: dict[str, Any] = {}

    def init(self: Nanny, *args: Any, **kwargs: Any) -> None:
        seen.update(kwargs, args=args)
        self.env = dict(kwargs.get("env") or {})
        self.pre_spawn_env = {"MALLOC_TRIM_THRESHOLD_": "65536"}

    monkeypatch.setattr(Nanny, "__init__", init)
    return seen


def test_device_nanny_builds_dask_cudas_plugins_from_the_spec(
    with_dask_cuda, nanny_arguments, tls_security
) -> None:
    options = GPUOptions(per_process_gpu_memory_fraction=0.25)
    specs = worker_specs(gpus=gpus(2), gpu_options=options, security=tls_security)
    kwargs = json.loads(json.dumps(gpu_kwargs(specs, GPU1)))  # as `dask spec` reads it
    nanny = DeviceNanny("tls://127.0.0.1:8786", **kwargs)
    affinity, rmm = nanny_arguments["plugins"]
    assert isinstance(affinity, FakeCPUAffinity)
    assert affinity.cores == [1, 7]  # GPU:1 is CUDA device 1
    assert isinstance(rmm, FakeRMMSetup)
    assert (
        rmm.kwargs["initial_pool_size"]
        == rmm.kwargs["maximum_pool_size"]
        == (int(0.25 * H100_MEMORY) // 256 * 256)
    )
    assert rmm.kwargs["external_lib_list"] == ["cupy"]
    assert "cuda_worker" not in nanny_arguments
    assert isinstance(nanny_arguments["security"], Security)
    assert nanny_arguments["security"].tls_worker_cert == tls_security.tls_worker_cert
    assert nanny_arguments["env"]["CUDA_VISIBLE_DEVICES"] == "1,0"
    assert nanny.pre_spawn_env["OMP_NUM_THREADS"] == "1"  # the spec's values win


def test_device_nanny_without_cuda_worker_adds_no_plugins(nanny_arguments) -> None:
    DeviceNanny("tcp://127.0.0.1:8786", env={"OMP_NUM_THREADS": "2"}, plugins=["mine"])
    assert nanny_arguments["plugins"] == ["mine"]
    assert nanny_arguments["security"] is None


# -- devices of a cluster started with dask-cuda -------------------------------------------------
NVML_METRICS = {"gpu-memory-total": H100_MEMORY, "gpu_utilization": 0, "gpu_memory_used": 0}


def record(
    name: Any,
    nthreads: int = 1,
    resources: dict[str, float] | None = None,
    gpu: bool = True,
    host: str = "10.0.0.1",
    port: int = 40001,
) -> tuple[str, dict[str, Any]]:
    """A worker's address and its record in ``scheduler_info()["workers"]``
    (``WorkerState.identity()``) as distributed makes it for a nanny's worker: NVML metrics
    where it sees a GPU, no ``gpu`` startup information."""
    address = f"tcp://{host}:{port}"
    ws = WorkerState(
        address=address,
        status=Status.running,
        pid=4242,
        name=name,
        nthreads=nthreads,
        memory_limit=16 * GiB,
        local_directory="/tmp/dask-scratch-space/worker-x",
        nanny=f"tcp://{host}:{port + 1000}",
        server_id=f"Worker-{port}",
        extra={},
    )
    ws.resources = dict(resources or {})
    ws.metrics = {"cpu": 0.0, "memory": 200 * MiB, **(NVML_METRICS if gpu else {})}
    return address, ws.identity()


def probe(visible: str | None, dask_cuda: bool = True) -> dict[str, Any]:
    """What cuda_worker_probe answers."""
    return {
        "cuda_visible_devices": visible,
        "dask_cuda_plugins": ["CPUAffinity", "RMMSetup"] if dask_cuda else [],
        "gpu": {"name": "NVIDIA H100 80GB HBM3", "memory-total": H100_MEMORY},
    }


def summary(devices) -> list[tuple[str, str, Any]]:
    return [(d.name, d.kind, d.restriction) for d in devices]


def test_local_cuda_cluster_workers_are_gpus_by_their_device() -> None:
    # LocalCUDACluster names each worker by the CUDA device it gives it
    workers = dict([record(1, port=40003), record(0, port=40001)])
    devices = devices_from_workers(workers)
    assert summary(devices) == [(GPU0, "gpu", 0), (GPU1, "gpu", 1)]
    assert devices[0].worker == "tcp://10.0.0.1:40001"
    assert devices[0].array_backend == "cupy"
    assert devices[0].description == "device: 0, memory: 79.6 GiB, worker: 0"


def test_local_cuda_cluster_of_some_gpus_numbers_them_from_zero() -> None:
    # LocalCUDACluster(CUDA_VISIBLE_DEVICES="3,1"): workers 3 and 1; GPU:0 is device 1
    workers = dict([record(3, port=40001), record(1, port=40003)])
    assert summary(devices_from_workers(workers)) == [(GPU0, "gpu", 1), (GPU1, "gpu", 3)]


def test_dask_cuda_worker_workers_are_numbered_by_the_device_they_own() -> None:
    # `dask cuda worker` names its workers by their address; the probe says which GPU each has
    a, a_info = record("tcp://10.0.0.1:40001", port=40001)
    b, b_info = record("tcp://10.0.0.1:40003", port=40003)
    workers = {a: a_info, b: b_info}
    devices = devices_from_workers(workers, {a: probe("1,0"), b: probe("0,1")})
    assert [(d.name, d.worker) for d in devices] == [(GPU0, b), (GPU1, a)]
    assert devices[0].description == (
        "device: 0, name: NVIDIA H100 80GB HBM3, memory: 79.6 GiB, worker: tcp://10.0.0.1:40003"
    )


def test_dask_cuda_workers_on_two_hosts() -> None:
    workers = dict([record(0, host="10.0.0.2"), record(0, host="10.0.0.1")])
    devices = devices_from_workers(workers)
    assert [(d.name, d.worker) for d in devices] == [
        (GPU0, "tcp://10.0.0.1:40001"),
        (GPU1, "tcp://10.0.0.2:40001"),
    ]


def test_a_local_cuda_cluster_beside_a_cpu_worker() -> None:
    workers = dict([record(0), record("cpu", nthreads=8, gpu=False, port=40005)])
    assert summary(devices_from_workers(workers)) == [(CPU0, "cpu", "cpu"), (GPU0, "gpu", 0)]


def test_the_probe_decides_where_the_record_cannot() -> None:
    single, single_info = record(0)  # one thread, a GPU in sight: a GPU worker, by the record
    many, many_info = record(1, nthreads=4, port=40003)  # dask cuda worker --nthreads 4
    workers = {single: single_info, many: many_info}
    assert summary(devices_from_workers(workers)) == [(CPU0, "cpu", 1), (GPU0, "gpu", 0)]
    probes = {single: probe(None, dask_cuda=False), many: probe("1,0")}
    assert summary(devices_from_workers(workers, probes)) == [(CPU0, "cpu", 0), (GPU0, "gpu", 1)]


def test_workers_with_daskgraph_names_or_resources_keep_their_rules() -> None:
    other_job = "/job:worker/replica:0/task:0/device:GPU:0"
    workers = dict(
        [
            record(other_job, resources={"GPU": 1}),
            record("big", resources={"GPU": 2}, port=40003),
            record("c", resources={"CPU": 1}, port=40005),
        ]
    )
    probes = {address: probe("0") for address in workers}  # whatever the workers say
    assert summary(devices_from_workers(workers, probes)) == [
        (CPU0, "cpu", "c"),
        (GPU0, "gpu", "big"),
        (GPU1, "gpu", "big"),
        (other_job, "gpu", other_job),
    ]


# -- asking the workers --------------------------------------------------------------------------
class FakeClient:
    """``client.run`` as distributed's, answering from a table; records who was asked."""

    def __init__(self, answers: dict[str, Any], fails: bool = False) -> None:
        self.answers = answers
        self.fails = fails
        self.asked: list[list[str]] = []

    def run(self, function, *, workers: list[str], on_error: str = "raise") -> dict[str, Any]:
        assert function is cuda_specs.cuda_worker_probe
        assert on_error == "return"
        self.asked.append(list(workers))
        if self.fails:
            raise OSError("scheduler gone")
        return {w: self.answers[w] for w in workers if w in self.answers}


def test_probes_ask_workers_daskgraph_does_not_map_or_that_claim_a_gpu_each_once() -> None:
    gpu, gpu_info = record(0)
    claims, claims_info = record("g", resources={"GPU": 1}, port=40005)
    workers = dict(
        [
            (gpu, gpu_info),
            record(CPU0, nthreads=2, resources={"CPU": 1}, port=40003),
            (claims, claims_info),
            record("v", resources={"GPU": 1, "VIRTUAL_GPU": 1}, port=40007),
        ]
    )
    client = FakeClient({gpu: probe("0")})
    known: dict[str, Any] = {}
    assert cuda_probes(client, workers, known) == {gpu: probe("0")}
    assert client.asked == [[gpu, claims]]  # not the CPU worker, not the virtual GPU
    assert cuda_probes(client, workers, known) == {gpu: probe("0")}
    assert client.asked == [[gpu, claims]]  # asked once
    assert cuda_probes(client, {}, known) == {}
    assert known == {}  # gone workers are forgotten


def test_a_worker_that_cannot_answer_is_judged_by_its_record() -> None:
    lacking, lacking_info = record(0)  # daskgraph not installed there
    other, other_info = record(1, port=40003)
    workers = {lacking: lacking_info, other: other_info}
    error = ModuleNotFoundError("No module named 'daskgraph'")
    client = FakeClient({lacking: error, other: probe("1")})
    known: dict[str, Any] = {}
    probes = cuda_probes(client, workers, known)
    assert probes == {other: probe("1")}
    assert known[lacking] is None  # not asked again
    assert summary(devices_from_workers(workers, probes)) == [(GPU0, "gpu", 0), (GPU1, "gpu", 1)]


def test_a_failed_run_falls_back_to_the_records() -> None:
    workers = dict([record(0)])
    assert cuda_probes(FakeClient({}, fails=True), workers) == {}
    assert summary(devices_from_workers(workers, {})) == [(GPU0, "gpu", 0)]


def test_nothing_to_ask_asks_nothing() -> None:
    client = FakeClient({})
    assert cuda_probes(client, dict([record(CPU0, resources={"CPU": 1})])) == {}
    assert client.asked == []


def test_environment_is_untouched_by_spec_building(with_dask_cuda) -> None:
    before = dict(os.environ)
    worker_specs(gpus=gpus(2))
    assert dict(os.environ) == before
