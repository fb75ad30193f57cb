# ruff: noqa: I001
# fmt: off
# Source: the GPU notebook of 《TensorFlow实战Google深度学习框架》 (caicloud/tensorflow-tutorial,
#   "使用 GPU 做运算" / "分布式运算"; kept in ../shared/seeds/000_ad7f1a4874e9082c.txt)
# Section: "分布式运算": task 0 of a two-task cluster (run together with notebook_server2.py;
#   server.join() then serves until killed).
# Changed: the import line.
# License: none stated in the source; a short excerpt kept for interoperability testing.
# Virtual GPUs: 0
# Run: with notebook_server2.py, as subprocesses
import daskgraph.compat.v1 as tf
c = tf.constant("Hello from server1!")
cluster = tf.train.ClusterSpec({"local": ["localhost:2222", "localhost:2223"]})
server = tf.train.Server(cluster, job_name="local", task_index=0)
sess = tf.Session(server.target, config=tf.ConfigProto(
    log_device_placement=True))
print(sess.run(c))
server.join()
