"""Pin ops to a device by hand with ``tf.device``; leave the rest to the placer (TF1 API).

The program is written against TensorFlow 1's names, through ``daskgraph.compat.v1``. The two
constants are created under ``tf.device("/cpu:0")`` and stay on the CPU; the matrix product
has no device scope, so the placer chooses for it: MatMul has a GPU kernel, and the lowest
numbered GPU wins, so it runs on GPU:0 and its inputs are copied there.

Run: ``python examples/manual_placement.py``
"""

import dask
import numpy as np

import daskgraph.compat.v1 as tf  # the only line a TensorFlow 1 program changes

# On a machine with real GPUs the embedded cluster uses them. On one without any, make sure it
# still has the GPU this example places ops on: a virtual GPU (the GPU code path over NumPy).
# A count the user configured (DASK_DASKGRAPH__VIRTUAL_GPUS) is kept when it is larger.
GPUS_NEEDED = 1
dask.config.set(
    {"daskgraph.virtual-gpus": max(GPUS_NEEDED, dask.config.get("daskgraph.virtual-gpus"))}
)


def main() -> None:
    values = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    with tf.device("/cpu:0"):
        a = tf.constant(values, shape=[2, 3], name="a")
        b = tf.constant(values, shape=[3, 2], name="b")
    c = tf.matmul(a, b)  # no device requested: the placer picks GPU:0

    with tf.Session(config=tf.ConfigProto(log_device_placement=True)) as sess:
        result = sess.run(c)

    print("matmul(a, b) =")
    print(result)

    want = np.reshape(values, (2, 3)) @ np.reshape(values, (3, 2))
    if result.dtype != np.float32 or not np.array_equal(result, want):
        raise SystemExit(f"wrong result: got {result!r}, expected {want}")
    print("OK: result matches NumPy")


if __name__ == "__main__":
    main()
