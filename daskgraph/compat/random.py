"""``tf.random``'s names (TensorFlow 1.13 and later) for the ops of :mod:`daskgraph.ops.random`."""

from daskgraph.ops.random import random_normal as normal
from daskgraph.ops.random import random_uniform as uniform
from daskgraph.ops.random import set_random_seed, truncated_normal

__all__ = ["normal", "set_random_seed", "truncated_normal", "uniform"]
