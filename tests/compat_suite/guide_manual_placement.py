# fmt: off
# Source: TensorFlow guide "Using GPUs" (https://www.tensorflow.org/tutorials/using_gpu, TF 1.x,
#   last updated June 19, 2017; kept in ../shared/seeds/004_30f3d3fce4b231a0.txt)
# Section: "Manual device placement".
# Changed: the import line added (the guide's snippets assume `import tensorflow as tf`).
# License: the guide's code samples are under the Apache License 2.0 (its text: CC BY 3.0).
# Virtual GPUs: 1
import daskgraph.compat.v1 as tf

# Creates a graph.
with tf.device('/cpu:0'):
    a = tf.constant([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], shape=[2, 3], name='a')
    b = tf.constant([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], shape=[3, 2], name='b')
c = tf.matmul(a, b)
# Creates a session with log_device_placement set to True.
sess = tf.Session(config=tf.ConfigProto(log_device_placement=True))
# Runs the op.
print(sess.run(c))
