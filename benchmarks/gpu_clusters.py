"""The GPU check's cluster checks: a cluster started by hand, GPU memory options and
out-of-memory recovery, and training the digits example on two (logical) GPUs.

On a real NVIDIA GPU: dask-cuda's ``LocalCUDACluster`` started by hand, whose workers a
``Session`` must map to GPU devices that run CuPy kernels; ``per_process_gpu_memory_fraction``
as each worker's RMM pool (reserved up front, an allocation above it failing with
``ResourceExhaustedError`` naming the op, the device and the bytes, after which the same
worker runs the next graph); ``allow_growth`` (the pool starts at 256 MiB and grows up to the
cap). On virtual GPUs: the same session code against a cluster of named workers started by
hand, and the out-of-memory path with an allocation no machine has (4 PiB); the parts that
need a GPU's memory pool are listed as skipped.
"""

from __future__ import annotations

import importlib.util
import math
from collections.abc import Callable
from typing import Any

import dask
import numpy as np

import daskgraph as dg
import daskgraph.compat.v1 as tf
from benchmarks.gpu_report import NO_GPU
from benchmarks.gpu_sessions import (
    CPU0,
    DIGITS_NPZ,
    GPU0,
    GPU1,
    LOGICAL_MIB,
    ROOT,
    Findings,
    GiB,
    MiB,
    Target,
    on_the_gpu,
    session,
    traced,
)
from daskgraph.cluster.cuda_specs import INITIAL_POOL_SIZE, cuda_worker_options, cuda_worker_probe
from daskgraph.cluster.gpus import GPUInfo
from daskgraph.config import GPUOptions

#: the memory cap of the memory checks: 5% of the GPU's memory (4 GiB of 80 GiB)
FRACTION = 0.05
#: a virtual GPU's allocation that fails on any machine: 2^25 x 2^25 float32 = 4 PiB
IMPOSSIBLE = (2**25, 2**25)


# -- a cluster started by hand --------------------------------------------------------------------
def hand_started_cluster(target: Target) -> Findings:
    """dask-cuda's ``LocalCUDACluster`` on the first GPU (a real GPU), or a cluster of named
    workers with a virtual GPU (no GPU); a ``Session`` on it must list its GPU and run there."""
    if target.real:
        return _local_cuda_cluster(target)
    from distributed import Scheduler, SpecCluster, Worker

    resources = {CPU0: {"CPU": 1}, GPU0: {"GPU": 1, "VIRTUAL_GPU": 1}}
    workers = {
        name: {"cls": Worker, "options": {"name": name, "nthreads": 1, "resources": res}}
        for name, res in resources.items()
    }
    scheduler = {"cls": Scheduler, "options": {"dashboard": False}}
    with SpecCluster(workers=workers, scheduler=scheduler) as cluster:
        f = _session_on(cluster, target, [(CPU0, "cpu"), (GPU0, "virtual-gpu")])
    f.skipped.append(
        f"{NO_GPU}: dask-cuda's LocalCUDACluster was not started (it needs a GPU); a cluster of "
        "named workers with a virtual GPU, started by hand, stood in for it"
    )
    return f


def _local_cuda_cluster(target: Target) -> Findings:
    from dask_cuda import LocalCUDACluster

    with LocalCUDACluster(
        CUDA_VISIBLE_DEVICES=target.gpu_id,
        host="127.0.0.1",
        dashboard_address=None,
        rmm_pool_size="256MiB",
    ) as cluster:
        return _session_on(cluster, target, [(GPU0, "gpu")])


def _session_on(cluster: Any, target: Target, devices: list[tuple[str, str]]) -> Findings:
    """A Session on ``cluster`` must find ``devices`` and run a matmul on GPU:0 there."""
    f = Findings()
    with dg.Graph().as_default() as graph:
        with tf.device("/gpu:0"):
            m = tf.constant([[1.0, 2.0], [3.0, 4.0]], name="m")
            square = tf.matmul(m, m, name="square")
    sess = dg.Session(cluster, graph=graph)
    try:
        found = sess.list_devices()
        value, stats = traced(sess, square)
        gpu = next((d for d in found if d.name == GPU0), None)
        probe = {}
        if target.real and gpu is not None:
            probe = sess.client.run(cuda_worker_probe, workers=[gpu.worker])[gpu.worker]
        on_the_gpu(f, sess, target)
    finally:
        sess.close()
    f.expect([(d.name, d.kind) for d in found] == devices, f"devices: {found}, want {devices}")
    f.matches(value, np.float32([[7.0, 10.0], [15.0, 22.0]]), "m @ m")
    f.expect(stats.device_of("square") == GPU0, f"square ran on {stats.device_of('square')}")
    f.lines.append(f"devices: {', '.join(f'{d.name} ({d.kind}: {d.description})' for d in found)}")
    if target.real:
        f.expect("RMMSetup" in probe.get("dask_cuda_plugins", []), f"no RMMSetup plugin: {probe}")
        f.expect(gpu is not None and target.gpu_name in gpu.description, "GPU:0 is not named")
    f.outputs(stats, target)
    return f


# -- memory ---------------------------------------------------------------------------------------
def memory_translation(target: Target) -> Findings:
    """GPUOptions -> each worker's RMM pool (initial, maximum), for an 80 GiB GPU: no GPU
    needed (what dask-cuda's RMMSetup is given; :mod:`daskgraph.cluster.cuda_specs`)."""
    f = Findings()
    gpu = [GPUInfo("0", "an 80 GiB GPU", 80 * GiB)]
    cap = int(FRACTION * 80 * GiB) // 256 * 256
    cases = [
        (
            "per_process_gpu_memory_fraction",
            GPUOptions(per_process_gpu_memory_fraction=FRACTION),
            [(cap, cap)],
        ),
        (
            "the fraction and allow_growth",
            GPUOptions(per_process_gpu_memory_fraction=FRACTION, allow_growth=True),
            [(INITIAL_POOL_SIZE, cap)],
        ),
        ("allow_growth", GPUOptions(allow_growth=True), [(INITIAL_POOL_SIZE, None)]),
        (
            "virtual_devices",
            GPUOptions(virtual_devices=[1024, 512]),
            [(GiB, GiB), (512 * MiB, 512 * MiB)],
        ),
    ]
    for what, options, want in cases:
        got = [
            (w.rmm_pool_size, w.rmm_maximum_pool_size) for w in cuda_worker_options(gpu, options)
        ]
        f.expect(got == want, f"{what}: pools {got}, want {want}")
        f.lines.append(f"{what}: (initial, maximum) = {got}")
    return f


def fill_graph() -> tuple[Any, Any, Any]:
    """(graph, dims, peak): ``reduce_max(fill(dims, 1.0))`` on /gpu:0, allocating as much as
    the fed ``dims`` say (float32), named ``big``."""
    graph = tf.Graph()
    with graph.as_default(), tf.device("/gpu:0"):
        dims = tf.placeholder(tf.int64, [2], name="dims")
        big = tf.fill(dims, 1.0, name="big")
        peak = tf.reduce_max(big, name="peak")
    return graph, dims, peak


def binary(nbytes: float) -> str:
    """A size in binary units.

    >>> binary(4 * 2**50), binary(3 * 2**29)
    ('4.0 PiB', '1.5 GiB')
    """
    for unit, size in (("PiB", 2**50), ("TiB", 2**40), ("GiB", GiB), ("MiB", MiB)):
        if nbytes >= size:
            return f"{nbytes / size:.1f} {unit}"
    return f"{nbytes:.0f} B"


def side(nbytes: float) -> int:
    """Rows (= columns) of a float32 square of about ``nbytes``."""
    return math.isqrt(int(nbytes) // 4)


def pool_probe() -> Callable[[Any], dict[str, Any]]:
    """A function for ``client.run``: the (initial, maximum) dask-cuda's ``RMMSetup`` was given
    on that worker, and the bytes its RMM pool holds now (None where not observable)."""

    def probe(dask_worker: Any) -> dict[str, Any]:  # pickled by value for the workers
        setup = None
        for plugin in dask_worker.plugins.values():
            if type(plugin).__name__ == "RMMSetup":
                setup = (plugin.initial_pool_size, plugin.maximum_pool_size)
        held = None
        try:
            import rmm

            resource = rmm.mr.get_current_device_resource()
            for _ in range(8):  # through adaptors (statistics, logging) to the pool
                if hasattr(resource, "pool_size"):
                    held = int(resource.pool_size())
                    break
                resource = getattr(resource, "upstream_mr", None)
                if resource is None:
                    break
        except Exception:
            held = None
        return {"rmm_setup": setup, "pool_bytes": held}

    return probe


def _pool(sess: Any) -> dict[str, Any]:
    worker = {d.name: d.worker for d in sess.list_devices()}[GPU0]
    return sess.client.run(pool_probe(), workers=[worker])[worker]


def _expect_oom(f: Findings, sess: Any, peak: Any, dims: Any, shape: tuple[int, int]) -> None:
    """Running ``peak`` with ``shape`` must fail with ResourceExhaustedError naming the op
    ``big``, GPU:0 and (at least) the bytes of ``shape``."""
    asked = shape[0] * shape[1] * 4
    try:
        sess.run(peak, {dims: np.int64(shape)})
    except tf.errors.ResourceExhaustedError as exc:
        f.expect((exc.op, exc.device) == ("big", GPU0), f"the error names {(exc.op, exc.device)}")
        f.expect("big" in str(exc) and GPU0 in str(exc), f"the message lacks op or device: {exc}")
        f.expect(
            exc.nbytes is not None and exc.nbytes >= 0.99 * asked,
            f"the error names {exc.nbytes} bytes, not the {asked} asked: {str(exc)[:300]}",
        )
        f.lines.append(f"{binary(asked)} asked: {str(exc)[:160]}...")
    else:
        f.problems.append(f"allocating {asked} bytes did not raise ResourceExhaustedError")


def _recovers(f: Findings, sess: Any, peak: Any, dims: Any, before: str) -> None:
    """After the error the same worker runs the graph again, and a new one."""
    f.expect(sess.run(peak, {dims: np.int64([64, 64])}) == 1.0, "the graph failed after the OOM")
    with sess.graph.as_default(), tf.device("/gpu:0"):
        m = tf.constant([[1.0, 2.0], [3.0, 4.0]])
        square = tf.matmul(m, m)
    f.matches(
        sess.run(square), np.float32([[7.0, 10.0], [15.0, 22.0]]), "a new graph after the OOM"
    )
    after = {d.name: d.worker for d in sess.list_devices()}[GPU0]
    f.expect(after == before, f"GPU:0's worker changed after the OOM: {before} -> {after}")
    f.lines.append("after the error the same worker ran the graph again and a new graph")


def memory_fraction(target: Target) -> Findings:
    """``per_process_gpu_memory_fraction``: the worker's pool is capped (and reserved), an
    allocation above the cap raises ResourceExhaustedError, and the worker goes on."""
    f = Findings()
    graph, dims, peak = fill_graph()
    cap = FRACTION * target.gpu_memory
    options = {"allow_growth": False, "per_process_gpu_memory_fraction": FRACTION}
    with session(target, graph, **options) as sess:
        worker = {d.name: d.worker for d in sess.list_devices()}[GPU0]
        if not target.real:
            _expect_oom(f, sess, peak, dims, IMPOSSIBLE)
            _recovers(f, sess, peak, dims, worker)
            f.skipped.append(
                f"{NO_GPU}: no memory cap to check (virtual GPUs have no GPU memory pool); the "
                "out-of-memory error and recovery were checked with a 4 PiB allocation instead"
            )
            return f
        pool = _pool(sess)
        f.data["pool"] = pool
        _check_pool(f, pool, (cap, cap), reserved=cap)
        half = side(cap / 2)
        f.expect(sess.run(peak, {dims: np.int64([half, half])}) == 1.0, "half the cap failed")
        _expect_oom(f, sess, peak, dims, (side(2 * cap),) * 2)
        _recovers(f, sess, peak, dims, worker)
    f.lines.insert(
        0, f"cap {cap / GiB:.2f} GiB ({FRACTION:g} of {target.gpu_memory / GiB:.1f} GiB)"
    )
    return f


def _check_pool(
    f: Findings, pool: dict[str, Any], want: tuple[float, float | None], reserved: float | None
) -> None:
    """The RMMSetup sizes must be ``want`` (within RMM's 256-byte alignment), and the pool
    must hold about ``reserved`` bytes where that is known and observable."""
    setup = pool.get("rmm_setup")
    if not f.expect(setup is not None, "the GPU worker has no dask-cuda RMMSetup plugin"):
        return
    initial, maximum = setup
    ok = abs(initial - want[0]) <= 256 and (
        maximum is None
        if want[1] is None
        else maximum is not None and abs(maximum - want[1]) <= 256
    )
    f.expect(ok, f"RMMSetup (initial, maximum) = {setup}, want {want}")
    f.lines.append(f"RMM pool (initial, maximum) = {setup}; holding {pool.get('pool_bytes')} bytes")
    held = pool.get("pool_bytes")
    if reserved is not None and held is not None:
        f.expect(abs(held - reserved) <= MiB, f"the pool holds {held} bytes, not {reserved:.0f}")


def allow_growth(target: Target) -> Findings:
    """``allow_growth``: with a cap the pool starts at 256 MiB and grows up to the cap (an
    allocation beyond it still fails); without a cap it starts small and has no maximum."""
    f = Findings()
    if not target.real:
        f.skipped.append(
            f"{NO_GPU}: virtual GPUs have no GPU memory pool to start small and grow "
            "(GPU memory options shape real GPU workers only)"
        )
        return f
    graph, dims, peak = fill_graph()
    cap = FRACTION * target.gpu_memory
    with session(
        target, graph, allow_growth=True, per_process_gpu_memory_fraction=FRACTION
    ) as sess:
        _check_pool(f, _pool(sess), (INITIAL_POOL_SIZE, cap), reserved=None)
        f.expect(sess.run(peak, {dims: np.int64([1024, 1024])}) == 1.0, "a small fill failed")
        small = _pool(sess).get("pool_bytes")
        half = side(cap / 2)
        f.expect(sess.run(peak, {dims: np.int64([half, half])}) == 1.0, "half the cap failed")
        grown = _pool(sess).get("pool_bytes")
        _expect_oom(f, sess, peak, dims, (side(2 * cap),) * 2)
    f.lines.append(f"with a cap of {cap / GiB:.2f} GiB: pool {small} bytes, then {grown}")
    if small is not None and grown is not None:
        f.expect(small <= INITIAL_POOL_SIZE + MiB, f"the pool started at {small} bytes")
        f.expect(cap / 2 <= grown <= cap + MiB, f"the pool grew to {grown}, cap {cap:.0f}")
    graph, dims, peak = fill_graph()
    with session(target, graph, allow_growth=True) as sess:
        f.expect(sess.run(peak, {dims: np.int64([512, 512])}) == 1.0, "a fill without a cap failed")
        pool = _pool(sess)
    _check_pool(f, pool, (INITIAL_POOL_SIZE, None), reserved=None)
    held = pool.get("pool_bytes")
    f.expect(held is None or held < GiB, f"without a cap the pool holds {held} bytes (>= 1 GiB)")
    return f


# -- training -------------------------------------------------------------------------------------
def load_example() -> Any:
    """examples/train_digits.py as a module (without the virtual GPUs it asks for)."""
    before = dask.config.get("daskgraph.virtual-gpus")
    spec = importlib.util.spec_from_file_location(
        "train_digits", ROOT / "examples" / "train_digits.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    dask.config.set({"daskgraph.virtual-gpus": before})  # the example raised it on import
    return module


def digits(example: Any) -> tuple[np.ndarray, ...] | None:
    """The example's train/test split of the digits: from scikit-learn, or where
    ``--save-digits`` kept it for a machine without scikit-learn (None: neither)."""
    if importlib.util.find_spec("sklearn") is not None:
        return example.load_digits_data()
    if DIGITS_NPZ.exists():
        with np.load(DIGITS_NPZ) as saved:
            return tuple(saved[key] for key in ("x_train", "x_test", "y_train", "y_test"))
    return None


def save_digits() -> str:
    """Keep the example's digits split in :data:`DIGITS_NPZ` (carried with the wheels)."""
    x_train, x_test, y_train, y_test = load_example().load_digits_data()
    DIGITS_NPZ.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(DIGITS_NPZ, x_train=x_train, x_test=x_test, y_train=y_train, y_test=y_test)
    return str(DIGITS_NPZ)


def training(target: Target, steps: int = 30) -> Findings:
    """The digits example's model and training loop, 2 towers (sync, batch 128) on two logical
    GPUs of one GPU (virtual GPUs here): the loss must fall and the test accuracy reach 75%."""
    f, example = Findings(), load_example()
    data = digits(example)
    if not f.expect(data is not None, f"no digits data: install scikit-learn or {DIGITS_NPZ}"):
        return f
    model = example.Model("sync", 2, 128, 0.01)
    with session(target, model.graph, gpus=2, soft=True) as sess:
        sess.run(model.init)
        losses = example.train(model, sess, data, steps, lambda loss: None)
        accuracy = model.accuracy(sess, data[1], data[3])
        feeds = {model.images: data[0][:128], model.labels: data[2][:128]}
        _, stats = traced(sess, model.replicas.train_op, feeds)
        on_the_gpu(f, sess, target)
    first, last = np.mean(losses[:5]), np.mean(losses[-5:])
    f.expect(bool(np.all(np.isfinite(losses))), "a loss was not finite")
    f.expect(last < 0.5 * first, f"the loss fell from {first:.3f} to {last:.3f} only")
    f.expect(accuracy >= 0.75, f"test accuracy {accuracy:.3f} < 0.75")
    for device in (GPU0, GPU1):
        ran = sum(1 for step in stats.dev_stats if step.device == device for _ in step.node_stats)
        f.expect(ran > 0, f"no tower op ran on {device}")
    f.lines.append(f"{steps} steps: loss {first:.3f} -> {last:.3f}, test accuracy {accuracy:.3f}")
    kind = (
        f"logical GPUs ({LOGICAL_MIB} MiB each) of GPU {target.gpu_id}"
        if target.real
        else "virtual GPUs"
    )
    f.lines.append(f"towers on GPU:0 and GPU:1, {kind}")
    f.data.update(losses=[round(x, 4) for x in losses], accuracy=accuracy)
    f.outputs(stats, target)
    return f
