"""Write the bfloat16 TensorFlow checkpoint next to this file (needs TensorFlow; run once,
committed).

    python tests/data/tf_bfloat16/make_tf_bfloat16.py

``model`` holds three ``tf.bfloat16`` variables as TensorFlow 2.21's ``tf.compat.v1`` ``Saver``
writes them (DT_BFLOAT16: the high 16 bits of each float32, rounded to nearest even): values
that are exact in bfloat16 (signed zeros, infinities, a subnormal), a scalar, and float32
values that TensorFlow rounds. ``VALUES`` (float32) are what they were made from.
"""

import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
VALUES = {
    "exact": np.array(
        [[1.0, -2.0, 0.5], [3.140625, 0.0, -0.0], [np.inf, -np.inf, 2.0**-133]], np.float32
    ),
    "scalar": np.float32(-1.5),
    "rounded": np.array([0.1, 1 / 3, 1e-3, 65504.0, 3.0e38, 1e-40, -7.77], np.float32),
}


def main() -> None:
    import tensorflow as tf  # (here: importing this file needs no TensorFlow)

    v1 = tf.compat.v1
    v1.disable_eager_execution()
    with tf.Graph().as_default():
        for name, value in VALUES.items():
            v1.Variable(tf.constant(value, tf.bfloat16), name=name)
        saver = v1.train.Saver()
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            saver.save(sess, os.path.join(HERE, "model"), write_meta_graph=False)
    os.remove(os.path.join(HERE, "checkpoint"))


if __name__ == "__main__":
    main()
