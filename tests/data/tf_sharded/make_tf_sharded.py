"""Write the sharded TensorFlow checkpoint next to this file (needs TensorFlow; run once,
committed): ``Saver(sharded=True)`` over two logical CPUs writes one data file per device
(``sharded.data-0000{0,1}-of-00002``) and one index.

    python tests/data/tf_sharded/make_tf_sharded.py
"""

import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def main() -> None:
    import tensorflow as tf  # (here: importing this file needs no TensorFlow)

    v1 = tf.compat.v1
    v1.disable_eager_execution()
    with tf.Graph().as_default():
        with tf.device("/cpu:0"):
            v1.Variable(np.arange(3, dtype=np.float32), name="a")
        with tf.device("/cpu:1"):
            v1.Variable(np.array([[7, 8]], np.int64), name="b")
        saver = v1.train.Saver(sharded=True)
        with v1.Session(config=v1.ConfigProto(device_count={"CPU": 2})) as sess:
            sess.run(v1.global_variables_initializer())
            saver.save(sess, os.path.join(HERE, "sharded"), write_meta_graph=False)
    os.remove(os.path.join(HERE, "checkpoint"))


if __name__ == "__main__":
    main()
