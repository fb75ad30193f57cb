"""Log where every op runs: ``log_device_placement=True`` with daskgraph's native API.

Builds ``a + b`` on two vectors and a matrix product, with no device scopes at all, and lets
the session place them. As in TensorFlow, an op that has a GPU kernel goes to the lowest
numbered GPU when the cluster has one, so everything lands on GPU:0. The session prints the
device mapping and one ``name: (Type): device`` line per op (on stderr) before it runs.

Run: ``python examples/log_device_placement.py``
"""

import dask
import numpy as np

import daskgraph as dg  # importing daskgraph registers its defaults in Dask's config

# On a machine with real GPUs the embedded cluster uses them. On one without any, make sure it
# still has the GPU this example places ops on: a virtual GPU (the GPU code path over NumPy).
# A count the user configured (DASK_DASKGRAPH__VIRTUAL_GPUS) is kept when it is larger.
GPUS_NEEDED = 1
dask.config.set(
    {"daskgraph.virtual-gpus": max(GPUS_NEEDED, dask.config.get("daskgraph.virtual-gpus"))}
)


def main() -> None:
    a = dg.constant([1.0, 2.0, 3.0], shape=[3], name="a")
    b = dg.constant([1.0, 2.0, 3.0], shape=[3], name="b")
    total = a + b

    x = dg.constant([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], shape=[2, 3], name="x")
    y = dg.constant([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], shape=[3, 2], name="y")
    product = dg.matmul(x, y)

    config = dg.SessionConfig(log_device_placement=True)
    with dg.Session(config=config) as sess:
        got_total, got_product = sess.run([total, product])

    print("a + b =", got_total)
    print("matmul(x, y) =")
    print(got_product)

    want_total = np.array([2.0, 4.0, 6.0], dtype=np.float32)
    want_product = np.arange(1, 7, dtype=np.float32).reshape(2, 3) @ np.arange(
        1, 7, dtype=np.float32
    ).reshape(3, 2)
    if not np.array_equal(got_total, want_total):
        raise SystemExit(f"wrong a + b: got {got_total}, expected {want_total}")
    if not np.array_equal(got_product, want_product):
        raise SystemExit(f"wrong matmul: got {got_product}, expected {want_product}")
    print("OK: results match NumPy")


if __name__ == "__main__":
    main()
