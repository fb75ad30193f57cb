# ruff: noqa: E501, I001, W291
# fmt: off
# Source: reading notes on chapter 9 of 《TensorFlow实战Google深度学习框架》 (caicloud, Zheng Zeyu et al.),
#   "Chapter9 Tensorflow计算加速" (kept in ../shared/seeds/001_72e7045bb5a6f219.txt)
# Section: 9.1, second program. It keeps the notes' typos: 'cpu/:0' (TensorFlow reads it as
#   /device:CPU:*) and `a = tf.constanta = tf.constant(...)`.
# Changed: the import line.
# License: none stated in the source; a short excerpt kept for interoperability testing.
# Virtual GPUs: 2
import daskgraph.compat.v1 as tf 

#通过 tf.device将运算指定到特定的设备上
with tf.device('cpu/:0'):
    a = tf.constanta = tf.constant([1.,2.,3.],shape=[3],name='a')
    b = tf.constant([1.,2.,3.],shape=[3],name='b')

with tf.device('/gpu:1'):
    c=a+b

sess = tf.Session(config = tf.ConfigProto(log_device_placement = True))
print(sess.run(c))
