"""Random ops: TensorFlow 1's seed rules, per-session generator state, the distributions'
moments and bounds, a virtual GPU drawing the CPU's values, and clear errors."""

from __future__ import annotations

import numpy as np
import pytest

import daskgraph as dg
import daskgraph.compat.v1 as tf
from daskgraph.ops.random import DEFAULT_GRAPH_SEED, get_seed


def _build_and_run(graph_seed, op_seed, runs=1, fn=dg.random_normal):
    """Build a small graph in a fresh Graph, run its random op ``runs`` times in one session."""
    with dg.Graph().as_default():
        if graph_seed is not None:
            dg.set_random_seed(graph_seed)
        dg.constant(1.0)  # an op before: graph-seeded ops take their seed from the op count
        x = fn([4, 3], seed=op_seed)
        with dg.Session() as sess:
            return [sess.run(x) for _ in range(runs)]


@pytest.mark.parametrize(("graph_seed", "op_seed"), [(1, None), (1, 5), (None, 5), (0, 0)])
def test_seeded_ops_repeat_in_fresh_graphs_and_sessions(graph_seed, op_seed):
    first = _build_and_run(graph_seed, op_seed, runs=2)
    again = _build_and_run(graph_seed, op_seed, runs=2)
    np.testing.assert_array_equal(first[0], again[0])
    np.testing.assert_array_equal(first[1], again[1])
    assert not np.array_equal(first[0], first[1]), "each run of a session draws new values"


def test_different_seeds_give_different_values():
    base = _build_and_run(1, 5)[0]
    assert not np.array_equal(base, _build_and_run(1, 6)[0])
    assert not np.array_equal(base, _build_and_run(2, 5)[0])
    assert not np.array_equal(base, _build_and_run(None, 5)[0])  # the default graph seed


def test_unseeded_ops_differ_between_sessions():
    assert not np.array_equal(_build_and_run(None, None)[0], _build_and_run(None, None)[0])


def test_get_seed_follows_tensorflow():
    with dg.Graph().as_default() as g:
        assert get_seed(None) == (None, None)
        assert get_seed(7) == (DEFAULT_GRAPH_SEED, 7)
        tf.set_random_seed(3)
        assert g.seed == 3
        dg.constant(0.0)
        assert get_seed(None) == (3, 1)  # derived from the ops built so far
        assert get_seed(2**31 + 4) == (3, 5)  # truncated to 31 bits
        tf.random.set_random_seed(0)
        assert get_seed(0) == (0, 2**31 - 1)  # never (0, 0)


def test_graph_seeded_ops_differ_from_each_other():
    with dg.Graph().as_default():
        dg.set_random_seed(4)
        a, b = dg.random_uniform([50]), dg.random_uniform([50])
        same_a, same_b = dg.random_normal([3], seed=9), dg.random_normal([3], seed=9)
        with dg.Session() as sess:
            va, vb, sa, sb = sess.run([a, b, same_a, same_b])
    assert not np.array_equal(va, vb)
    np.testing.assert_array_equal(sa, sb)  # one seed pair, one sequence, as in TensorFlow


N = 100_000


def test_normal_moments_and_dtype():
    with dg.Graph().as_default():
        x = dg.random_normal([N], mean=3.0, stddev=2.0, seed=1)
        y = dg.random_normal([N // 10, 10], dtype=dg.float64, seed=2)
        with dg.Session() as sess:
            vx, vy = sess.run([x, y])
    assert vx.dtype == np.float32 and vy.dtype == np.float64 and vy.shape == (N // 10, 10)
    assert abs(vx.mean() - 3.0) < 0.03 and abs(vx.std() - 2.0) < 0.03
    assert abs(vy.mean()) < 0.015 and abs(vy.std() - 1.0) < 0.015


def test_truncated_normal_stays_within_two_stddev():
    with dg.Graph().as_default():
        x = dg.truncated_normal([N], mean=-1.0, stddev=0.5, seed=3)
        with dg.Session() as sess:
            values = sess.run(x)
    assert values.min() >= -2.0 and values.max() <= 0.0
    assert abs(values.mean() + 1.0) < 0.01
    assert abs(values.std() - 0.5 * 0.87962566) < 0.01  # a unit normal cut at +-2


def test_uniform_floats_and_ints():
    with dg.Graph().as_default():
        f = dg.random_uniform([N], -2.0, 6.0, seed=4)
        unit = dg.random_uniform([N], dtype=dg.float16, seed=5)
        ints = dg.random_uniform([N], 3, 9, dtype=dg.int64, seed=6)
        with dg.Session() as sess:
            vf, vu, vi = sess.run([f, unit, ints])
    assert vf.min() >= -2.0 and vf.max() < 6.0 and abs(vf.mean() - 2.0) < 0.05
    assert vu.dtype == np.float16 and vu.min() >= 0.0 and vu.max() < 1.0
    assert vi.dtype == np.int64 and set(np.unique(vi)) == set(range(3, 9))


def test_tensor_bounds_shapes_and_names():
    with dg.Graph().as_default():
        p = dg.placeholder(dg.float32, [None, 2])
        low = dg.placeholder(dg.float32, [])
        x = dg.random_uniform(dg.shape(p), minval=low, maxval=low + 1.0, seed=1, name="u")
        y = dg.random_normal(dg.shape(p), stddev=dg.constant([1.0, 100.0]), seed=2)
        assert x.shape == (None, None) and x.op.name == "u"
        with dg.Session() as sess:
            vx, vy = sess.run([x, y], {p: np.zeros((500, 2)), low: 10.0})
    assert vx.shape == (500, 2) and vx.min() >= 10.0 and vx.max() < 11.0
    assert vy[:, 1].std() > 50 * vy[:, 0].std()


def test_gradients_flow_into_mean_and_stddev_only():
    with dg.Graph().as_default():
        mean, std = dg.constant(1.0), dg.constant(2.0)
        x = dg.random_normal([1000], mean=mean, stddev=std, seed=1)
        gm, gs = dg.gradients(dg.reduce_sum(x), [mean, std])
        draws = x.op.inputs[0].op.inputs[0]  # the RandomStandardNormal op's output
        with dg.Session() as sess:
            vm, vs, vz = sess.run([gm, gs, draws])
    assert float(vm) == 1000.0
    np.testing.assert_allclose(vs, vz.sum(), rtol=1e-5)


def test_errors():
    with dg.Graph().as_default():
        with pytest.raises(ValueError, match="maxval must be given"):
            dg.random_uniform([2], dtype=dg.int32)
        with pytest.raises(ValueError, match="must be less than maxval"):
            dg.random_uniform([2], 5, 5, dtype=dg.int32)
        with pytest.raises(ValueError, match="floating point"):
            dg.random_normal([2], dtype=dg.int32)
        with pytest.raises(ValueError, match=">= 0"):
            dg.truncated_normal([2, -1])
        with pytest.raises(TypeError, match="1-D int32 or int64"):
            dg.random_normal(dg.placeholder(dg.float32, [2]))


@pytest.mark.virtual_gpus(1)
def test_a_virtual_gpu_draws_the_cpus_values(dg_session):
    fetches = {}
    for device in ("/cpu:0", "/gpu:0"):
        with dg.device(device):
            fetches[device] = [
                dg.random_normal([5, 3], seed=1),
                dg.truncated_normal([7], stddev=3.0, seed=2),
                dg.random_uniform([4], 0, 10, dtype=dg.int32, seed=3),
                dg.random_uniform([4], dtype=dg.float64, seed=4),
            ]
    plan = dg_session.placement(fetches)
    assigned = {op.name: op.assigned for op in plan.ops}
    assert "GPU:0" in assigned[fetches["/gpu:0"][0].op.name]
    for _ in range(2):  # the generators move on alike on both devices
        got = dg_session.run(fetches)
        for cpu, gpu in zip(got["/cpu:0"], got["/gpu:0"], strict=True):
            np.testing.assert_array_equal(cpu, gpu)
            assert cpu.dtype == gpu.dtype
