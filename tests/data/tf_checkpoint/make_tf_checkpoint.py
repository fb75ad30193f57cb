"""Write the TensorFlow checkpoint next to this file (needs TensorFlow; run once, committed).

    python tests/data/tf_checkpoint/make_tf_checkpoint.py

``model`` holds a variable of every dtype daskgraph reads, scalars, a string tensor and two
partitioned variables (``fixed_size_partitioner``), as TensorFlow 2.21's ``tf.compat.v1``
``Saver`` writes them; ``expected.npy`` holds their values (a pickled dict) as TensorFlow
read them back.
"""

import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
VALUES = {
    "f32": np.arange(6, dtype=np.float32).reshape(2, 3),
    "f64": np.float64(2.5),
    "f16": np.array([1.5, -0.25], np.float16),
    "i8": np.array([-3, 4], np.int8),
    "i16": np.array([-300], np.int16),
    "i32": np.array([1, -2, 3], np.int32),
    "i64": np.array([[7]], np.int64),
    "u8": np.array([1, 255], np.uint8),
    "u16": np.array([65535], np.uint16),
    "b": np.array([True, False]),
    "c64": np.array([1 + 2j], np.complex64),
    "c128": np.array([3 - 4j], np.complex128),
    "s": np.array([b"ab", b"", b"\x00\xff"], object),
    "scope/step": np.int64(42),
}


def main() -> None:
    import tensorflow as tf  # (here: importing this file needs no TensorFlow)

    v1 = tf.compat.v1
    v1.disable_eager_execution()
    with tf.Graph().as_default():
        for name, value in VALUES.items():
            v1.Variable(value, name=name)
        small, large = np.zeros((10, 4)), np.zeros((300, 2))  # (shapes)
        parts = {
            "part": v1.get_variable(
                "part",
                shape=small.shape,
                initializer=v1.random_normal_initializer(seed=1),
                partitioner=v1.fixed_size_partitioner(3),
            ),
            "big": v1.get_variable(
                "big",
                shape=large.shape,
                initializer=v1.random_normal_initializer(seed=2),
                partitioner=v1.fixed_size_partitioner(2),
            ),
        }
        saver = v1.train.Saver()
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            saver.save(sess, os.path.join(HERE, "model"), write_meta_graph=False)
            expected = dict(VALUES)
            for name, var in parts.items():
                expected[name] = np.concatenate(sess.run(list(var)))
    os.remove(os.path.join(HERE, "checkpoint"))
    np.save(os.path.join(HERE, "expected.npy"), expected, allow_pickle=True)


if __name__ == "__main__":
    main()
