# fmt: off
# Source: TensorFlow guide "Using GPUs" (https://www.tensorflow.org/tutorials/using_gpu, TF 1.x,
#   last updated June 19, 2017; kept in ../shared/seeds/004_30f3d3fce4b231a0.txt)
# Section: "Allowing GPU memory growth" (first option).
# Changed: the import line added; the elided further Session arguments (`, ...`) left out.
# License: the guide's code samples are under the Apache License 2.0 (its text: CC BY 3.0).
# Virtual GPUs: 1
import daskgraph.compat.v1 as tf

config = tf.ConfigProto()
config.gpu_options.allow_growth = True
session = tf.Session(config=config)
