"""Fused kernels on CuPy (daskgraph.kernels.fused_cuda) without a GPU: the kernel's C++ body,
rent or buy, and the fall back to op by op, with a stand-in for CuPy that records the kernels
asked for and runs them with NumPy. tests/gpu/test_fused_gpu.py runs them on a real GPU."""

from __future__ import annotations

import os

import numpy as np

from daskgraph.kernels.fused import FusedKernel
from daskgraph.kernels.fused_cuda import operation

CHAIN = (("m", "multiply", (0, 1)), ("mx", "maximum", (2, 0)), ("r", "sqrt", (3,)))


class FakeCupy:
    """``cupy`` as far as fused kernels use it: ``ElementwiseKernel`` (recorded; the kernel
    it gives runs the chain with NumPy, or raises as a kernel NVRTC refuses), and its ufuncs
    (NumPy's) for the ops one by one."""

    __name__ = "cupy"

    def __init__(self, kernel: FusedKernel, broken: bool = False) -> None:
        self.kernel, self.broken, self.built, self.launches = kernel, broken, [], 0
        self.options: list[tuple] = []  # the NVRTC options of each kernel built

    def ElementwiseKernel(self, in_params, out_params, body, name, options=()):
        self.built.append((in_params, out_params, body, name))
        self.options.append(tuple(options))

        def launch(*args):
            self.launches += 1
            if self.broken:
                raise RuntimeError("nvrtc: error: identifier is undefined")
            return self.kernel.one_by_one(np, args)

        return launch

    def __getattr__(self, name):
        return getattr(np, name)


def test_the_kernel_body_casts_every_step_to_numpys_dtype():
    body = operation(CHAIN, 2, [np.dtype("float32"), np.dtype("float64")])
    assert body == (
        "double t0 = (double)((x0 * x1));\n"
        "double t1 = (double)(((t0 > x0 || t0 != t0) ? t0 : x0));\n"
        "double t2 = (double)(sqrt(t1));\n"
        "out = t2;"
    )
    assert operation(CHAIN, 2, [np.dtype("int32"), np.dtype("int32")]) is None  # not fused


def test_a_chain_is_one_kernel_from_its_second_call_with_the_same_dtypes():
    kernel = FusedKernel(CHAIN, 2)
    fake = FakeCupy(kernel)
    x = np.linspace(-2, 2, 8, dtype=np.float32)
    y = np.float32(1.5)
    expected = np.sqrt(np.maximum(x * y, x))
    for _ in range(3):
        np.testing.assert_array_equal(kernel(fake, x, y), expected)
    ((params, out, body, name),) = fake.built  # built once, on the second call
    assert params == "float32 x0, float32 x1" and out == "float32 out"
    assert body == operation(CHAIN, 2, [np.dtype("float32")] * 2)
    assert name.startswith("daskgraph_fused_") and fake.launches == 2
    kernel(fake, x.astype(np.float64), y)  # other dtypes: rented again, op by op
    assert len(fake.built) == 1


def test_a_kernel_cupy_cannot_run_falls_back_to_op_by_op_for_good():
    kernel = FusedKernel((*CHAIN, ("n", "negative", (4,))), 2)
    fake = FakeCupy(kernel, broken=True)
    x = np.arange(4, dtype=np.float64)
    for _ in range(4):
        np.testing.assert_array_equal(kernel(fake, x, 2.0), -np.sqrt(np.maximum(x * 2.0, x)))
    assert len(fake.built) == 1 and fake.launches == 1  # tried once, then op by op


def test_every_kernel_is_compiled_without_fused_multiply_add_nor_fast_math():
    """NVRTC contracts ``x * y + z`` into one FMA by default (one rounding where NumPy's
    two ufuncs round twice): the kernels are built with ``--fmad=false`` and IEEE ``/``."""
    kernel = FusedKernel((("m", "multiply", (0, 1)), ("a", "add", (3, 2))), 3)
    fake = FakeCupy(kernel)
    x, y, z = (np.linspace(-1, 1, 8, dtype=np.float32) + k for k in range(3))
    for _ in range(2):  # the second call builds the kernel
        np.testing.assert_array_equal(kernel(fake, x, y, z), x * y + z)
    (options,) = fake.options
    assert "--fmad=false" in options
    assert {"--ftz=false", "--prec-div=true", "--prec-sqrt=true"} <= set(options)
    assert not any("fast_math" in o or "fast-math" in o for o in options)


def test_cupys_kernel_cache_is_in_daskgraphs_cache_folder(tmp_path, monkeypatch):
    import dask.config

    def build(chain: tuple) -> list:
        kernel = FusedKernel(chain, 2)
        fake = FakeCupy(kernel)
        x, y = np.linspace(-2, 2, 8, dtype=np.float64), np.float64(1.5)
        with dask.config.set({"daskgraph.cache-dir": str(tmp_path)}):
            kernel(fake, x, y), kernel(fake, x, y)
        return fake.built

    monkeypatch.delenv("CUPY_CACHE_DIR", raising=False)
    assert build((("m", "multiply", (0, 1)), ("s", "subtract", (2, 1))))
    assert os.environ["CUPY_CACHE_DIR"] == str(tmp_path / "cupy")
    assert (tmp_path / "cupy").stat().st_mode & 0o777 == 0o700
    monkeypatch.setenv("CUPY_CACHE_DIR", str(tmp_path / "theirs"))  # (the user's: kept)
    assert build((("m", "multiply", (0, 1)), ("a", "add", (2, 1))))
    assert os.environ["CUPY_CACHE_DIR"] == str(tmp_path / "theirs")
