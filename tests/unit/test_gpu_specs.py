"""Unit tests for real-GPU support that need no GPU: worker specs of GPU workers set up
without dask-cuda (daskgraph.cluster.gpu_worker; dask-cuda's are in test_dask_cuda_cluster.py), NVML
discovery, the GPU worker's memory set-up, and out-of-memory errors.

Everything here is pure data or runs against fakes: GPUs are :class:`GPUInfo` records, NVML is a
fake ``pynvml`` module, RMM and CuPy are fake modules that behave as the real ones do where it
matters (RMM's pool sizes must be multiples of 256 bytes, CuPy's pool rounds requests up to 512
bytes), and an out-of-memory error is raised by a hand-made kernel. No cluster is started.
"""

from __future__ import annotations

import logging
import pickle
import sys
import types
from typing import Any

import numpy as np
import pytest
from distributed import Worker
from distributed.deploy.subprocess import SubprocessWorker

from daskgraph.cluster import gpu_worker, gpus
from daskgraph.cluster import local as cluster
from daskgraph.cluster.cuda_specs import cuda_worker_options
from daskgraph.cluster.gpu_worker import configure_memory, memory_settings
from daskgraph.cluster.gpus import GPUInfo, parse_visible_devices, rotate, visible_gpus
from daskgraph.cluster.local import gpu_worker_env, worker_options, worker_specs
from daskgraph.cluster.topology import devices_from_workers
from daskgraph.config import GPUOptions, SessionConfig
from daskgraph.errors import ResourceExhaustedError
from daskgraph.runtime.program import Instruction, PartitionProgram, RunStep
from daskgraph.runtime.worker.execution import RunFailure, execute_partition

LOCAL = "/job:localhost/replica:0/task:0/device:"
CPU0 = LOCAL + "CPU:0"
GiB = 2**30
MiB = 2**20
#: what NVML reports for an H100 SXM 80GB (81559 MiB)
H100_MEMORY = 81559 * MiB


def h100(visible_id: str = "0", bus: str = "00000000:19:00.0") -> GPUInfo:
    return GPUInfo(visible_id, "NVIDIA H100 80GB HBM3", H100_MEMORY, bus)


@pytest.fixture(autouse=True)
def _without_dask_cuda(monkeypatch: pytest.MonkeyPatch) -> None:
    """The specs here are those of GPU workers set up without dask-cuda, whether or not it is
    installed; the warning that says so is tested with the dask-cuda specs."""
    monkeypatch.setattr(cluster, "dask_cuda_installed", lambda: False)
    monkeypatch.setattr(cluster, "_warned_no_dask_cuda", True)


def gpu_worker_envs(found: list[GPUInfo], options: GPUOptions) -> list[dict[str, str]]:
    """The environment of each GPU worker set up without dask-cuda, in device order."""
    return [gpu_worker_env(w, options.allow_growth) for w in cuda_worker_options(found, options)]


def gpu_envs(specs: dict[str, dict[str, Any]]) -> dict[str, dict[str, str]]:
    """Worker name -> environment, for the real GPU workers."""
    return {
        name: worker_options(spec)["env"]
        for name, spec in specs.items()
        if "CUDA_VISIBLE_DEVICES" in worker_options(spec).get("env", {})
    }


# -- worker specs for real GPUs -----------------------------------------------------------------
def test_real_gpus_come_first_then_virtual_gpus() -> None:
    specs = worker_specs(gpus=[h100("0"), h100("1")], virtual_gpus=2, cpu_threads=2)
    assert list(specs) == [CPU0] + [f"{LOCAL}GPU:{i}" for i in range(4)]
    resources = [worker_options(spec)["resources"] for spec in specs.values()]
    assert resources == [
        {"CPU": 1},
        {"GPU": 1},
        {"GPU": 1},
        {"GPU": 1, "VIRTUAL_GPU": 1},
        {"GPU": 1, "VIRTUAL_GPU": 1},
    ]
    assert [worker_options(spec)["nthreads"] for spec in specs.values()] == [2, 1, 1, 1, 1]
    assert list(gpu_envs(specs)) == [LOCAL + "GPU:0", LOCAL + "GPU:1"]


@pytest.mark.parametrize("processes", [False, True], ids=["threads", "processes"])
def test_gpu_workers_are_always_nanny_processes(processes: bool) -> None:
    specs = worker_specs(gpus=[h100()], virtual_gpus=1, processes=processes)
    gpu = specs[LOCAL + "GPU:0"]
    assert gpu["cls"] is SubprocessWorker
    assert gpu["options"]["worker_class"] == "daskgraph.cluster.nanny_setup.DeviceNanny"
    assert gpu["options"]["name"] == LOCAL + "GPU:0"
    options = worker_options(gpu)
    assert options["name"] == LOCAL + "GPU:0"
    assert options["preload"] == [
        "daskgraph.cluster.worker_preload",
        "daskgraph.cluster.gpu_worker",
    ]
    assert options["host"] == "127.0.0.1"
    assert options["silence_logs"] == logging.ERROR
    # the CPU worker and the virtual GPU follow `processes`, with no GPU set-up
    expected_cls = SubprocessWorker if processes else Worker
    for name in (CPU0, LOCAL + "GPU:1"):
        assert specs[name]["cls"] is expected_cls
        assert "daskgraph.cluster.gpu_worker" not in worker_options(specs[name]).get("preload", [])
        assert "CUDA_VISIBLE_DEVICES" not in worker_options(specs[name]).get("env", {})


def test_cuda_visible_devices_put_each_workers_gpu_first() -> None:
    specs = worker_specs(gpus=[h100("0"), h100("1"), h100("2")])
    envs = gpu_envs(specs)
    assert [env["CUDA_VISIBLE_DEVICES"] for env in envs.values()] == ["0,1,2", "1,2,0", "2,0,1"]


def test_cuda_visible_devices_keep_uuids() -> None:
    found = [h100("GPU-aaaa"), h100("GPU-bbbb")]
    envs = gpu_worker_envs(found, GPUOptions())
    assert [env["CUDA_VISIBLE_DEVICES"] for env in envs] == [
        "GPU-aaaa,GPU-bbbb",
        "GPU-bbbb,GPU-aaaa",
    ]


@pytest.mark.parametrize(
    ("fraction", "limit"),
    [(0.0, 0), (0.25, 20 * GiB), (0.5, 40 * GiB), (1, 80 * GiB)],
    ids=["no-cap", "quarter", "half", "whole"],
)
def test_memory_limit_is_the_fraction_of_the_gpus_memory(fraction: float, limit: int) -> None:
    gpu = GPUInfo("0", "NVIDIA H100", 80 * GiB)
    (env,) = gpu_worker_envs([gpu], GPUOptions(per_process_gpu_memory_fraction=fraction))
    assert env["DASKGRAPH_GPU_MEMORY_LIMIT"] == str(limit)
    assert memory_settings(env) == (limit, False)


@pytest.mark.parametrize("growth", [False, True])
def test_allow_growth_reaches_the_worker(growth: bool) -> None:
    specs = worker_specs(gpus=[h100()], gpu_options=GPUOptions(allow_growth=growth))
    (env,) = gpu_envs(specs).values()
    assert env["DASKGRAPH_GPU_ALLOW_GROWTH"] == ("1" if growth else "0")
    assert memory_settings(env) == (0, growth)


def test_description_names_the_gpu() -> None:
    (env,) = gpu_worker_envs([h100()], GPUOptions())
    assert env["DASKGRAPH_GPU_DESCRIPTION"] == h100().describe()
    assert env["DASKGRAPH_GPU_DESCRIPTION"] == (
        "name: NVIDIA H100 80GB HBM3, memory: 79.6 GiB, pci bus id: 00000000:19:00.0"
    )


def test_virtual_devices_split_each_gpu_into_logical_gpus() -> None:
    options = GPUOptions(virtual_devices=[1024, 2048], per_process_gpu_memory_fraction=0.9)
    specs = worker_specs(gpus=[h100("0"), h100("1")], gpu_options=options, virtual_gpus=1)
    assert list(specs) == [CPU0] + [f"{LOCAL}GPU:{i}" for i in range(5)]
    envs = list(gpu_envs(specs).values())
    # two logical GPUs per physical GPU, in order; the limits (MiB) win over the fraction
    assert [(e["CUDA_VISIBLE_DEVICES"], e["DASKGRAPH_GPU_MEMORY_LIMIT"]) for e in envs] == [
        ("0,1", str(1024 * MiB)),
        ("0,1", str(2048 * MiB)),
        ("1,0", str(1024 * MiB)),
        ("1,0", str(2048 * MiB)),
    ]
    for name in [f"{LOCAL}GPU:{i}" for i in range(4)]:
        assert specs[name]["cls"] is SubprocessWorker
        assert worker_options(specs[name])["resources"] == {"GPU": 1}
    # the virtual GPU is numbered after every logical GPU
    assert worker_options(specs[LOCAL + "GPU:4"])["resources"] == {"GPU": 1, "VIRTUAL_GPU": 1}


@pytest.mark.parametrize(
    ("visible", "expected"),
    [
        ("", ["0,1,2", "1,2,0", "2,0,1"]),
        ("1", ["1"]),
        ("0,2", ["0,2", "2,0"]),
        (" 2 ", ["2"]),
    ],
    ids=["all", "one", "two", "spaced"],
)
def test_visible_device_list_selects_gpus(visible: str, expected: list[str]) -> None:
    options = GPUOptions(visible_device_list=visible)
    specs = worker_specs(gpus=[h100("0"), h100("1"), h100("2")], gpu_options=options)
    envs = gpu_envs(specs)
    # the selected GPUs are renumbered from GPU:0, as TensorFlow does, and the workers see
    # only them, as LocalCUDACluster(CUDA_VISIBLE_DEVICES=...) gives its workers
    assert list(envs) == [f"{LOCAL}GPU:{i}" for i in range(len(expected))]
    assert [env["CUDA_VISIBLE_DEVICES"] for env in envs.values()] == expected


def test_visible_device_list_order_maps_gpus_as_tensorflow() -> None:
    """TensorFlow maps visible_device_list "1,0" as GPU:0 -> visible GPU 1, GPU:1 -> 0."""
    envs = gpu_worker_envs([h100("0"), h100("1")], GPUOptions(visible_device_list="1,0"))
    assert [env["CUDA_VISIBLE_DEVICES"] for env in envs] == ["1,0", "0,1"]


def test_worker_specs_without_gpus_have_no_gpu_workers() -> None:
    specs = worker_specs(gpus=[], gpu_options=GPUOptions(virtual_devices=[1024]))
    assert list(specs) == [CPU0]


# -- GPUOptions validation ------------------------------------------------------------------------
@pytest.mark.parametrize(
    "limits",
    [[], [1], [1024, 2048], (512, 512)],
    ids=["none", "one-mib", "two", "tuple"],
)
def test_valid_virtual_devices(limits) -> None:
    options = GPUOptions(virtual_devices=limits)
    assert SessionConfig(gpu_options=options).validate().gpu_options is options


@pytest.mark.parametrize(
    "limits",
    [[0], [-1024], [1024.0], [1.5], ["1024"], [True], [1024, None], "1024", 1024, None],
    ids=[
        "zero",
        "negative",
        "float-whole",
        "float",
        "string-item",
        "bool",
        "none-item",
        "string",
        "int",
        "none",
    ],
)
def test_invalid_virtual_devices_name_the_field(limits) -> None:
    with pytest.raises(ValueError, match=r"gpu_options\.virtual_devices") as info:
        SessionConfig(gpu_options=GPUOptions(virtual_devices=limits)).validate()
    assert repr(limits) in str(info.value)


def test_non_string_visible_device_list_names_the_field() -> None:
    """A visible_device_list that is not a string is reported by its field name."""
    with pytest.raises((TypeError, ValueError), match=r"gpu_options\.visible_device_list"):
        GPUOptions(visible_device_list=0).validate()


# -- the GPU worker's settings --------------------------------------------------------------------
@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        ({}, (0, False)),
        ({"DASKGRAPH_GPU_MEMORY_LIMIT": ""}, (0, False)),
        ({"DASKGRAPH_GPU_MEMORY_LIMIT": "2147483648"}, (2 * GiB, False)),
        ({"DASKGRAPH_GPU_MEMORY_LIMIT": "0", "DASKGRAPH_GPU_ALLOW_GROWTH": "1"}, (0, True)),
        ({"DASKGRAPH_GPU_ALLOW_GROWTH": "0"}, (0, False)),
    ],
    ids=["unset", "empty", "two-gib", "growth", "no-growth"],
)
def test_memory_settings(environ: dict[str, str], expected: tuple[int, bool]) -> None:
    assert memory_settings(environ) == expected


def test_memory_settings_read_the_process_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DASKGRAPH_GPU_MEMORY_LIMIT", "1024")
    monkeypatch.setenv("DASKGRAPH_GPU_ALLOW_GROWTH", "1")
    assert memory_settings() == (1024, True)


def test_describe_reads_the_workers_description(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DASKGRAPH_GPU_DESCRIPTION", raising=False)
    assert gpu_worker.describe() == ""
    monkeypatch.setenv("DASKGRAPH_GPU_DESCRIPTION", h100().describe())
    assert gpu_worker.describe() == h100().describe()


# -- the GPU worker's memory set-up, against fake RMM and CuPy ------------------------------------
class FakeOutOfMemoryError(MemoryError):
    """As ``cupy.cuda.memory.OutOfMemoryError``."""


class FakePool:
    """CuPy's default memory pool where it matters: requests are rounded up to 512 bytes
    (``_round_size``) and refused beyond the limit (``_try_malloc``)."""

    def __init__(self, calls: list) -> None:
        self.calls = calls
        self.limit = 0

    def set_limit(self, size: int = 0) -> None:
        self.calls.append(("set_limit", size))
        self.limit = size

    def malloc(self, size: int) -> object:
        rounded = -(-size // 512) * 512
        if self.limit and rounded > self.limit:
            raise FakeOutOfMemoryError(
                f"Out of memory allocating {rounded:,} bytes (allocated so far: 0 bytes, "
                f"limit set to: {self.limit:,} bytes)."
            )
        self.calls.append(("malloc", size))
        return object()

    def free_all_blocks(self) -> None:
        self.calls.append(("free_all_blocks",))


def rmm_cupy_allocator(nbytes: int) -> None:  # stands in for rmm.allocators.cupy's
    raise AssertionError("not called by the set-up")


def fake_gpu_stack(monkeypatch: pytest.MonkeyPatch, with_rmm: bool) -> list:
    """Install fake ``cupy`` (and ``rmm``) modules; return the list their calls go to."""
    calls: list = []
    pool = FakePool(calls)
    cupy = types.ModuleType("cupy")
    cupy.cuda = types.SimpleNamespace(set_allocator=lambda fn: calls.append(("set_allocator", fn)))
    cupy.get_default_memory_pool = lambda: pool
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    if not with_rmm:
        monkeypatch.setitem(sys.modules, "rmm", None)  # `import rmm` raises ImportError
        return calls

    def reinitialize(**kwargs: Any) -> None:
        # rmm::mr::pool_memory_resource: RMM_EXPECTS(is_aligned(size, 256), "Error, ...")
        for key in ("initial_pool_size", "maximum_pool_size"):
            size = kwargs.get(key)
            if size is not None and size % 256:
                raise RuntimeError(
                    "RMM failure at: pool_memory_resource_impl.cpp: Error, "
                    f"{key.replace('_', ' ').capitalize()} required to be a multiple of 256 bytes"
                )
        calls.append(("reinitialize", kwargs))

    rmm = types.ModuleType("rmm")
    rmm.reinitialize = reinitialize
    allocators = types.ModuleType("rmm.allocators")
    allocators_cupy = types.ModuleType("rmm.allocators.cupy")
    allocators_cupy.rmm_cupy_allocator = rmm_cupy_allocator
    rmm.allocators = allocators
    allocators.cupy = allocators_cupy
    monkeypatch.setitem(sys.modules, "rmm", rmm)
    monkeypatch.setitem(sys.modules, "rmm.allocators", allocators)
    monkeypatch.setitem(sys.modules, "rmm.allocators.cupy", allocators_cupy)
    return calls


@pytest.mark.parametrize(
    ("limit", "growth", "initial", "maximum"),
    [
        (2 * GiB, False, 2 * GiB, 2 * GiB),
        (2 * GiB, True, 256 * MiB, 2 * GiB),
        (100 * MiB, True, 100 * MiB, 100 * MiB),
    ],
    ids=["reserve-up-front", "grow-to-cap", "small-cap-grow"],
)
def test_rmm_pool_is_bounded_by_the_limit(
    monkeypatch: pytest.MonkeyPatch, limit: int, growth: bool, initial: int, maximum: int
) -> None:
    calls = fake_gpu_stack(monkeypatch, with_rmm=True)
    assert configure_memory(limit, growth) == "rmm"
    assert calls == [
        (
            "reinitialize",
            {"pool_allocator": True, "initial_pool_size": initial, "maximum_pool_size": maximum},
        ),
        ("set_allocator", rmm_cupy_allocator),
    ]


@pytest.mark.parametrize("growth", [False, True])
def test_rmm_pool_without_a_cap_grows_on_demand(
    monkeypatch: pytest.MonkeyPatch, growth: bool
) -> None:
    calls = fake_gpu_stack(monkeypatch, with_rmm=True)
    assert configure_memory(0, growth) == "rmm"
    ((name, kwargs), allocator) = calls
    assert name == "reinitialize"
    assert kwargs["pool_allocator"] is True
    assert kwargs["initial_pool_size"] == 256 * MiB
    assert kwargs.get("maximum_pool_size") is None
    assert allocator == ("set_allocator", rmm_cupy_allocator)


@pytest.mark.parametrize(
    ("limit", "growth", "expected"),
    [
        (2 * GiB, False, [("set_limit", 2 * GiB), ("malloc", 2 * GiB)]),
        (2 * GiB, True, [("set_limit", 2 * GiB)]),
        (0, False, []),
        (0, True, []),
    ],
    ids=["reserve-up-front", "grow-to-cap", "no-cap", "no-cap-growth"],
)
def test_cupy_pool_without_rmm(
    monkeypatch: pytest.MonkeyPatch, limit: int, growth: bool, expected: list
) -> None:
    calls = fake_gpu_stack(monkeypatch, with_rmm=False)
    assert configure_memory(limit, growth) == "cupy"
    assert calls == expected


def test_dask_setup_configures_memory_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = fake_gpu_stack(monkeypatch, with_rmm=True)
    monkeypatch.setenv("DASKGRAPH_GPU_MEMORY_LIMIT", str(1024 * MiB))
    monkeypatch.setenv("DASKGRAPH_GPU_ALLOW_GROWTH", "0")
    gpu_worker.dask_setup(types.SimpleNamespace(name=LOCAL + "GPU:0"))
    assert calls[0] == (
        "reinitialize",
        {"pool_allocator": True, "initial_pool_size": 1024 * MiB, "maximum_pool_size": 1024 * MiB},
    )


def _limit_of_a_fraction(fraction: float) -> int:
    (env,) = gpu_worker_envs([h100()], GPUOptions(per_process_gpu_memory_fraction=fraction))
    return memory_settings(env)[0]


@pytest.mark.parametrize("growth", [False, True])
def test_fraction_limit_sets_up_an_rmm_pool(monkeypatch: pytest.MonkeyPatch, growth) -> None:
    """RMM refuses pool sizes that are not multiples of 256 bytes: a fraction of the
    memory must be rounded, or the GPU worker's preload fails."""
    calls = fake_gpu_stack(monkeypatch, with_rmm=True)
    limit = _limit_of_a_fraction(0.05)  # 0.05 x 81559 MiB = 4276040499 bytes
    assert configure_memory(limit, growth) == "rmm"
    kwargs = calls[0][1]
    assert abs(kwargs["maximum_pool_size"] - limit) < 512


def test_fraction_limit_sets_up_a_cupy_pool(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without RMM, reserving the limit (pool.malloc(limit)) asks for it rounded up to 512
    bytes: an unrounded limit would be exceeded by its own reservation."""
    fake_gpu_stack(monkeypatch, with_rmm=False)
    assert configure_memory(_limit_of_a_fraction(0.05), False) == "cupy"


# -- NVML discovery -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("value", "count", "expected"),
    [
        (None, 3, ["0", "1", "2"]),
        (None, 0, []),
        ("", 2, []),
        ("2,0", 4, ["2", "0"]),
        (" 1 , 3 ", 4, ["1", "3"]),
        ("GPU-8f6c,1", 2, ["GPU-8f6c", "1"]),
        (",,", 2, []),
    ],
    ids=["unset", "unset-none", "empty", "two", "spaced", "uuid", "only-commas"],
)
def test_parse_visible_devices(value, count, expected) -> None:
    assert parse_visible_devices(value, count) == expected


@pytest.mark.parametrize(
    ("ids", "index", "expected"),
    [(["0"], 0, "0"), (["0", "1", "2"], 0, "0,1,2"), (["0", "1", "2"], 2, "2,0,1")],
)
def test_rotate(ids, index, expected) -> None:
    assert rotate(ids, index) == expected


def test_visible_gpus_without_a_driver_imports_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gpus, "_driver_present", lambda: False)
    monkeypatch.delitem(sys.modules, "pynvml", raising=False)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    assert visible_gpus() == []
    assert "pynvml" not in sys.modules


class FakeNVMLError(Exception):
    pass


def fake_pynvml(monkeypatch: pytest.MonkeyPatch, count: int = 2, init_fails: bool = False):
    """A fake nvidia-ml-py with ``count`` GPUs (handles are their indices); returns its calls."""
    calls: list = []
    uuids = [f"GPU-{i:04d}" for i in range(count)]
    nvml = types.ModuleType("pynvml")
    nvml.NVMLError = FakeNVMLError

    def init() -> None:
        calls.append("init")
        if init_fails:
            raise FakeNVMLError("Driver Not Loaded")

    def by_index(index: int) -> int:
        if not 0 <= index < count:  # NVML takes an unsigned int: -1 is out of range too
            raise FakeNVMLError("Invalid Argument")
        return index

    def by_uuid(uuid: str) -> int:
        if uuid not in uuids:
            raise FakeNVMLError("Not Found")
        return uuids.index(uuid)

    nvml.nvmlInit = init
    nvml.nvmlShutdown = lambda: calls.append("shutdown")
    nvml.nvmlDeviceGetCount = lambda: count
    nvml.nvmlDeviceGetHandleByIndex = by_index
    nvml.nvmlDeviceGetHandleByUUID = by_uuid
    # older nvidia-ml-py returns bytes, newer str: GPU 0 says bytes, the others str
    nvml.nvmlDeviceGetName = lambda h: b"NVIDIA H100 80GB HBM3" if h == 0 else f"NVIDIA L4 #{h}"
    nvml.nvmlDeviceGetMemoryInfo = lambda h: types.SimpleNamespace(total=(80 + h) * GiB)
    nvml.nvmlDeviceGetPciInfo = lambda h: types.SimpleNamespace(
        busId=b"00000000:19:00.0" if h == 0 else f"00000000:{h:02d}:00.0"
    )
    monkeypatch.setitem(sys.modules, "pynvml", nvml)
    monkeypatch.setattr(gpus, "_driver_present", lambda: True)
    return calls


def test_visible_gpus_reads_nvml(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = fake_pynvml(monkeypatch, count=2)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert visible_gpus() == [
        GPUInfo("0", "NVIDIA H100 80GB HBM3", 80 * GiB, "00000000:19:00.0"),
        GPUInfo("1", "NVIDIA L4 #1", 81 * GiB, "00000000:01:00.0"),
    ]
    assert calls == ["init", "shutdown"]


def test_visible_gpus_follow_cuda_visible_devices(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_pynvml(monkeypatch, count=3)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,GPU-0000")
    found = visible_gpus()
    assert [(g.visible_id, g.name) for g in found] == [
        ("2", "NVIDIA L4 #2"),
        ("GPU-0000", "NVIDIA H100 80GB HBM3"),
    ]


def test_visible_gpus_hidden_by_an_empty_cuda_visible_devices(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = fake_pynvml(monkeypatch, count=2)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert visible_gpus() == []
    assert calls == ["init", "shutdown"]


def test_visible_gpus_when_nvml_fails_to_start(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_pynvml(monkeypatch, init_fails=True)
    assert visible_gpus() == []


def test_cuda_visible_devices_minus_one_hides_every_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """CUDA_VISIBLE_DEVICES=-1, the usual way to hide every GPU, gives no GPU (no NVMLError)."""
    fake_pynvml(monkeypatch, count=2)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "-1")
    assert visible_gpus() == []


def test_cuda_visible_devices_stop_at_an_invalid_entry(monkeypatch: pytest.MonkeyPatch) -> None:
    """As CUDA does, only the devices listed before the first invalid entry are visible."""
    fake_pynvml(monkeypatch, count=2)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1,7,0")
    assert [g.visible_id for g in visible_gpus()] == ["1"]


# -- out of memory -> ResourceExhaustedError ------------------------------------------------------
GPU0 = LOCAL + "GPU:0"
OOM_STEP = RunStep("oom", 1)


class OutOfMemoryError(Exception):
    """Named as CuPy's (``cupy.cuda.memory.OutOfMemoryError``); the executor goes by the name."""


def _cupy_oom_kernel(xp, x):
    raise OutOfMemoryError("Out of memory allocating 1,024 bytes (allocated so far: 0 bytes).")


def _memory_error_kernel(xp, x):
    raise MemoryError()


def one_op_program(kernel) -> PartitionProgram:
    """One instruction, ``big = kernel(feed 0)``, on GPU:0 (NumPy backend: no CuPy needed)."""
    instruction = Instruction("big", "MatMul", kernel, {}, (0,), 1, False, ())
    return PartitionProgram(GPU0, "GPU", "numpy", 2, (), ((0, 0),), (instruction,), ((1, False),))


@pytest.mark.parametrize("trace", [False, True], ids=["plain", "traced"])
def test_cupy_out_of_memory_becomes_resource_exhausted(trace: bool) -> None:
    result = execute_partition(
        one_op_program(_cupy_oom_kernel), OOM_STEP, (np.ones(4, np.float32),), trace
    )
    assert isinstance(result, RunFailure)
    err = result.error
    assert type(err) is ResourceExhaustedError
    assert isinstance(err, MemoryError)
    assert (err.op, err.device, err.nbytes) == ("big", GPU0, 1024)
    assert (err.nbytes_exact, err.nbytes_margin) == (True, 0)  # CuPy prints bytes
    assert "OOM when allocating 1024 bytes for op big (MatMul) on " + GPU0 in str(err)
    assert "per_process_gpu_memory_fraction" in str(err)
    assert type(err.__cause__) is OutOfMemoryError
    again = pickle.loads(pickle.dumps(err))  # errors reach the client pickled
    assert (type(again), again.op, again.device, again.nbytes) == (
        ResourceExhaustedError,
        "big",
        GPU0,
        1024,
    )


def test_memory_error_becomes_resource_exhausted() -> None:
    result = execute_partition(
        one_op_program(_memory_error_kernel), OOM_STEP, (np.ones(4, np.float32),), False
    )
    assert isinstance(result, RunFailure)
    err = result.error
    assert type(err) is ResourceExhaustedError
    assert (err.op, err.device, err.nbytes) == ("big", GPU0, None)
    assert (err.nbytes_exact, err.nbytes_margin) == (None, None)
    assert f"OOM when allocating memory for op big (MatMul) on {GPU0}" in str(err)


def _rmm_pool_exceeded_kernel(xp, x):
    # RMM's pool_memory_resource (>= 24.x) as rmm_cupy_allocator raises it: sizes in binary units
    raise MemoryError(
        "std::bad_alloc: out_of_memory: RMM failure at:/rmm/pool_memory_resource_impl.cpp:73: "
        "Maximum pool size exceeded (failed to allocate 8.000000 GiB): Not enough room to grow, "
        "current/max/try size = 4.000000 GiB, 4.000000 GiB, 8.000000 GiB"
    )


def _numpy_oom_kernel(xp, x):
    # what a virtual GPU's NumPy says for an array it cannot allocate (4 PiB: beyond any
    # address space, so it fails at once whatever the machine's overcommit policy)
    return xp.empty((2**25, 2**25), xp.float32)


@pytest.mark.parametrize(
    ("kernel", "nbytes", "margin"),
    [
        (_rmm_pool_exceeded_kernel, 8 * 2**30, 1074),
        (_numpy_oom_kernel, 4 * 2**50, -(-(2**50) // 100)),
    ],
    ids=["rmm-pool", "numpy"],
)
def test_out_of_memory_names_the_bytes_an_allocator_printed_in_binary_units(
    kernel, nbytes: int, margin: int
) -> None:
    """RMM's pool (what dask-cuda workers allocate from) says ``8.000000 GiB``, not bytes:
    the error still names the bytes asked for, as approximate as the allocator printed them
    (to within the unit of its last digit: 2**30 / 10**6 bytes, rounded up)."""
    result = execute_partition(one_op_program(kernel), OOM_STEP, (np.ones(4, np.float32),), False)
    err = result.error
    assert type(err) is ResourceExhaustedError
    assert (err.op, err.device, err.nbytes) == ("big", GPU0, nbytes)
    assert (err.nbytes_exact, err.nbytes_margin) == (False, margin)
    assert f"OOM when allocating about {nbytes} bytes (to within {margin} bytes" in str(err)
    again = pickle.loads(pickle.dumps(err))
    assert (again.nbytes, again.nbytes_exact, again.nbytes_margin) == (nbytes, False, margin)


def _rmm_rounded_kernel(xp, x):
    # what an H100 printed for a 46238 x 46238 float32 product (8551810576 bytes): RMM's
    # format_bytes keeps 6 decimals of GiB, so the figure is 261 bytes short of the truth
    raise MemoryError(
        "std::bad_alloc: out_of_memory: RMM failure at:/__w/rmm/rmm/cpp/include/rmm/mr/device/"
        "pool_memory_resource.hpp:260: Maximum pool size exceeded (failed to allocate "
        "7.964494 GiB): Not enough room to grow, current/max/try size = 3.999999 GiB, "
        "3.999999 GiB, 7.964494 GiB"
    )


def test_an_rmm_figure_rounded_below_the_true_size_is_marked_approximate() -> None:
    """The true count (46238 * 46238 * 4) lies within the margin the error gives, though
    not at or below the figure RMM printed."""
    true = 46238 * 46238 * 4
    result = execute_partition(
        one_op_program(_rmm_rounded_kernel), OOM_STEP, (np.ones(4, np.float32),), False
    )
    err = result.error
    assert type(err) is ResourceExhaustedError
    assert err.nbytes == round(7.964494 * 2**30) == true - 261
    assert err.nbytes_exact is False and err.nbytes_margin == 1074
    assert abs(err.nbytes - true) <= err.nbytes_margin
    assert "about 8551810315 bytes (to within 1074 bytes" in str(err)


def test_out_of_memory_copying_an_input_to_the_gpu_is_resource_exhausted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def asarray(value):  # the host -> device copy of a fed tensor runs out of memory
        raise OutOfMemoryError("Out of memory allocating 4,096 bytes (allocated so far: 0 bytes).")

    xp = types.ModuleType("fake_gpu_array_module")  # an array module that is not NumPy
    xp.asarray = asarray
    xp.negative = np.negative
    monkeypatch.setitem(sys.modules, xp.__name__, xp)
    instruction = Instruction("neg", "Neg", lambda xp, x: xp.negative(x), {}, (0,), 1, False, ())
    program = PartitionProgram(
        GPU0, "GPU", xp.__name__, 2, (), ((0, 0),), (instruction,), ((1, False),)
    )
    result = execute_partition(program, OOM_STEP, (np.ones(1024, np.float32),), False)
    assert isinstance(result, RunFailure)
    assert type(result.error) is ResourceExhaustedError
    assert result.error.device == GPU0


def test_failure_is_passed_on_by_dependent_partitions() -> None:
    failure = execute_partition(
        one_op_program(_cupy_oom_kernel), OOM_STEP, (np.ones(4, np.float32),), False
    )
    downstream = PartitionProgram(CPU0, "CPU", "numpy", 1, ((0, 0, 0),), (), (), ((0, False),))
    assert execute_partition(downstream, OOM_STEP, (), False, failure) is failure


# -- topology: the workers these specs start ------------------------------------------------------
def test_real_gpu_workers_are_cupy_devices() -> None:
    specs = worker_specs(gpus=[h100()], virtual_gpus=1, cpu_threads=2)
    records = {
        f"tcp://127.0.0.1:{5000 + i}": {
            "name": worker_options(spec)["name"],
            "resources": worker_options(spec)["resources"],
            "nthreads": worker_options(spec)["nthreads"],
            "host": "127.0.0.1",
        }
        for i, spec in enumerate(specs.values())
    }
    devices = devices_from_workers(records)
    assert [(d.name, d.kind, d.array_backend, d.device_type) for d in devices] == [
        (CPU0, "cpu", "numpy", "CPU"),
        (LOCAL + "GPU:0", "gpu", "cupy", "GPU"),
        (LOCAL + "GPU:1", "virtual-gpu", "numpy", "GPU"),
    ]
    assert devices[1].description == "device: 0"
