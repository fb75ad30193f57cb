# fmt: off
# Source: the GPU notebook of 《TensorFlow实战Google深度学习框架》 (caicloud/tensorflow-tutorial,
#   "使用 GPU 做运算" / "分布式运算"; kept in ../shared/seeds/000_ad7f1a4874e9082c.txt)
# Section: cells In [2] and In [5].
# Changed: the import line.
# License: none stated in the source; a short excerpt kept for interoperability testing.
# Virtual GPUs: 1
import daskgraph.compat.v1 as tf

a = tf.constant([1.,2., 3.], shape= [3], name= 'a')
b = tf.constant([1., 2., 3.],shape= [3], name= 'b')
c = a + b

sess = tf.Session(config=tf.ConfigProto(log_device_placement= True))
print(sess.run(c))
sess.close()
