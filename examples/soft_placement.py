"""Soft placement: what happens when a requested device cannot be used (TF1 API).

The cluster has two GPUs, and the graph asks for a third (``/gpu:2``):

1. Without soft placement the session refuses to run it and raises
   ``tf.errors.InvalidArgumentError``, naming the op, the request and the devices there are.
2. With ``allow_soft_placement=True`` the ops fall back to an available GPU (GPU:0), and the
   placement log says why.
3. An int32 Variable requested on ``/gpu:0`` has no GPU kernel (as in TensorFlow), so soft
   placement moves it, with its initializer and updates, to the CPU.

Run: ``python examples/soft_placement.py``
"""

import dask
import numpy as np

import daskgraph.compat.v1 as tf  # the only line a TensorFlow 1 program changes

# On a machine with real GPUs the embedded cluster uses them. On one without any, make sure it
# still has the GPUs this example needs: virtual GPUs (the GPU code path over NumPy).
# A count the user configured (DASK_DASKGRAPH__VIRTUAL_GPUS) is kept when it is larger.
GPUS_NEEDED = 2
dask.config.set(
    {"daskgraph.virtual-gpus": max(GPUS_NEEDED, dask.config.get("daskgraph.virtual-gpus"))}
)


def main() -> None:
    values = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    with tf.device("/gpu:2"):  # a GPU this cluster does not have
        a = tf.constant(values, shape=[2, 3], name="a")
        b = tf.constant(values, shape=[3, 2], name="b")
        c = tf.matmul(a, b)

    print("1. allow_soft_placement=False")
    try:
        with tf.Session(config=tf.ConfigProto(log_device_placement=True)) as sess:
            sess.run(c)
    except tf.errors.InvalidArgumentError as err:
        print(f"InvalidArgumentError: {err}")
    else:
        raise SystemExit("expected InvalidArgumentError: /gpu:2 does not exist")

    with tf.device("/gpu:0"):
        counter = tf.Variable(0, name="counter")  # int32: no GPU kernel for it
    step = tf.assign_add(counter, 1)
    init = tf.global_variables_initializer()

    print("2. allow_soft_placement=True")
    config = tf.ConfigProto(allow_soft_placement=True, log_device_placement=True)
    with tf.Session(config=config) as sess:
        result = sess.run(c)
        sess.run(init)
        for _ in range(3):
            count = sess.run(step)

    print("matmul(a, b) =")
    print(result)
    print("counter =", count)

    want = np.reshape(values, (2, 3)) @ np.reshape(values, (3, 2))
    if not np.array_equal(result, want):
        raise SystemExit(f"wrong matmul: got {result}, expected {want}")
    if count != 3:
        raise SystemExit(f"wrong counter: got {count}, expected 3")
    print("OK: results match NumPy")


if __name__ == "__main__":
    main()
