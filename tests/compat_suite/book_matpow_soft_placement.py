# ruff: noqa: I001, W291
# fmt: off
# Source: "TensorFlow GPU 设置", a Chinese translation of the GPU chapter of a Packt TensorFlow book
#   (kept in ../shared/seeds/003_2ec22c06fb5217ce.txt)
# Section: "具有软放置的 GPU 的源代码" (the full source, A^n + B^n).
# Changed: the import line; sizes shrunk (10000 x 10000 -> 100 x 100).
# License: none stated in the source; a short excerpt kept for interoperability testing.
# Virtual GPUs: 1
import numpy as np
import daskgraph.compat.v1 as tf
import datetime

log_device_placement = True
n = 10

A = np.random.rand(100, 100).astype('float32')
B = np.random.rand(100, 100).astype('float32')

c1 = []
c2 = []

def matpow(M, n):
    if n == 1: 
        return M
    else:
        return tf.matmul(M, matpow(M, n-1))

with tf.device('/gpu:0'):
    a = tf.placeholder(tf.float32, [100, 100])
    b = tf.placeholder(tf.float32, [100, 100])
    c1.append(matpow(a, n))
    c1.append(matpow(b, n))

with tf.device('/cpu:0'):
    sum = tf.add_n(c1) 

t1_1 = datetime.datetime.now()
with tf.Session(config=tf.ConfigProto\
                 (allow_soft_placement=True,\
                log_device_placement=log_device_placement))\
                  as sess:
     sess.run(sum, {a:A, b:B})
t2_1 = datetime.datetime.now()
