# ruff: noqa: E501, I001, W291
# fmt: off
# Source: reading notes on chapter 9 of 《TensorFlow实战Google深度学习框架》 (caicloud, Zheng Zeyu et al.),
#   "Chapter9 Tensorflow计算加速" (kept in ../shared/seeds/001_72e7045bb5a6f219.txt)
# Section: 9.1, first program.
# Changed: the import line.
# License: none stated in the source; a short excerpt kept for interoperability testing.
# Virtual GPUs: 1
import daskgraph.compat.v1 as tf 

a = tf.constant([1.,2.,3.],shape=[3],name='a')
b = tf.constant([1.,2.,3.],shape=[3],name='b')
c=a+b
#通过log_device_placement参数来输出运行每一个运算的设备
sess = tf.Session(config = tf.ConfigProto(log_device_placement = True))
print(sess.run(c))
