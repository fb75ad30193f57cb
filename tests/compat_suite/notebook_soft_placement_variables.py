# fmt: off
# Source: the GPU notebook of 《TensorFlow实战Google深度学习框架》 (caicloud/tensorflow-tutorial,
#   "使用 GPU 做运算" / "分布式运算"; kept in ../shared/seeds/000_ad7f1a4874e9082c.txt)
# Section: cell In [5]: an int32 Variable asked on /gpu:0 goes back to the CPU with
#   allow_soft_placement.
# Changed: the import line.
# License: none stated in the source; a short excerpt kept for interoperability testing.
# Virtual GPUs: 1
import daskgraph.compat.v1 as tf

a_cpu = tf.Variable(0, name="a_cpu")
with tf.device('/gpu:0'):
    a_gpu = tf.Variable(0, name="a_gpu")
    # 通过 allow_soft_placement 参数自动将无法放在 GPU 上的操作放回 CPU 上。
sess = tf.Session(config=tf.ConfigProto(
    allow_soft_placement=True, log_device_placement=True))
sess.run(tf.global_variables_initializer())
