"""``tf.random``'s names (TensorFlow 1.13 and later) for the ops of :mod:`daskgraph.ops.random`,
:mod:`daskgraph.ops.random` and :mod:`daskgraph.ops.stateless_random`.

>>> import daskgraph.compat.v1 as tf
>>> tf.random.shuffle is tf.random_shuffle and tf.random.gamma is tf.random_gamma
True
"""

from daskgraph.ops.random import (
    categorical,
    get_seed,
    multinomial,
    set_random_seed,
    truncated_normal,
)
from daskgraph.ops.random import random_gamma as gamma
from daskgraph.ops.random import random_normal as normal
from daskgraph.ops.random import random_poisson as poisson
from daskgraph.ops.random import random_shuffle as shuffle
from daskgraph.ops.random import random_uniform as uniform
from daskgraph.ops.stateless_random import (
    stateless_categorical,
    stateless_multinomial,
    stateless_normal,
    stateless_truncated_normal,
    stateless_uniform,
)

__all__ = [
    "categorical",
    "gamma",
    "get_seed",
    "multinomial",
    "normal",
    "poisson",
    "set_random_seed",
    "shuffle",
    "stateless_categorical",
    "stateless_multinomial",
    "stateless_normal",
    "stateless_truncated_normal",
    "stateless_uniform",
    "truncated_normal",
    "uniform",
]


def __getattr__(name: str) -> object:
    """A name tf.random does not have: the AttributeError pointing to docs/compat.md."""
    from daskgraph.errors import missing_name

    raise missing_name("tf.random", name, globals())
