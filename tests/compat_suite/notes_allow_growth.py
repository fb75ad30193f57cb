# ruff: noqa: E501, RUF003
# fmt: off
# Source: reading notes on chapter 9 of 《TensorFlow实战Google深度学习框架》 (caicloud, Zheng Zeyu et al.),
#   "Chapter9 Tensorflow计算加速" (kept in ../shared/seeds/001_72e7045bb5a6f219.txt)
# Section: 9.1, the GPU memory snippet.
# Changed: the import line added.
# License: none stated in the source; a short excerpt kept for interoperability testing.
# Virtual GPUs: 1
import daskgraph.compat.v1 as tf

config = tf.ConfigProto()

#让TF按需分配显存
config.gpu_options.allow_growth = True

#或者直接按固定的比例分配现存，以下代码占用40%
#config.gpu_options.per_processs_gpu_memory_fraction=0.4
session = tf.Session(config=config)
