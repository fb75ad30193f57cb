# fmt: off
# Source: the GPU notebook of 《TensorFlow实战Google深度学习框架》 (caicloud/tensorflow-tutorial,
#   "使用 GPU 做运算" / "分布式运算"; kept in ../shared/seeds/000_ad7f1a4874e9082c.txt)
# Section: "分布式运算", the first cell (a local one-task server).
# Changed: the import line.
# License: none stated in the source; a short excerpt kept for interoperability testing.
# Virtual GPUs: 1
import daskgraph.compat.v1 as tf

# 创建一个本地集群。
s = tf.constant("Hello, distributed TensorFlow!")
server = tf.train.Server.create_local_server()
sess = tf.Session(server.target)
print(sess.run(s))
