"""Tests on a real NVIDIA GPU: CuPy kernels on dask-cuda GPU worker processes, host <-> device
copies at partition boundaries only, TensorFlow's GPU memory options (as the workers' RMM
pools, dask-cuda's ``RMMSetup``), and logical GPUs.

Every test is marked ``gpu``: daskgraph's pytest plugin skips it where ``nvidia-smi -L`` finds
no GPU. They need dask-cuda, CuPy, RMM and nvidia-ml-py (the ``cuda12`` or ``cuda13`` extra)
and one GPU with a few GiB free. Each test starts its own small embedded cluster, closed at
its end: a CPU worker in this process (2 threads) and one dask-cuda worker process per
(logical) GPU, using the first visible GPU only (``visible_device_list="0"``).

Helpers that run on a GPU worker (``client.run``) are defined inside functions, so that they
are pickled by value: the workers cannot import this test module.
"""

from __future__ import annotations

import contextlib
import math
import os
from collections.abc import Iterator
from typing import Any

import dask
import numpy as np
import pytest

import daskgraph as dg
from daskgraph.errors import ResourceExhaustedError
from daskgraph.testing import within

LOCAL = "/job:localhost/replica:0/task:0/device:"
CPU0, GPU0, GPU1 = LOCAL + "CPU:0", LOCAL + "GPU:0", LOCAL + "GPU:1"
TRACE = dg.RunOptions(trace_level=dg.RunOptions.FULL_TRACE)
#: a small embedded cluster: no virtual GPUs, the CPU worker in this process with 2 threads
SMALL_CLUSTER = {
    "daskgraph.virtual-gpus": 0,
    "daskgraph.local.processes": False,
    "daskgraph.local.cpu-threads": 2,
}
MiB = 2**20
GiB = 2**30
#: seconds a run that must fail with ResourceExhaustedError may take (it must never hang)
OOM_DEADLINE = 300


@contextlib.contextmanager
def gpu_session(log_device_placement: bool = False, **gpu_options: Any) -> Iterator[dg.Session]:
    """A Session on a fresh embedded cluster using the first GPU, over a fresh default graph."""
    gpu_options.setdefault("visible_device_list", "0")
    config = dg.SessionConfig(
        log_device_placement=log_device_placement, gpu_options=dg.GPUOptions(**gpu_options)
    )
    with dg.Graph().as_default(), dask.config.set(SMALL_CLUSTER):
        sess = dg.Session(config=config)
        try:
            yield sess
        finally:
            sess.close()


def first_gpu() -> tuple[str, int]:
    """(name, total memory in bytes) of the first visible GPU, asked of NVML (nvidia-ml-py)."""
    import pynvml

    pynvml.nvmlInit()
    try:
        visible = [s.strip() for s in os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")]
        first = visible[0]
        if first.startswith(("GPU-", "MIG-")):
            handle = pynvml.nvmlDeviceGetHandleByUUID(first)
        else:
            handle = pynvml.nvmlDeviceGetHandleByIndex(int(first))
        name = pynvml.nvmlDeviceGetName(handle)
        total = int(pynvml.nvmlDeviceGetMemoryInfo(handle).total)
    finally:
        pynvml.nvmlShutdown()
    return (name.decode() if isinstance(name, bytes) else str(name)), total


def workers(sess: dg.Session) -> dict[str, str]:
    """Device name -> address of its worker."""
    return {d.name: d.worker for d in sess.list_devices()}


def pool_bytes(sess: dg.Session, device: str) -> int | None:
    """Bytes the RMM pool of ``device``'s worker holds from the GPU (None if not an RMM pool)."""

    def reserved() -> int | None:
        try:
            import rmm

            size = getattr(rmm.mr.get_current_device_resource(), "pool_size", None)
        except (ImportError, AttributeError):
            return None
        return int(size()) if callable(size) else None

    worker = workers(sess)[device]
    return sess.client.run(reserved, workers=[worker])[worker]


def rmm_pool_sizes(sess: dg.Session, device: str) -> tuple[int | None, int | None]:
    """(initial, maximum) bytes of the RMM pool that dask-cuda's ``RMMSetup`` plugin set up on
    ``device``'s worker."""

    def sizes(dask_worker: Any) -> tuple[int | None, int | None] | None:
        for plugin in dask_worker.plugins.values():
            if type(plugin).__name__ == "RMMSetup":
                return plugin.initial_pool_size, plugin.maximum_pool_size
        return None

    worker = workers(sess)[device]
    found = sess.client.run(sizes, workers=[worker])[worker]
    assert found is not None, f"the worker of {device} has no dask-cuda RMMSetup plugin"
    return found


def node_locations(metadata: dg.RunMetadata) -> dict[str, tuple[str, str]]:
    """Op name -> (device of its partition, where its output lived) in a traced run."""
    return {
        node.node_name: (stats.device, node.output_location)
        for stats in metadata.step_stats.dev_stats
        for node in stats.node_stats
    }


def column_product(device: str, name: str) -> tuple[dg.Tensor, dg.Tensor]:
    """A fed (rows, 1) column and the largest element of its outer product, all on ``device``:
    feeding ``rows`` rows makes the GPU allocate a rows x rows float32 intermediate."""
    with dg.device(device):
        column = dg.placeholder(dg.float32, [None, 1], name=f"{name}_column")
        product = dg.matmul(column, column, transpose_b=True, name=name)
        peak = dg.reduce_max(product, name=f"{name}_peak")
    return column, peak


def rows_for(nbytes: float) -> int:
    """Rows whose rows x rows float32 outer product takes about ``nbytes``."""
    return math.isqrt(int(nbytes) // 4)


def run_expecting_oom(sess: dg.Session, fetch: dg.Tensor, feeds: dict) -> ResourceExhaustedError:
    outcome = within(OOM_DEADLINE, lambda: sess.run(fetch, feeds))
    error = outcome.get("error")
    assert isinstance(error, ResourceExhaustedError), outcome
    return error


# -- (a) the device mapping -----------------------------------------------------------------------
@pytest.mark.gpu
def test_device_mapping_lists_the_gpu_by_name(capsys: pytest.CaptureFixture[str]) -> None:
    name, _ = first_gpu()
    with gpu_session(log_device_placement=True) as sess:
        devices = {d.name: d for d in sess.list_devices()}
        assert list(devices) == [CPU0, GPU0]
        gpu = devices[GPU0]
        assert (gpu.kind, gpu.array_backend, gpu.device_type) == ("gpu", "cupy", "GPU")
        assert gpu.description.startswith("device: 0, ")
        assert f"name: {name}" in gpu.description
        assert devices[CPU0].worker != gpu.worker
        with dg.device("/gpu:0"):
            x = dg.constant([[1.0, 2.0]], name="x")
            y = dg.matmul(x, x, transpose_b=True, name="y")
        assert sess.run(y).tolist() == [[5.0]]
    logged = capsys.readouterr().err.splitlines()
    assert "Device mapping:" in logged
    (line,) = [entry for entry in logged if entry.startswith(f"{GPU0} -> ")]
    assert line.startswith(f"{GPU0} -> device: 0, name: {name}, memory: ")
    assert line.endswith(f", address: {gpu.worker}")
    assert f"y: (MatMul): {GPU0}" in logged


# -- (b) a matmul on the GPU ----------------------------------------------------------------------
@pytest.mark.gpu
def test_matmul_under_gpu0_runs_on_the_gpu() -> None:
    a_value = np.arange(6, dtype=np.float32).reshape(2, 3)
    b_value = np.arange(6, dtype=np.float32).reshape(3, 2)
    with gpu_session() as sess:
        with dg.device("/cpu:0"):
            a = dg.constant(a_value, name="a")
            b = dg.constant(b_value, name="b")
        with dg.device("/gpu:0"):
            c = dg.matmul(a, b, name="c")
        with dg.device("/cpu:0"):
            d = dg.negative(c, name="d")
        metadata = dg.RunMetadata()
        c_value, d_value = sess.run([c, d], options=TRACE, run_metadata=metadata)
        owners = workers(sess)
    for value in (c_value, d_value):
        assert type(value) is np.ndarray  # never a CuPy array on the client
        assert value.dtype == np.float32
    np.testing.assert_array_equal(c_value, a_value @ b_value)  # small integers: exact
    np.testing.assert_array_equal(d_value, -(a_value @ b_value))
    assert node_locations(metadata) == {
        "a": (CPU0, "host"),
        "b": (CPU0, "host"),
        "c": (GPU0, "gpu:0"),
        "d": (CPU0, "host"),
    }
    assert metadata.step_stats.worker_of("c") == owners[GPU0]
    assert metadata.step_stats.worker_of("d") == owners[CPU0]


# -- (c) host <-> device copies at device boundaries only -----------------------------------------
@pytest.mark.gpu
def test_copies_happen_only_at_device_boundaries() -> None:
    rng = np.random.default_rng(0)
    x_value = (rng.standard_normal((64, 32)) * 0.1).astype(np.float32)  # 8 KiB in
    bias_value = np.ones((64, 64), np.float32)
    chain = ["g1", "g2", "g3", "g4", "g5"]
    with gpu_session() as sess:
        with dg.device("/cpu:0"):
            x = dg.constant(x_value, name="x")
            bias = dg.constant(bias_value, name="bias")
        with dg.device("/gpu:0"):  # five ops, no constants of their own
            g1 = dg.matmul(x, x, transpose_b=True, name="g1")  # (64, 64): 16 KiB out
            g2 = dg.tanh(g1, name="g2")
            g3 = dg.square(g2, name="g3")
            g4 = dg.negative(g3, name="g4")
            g5 = dg.abs(g4, name="g5")
        with dg.device("/cpu:0"):
            out = dg.add(g5, bias, name="out")
        metadata = dg.RunMetadata()
        got = sess.run(out, options=TRACE, run_metadata=metadata)

    wide = x_value.astype(np.float64)
    expected = np.abs(-np.square(np.tanh(wide @ wide.T))) + 1.0
    np.testing.assert_allclose(got, expected, rtol=1e-3)  # whatever CUPY_TF32 says

    stats = metadata.step_stats.dev_stats
    (gpu_stats,) = [s for s in stats if s.device == GPU0]
    assert [n.node_name for n in gpu_stats.node_stats] == chain
    assert {n.output_location for n in gpu_stats.node_stats} == {"gpu:0"}
    assert gpu_stats.host_to_device_bytes == x_value.nbytes == 64 * 32 * 4
    assert gpu_stats.device_to_host_bytes == 64 * 64 * 4
    cpu_stats = [s for s in stats if s.device == CPU0]
    assert sorted(n.node_name for s in cpu_stats for n in s.node_stats) == ["bias", "out", "x"]
    for s in cpu_stats:
        assert (s.host_to_device_bytes, s.device_to_host_bytes) == (0, 0)
        assert {n.output_location for n in s.node_stats} == {"host"}


# -- (d) per_process_gpu_memory_fraction, OOM, recovery -------------------------------------------
@pytest.mark.gpu
def test_memory_fraction_caps_the_worker_and_the_session_recovers_from_oom() -> None:
    _, total = first_gpu()
    fraction = 0.05
    cap = fraction * total  # about 4 GiB on an 80 GB H100
    with gpu_session(per_process_gpu_memory_fraction=fraction) as sess:
        initial, maximum = rmm_pool_sizes(sess, GPU0)
        assert abs(maximum - cap) <= 256  # RMM's alignment
        assert initial == maximum  # without allow_growth, reserved up front
        column, peak = column_product("/gpu:0", "big")
        fits, too_big = rows_for(cap / 2), rows_for(2 * cap)
        # within the cap: half of it in one intermediate
        assert sess.run(peak, {column: np.ones((fits, 1), np.float32)}) == 1.0
        # without allow_growth the capped pool is reserved up front, as TensorFlow does
        reserved = pool_bytes(sess, GPU0)
        if reserved is not None:
            assert abs(reserved - cap) <= MiB
        # twice the cap: TensorFlow's OOM error, naming the op and the device
        error = run_expecting_oom(sess, peak, {column: np.ones((too_big, 1), np.float32)})
        assert (error.op, error.device) == ("big", GPU0)
        assert "big" in str(error)
        assert GPU0 in str(error)
        # the product's bytes, as precisely as the allocator printed them: RMM's pool says
        # "7.964494 GiB" (6 decimals), which the error marks as approximate, with its margin
        if error.nbytes is not None:
            assert error.nbytes + error.nbytes_margin >= too_big * too_big * 4
            assert error.nbytes_exact == (error.nbytes_margin == 0)
        # the same session, the same worker: the graph again within the cap, then a new one
        assert sess.run(peak, {column: np.ones((fits, 1), np.float32)}) == 1.0
        with dg.device("/gpu:0"):
            m = dg.constant([[1.0, 2.0], [3.0, 4.0]], name="m")
            square = dg.matmul(m, m, name="square")
        np.testing.assert_array_equal(sess.run(square), [[7.0, 10.0], [15.0, 22.0]])


# -- (e) logical GPUs -----------------------------------------------------------------------------
@pytest.mark.gpu
def test_logical_gpus_split_one_gpu_and_each_keeps_its_cap() -> None:
    name, _ = first_gpu()
    limit = 2048 * MiB
    rng = np.random.default_rng(1)
    a_value = rng.random((256, 256), dtype=np.float32) / 256
    b_value = rng.random((256, 256), dtype=np.float32) / 256
    with gpu_session(virtual_devices=[2048, 2048]) as sess:
        devices = {d.name: d for d in sess.list_devices()}
        assert list(devices) == [CPU0, GPU0, GPU1]
        for device in (GPU0, GPU1):
            assert devices[device].kind == "gpu"
            assert rmm_pool_sizes(sess, device) == (limit, limit)
            assert f"name: {name}" in devices[device].description
        assert len({d.worker for d in devices.values()}) == 3  # one worker per device

        # two towers, one per logical GPU, summed on the CPU
        inputs, towers = [], []
        for i, value in enumerate((a_value, b_value)):
            with dg.device(f"/gpu:{i}"):
                x = dg.placeholder(dg.float32, value.shape, name=f"x{i}")
                towers.append(dg.matmul(x, x, name=f"tower{i}"))
            inputs.append(x)
        with dg.device("/cpu:0"):
            total = dg.add_n(towers, name="total")
        metadata = dg.RunMetadata()
        feeds = {inputs[0]: a_value, inputs[1]: b_value}
        got = sess.run(total, feeds, options=TRACE, run_metadata=metadata)
        expected = a_value.astype(np.float64) @ a_value + b_value.astype(np.float64) @ b_value
        np.testing.assert_allclose(got, expected, rtol=2e-3)
        steps = metadata.step_stats
        for i, device in enumerate((GPU0, GPU1)):
            assert steps.device_of(f"tower{i}") == device
            assert steps.worker_of(f"tower{i}") == devices[device].worker
        assert steps.device_of("total") == CPU0
        # both logical GPUs are the same physical GPU, device 0 of their own processes
        locations = node_locations(metadata)
        assert locations["tower0"] == (GPU0, "gpu:0")
        assert locations["tower1"] == (GPU1, "gpu:0")

        # each worker holds its own cap: half of it fits, twice of it does not
        for i, device in enumerate((GPU0, GPU1)):
            column, peak = column_product(f"/gpu:{i}", f"big{i}")
            half = np.ones((rows_for(limit / 2), 1), np.float32)
            assert sess.run(peak, {column: half}) == 1.0
            reserved = pool_bytes(sess, device)
            if reserved is not None:
                assert reserved == limit
            double = np.ones((rows_for(2 * limit), 1), np.float32)
            error = run_expecting_oom(sess, peak, {column: double})
            assert (error.op, error.device) == (f"big{i}", device)
            assert sess.run(peak, {column: half}) == 1.0


# -- (f) allow_growth -----------------------------------------------------------------------------
@pytest.mark.gpu
def test_allow_growth_session_runs() -> None:
    rng = np.random.default_rng(2)
    value = rng.random((512, 512), dtype=np.float32)
    with gpu_session(allow_growth=True) as sess:
        with dg.device("/gpu:0"):
            x = dg.placeholder(dg.float32, [512, 512], name="x")
            y = dg.matmul(x, x, name="y")
        got = sess.run(y, {x: value})
        again = sess.run(y, {x: value})
        reserved = pool_bytes(sess, GPU0)
        settings = rmm_pool_sizes(sess, GPU0)
    assert type(got) is np.ndarray
    wide = value.astype(np.float64)
    np.testing.assert_allclose(got, wide @ wide, rtol=2e-3)
    np.testing.assert_allclose(got, again, rtol=1e-6)
    assert settings == (256 * MiB, None)  # no cap: a small pool that grows
    if reserved is not None:  # grown on demand: far from the whole GPU
        assert reserved < GiB


@pytest.mark.gpu
def test_allow_growth_with_a_fraction_grows_up_to_the_cap() -> None:
    _, total = first_gpu()
    fraction = 0.05
    cap = fraction * total
    with gpu_session(allow_growth=True, per_process_gpu_memory_fraction=fraction) as sess:
        column, peak = column_product("/gpu:0", "big")
        assert sess.run(peak, {column: np.ones((1024, 1), np.float32)}) == 1.0
        small = pool_bytes(sess, GPU0)
        if small is not None:  # nothing reserved up front beyond a small initial pool
            assert small <= 256 * MiB
        assert sess.run(peak, {column: np.ones((rows_for(cap / 2), 1), np.float32)}) == 1.0
        grown = pool_bytes(sess, GPU0)
        if grown is not None:
            assert cap / 2 <= grown <= cap + MiB
        error = run_expecting_oom(sess, peak, {column: np.ones((rows_for(2 * cap), 1), np.float32)})
        assert (error.op, error.device) == ("big", GPU0)
