"""A^n + B^n on two GPUs: the README's main demo.

Each power is computed by repeated matrix products, A^n on GPU:0 and B^n on GPU:1 (each fed
through a placeholder under its GPU's device scope), and ``add_n`` sums them on the CPU. The
two towers do not depend on each other, so the two GPUs work at the same time. The inputs are
random float32 matrices divided by their size, so that the powers stay finite.

Run: ``python examples/matpow.py --size 1000 --n 10``
"""

import argparse
import time

import dask
import numpy as np

import daskgraph as dg  # importing daskgraph registers its defaults in Dask's config

# On a machine with real GPUs the embedded cluster uses them. On one without any, make sure it
# still has the GPUs this example places ops on: virtual GPUs (the GPU code path over NumPy).
# A count the user configured (DASK_DASKGRAPH__VIRTUAL_GPUS) is kept when it is larger.
GPUS_NEEDED = 2
dask.config.set(
    {"daskgraph.virtual-gpus": max(GPUS_NEEDED, dask.config.get("daskgraph.virtual-gpus"))}
)


def matpow(m: dg.Tensor, n: int) -> dg.Tensor:
    """m^n as n - 1 matrix products, each op created in the device scope in force."""
    result = m
    for _ in range(n - 1):
        result = dg.matmul(m, result)
    return result


def build(size: int, n: int) -> tuple[dg.Tensor, dg.Tensor, dg.Tensor]:
    """The demo's graph: placeholders A (GPU:0) and B (GPU:1), and A^n + B^n (CPU:0)."""
    powers = []
    with dg.device("/gpu:0"):
        a = dg.placeholder(dg.float32, [size, size], name="A")
        powers.append(matpow(a, n))
    with dg.device("/gpu:1"):
        b = dg.placeholder(dg.float32, [size, size], name="B")
        powers.append(matpow(b, n))
    with dg.device("/cpu:0"):
        total = dg.add_n(powers)
    return a, b, total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1000, help="rows and columns of A and B")
    parser.add_argument("--n", type=int, default=10, help="the power to raise A and B to")
    args = parser.parse_args()
    if args.size < 1 or args.n < 1:
        parser.error("--size and --n must be >= 1")

    rng = np.random.default_rng(42)
    a_value = (rng.random((args.size, args.size)) / args.size).astype(np.float32)
    b_value = (rng.random((args.size, args.size)) / args.size).astype(np.float32)

    a, b, total = build(args.size, args.n)

    with dg.Session(config=dg.SessionConfig(log_device_placement=True)) as sess:
        start = time.perf_counter()
        result = sess.run(total, feed_dict={a: a_value, b: b_value})
        elapsed = time.perf_counter() - start

    print(f"A^{args.n} + B^{args.n} for {args.size}x{args.size} float32 matrices")
    print(f"session.run wall time: {elapsed:.3f} s")
    print(f"result[:2, :2] =\n{result[:2, :2]}")

    want = np.linalg.matrix_power(a_value.astype(np.float64), args.n) + np.linalg.matrix_power(
        b_value.astype(np.float64), args.n
    )
    if result.shape != want.shape or not np.allclose(result, want, rtol=1e-3, atol=0.0):
        error = np.max(np.abs(result - want) / np.abs(want))
        raise SystemExit(f"wrong result: largest relative error {error:.3g} exceeds 1e-3")
    print("OK: result matches NumPy (relative tolerance 1e-3)")


if __name__ == "__main__":
    main()
