"""TensorFlow 1's top-level random names: random tensors, shuffles and seeds.

Its one job is to name ``tf.random_normal``, ``tf.random_uniform``, ``tf.truncated_normal``,
``tf.multinomial``, ``tf.random_shuffle``, ``tf.set_random_seed`` and their kin.
"""

from daskgraph.ops import (
    random_normal,
    random_uniform,
    set_random_seed,
    truncated_normal,
)
from daskgraph.ops.random import (
    get_seed,
    multinomial,
    random_crop,
    random_gamma,
    random_poisson,
    random_shuffle,
)

__all__ = [
    "get_seed",
    "multinomial",
    "random_crop",
    "random_gamma",
    "random_normal",
    "random_poisson",
    "random_shuffle",
    "random_uniform",
    "set_random_seed",
    "truncated_normal",
]
