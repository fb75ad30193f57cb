"""Unit tests for daskgraph.cluster.cuda_specs: TensorFlow's GPUOptions as dask-cuda worker options.

No GPU, no CUDA and no dask-cuda needed: GPUs are :class:`GPUInfo` records, dask-cuda's
plugins are fakes that record their arguments (the tests against the real dask-cuda are
skipped without it), and worker records are built as the scheduler builds them
(``WorkerState.identity()``), with what distributed puts there on a GPU machine.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import inspect
import logging
import sys
import types
from typing import Any

import fake_dask_cuda as fake_dask_cuda_modules
import pytest
from distributed import Nanny, Security, Worker
from distributed.core import Status
from distributed.scheduler import WorkerState
from fake_dask_cuda import FakeCPUAffinity, FakeRMMSetup

from daskgraph.cluster import cuda_specs
from daskgraph.cluster.cuda_specs import (
    INITIAL_POOL_SIZE,
    CudaWorker,
    cuda_worker_description,
    cuda_worker_options,
    cuda_worker_probe,
    dask_cuda_plugins,
    dask_cuda_worker_spec,
    is_cuda_worker,
)
from daskgraph.cluster.gpus import GPUInfo
from daskgraph.config import GPUOptions
from daskgraph.errors import InvalidArgumentError

MiB = 2**20
GiB = 2**30
#: what NVML reports for an H100 SXM 80GB (81559 MiB)
H100_MEMORY = 81559 * MiB
GPU0 = "/job:localhost/replica:0/task:0/device:GPU:0"


def h100(visible_id: str = "0", bus: str = "00000000:19:00.0") -> GPUInfo:
    return GPUInfo(visible_id, "NVIDIA H100 80GB HBM3", H100_MEMORY, bus)


def gpus(n: int) -> list[GPUInfo]:
    return [h100(str(i), f"00000000:{0x19 + i:02X}:00.0") for i in range(n)]


def summary(workers: list[CudaWorker]) -> list[tuple[str, int | None, int | None]]:
    return [(w.cuda_visible_devices, w.rmm_pool_size, w.rmm_maximum_pool_size) for w in workers]


def dask_cuda_rotation(i: int, visible: list[str]) -> str:
    """``dask_cuda.utils.cuda_visible_devices(i, visible)`` (dask-cuda 26.10), verbatim."""
    visible = list(visible)
    rotated = visible[i:] + visible[:i]
    return ",".join(map(str, rotated))


# -- one worker per GPU, in device order ---------------------------------------------------------
def test_one_worker_per_gpu_each_seeing_its_gpu_first() -> None:
    workers = cuda_worker_options(gpus(3), GPUOptions())
    assert [w.cuda_visible_devices for w in workers] == ["0,1,2", "1,2,0", "2,0,1"]
    assert [w.visible_id for w in workers] == ["0", "1", "2"]
    assert [w.description for w in workers] == [g.describe() for g in gpus(3)]
    assert all(w.rmm_allocator_external_lib_list == ("cupy",) for w in workers)


@pytest.mark.parametrize("n", [1, 2, 4, 8])
def test_rotation_is_dask_cudas(n: int) -> None:
    ids = [str(i) for i in range(n)]
    workers = cuda_worker_options(gpus(n), GPUOptions())
    assert [w.cuda_visible_devices for w in workers] == [
        dask_cuda_rotation(i, ids) for i in range(n)
    ]


def test_uuids_rotate_and_address_nvml_by_uuid() -> None:
    uuids = ["GPU-5e1a9d3c-0000", "GPU-77c0b2aa-0001"]
    found = [GPUInfo(u, "NVIDIA A100-SXM4-40GB", 40 * GiB) for u in uuids]
    workers = cuda_worker_options(found, GPUOptions())
    assert [w.cuda_visible_devices for w in workers] == [
        "GPU-5e1a9d3c-0000,GPU-77c0b2aa-0001",
        "GPU-77c0b2aa-0001,GPU-5e1a9d3c-0000",
    ]
    assert [w.nvml_device for w in workers] == uuids
    assert [w.nvml_device for w in cuda_worker_options(gpus(2), GPUOptions())] == [0, 1]


def test_no_gpus_no_workers() -> None:
    assert cuda_worker_options([], GPUOptions()) == []
    assert cuda_worker_options([], GPUOptions(virtual_devices=[1024])) == []


def test_cuda_worker_is_frozen_plain_data() -> None:
    (worker,) = cuda_worker_options(gpus(1), GPUOptions())
    with pytest.raises(dataclasses.FrozenInstanceError):
        worker.rmm_pool_size = 0  # type: ignore[misc]
    assert CudaWorker(**dataclasses.asdict(worker)) == worker


# -- visible_device_list -------------------------------------------------------------------------
def test_visible_device_list_maps_gpu_n_to_the_listed_gpus_in_order() -> None:
    workers = cuda_worker_options(gpus(4), GPUOptions(visible_device_list="2,0"))
    # GPU:0 is the third GPU, GPU:1 the first; the workers see only the listed GPUs, as
    # LocalCUDACluster(CUDA_VISIBLE_DEVICES="2,0") would give them
    assert [w.cuda_visible_devices for w in workers] == ["2,0", "0,2"]
    assert [w.visible_id for w in workers] == ["2", "0"]
    assert [w.description for w in workers] == [gpus(4)[2].describe(), gpus(4)[0].describe()]


def test_visible_device_list_picks_by_position_not_by_id() -> None:
    # this process sees physical GPUs 3 and 5 (CUDA_VISIBLE_DEVICES=3,5): "1" is the second
    found = [h100("3"), h100("5")]
    (worker,) = cuda_worker_options(found, GPUOptions(visible_device_list="1"))
    assert worker.cuda_visible_devices == "5"


def test_visible_device_list_ignores_gpus_that_are_not_there() -> None:
    workers = cuda_worker_options(gpus(2), GPUOptions(visible_device_list="1, 7,0"))
    assert [w.cuda_visible_devices for w in workers] == ["1,0", "0,1"]
    assert cuda_worker_options(gpus(2), GPUOptions(visible_device_list="5")) == []


def test_visible_device_list_may_not_name_a_gpu_twice() -> None:
    with pytest.raises(ValueError, match="each once") as info:
        cuda_worker_options(gpus(2), GPUOptions(visible_device_list="0,1,0"))
    assert isinstance(info.value, InvalidArgumentError)
    assert (info.value.field, info.value.value) == ("gpu_options.visible_device_list", "0,1,0")
    with pytest.raises(InvalidArgumentError, match="GPU indices"):
        cuda_worker_options(gpus(2), GPUOptions(visible_device_list="0,gpu1"))


# -- memory: no cap, fraction, logical GPUs, growth ----------------------------------------------
@pytest.mark.parametrize("allow_growth", [False, True])
def test_no_cap_starts_small_and_grows_without_maximum(allow_growth: bool) -> None:
    workers = cuda_worker_options(gpus(2), GPUOptions(allow_growth=allow_growth))
    assert summary(workers) == [("0,1", 256 * MiB, None), ("1,0", 256 * MiB, None)]
    assert INITIAL_POOL_SIZE == 256 * MiB


def test_fraction_without_growth_reserves_the_cap_up_front() -> None:
    (worker,) = cuda_worker_options(gpus(1), GPUOptions(per_process_gpu_memory_fraction=0.5))
    assert worker.rmm_pool_size == worker.rmm_maximum_pool_size == H100_MEMORY // 2


def test_fraction_with_growth_starts_at_256_mib_and_grows_to_the_cap() -> None:
    options = GPUOptions(per_process_gpu_memory_fraction=0.25, allow_growth=True)
    (worker,) = cuda_worker_options(gpus(1), options)
    assert (worker.rmm_pool_size, worker.rmm_maximum_pool_size) == (256 * MiB, H100_MEMORY // 4)


@pytest.mark.parametrize("fraction", [0.1, 1 / 3, 0.333, 0.7, 0.9, 1.0])
@pytest.mark.parametrize("total", [H100_MEMORY, 40 * GiB - 1234567, 16 * GiB + 511])
def test_fraction_rounds_down_to_rmms_256_byte_alignment(fraction: float, total: int) -> None:
    (worker,) = cuda_worker_options(
        [GPUInfo("0", "GPU", total)], GPUOptions(per_process_gpu_memory_fraction=fraction)
    )
    cap = worker.rmm_maximum_pool_size
    assert cap is not None
    assert cap % 256 == 0
    assert fraction * total - 256 < cap <= fraction * total
    assert worker.rmm_pool_size == cap


def test_fraction_takes_each_gpus_own_memory() -> None:
    found = [GPUInfo("0", "NVIDIA H100", 80 * GiB), GPUInfo("1", "NVIDIA A10", 24 * GiB)]
    workers = cuda_worker_options(found, GPUOptions(per_process_gpu_memory_fraction=0.5))
    assert [w.rmm_maximum_pool_size for w in workers] == [40 * GiB, 12 * GiB]


def test_tiny_fraction_still_caps() -> None:
    # a cap that rounds to 0 bytes must not turn into dask-cuda's "no maximum" (0 -> None)
    (worker,) = cuda_worker_options(
        [GPUInfo("0", "GPU", 1000)], GPUOptions(per_process_gpu_memory_fraction=0.1)
    )
    assert worker.rmm_maximum_pool_size == 256


def test_virtual_devices_split_each_gpu_into_capped_logical_gpus() -> None:
    workers = cuda_worker_options(gpus(2), GPUOptions(virtual_devices=[1024, 2048]))
    # logical GPUs of one physical GPU next to each other; each reserves its cap
    assert summary(workers) == [
        ("0,1", 1024 * MiB, 1024 * MiB),
        ("0,1", 2048 * MiB, 2048 * MiB),
        ("1,0", 1024 * MiB, 1024 * MiB),
        ("1,0", 2048 * MiB, 2048 * MiB),
    ]
    assert [w.description for w in workers] == [gpus(2)[0].describe()] * 2 + [
        gpus(2)[1].describe()
    ] * 2


def test_virtual_devices_with_growth_start_at_256_mib_or_their_cap() -> None:
    options = GPUOptions(virtual_devices=[100, 4096], allow_growth=True)
    workers = cuda_worker_options(gpus(1), options)
    assert summary(workers) == [("0", 100 * MiB, 100 * MiB), ("0", 256 * MiB, 4096 * MiB)]


def test_virtual_devices_win_over_the_fraction() -> None:
    options = GPUOptions(virtual_devices=[512], per_process_gpu_memory_fraction=0.9)
    (worker,) = cuda_worker_options(gpus(1), options)
    assert worker.rmm_maximum_pool_size == 512 * MiB


def test_virtual_devices_with_visible_device_list() -> None:
    options = GPUOptions(visible_device_list="1", virtual_devices=[1024, 1024])
    workers = cuda_worker_options(gpus(3), options)
    assert summary(workers) == [("1", 1024 * MiB, 1024 * MiB)] * 2


def test_pool_sizes_are_rmm_aligned() -> None:
    for options in [
        GPUOptions(),
        GPUOptions(per_process_gpu_memory_fraction=0.37, allow_growth=True),
        GPUOptions(virtual_devices=[1, 3, 1000]),
    ]:
        for w in cuda_worker_options(gpus(2), options):
            for size in (w.rmm_pool_size, w.rmm_maximum_pool_size):
                assert size is None or (size > 0 and size % 256 == 0)


# -- the worker spec (dask-cuda faked) -----------------------------------------------------------
#: ``dask_cuda.plugins.RMMSetup``'s arguments (dask-cuda 26.10)
RMM_SETUP_ARGS = (
    "initial_pool_size",
    "maximum_pool_size",
    "managed_memory",
    "async_alloc",
    "release_threshold",
    "log_directory",
    "track_allocations",
    "external_lib_list",
)


@pytest.fixture
def fake_dask_cuda(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """dask_cuda, dask_cuda.plugins and dask_cuda.utils as fakes; returns the devices whose
    CPU affinity was asked."""
    asked: list[Any] = []

    def get_cpu_affinity(device_index: Any = None) -> list[int]:
        asked.append(device_index)
        return [0, 1, 2, 3]

    fake_dask_cuda_modules.install(monkeypatch, get_cpu_affinity)
    return asked


def spec_for(worker: CudaWorker, **kwargs: Any) -> dict[str, Any]:
    defaults: dict[str, Any] = {
        "name": GPU0,
        "host": "127.0.0.1",
        "resources": {"GPU": 1},
        "memory_limit": 16 * GiB,
    }
    return dask_cuda_worker_spec(worker, **{**defaults, **kwargs})


def test_spec_is_a_nanny_seeing_its_gpu_with_daskgraphs_name(fake_dask_cuda: list[Any]) -> None:
    _, worker = cuda_worker_options(gpus(2), GPUOptions())
    spec = spec_for(worker)
    assert spec["cls"] is Nanny
    options = spec["options"]
    assert options["name"] == GPU0
    assert options["resources"] == {"GPU": 1}
    assert options["nthreads"] == 1
    assert options["host"] == "127.0.0.1"
    assert options["dashboard_address"] == "127.0.0.1:0"
    assert options["memory_limit"] == 16 * GiB
    assert options["env"] == {"CUDA_VISIBLE_DEVICES": "1,0"}
    assert options["silence_logs"] == logging.ERROR
    assert options["security"] is None
    # dask_cuda.initialize creates the worker's CUDA context, as LocalCUDACluster's workers do
    assert options["preload"] == ["dask_cuda.initialize"]
    assert options["preload_argv"] == [["--create-cuda-context"]]


def test_spec_carries_rmm_setup_with_the_pool_and_cupy(fake_dask_cuda: list[Any]) -> None:
    options = GPUOptions(per_process_gpu_memory_fraction=0.5, allow_growth=True)
    (worker,) = cuda_worker_options(gpus(1), options)
    affinity, rmm = spec_for(worker)["options"]["plugins"]
    assert isinstance(affinity, FakeCPUAffinity)
    assert affinity.cores == [0, 1, 2, 3]
    assert isinstance(rmm, FakeRMMSetup)
    assert set(rmm.kwargs) == set(RMM_SETUP_ARGS)
    assert rmm.kwargs == {
        "initial_pool_size": 256 * MiB,
        "maximum_pool_size": H100_MEMORY // 2,
        "managed_memory": False,
        "async_alloc": False,
        "release_threshold": None,
        "log_directory": None,
        "track_allocations": False,
        "external_lib_list": ["cupy"],
    }


def test_cpu_affinity_asks_nvml_for_the_workers_own_gpu(fake_dask_cuda: list[Any]) -> None:
    for worker in cuda_worker_options(gpus(3), GPUOptions(visible_device_list="2,1")):
        spec_for(worker)
    assert fake_dask_cuda == [2, 1]  # dask_cuda.utils.nvml_device_index(0, visible)
    uuid = GPUInfo("GPU-5e1a9d3c", "NVIDIA A100", 40 * GiB)
    (worker,) = cuda_worker_options([uuid], GPUOptions())
    spec_for(worker)
    assert fake_dask_cuda[-1] == "GPU-5e1a9d3c"


def test_cpu_affinity_can_be_left_out(fake_dask_cuda: list[Any]) -> None:
    (worker,) = cuda_worker_options(gpus(1), GPUOptions())
    plugins = spec_for(worker, cpu_affinity=False)["options"]["plugins"]
    assert [type(p) for p in plugins] == [FakeRMMSetup]
    assert fake_dask_cuda == []  # NVML not asked


def test_spec_keeps_daskgraphs_preloads_first_and_environment(fake_dask_cuda: list[Any]) -> None:
    _, worker = cuda_worker_options(gpus(2), GPUOptions())
    env = {"OMP_NUM_THREADS": "1", "CUDA_VISIBLE_DEVICES": "ignored"}
    spec = spec_for(
        worker,
        preload=["daskgraph.cluster.worker_preload"],
        env=env,
        nthreads=2,
        dashboard_address=":0",
        silence_logs=logging.WARNING,
    )
    options = spec["options"]
    assert options["preload"] == ["daskgraph.cluster.worker_preload", "dask_cuda.initialize"]
    # one argv per preload: dask-cuda's flag goes to its own preload only
    assert options["preload_argv"] == [[], ["--create-cuda-context"]]
    assert options["env"] == {"OMP_NUM_THREADS": "1", "CUDA_VISIBLE_DEVICES": "1,0"}
    assert env["CUDA_VISIBLE_DEVICES"] == "ignored"  # the caller's dict is left alone
    assert (options["nthreads"], options["dashboard_address"]) == (2, ":0")
    assert options["silence_logs"] == logging.WARNING


def test_spec_takes_another_nanny_class(fake_dask_cuda: list[Any]) -> None:
    from daskgraph.cluster.nanny_setup import DeviceNanny

    (worker,) = cuda_worker_options(gpus(1), GPUOptions())
    assert spec_for(worker, nanny_class=DeviceNanny)["cls"] is DeviceNanny


def test_spec_options_are_all_nanny_or_worker_arguments(fake_dask_cuda: list[Any]) -> None:
    (worker,) = cuda_worker_options(gpus(1), GPUOptions())
    options = spec_for(worker, security=Security())["options"]
    accepted = set(inspect.signature(Nanny.__init__).parameters)
    accepted |= set(inspect.signature(Worker.__init__).parameters)
    assert set(options) <= accepted


def test_tls_security_passes_through_to_the_gpu_worker(
    fake_dask_cuda: list[Any], tmp_path: Any
) -> None:
    pytest.importorskip("cryptography")
    from daskgraph.cluster.tls import make_certificates, security_from_dir

    make_certificates(tmp_path)
    security = security_from_dir(tmp_path)
    workers = cuda_worker_options(gpus(2), GPUOptions())
    specs = [spec_for(w, security=security) for w in workers]
    assert all(spec["options"]["security"] is security for spec in specs)
    assert security.require_encryption
    assert security.get_connection_args("worker")["require_encryption"]


def test_spec_without_dask_cuda_names_the_extras(monkeypatch: pytest.MonkeyPatch) -> None:
    # None in sys.modules makes ``import dask_cuda...`` fail, whether or not it is installed
    for module in ("dask_cuda", "dask_cuda.plugins", "dask_cuda.utils"):
        monkeypatch.setitem(sys.modules, module, None)
    (worker,) = cuda_worker_options(gpus(1), GPUOptions())
    with pytest.raises(ImportError, match=r"pip install -e '\.\[cuda12\]' \(or '\.\[cuda13\]'\)"):
        spec_for(worker)
    with pytest.raises(ImportError, match="dask-cuda"):
        dask_cuda_plugins(worker, cpu_affinity=False)


def test_module_imports_without_dask_cuda_cupy_or_rmm() -> None:
    import subprocess

    code = (
        "import sys\n"
        "for m in ('dask_cuda', 'cupy', 'rmm'): sys.modules[m] = None\n"
        "import daskgraph.cluster.cuda_specs\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "ok"


# -- the spec with the real dask-cuda (skipped without it) ---------------------------------------
def test_real_dask_cuda_plugins_set_up_rmm_and_cupy(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("dask_cuda")
    from dask_cuda.plugins import RMMSetup

    calls: list[tuple[str, dict[str, Any]]] = []
    rmm = types.ModuleType("rmm")
    rmm.reinitialize = lambda **kw: calls.append(("rmm.reinitialize", kw))  # type: ignore[attr-defined]
    allocators = types.ModuleType("rmm.allocators")
    rmm_cupy = types.ModuleType("rmm.allocators.cupy")
    rmm_cupy.rmm_cupy_allocator = object()  # type: ignore[attr-defined]
    cupy = types.ModuleType("cupy")
    cupy.cuda = types.SimpleNamespace(  # type: ignore[attr-defined]
        set_allocator=lambda a: calls.append(("cupy.cuda.set_allocator", {"allocator": a}))
    )
    for module in (rmm, allocators, rmm_cupy, cupy):
        monkeypatch.setitem(sys.modules, module.__name__, module)

    options = GPUOptions(virtual_devices=[1024], allow_growth=True)
    _, worker = cuda_worker_options(gpus(2), options)
    assert worker.cuda_visible_devices == "1,0"
    spec = spec_for(worker, cpu_affinity=False)
    (plugin,) = spec["options"]["plugins"]
    assert type(plugin) is RMMSetup
    # the names the fake-dask-cuda tests check are the real plugin's
    assert set(inspect.signature(RMMSetup.__init__).parameters) - {"self"} == set(RMM_SETUP_ARGS)
    plugin.setup(worker=None)
    assert calls[0] == (
        "rmm.reinitialize",
        {
            "pool_allocator": True,
            "managed_memory": False,
            "initial_pool_size": 256 * MiB,
            "maximum_pool_size": 1024 * MiB,
            "logging": False,
            "log_file_name": None,
        },
    )
    assert calls[1] == ("cupy.cuda.set_allocator", {"allocator": rmm_cupy.rmm_cupy_allocator})


def test_real_dask_cuda_rotation_matches() -> None:
    pytest.importorskip("dask_cuda")
    from dask_cuda.utils import cuda_visible_devices, nvml_device_index

    ids = ["3", "0", "7", "1"]
    found = [h100(i) for i in ids]
    for i, w in enumerate(cuda_worker_options(found, GPUOptions())):
        assert w.cuda_visible_devices == cuda_visible_devices(i, ids)
        assert w.nvml_device == nvml_device_index(0, w.cuda_visible_devices)


# -- recognising the workers of a cluster the user started ---------------------------------------
H100_NVML = {"name": "NVIDIA H100 80GB HBM3", "memory-total": H100_MEMORY}
#: what distributed's SystemMonitor adds to every worker's metrics where NVML sees a GPU
NVML_METRICS = {"gpu-memory-total": H100_MEMORY, "gpu_utilization": 0, "gpu_memory_used": 500 * MiB}


def record(
    name: Any = 0,
    nthreads: int = 1,
    resources: dict[str, float] | None = None,
    nvml_metrics: bool = True,
    startup_gpu: bool = False,
) -> dict[str, Any]:
    """A worker's record in ``scheduler_info()["workers"]``: ``WorkerState.identity()``.

    Measured with distributed 2026.7.1 (and dask-cuda 26.10) against a fake NVML: a worker
    started by a nanny (LocalCUDACluster's, ``dask cuda worker``'s, a process LocalCluster's)
    has the NVML metrics but no ``gpu`` startup information; a worker started in the
    scheduler's process has both.
    """
    extra = {"gpu": dict(H100_NVML)} if startup_gpu else {}
    ws = WorkerState(
        address="tcp://127.0.0.1:40001",
        status=Status.running,
        pid=4242,
        name=name,
        nthreads=nthreads,
        memory_limit=16 * GiB,
        local_directory="/tmp/dask-scratch-space/worker-x",
        nanny="tcp://127.0.0.1:40000",
        server_id="Worker-3f0c",
        extra=extra,
    )
    ws.resources = dict(resources or {})
    ws.metrics = {
        "task_counts": {},
        "managed_bytes": 0,
        "spilled_bytes": {"memory": 0, "disk": 0},
        "cpu": 0.0,
        "memory": 200 * MiB,
        "num_fds": 30,
        **(NVML_METRICS if nvml_metrics else {}),
    }
    return ws.identity()


def test_local_cuda_cluster_and_dask_cuda_worker_workers_are_gpus() -> None:
    assert is_cuda_worker(record(name=0))  # LocalCUDACluster: named by its device
    assert is_cuda_worker(record(name="tcp://127.0.0.1:40001"))  # dask cuda worker
    assert is_cuda_worker(record(name=1, startup_gpu=True))  # a worker in this process


def test_multi_threaded_local_cluster_worker_on_a_gpu_machine_is_a_cpu() -> None:
    assert not is_cuda_worker(record(nthreads=8))
    assert not is_cuda_worker(record(nthreads=8, startup_gpu=True))


def test_worker_without_a_gpu_is_a_cpu() -> None:
    assert not is_cuda_worker(record(nvml_metrics=False))


def test_workers_with_device_resources_or_names_are_mapped_by_them() -> None:
    assert not is_cuda_worker(record(resources={"GPU": 1}))
    assert not is_cuda_worker(record(resources={"CPU": 1}))
    assert not is_cuda_worker(record(name=GPU0, resources={"GPU": 1}))
    assert is_cuda_worker(record(resources={"MEMORY": 1e9}))  # other resources do not count


def test_the_probe_tells_dask_cuda_workers_apart_exactly() -> None:
    dask_cuda = {"cuda_visible_devices": "1,0", "dask_cuda_plugins": ["CPUAffinity", "RMMSetup"]}
    plain = {"cuda_visible_devices": None, "dask_cuda_plugins": []}
    # a single-threaded LocalCluster worker on a GPU machine: the record alone cannot tell
    assert is_cuda_worker(record(nthreads=1))
    assert not is_cuda_worker(record(nthreads=1), plain)
    # a dask cuda worker --nthreads 4
    assert is_cuda_worker(record(nthreads=4), dask_cuda)
    assert not is_cuda_worker(record(resources={"GPU": 2}), dask_cuda)


def test_description_from_the_record_and_the_probe() -> None:
    assert cuda_worker_description(record()) == "memory: 79.6 GiB"
    assert cuda_worker_description(record(startup_gpu=True)) == h100().describe().split(", pci")[0]
    probe = {"dask_cuda_plugins": ["RMMSetup"], "gpu": dict(H100_NVML)}
    assert (
        cuda_worker_description(record(), probe) == "name: NVIDIA H100 80GB HBM3, memory: 79.6 GiB"
    )
    assert cuda_worker_description(record(), {"gpu": None}) == "memory: 79.6 GiB"
    assert cuda_worker_description(record(nvml_metrics=False)) == ""


def test_probe_reports_dask_cuda_plugins_visible_devices_and_gpu(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from distributed.diagnostics import nvml

    rmm_setup = type("RMMSetup", (), {"__module__": "dask_cuda.plugins"})
    affinity = type("CPUAffinity", (), {"__module__": "dask_cuda.plugins"})
    shuffle = type("ShuffleWorkerPlugin", (), {"__module__": "distributed.shuffle._worker_plugin"})
    worker = types.SimpleNamespace(
        plugins={"shuffle": shuffle(), "RMMSetup-1": rmm_setup(), "CPUAffinity-2": affinity()}
    )
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1,0")
    monkeypatch.setattr(nvml, "device_get_count", lambda: 1)
    monkeypatch.setattr(nvml, "one_time", lambda: dict(H100_NVML))
    has_cupy = importlib.util.find_spec("cupy") is not None
    assert cuda_worker_probe(worker) == {
        "cuda_visible_devices": "1,0",
        "cupy": has_cupy,
        "dask_cuda_plugins": ["CPUAffinity", "RMMSetup"],
        "gpu": H100_NVML,
    }
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    monkeypatch.setattr(nvml, "device_get_count", lambda: 0)
    assert cuda_worker_probe(types.SimpleNamespace(plugins={})) == {
        "cuda_visible_devices": None,
        "cupy": has_cupy,
        "dask_cuda_plugins": [],
        "gpu": None,
    }


def test_public_functions_are_documented() -> None:
    for name in cuda_specs.__all__:
        obj = getattr(cuda_specs, name)
        if inspect.isfunction(obj):
            assert obj.__doc__ and ">>>" in obj.__doc__, name
