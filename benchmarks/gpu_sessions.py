"""The GPU check's in-process checks, on a real NVIDIA GPU or on virtual GPUs.

Each check builds TF1-style graphs (``daskgraph.compat.v1``), runs them traced
(``RunOptions.FULL_TRACE``) and reads the run's ``step_stats``: every op's device and worker,
where its output lived (``NodeStats.output_location``: ``"gpu:0"`` for a CuPy array on the
worker's GPU, ``"host"`` for a NumPy array) and the bytes each partition copied host <-> GPU.
Every result is compared with NumPy's.

:class:`Target` says what the checks expect: on a real GPU every GPU op's array output is a
CuPy array on device 0 of its worker (each worker sees its own GPU first, as dask-cuda sets
it up) and the copies are counted; on virtual GPUs (the GPU code path over NumPy) outputs are
NumPy arrays on the host and no copy is made, and what needs a GPU is listed as skipped.

The checks (each returns :class:`Findings`): the seed programs of the compatibility suite
(:data:`PROGRAMS`), a cluster started by hand (:func:`hand_started_cluster`),
``per_process_gpu_memory_fraction`` and out-of-memory recovery (:func:`memory_fraction`),
``allow_growth`` (:func:`allow_growth`), and training the digits example on two logical
GPUs (:func:`training`).
"""

from __future__ import annotations

import contextlib
import io
import os
import pathlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import dask
import numpy as np

import daskgraph.compat.v1 as tf
from benchmarks.gpu_report import NO_GPU

LOCAL = "/job:localhost/replica:0/task:0/device:"
CPU0, GPU0, GPU1 = LOCAL + "CPU:0", LOCAL + "GPU:0", LOCAL + "GPU:1"
MiB, GiB = 2**20, 2**30
#: MiB of each logical GPU where a real GPU is split in two (towers, training)
LOGICAL_MIB = 2048
ROOT = pathlib.Path(__file__).resolve().parents[1]
#: where ``--save-digits`` keeps the digits data for a machine without scikit-learn
DIGITS_NPZ = ROOT / ".whl" / "digits.npz"
VALUES = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]  # the Using GPUs guide's constants


@dataclass(frozen=True)
class Target:
    """Real GPU or virtual GPUs: the cluster to ask for and what the checks expect."""

    real: bool
    gpu_id: str = ""  # the first visible GPU as CUDA_VISIBLE_DEVICES names it
    gpu_name: str = ""
    gpu_memory: int = 0

    @property
    def location(self) -> str:
        """Where a GPU op's array output must live."""
        return "gpu:0" if self.real else "host"

    def cluster(self, gpus: int) -> dict[str, Any]:
        """The ``daskgraph.*`` Dask config of a session that needs ``gpus`` GPU devices."""
        return {
            "daskgraph.virtual-gpus": 0 if self.real else gpus,
            "daskgraph.local.processes": False,  # GPU workers keep their own processes
            "daskgraph.local.cpu-threads": 2,
        }

    def gpu_options(self, gpus: int = 1, **options: Any) -> dict[str, Any]:
        """The first GPU only, growing on demand, split into ``gpus`` logical GPUs."""
        if not self.real:
            return {}
        chosen: dict[str, Any] = {"visible_device_list": "0", "allow_growth": True}
        if gpus > 1:
            chosen["virtual_devices"] = [LOGICAL_MIB] * gpus
        return {**chosen, **options}


@dataclass
class Findings:
    """What a check saw (``lines``), what was wrong (``problems``), what it could not do here
    (``skipped``) and its figures (``data``)."""

    lines: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)

    def expect(self, ok: bool, problem: str) -> bool:
        """Note ``problem`` unless ``ok``; returns ``ok``."""
        if not ok:
            self.problems.append(problem)
        return bool(ok)

    def outputs(self, stats: Any, target: Target, where: str = "") -> None:
        """Every GPU op's array output must be where ``target`` says (and there must be one)."""
        checked = 0
        for op, device, location in gpu_outputs(stats):
            if location:  # ops without an array output (NoOp, a variable's handle) are skipped
                checked += 1
                self.expect(
                    location == target.location,
                    f"{where}{op} on {device}: its output was on {location}, not {target.location}",
                )
        self.expect(checked > 0, f"{where}no GPU op with an array output ran")
        kind = "CuPy arrays on their worker's GPU" if target.real else "NumPy arrays"
        self.lines.append(f"{where}{checked} GPU op outputs checked: {kind}")
        if not target.real:
            self.skipped.append(
                f"{NO_GPU}: GPU ops' outputs were not checked to be CuPy arrays on a GPU "
                "(virtual GPUs run the GPU kernels over NumPy)"
            )

    def matches(self, got: Any, want: np.ndarray, what: str, rtol: float = 0.0) -> None:
        """``got`` must equal NumPy's ``want`` (within ``rtol`` where given)."""
        got = np.asarray(got)
        if rtol:
            ok = got.shape == want.shape and np.allclose(got, want, rtol=rtol, atol=0.0)
        else:
            ok = got.shape == want.shape and np.array_equal(got, want)
        self.expect(
            ok,
            f"{what}: got {got.tolist() if got.size < 9 else got.shape}, "
            f"NumPy says {want.tolist() if want.size < 9 else want.shape}",
        )
        self.expect(type(got) is np.ndarray, f"{what}: fetched a {type(got).__name__}")


def gpu_outputs(stats: Any) -> list[tuple[str, str, str]]:
    """(op, device, where its output lived) of each op a traced run ran on a GPU device."""
    return [
        (node.node_name, step.device, node.output_location)
        for step in stats.dev_stats
        if "/device:GPU:" in step.device
        for node in step.node_stats
    ]


def copies(stats: Any) -> tuple[int, int]:
    """Bytes a traced run copied host -> GPU and GPU -> host, over all its partitions."""
    to_gpu = sum(step.host_to_device_bytes for step in stats.dev_stats)
    return to_gpu, sum(step.device_to_host_bytes for step in stats.dev_stats)


def traced(sess: Any, fetches: Any, feeds: dict | None = None) -> tuple[Any, Any]:
    """(values, step_stats) of one traced run."""
    metadata = tf.RunMetadata()
    options = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
    values = sess.run(fetches, feeds, options=options, run_metadata=metadata)
    return values, metadata.step_stats


@contextlib.contextmanager
def session(
    target: Target, graph: Any, gpus: int = 1, *, log: bool = False, soft: bool = False, **gpu: Any
) -> Iterator[Any]:
    """A ``tf.Session`` on ``graph`` on the embedded cluster with ``gpus`` GPU devices."""
    config = tf.ConfigProto(log_device_placement=log, allow_soft_placement=soft)
    for key, value in target.gpu_options(gpus, **gpu).items():
        setattr(config.gpu_options, key, value)
    with dask.config.set(target.cluster(gpus)):
        sess = tf.Session(graph=graph, config=config)
    try:
        yield sess
    finally:
        sess.close()


def worker_gpus(sess: Any) -> dict[str, str | None]:
    """GPU device -> the first entry of its worker's ``CUDA_VISIBLE_DEVICES`` (its GPU)."""

    def visible() -> str | None:  # defined here: pickled by value for the workers
        import os

        value = os.environ.get("CUDA_VISIBLE_DEVICES")
        return value.split(",")[0].strip() if value else None

    gpus = {d.name: d.worker for d in sess.list_devices() if d.device_type == "GPU"}
    seen = sess.client.run(visible, workers=sorted(set(gpus.values())))
    return {name: seen.get(worker) for name, worker in gpus.items()}


def on_the_gpu(findings: Findings, sess: Any, target: Target) -> None:
    """Every GPU device's worker must own the physical GPU the check was given."""
    if not target.real:
        return
    for device, gpu in sorted(worker_gpus(sess).items()):
        findings.expect(
            gpu == target.gpu_id,
            f"the worker of {device} sees GPU {gpu!r} first, not {target.gpu_id!r}",
        )


@contextlib.contextmanager
def stderr_captured() -> Iterator[io.StringIO]:
    """What is printed on stderr meanwhile (the placement log), kept from the console."""
    captured = io.StringIO()
    with contextlib.redirect_stderr(captured):
        yield captured


# -- the seed programs ----------------------------------------------------------------------------
def guide_product() -> np.ndarray:
    """NumPy's ``a @ b`` of the Using GPUs guide's ``a`` (2x3) and ``b`` (3x2)."""
    return np.reshape(np.float32(VALUES), (2, 3)) @ np.reshape(np.float32(VALUES), (3, 2))


def placement_logging(target: Target) -> Findings:
    """guide_log_device_placement.py: no device scopes; the log says MatMul went to GPU:0."""
    f, graph = Findings(), tf.Graph()
    want = guide_product()
    with graph.as_default():
        a = tf.constant(VALUES, shape=[2, 3], name="a")
        b = tf.constant(VALUES, shape=[3, 2], name="b")
        c = tf.matmul(a, b)
    with session(target, graph, log=True) as sess, stderr_captured() as err:
        value, stats = traced(sess, c)
    logged = err.getvalue().splitlines()
    f.matches(value, want, "a @ b")
    f.expect("Device mapping:" in logged, "no 'Device mapping:' in the placement log")
    for op, op_type in (("a", "Const"), ("b", "Const"), ("MatMul", "MatMul")):
        line = f"{op}: ({op_type}): {GPU0}"
        f.expect(line in logged, f"the placement log lacks {line!r}")
    mapping = [line for line in logged if line.startswith(f"{GPU0} -> ")]
    name = target.gpu_name or "virtual GPU (NumPy)"
    f.expect(
        len(mapping) == 1 and f"name: {name}" in mapping[0],
        f"the device mapping's GPU:0 line does not name {name!r}: {mapping}",
    )
    f.lines.append(f"placement log: {mapping[0] if mapping else '(no GPU:0 line)'}")
    f.outputs(stats, target)
    return f


def manual_placement(target: Target) -> Findings:
    """guide_manual_placement.py: a, b under /cpu:0, the MatMul left to the placer (GPU:0);
    the copies are a and b in (48 bytes) and the product out (16 bytes)."""
    f, graph = Findings(), tf.Graph()
    want = guide_product()
    with graph.as_default():
        with tf.device("/cpu:0"):
            a = tf.constant(VALUES, shape=[2, 3], name="a")
            b = tf.constant(VALUES, shape=[3, 2], name="b")
        c = tf.matmul(a, b)
    with session(target, graph) as sess:
        value, stats = traced(sess, c)
    f.matches(value, want, "a @ b")
    for op, device in (("a", CPU0), ("b", CPU0), ("MatMul", GPU0)):
        f.expect(stats.device_of(op) == device, f"{op} ran on {stats.device_of(op)}, not {device}")
    f.outputs(stats, target)
    moved = copies(stats)
    if target.real:
        f.expect(
            moved == (48, 16), f"copied {moved} bytes (in, out); a and b in and c out are (48, 16)"
        )
        f.lines.append(f"host <-> GPU bytes (in, out): {moved}")
    else:
        f.skipped.append(f"{NO_GPU}: host <-> GPU bytes not counted (a virtual GPU copies nothing)")
    return f


def soft_placement_of_integer_variables(target: Target) -> Findings:
    """notebook_soft_placement_variables.py: an int32 Variable asked on /gpu:0 goes to the CPU
    with allow_soft_placement (no GPU kernel, as in TensorFlow); a float32 one stays there."""
    f, graph = Findings(), tf.Graph()
    with graph.as_default():
        a_cpu = tf.Variable(0, name="a_cpu")
        with tf.device("/gpu:0"):
            a_gpu = tf.Variable(0, name="a_gpu")
            weights = tf.Variable(1.5, name="weights")
            doubled = tf.multiply(weights, 2.0, name="doubled")
            bumped = tf.assign_add(a_gpu, 3, name="bumped")
        init = tf.global_variables_initializer()
    with session(target, graph, soft=True, log=True) as sess, stderr_captured():
        sess.run(init)
        values, stats = traced(sess, [a_cpu, bumped, weights, doubled])
    f.expect(
        [int(values[0]), int(values[1])] == [0, 3], f"int variables: got {values[:2]}, want [0, 3]"
    )
    f.matches(values[2:], np.float32([1.5, 3.0]), "weights, doubled")
    for op, device in (("a_gpu", CPU0), ("bumped", CPU0), ("weights", GPU0), ("doubled", GPU0)):
        f.expect(stats.device_of(op) == device, f"{op} ran on {stats.device_of(op)}, not {device}")
    f.lines.append("the int32 Variable asked on /gpu:0 ran on CPU:0; the float32 one on GPU:0")
    f.outputs(stats, target)
    return f


def missing_gpu(target: Target) -> Findings:
    """guide_missing_gpu.py and notes_cpu_typo_gpu1.py on a one-GPU cluster: ``/gpu:1`` is
    refused with InvalidArgumentError, and with soft placement runs on GPU:0."""
    f, graph = Findings(), tf.Graph()
    want = guide_product()
    with graph.as_default(), tf.device("/gpu:1"):
        a = tf.constant(VALUES, shape=[2, 3], name="a")
        b = tf.constant(VALUES, shape=[3, 2], name="b")
        c = tf.matmul(a, b)
    with session(target, graph) as sess:
        try:
            sess.run(c)
            f.problems.append("/gpu:1 on a one-GPU cluster ran without soft placement")
        except tf.errors.InvalidArgumentError as exc:
            f.expect("GPU:1" in str(exc), f"the error does not name /gpu:1: {exc}")
            f.lines.append(f"without soft placement: InvalidArgumentError ({str(exc)[:90]}...)")
    with session(target, graph, soft=True) as sess:
        value, stats = traced(sess, c)
    f.matches(value, want, "a @ b with soft placement")
    f.expect(stats.device_of("MatMul") == GPU0, f"MatMul ran on {stats.device_of('MatMul')}")
    f.outputs(stats, target)
    return f


def towers(target: Target) -> Findings:
    """guide_multi_tower.py and book_matpow_two_gpus.py on two logical GPUs of one physical
    GPU (virtual GPUs here): a tower per GPU, the sums on the CPU."""
    f, graph = Findings(), tf.Graph()
    product = guide_product()
    rng = np.random.default_rng(0)
    a_value, b_value = (rng.random((100, 100), dtype=np.float32) for _ in range(2))
    with graph.as_default():
        products, powers, inputs = [], [], []
        for i in range(2):
            with tf.device(f"/gpu:{i}"):
                a = tf.constant(VALUES, shape=[2, 3])
                b = tf.constant(VALUES, shape=[3, 2])
                products.append(tf.matmul(a, b, name=f"tower{i}"))
                m = tf.placeholder(tf.float32, [100, 100], name=f"m{i}")
                powers.append(matpow(m, 10, f"pow{i}"))
                inputs.append(m)
        with tf.device("/cpu:0"):
            total = tf.add_n(products, name="total")
            power_sum = tf.add_n(powers, name="power_sum")
    with session(target, graph, gpus=2, soft=True) as sess:
        feeds = dict(zip(inputs, (a_value, b_value), strict=True))
        (got_total, got_powers), stats = traced(sess, [total, power_sum], feeds)
        workers = {d.name: d.worker for d in sess.list_devices()}
        on_the_gpu(f, sess, target)
    f.matches(got_total, 2 * product, "tower0 + tower1")
    want = np.linalg.matrix_power(a_value.astype(np.float64), 10)
    want += np.linalg.matrix_power(b_value.astype(np.float64), 10)
    f.matches(got_powers, want, "A^10 + B^10", rtol=matpow_rtol())
    for i, device in enumerate((GPU0, GPU1)):
        f.expect(
            stats.device_of(f"tower{i}") == device,
            f"tower{i} ran on {stats.device_of(f'tower{i}')}",
        )
        f.expect(
            stats.worker_of(f"tower{i}") == workers.get(device), f"tower{i}: not {device}'s worker"
        )
    f.expect(workers.get(GPU0) != workers.get(GPU1), "GPU:0 and GPU:1 share a worker")
    kind = (
        f"logical GPUs of GPU {target.gpu_id} ({LOGICAL_MIB} MiB each)"
        if target.real
        else "virtual GPUs"
    )
    f.lines.append(f"a tower on each of GPU:0 and GPU:1, two {kind}, each its own worker")
    f.outputs(stats, target)
    return f


def matpow(m: Any, n: int, name: str) -> Any:
    """``m^n`` as the book writes it: ``matmul(m, matpow(m, n - 1))``."""
    result = m
    for i in range(n - 1):
        result = tf.matmul(m, result, name=f"{name}_{i}")
    return result


def matpow_rtol() -> float:
    """How close float32 powers come to float64 ones: TF32 (``CUPY_TF32=1``) rounds inputs to
    10 bits of mantissa."""
    return 2e-2 if os.environ.get("CUPY_TF32") == "1" else 1e-4


def a_n_plus_b_n(target: Target) -> Findings:
    """book_matpow_soft_placement.py: A^10 and B^10 (100 x 100, fed) on /gpu:0, the sum on
    /cpu:0; the copies are A and B in and both powers out (80,000 bytes each way)."""
    f, graph = Findings(), tf.Graph()
    rng = np.random.default_rng(1)
    a_value, b_value = (rng.random((100, 100), dtype=np.float32) for _ in range(2))
    with graph.as_default():
        with tf.device("/gpu:0"):
            a = tf.placeholder(tf.float32, [100, 100])
            b = tf.placeholder(tf.float32, [100, 100])
            c1 = [matpow(a, 10, "a_pow"), matpow(b, 10, "b_pow")]
        with tf.device("/cpu:0"):
            total = tf.add_n(c1)
    with session(target, graph, soft=True) as sess:
        value, stats = traced(sess, total, {a: a_value, b: b_value})
    want = np.linalg.matrix_power(a_value.astype(np.float64), 10)
    want += np.linalg.matrix_power(b_value.astype(np.float64), 10)
    f.matches(value, want, "A^10 + B^10", rtol=matpow_rtol())
    f.outputs(stats, target)
    moved = copies(stats)
    if target.real:
        f.expect(moved == (80_000, 80_000), f"copied {moved} bytes (in, out), not (80000, 80000)")
        f.lines.append(f"host <-> GPU bytes (in, out): {moved}, as the placement implies")
    else:
        f.skipped.append(f"{NO_GPU}: host <-> GPU bytes not counted (a virtual GPU copies nothing)")
    return f


#: name -> (title, check) of the seed programs
PROGRAMS: dict[str, tuple[str, Callable[[Target], Findings]]] = {
    "placement_logging": ("program: placement logging", placement_logging),
    "manual_placement": ("program: manual placement", manual_placement),
    "soft_placement": (
        "program: soft placement of integer variables",
        soft_placement_of_integer_variables,
    ),
    "missing_gpu": ("program: a missing /gpu:1", missing_gpu),
    "towers": ("program: towers on two logical GPUs", towers),
    "matpow": ("program: A^n + B^n", a_n_plus_b_n),
}
