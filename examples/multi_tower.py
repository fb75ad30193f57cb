"""Multi-tower: one matrix product per GPU, summed on the CPU.

Each tower (its constants and its MatMul) is built under its own ``dg.device("/gpu:N")``
scope, so the two products run in parallel on GPU:0 and GPU:1; ``add_n`` under ``/cpu:0``
gathers them on the CPU. This is how TensorFlow 1 programs split a model over several GPUs.

Run: ``python examples/multi_tower.py``
"""

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


def main() -> None:
    rng = np.random.default_rng(0)
    inputs = []
    towers = []
    for gpu in range(GPUS_NEEDED):
        a_value = rng.standard_normal((4, 3)).astype(np.float32)
        b_value = rng.standard_normal((3, 5)).astype(np.float32)
        inputs.append((a_value, b_value))
        with dg.device(f"/gpu:{gpu}"):
            a = dg.constant(a_value)
            b = dg.constant(b_value)
            towers.append(dg.matmul(a, b))
    with dg.device("/cpu:0"):
        total = dg.add_n(towers)

    with dg.Session(config=dg.SessionConfig(log_device_placement=True)) as sess:
        result = sess.run(total)

    print(f"sum of {len(towers)} towers =")
    print(result)

    want = sum(a @ b for a, b in inputs)
    if not np.allclose(result, want, rtol=1e-5, atol=1e-6):
        raise SystemExit(f"wrong result: got\n{result}\nexpected\n{want}")
    print("OK: result matches NumPy")


if __name__ == "__main__":
    main()
