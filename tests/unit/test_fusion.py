"""Fused elementwise kernels: which ops a partition's groups hold, and results bit for bit
those of the ops one by one."""

from __future__ import annotations

import contextlib
import re

import dask
import numpy as np
import pytest

import daskgraph as dg
from daskgraph.cluster.topology import Device
from daskgraph.kernels.fusable import FUSABLE, RELAXED, RELAXED_RTOL
from daskgraph.kernels.fused import FusedKernel, compile_now, settle
from daskgraph.runtime.planner.fusion import FUSED
from daskgraph.runtime.planner.lowering import lower
from daskgraph.runtime.planner.placement import place

CPU0 = "/job:localhost/replica:0/task:0/device:CPU:0"


def _program(graph, fetches, feeds=(), fusion=True):
    devices = [Device(CPU0, worker="CPU:0", kind="cpu")]
    (partition,) = lower(place(graph, devices), fetches, feeds, fusion=fusion).partitions
    return partition.program


def _fused(program):
    return [ins for ins in program.instructions if ins.op_type == FUSED]


def test_a_chain_of_elementwise_ops_is_one_instruction():
    with dg.Graph().as_default() as g:
        x = dg.placeholder(dg.float32, [8], name="x")
        y = dg.sqrt(dg.abs((x * 2.0 + 1.0) / 3.0 - x), name="y")
    (fused,) = _fused(_program(g, [y], [x]))
    assert fused.op_name == "y"
    assert len(fused.kernel.op_names) == 6 and fused.kernel.op_names[-1] == "y"
    assert _fused(_program(g, [y], [x], fusion=False)) == []


def test_a_fetched_or_shared_result_ends_a_group_and_other_ops_break_it():
    with dg.Graph().as_default() as g:
        x = dg.placeholder(dg.float32, [8, 8], name="x")
        a = dg.multiply(x, 2.0, name="a")
        b = dg.add(a, 1.0, name="b")  # fetched: b is a group's end
        c = dg.multiply(b, b, name="c")  # reads b twice: still one reader
        d = dg.matmul(c, c, name="d")  # not elementwise
        e = dg.subtract(d, 1.0, name="e")
        f = dg.exp(e, name="f")  # not exactly rounded: not fused
        g1 = dg.add(f, 1.0, name="g1")
        g2 = dg.add(f, 2.0, name="g2")  # f read by two ops: each its own
    program = _program(g, [b, c, g1, g2], [x])
    groups = {ins.op_name: ins.kernel.op_names for ins in _fused(program)}
    assert groups == {"b": ("a", "b")}
    kept = [ins.op_name for ins in program.instructions]
    assert {"c", "d", "e", "f", "g1", "g2"} <= set(kept)


def _edge_values(dtype):
    info = np.finfo(dtype)
    special = [0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, info.tiny, -info.tiny,
               info.tiny / 4, info.max, -info.max, info.eps, 0.1, 1 / 3, 7.5, -2.25]  # fmt: skip
    rng = np.random.default_rng(5)
    values = np.concatenate([np.array(special), rng.standard_normal(200) * 1e3,
                             rng.standard_normal(200) * 1e-30])  # fmt: skip
    return values.astype(dtype)


def _looped(kernel, inputs):
    """The result of ``kernel``'s compiled loop (whatever the inputs' size)."""
    out = kernel.looped(np.shape(inputs[0]), inputs)
    assert out is not None, "no compiled loop ran"
    return out


def _same_bits(a, b):
    """Equal bit for bit, NaNs apart: a NaN is a NaN in both, its sign and payload bits
    being left open by IEEE 754 (x86 and LLVM pick operands of commutative ops freely)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype.kind != "f":
        return a.tobytes() == b.tobytes()
    nan = np.isnan(a)
    return bool((nan == np.isnan(b)).all()) and a[~nan].tobytes() == b[~nan].tobytes()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(FUSABLE))
def test_every_fusable_function_gives_the_bits_numpy_gives(name, dtype):
    logical = name.startswith("logical")
    values = _edge_values(dtype)
    x = values > 0 if logical else values
    y = np.roll(values, 7) <= 0 if logical else np.roll(values, 7)
    arity = len(set(re.findall(r"\{(\d)\}", FUSABLE[name])))
    inputs = {1: (x,), 2: (x, y), 3: (np.roll(values, 3) > 0, x, y)}[arity]
    steps = (("op", name, tuple(range(arity))),)
    if not logical and name not in COMPARES:  # a second op: the chain computes through a temporary
        steps += (("then", "multiply", (arity, arity - 1)),)
    kernel = FusedKernel(steps, arity)
    with np.errstate(all="ignore"):
        assert compile_now(kernel, *inputs) is not None
        fused = _looped(kernel, inputs)
        unfused = kernel.one_by_one(np, inputs)
        if arity > 1:  # the last input a scalar
            scalar_last = (*inputs[:-1], inputs[-1][3])
            compile_now(kernel, *scalar_last)
            looped = _looped(kernel, scalar_last)
            assert _same_bits(looped, kernel.one_by_one(np, scalar_last)), name
    assert _same_bits(fused, unfused), name


COMPARES = ("less", "less_equal", "greater", "greater_equal", "equal", "not_equal")


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_a_session_gives_the_same_bits_fused_and_unfused():
    value = _edge_values("float32")[:64].reshape(8, 8)
    with dg.Graph().as_default() as g:
        x = dg.placeholder(dg.float32, [8, 8], name="x")
        h = (x * 1.5 - 0.25) / (dg.abs(x) + 1.0)
        y = dg.sqrt(h * h + 1e-3) - h
        mask = dg.cast(dg.greater(y, x), dg.float32)
        z = y * mask + x * (1.0 - mask)
    fused_run, unfused_run = _fused_and_unfused(g, [y, z], {x: value})
    assert _fused(_program(g, [y, z], [x]))  # (the fused run did hold a fused kernel)
    for fused, unfused in zip(fused_run, unfused_run, strict=True):
        assert _same_bits(fused, unfused)


def _fused_and_unfused(graph, fetches, feeds):
    """The results of ``fetches`` fused (once the loops are compiled) and unfused."""
    results = []
    for fusion in (True, False):
        with dask.config.set({"daskgraph.fusion": fusion}), dg.Session(graph=graph) as session:
            for _ in range(3):  # the second run queues the compilations
                session.run(fetches, feeds)
            settle()
            results.append(session.run(fetches, feeds))
    return results


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_activations_selects_and_their_gradients_fuse_and_keep_their_bits():
    """ReLU and its gradient, maximum, minimum and where (select) join fused chains; a
    small MLP's forward and backward passes give the same bits fused and unfused."""
    rng = np.random.default_rng(3)
    value = rng.standard_normal((64, 16)).astype(np.float32)
    value[:4, 0] = [0.0, -0.0, np.inf, -np.inf]
    with dg.Graph().as_default() as g:
        x = dg.placeholder(dg.float32, [64, 16], name="x")
        w = dg.constant(rng.standard_normal((16, 16)).astype(np.float32), name="w")
        h = dg.nn.relu(dg.matmul(x, w) * 0.5 + 0.1, name="h")
        clipped = dg.minimum(dg.maximum(h - 0.2, -1.0), 1.0, name="clipped")
        picked = dg.where(dg.greater(clipped, 0.0), clipped * 2.0, clipped - x, name="picked")
        loss = dg.reduce_sum(picked * picked, name="loss")
        (grad,) = dg.gradients(loss, [x])
    forward = {n for ins in _fused(_program(g, [picked], [x])) for n in ins.kernel.op_names}
    assert {"h", "clipped", "Maximum", "picked"} <= forward
    # (with the gradients, results their gradients read too end the chains there)
    both = {n for ins in _fused(_program(g, [loss, grad], [x])) for n in ins.kernel.op_names}
    assert {"h", "picked"} <= both
    assert any(name.endswith("ReluGrad") for name in both)
    for fused, unfused in zip(*_fused_and_unfused(g, [loss, grad], {x: value}), strict=True):
        assert _same_bits(np.asarray(fused), np.asarray(unfused))


def test_a_traced_run_shows_a_fused_kernel_as_one_entry_listing_its_ops():
    from daskgraph.runtime.client.session import RunMetadata, RunOptions

    with dg.Graph().as_default() as g:
        x = dg.placeholder(dg.float32, [4], name="x")
        a = dg.multiply(x, 2.0, name="a")
        y = dg.add(a, 1.0, name="y")
    with dg.Session(graph=g) as session:
        metadata = RunMetadata()
        trace = RunOptions(trace_level=RunOptions.FULL_TRACE)
        out = session.run(y, {x: np.arange(4, dtype=np.float32)}, trace, metadata)
        np.testing.assert_array_equal(out, np.arange(4, dtype=np.float32) * 2 + 1)
        nodes = [n for s in metadata.step_stats.dev_stats for n in s.node_stats]
        (fused,) = [n for n in nodes if n.op_type == FUSED]
        assert fused.node_name == "y" and fused.fused == ("a", "y")
        assert not [n for n in nodes if n.node_name == "a"]  # one entry, not one per op
        assert metadata.step_stats.device_of("a") == metadata.step_stats.device_of("y")


def test_large_read_only_inputs_from_many_threads_take_the_split_loop():
    import threading

    from daskgraph.kernels.fused import PARALLEL_ELEMENTS
    from daskgraph.kernels.kernel_threads import threads_for

    kernel = FusedKernel((("m", "multiply", (0, 1)), ("a", "add", (2, 0))), 2)
    x = np.random.default_rng(2).random(PARALLEL_ELEMENTS, dtype=np.float32)
    x.flags.writeable = False  # (a variable's value is read-only)
    scale = np.float32(1.5)
    loop = compile_now(kernel, x, scale)
    assert loop is not None
    expected = kernel.one_by_one(np, (x, scale))
    results, errors = [], []

    def run():
        try:
            with threads_for(2):  # (each a worker's partition: its pieces on two threads)
                for _ in range(5):
                    results.append(kernel(np, x, scale))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors and len(results) == 15
    assert all(_same_bits(r, expected) for r in results)


def test_inputs_the_loop_does_not_take_run_op_by_op():
    kernel = FusedKernel((("m", "multiply", (0, 1)), ("a", "add", (2, 0))), 2)
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    compile_now(kernel, x, x)
    row = np.arange(4, dtype=np.float32)  # a broadcast the loop does not do
    assert _same_bits(kernel(np, x, row), x * row + x)
    assert _same_bits(kernel(np, x.T, x.T), x.T * x.T + x.T)  # not C-contiguous
    assert kernel(np, 2.0, 3.0) == 8.0  # Python numbers


def test_log_device_placement_names_the_fused_kernels(capsys):
    with dg.Graph().as_default() as g:
        x = dg.placeholder(dg.float32, [4], name="x")
        y = dg.add(dg.multiply(x, 2.0, name="a"), 1.0, name="y")
    import daskgraph.compat.v1 as tf

    config = tf.ConfigProto(log_device_placement=True)
    with dg.Session(graph=g, config=config) as session:
        session.run(y, {x: np.ones(4, np.float32)})
    err = capsys.readouterr().err
    assert "y: (Fused: a, y): /job:localhost/replica:0/task:0/device:CPU:0" in err
    assert "a: (Mul): /job:localhost/replica:0/task:0/device:CPU:0" in err  # placement's own


def test_the_placement_plan_and_the_page_show_a_fused_kernel_and_its_ops():
    from daskgraph.diagnostics.inspection import describe
    from daskgraph.diagnostics.reporting import _entry

    with dg.Graph().as_default() as g:
        x = dg.placeholder(dg.float32, [4], name="x")
        y = dg.add(dg.multiply(x, 2.0, name="a"), 1.0, name="y")
    devices = [Device(CPU0, worker="CPU:0", kind="cpu")]
    placement = place(g, devices)
    plan = lower(placement, [y], [x], fusion=True)
    described = describe(g, placement, plan)
    assert {"a", "y"} <= {op.name for op in described.ops}  # every op's placement, fused too
    (partition,) = described.partitions
    assert {"a", "y"} <= set(partition.ops)
    assert partition.fused == (("a", "y"),)  # the group, named
    assert "fused kernel y: a, y" in str(described)
    assert type(described).from_dict(described.to_dict()) == described
    (fused,) = _fused(plan.partitions[0].program)
    assert _entry(fused) == "y (fused: a, y)"  # one entry on the /daskgraph page


def test_a_short_chain_over_a_small_array_runs_op_by_op_and_a_large_one_takes_the_loop():
    from daskgraph.kernels.fused import SMALL_ELEMENTS

    kernel = FusedKernel((("m", "multiply", (0, 1)), ("a", "add", (2, 0))), 2)
    small = np.arange(100, dtype=np.float32)
    large = np.arange(SMALL_ELEMENTS, dtype=np.float32)
    for _ in range(3):  # the second call of a kind would queue its compilation
        np.testing.assert_array_equal(kernel(np, small, small), small * small + small)
    settle()
    kernel(np, small, small)
    assert not kernel._loops  # two NumPy calls cost less than the loop's one
    for _ in range(3):
        np.testing.assert_array_equal(kernel(np, large, large), large * large + large)
    settle()
    np.testing.assert_array_equal(kernel(np, large, large), large * large + large)
    assert kernel._loops  # one pass over memory instead of two
    long_chain = FusedKernel(tuple((f"s{i}", "add", (i + 1, 0)) for i in range(6)), 2)
    for _ in range(3):
        long_chain(np, small, small)
    settle()
    long_chain(np, small, small)
    assert long_chain._loops  # six calls cost more than the loop's one, however small


RELAXED_NAMES = sorted(RELAXED)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", RELAXED_NAMES)
def test_every_relaxed_function_stays_within_its_tolerance_of_numpy(name, dtype):
    values = _edge_values(dtype)
    arity = len(set(re.findall(r"\{(\d)\}", RELAXED[name])))
    inputs = (values,) if arity == 1 else (np.abs(values) / (1 + np.abs(values)), values)
    kernel = FusedKernel((("op", name, tuple(range(arity))),), arity)
    with np.errstate(all="ignore"):
        assert compile_now(kernel, *inputs) is not None
        looped = _looped(kernel, inputs)
        unfused = kernel.one_by_one(np, inputs)
    finite = np.isfinite(unfused)
    np.testing.assert_array_equal(np.isnan(looped), np.isnan(unfused))
    np.testing.assert_array_equal(looped[np.isinf(unfused)], unfused[np.isinf(unfused)])
    np.testing.assert_allclose(
        looped[finite], unfused[finite], rtol=RELAXED_RTOL[dtype], atol=np.finfo(dtype).tiny
    )


def _transcendental_graph(jit_scope=None):
    with dg.Graph().as_default() as g:
        x = dg.placeholder(dg.float32, [16, 16], name="x")
        h = dg.abs(x) * 0.5 + 0.1
        with jit_scope() if jit_scope else contextlib.nullcontext():
            y = dg.tanh(h, name="t") * dg.sigmoid(x, name="s") * dg.exp(-h, name="e")
        z = dg.tanh(y, name="outer") * 2.0
    return g, x, z


def _fused_names(program):
    return {n for ins in _fused(program) for n in ins.kernel.op_names}


def test_transcendental_functions_fuse_only_under_the_jit_switches():
    from daskgraph.framework.scopes import jit_scope

    g, x, z = _transcendental_graph()
    assert not {"t", "s", "e", "outer"} & _fused_names(_program(g, [z], [x]))
    devices = [Device(CPU0, worker="CPU:0", kind="cpu")]
    (partition,) = lower(place(g, devices), [z], [x], jit=True).partitions
    assert {"t", "s", "e", "outer"} <= _fused_names(partition.program)  # global_jit_level
    g, x, z = _transcendental_graph(jit_scope)
    scoped = _fused_names(_program(g, [z], [x]))
    assert {"t", "s", "e"} <= scoped and "outer" not in scoped  # the block's ops only
    assert g.get_operation_by_name("t").get_attr("_XlaCompile") is True


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_a_session_under_global_jit_level_fuses_and_stays_within_tolerance():
    import daskgraph.compat.v1 as tf

    value = np.random.default_rng(6).standard_normal((16, 16)).astype(np.float32)
    g, x, z = _transcendental_graph()
    results = []
    for level in (tf.OptimizerOptions.ON_1, tf.OptimizerOptions.OFF):
        config = tf.ConfigProto()
        config.graph_options.optimizer_options.global_jit_level = level
        with tf.Session(graph=g, config=config) as session:
            for _ in range(3):
                session.run(z, {x: value})
            settle()
            results.append(session.run(z, {x: value}))
            plan = str(session.placement(z, {x: value}))
        fused_tanh = any("fused kernel" in line and " t, " in line for line in plan.splitlines())
        assert fused_tanh == (level == tf.OptimizerOptions.ON_1)
    np.testing.assert_allclose(results[0], results[1], rtol=RELAXED_RTOL["float32"])
