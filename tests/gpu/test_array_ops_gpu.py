"""The array-manipulation and random ops on a real NVIDIA GPU (CuPy kernels) give the CPU's
values: slices, concat/split, stack/unstack, fills, one_hot, gather and their gradients
(``cupyx.scatter_add`` for gather's), and the random ops drawn with the same seeds.

Marked ``gpu`` (skipped where ``nvidia-smi -L`` finds no GPU); needs the ``cuda12`` or
``cuda13`` extra.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import dask
import numpy as np
import pytest

import daskgraph as dg

SMALL_CLUSTER = {
    "daskgraph.virtual-gpus": 0,
    "daskgraph.local.processes": False,
    "daskgraph.local.cpu-threads": 2,
}


@contextlib.contextmanager
def gpu_session() -> Iterator[dg.Session]:
    config = dg.SessionConfig(gpu_options=dg.GPUOptions(visible_device_list="0", allow_growth=True))
    with dg.Graph().as_default(), dask.config.set(SMALL_CLUSTER):
        sess = dg.Session(config=config)
        try:
            yield sess
        finally:
            sess.close()


def _build(x: np.ndarray) -> list[dg.Tensor]:
    """Every array op once, the gradient of a weighted sum of them, and seeded random ops."""
    c = dg.constant(x)
    outs = [
        c[1:, ::-1, None, ..., 0],
        dg.strided_slice(c, [0, 1], [0, 5], [1, 2], begin_mask=1),
        dg.slice(c, [1, 0, 2], [2, -1, 3]),
        *dg.split(c, [2, -1], axis=1),
        dg.concat([c, c * 2.0], axis=-1),
        dg.stack([c, c], axis=1),
        *dg.unstack(c[:2]),
        dg.expand_dims(c, 0),
        dg.squeeze(c[:1]),
        dg.tile(c, [1, 2, 1]),
        dg.gather(c, [3, 0, 3], axis=1),
    ]
    loss = dg.add_n([dg.reduce_sum(o * o) for o in outs])
    (grad,) = dg.gradients(loss, [c])
    return [
        *outs,
        grad,
        dg.shape(c),
        dg.size(c),
        dg.one_hot([0, 2, -1], 3),
        dg.zeros(dg.shape(c)),
        dg.fill([2], 1.5),
        dg.ones_like(c, dtype=dg.int32),
        dg.random_normal([3, 4], seed=1),
        dg.truncated_normal([5], seed=2),
        dg.random_uniform([6], 0, 9, dtype=dg.int64, seed=3),
    ]


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_array_ops_on_the_gpu_give_the_cpus_values(dtype) -> None:
    x = np.random.default_rng(0).standard_normal((4, 6, 5)).astype(dtype)
    with gpu_session() as sess:
        with dg.device("/cpu:0"):
            on_cpu = _build(x)
        with dg.device("/gpu:0"):
            on_gpu = _build(x)
        plan = sess.placement(on_gpu)
        for _ in range(2):  # the random ops' generators move on alike
            cpu_values, gpu_values = sess.run([on_cpu, on_gpu])
            for tensor, cpu, gpu in zip(on_gpu, cpu_values, gpu_values, strict=True):
                assert type(gpu) is np.ndarray or np.isscalar(gpu), tensor.name
                np.testing.assert_allclose(gpu, cpu, rtol=1e-5, atol=1e-6, err_msg=tensor.name)
    on_the_gpu = {op.type for op in plan.ops if "GPU" in op.assigned}
    assert {"StridedSlice", "ConcatV2", "GatherV2", "GatherGrad", "SliceGrad"} <= on_the_gpu
    assert {"RandomStandardNormal", "RandomUniformInt", "OneHot", "Fill"} <= on_the_gpu
