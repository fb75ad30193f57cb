# fmt: off
# Source: the GPU notebook of 《TensorFlow实战Google深度学习框架》 (caicloud/tensorflow-tutorial,
#   "使用 GPU 做运算" / "分布式运算"; kept in ../shared/seeds/000_ad7f1a4874e9082c.txt)
# Section: cells In [3] and In [4].
# Changed: the import line.
# License: none stated in the source; a short excerpt kept for interoperability testing.
# Virtual GPUs: 1
import daskgraph.compat.v1 as tf

with tf.device('/cpu:0'):
    a = tf.constant([1.0, 2.0, 3.0], shape=[3], name='a')
    b = tf.constant([1.0, 2.0, 3.0], shape=[3], name='b')
with tf.device('/gpu:0'):
    c = a + b

sess = tf.Session(config=tf.ConfigProto(log_device_placement=True))
print(sess.run(c))
