"""``tf.initializers``'s names (TensorFlow 1.x) for :mod:`daskgraph.ops.initializers`.

>>> import daskgraph.compat.v1 as tf
>>> tf.initializers.glorot_uniform is tf.glorot_uniform_initializer
True
"""

from daskgraph.compat.variables import tables_initializer
from daskgraph.ops.initializers import Constant as constant
from daskgraph.ops.initializers import GlorotNormal as glorot_normal
from daskgraph.ops.initializers import GlorotUniform as glorot_uniform
from daskgraph.ops.initializers import Identity as identity
from daskgraph.ops.initializers import Ones as ones
from daskgraph.ops.initializers import Orthogonal as orthogonal
from daskgraph.ops.initializers import RandomNormal as random_normal
from daskgraph.ops.initializers import RandomUniform as random_uniform
from daskgraph.ops.initializers import TruncatedNormal as truncated_normal
from daskgraph.ops.initializers import UniformUnitScaling as uniform_unit_scaling
from daskgraph.ops.initializers import VarianceScaling as variance_scaling
from daskgraph.ops.initializers import Zeros as zeros
from daskgraph.ops.initializers import he_normal, he_uniform, lecun_normal, lecun_uniform
from daskgraph.ops.state import global_variables_initializer as global_variables
from daskgraph.ops.state import variables_initializer as variables
from daskgraph.ops.variable_status import local_variables_initializer as local_variables

__all__ = [
    "constant",
    "global_variables",
    "glorot_normal",
    "glorot_uniform",
    "he_normal",
    "he_uniform",
    "identity",
    "lecun_normal",
    "lecun_uniform",
    "local_variables",
    "ones",
    "orthogonal",
    "random_normal",
    "random_uniform",
    "tables_initializer",
    "truncated_normal",
    "uniform_unit_scaling",
    "variables",
    "variance_scaling",
    "zeros",
]


def __getattr__(name: str) -> object:
    """A name tf.initializers does not have: the AttributeError pointing to docs/compat.md."""
    from daskgraph.errors import missing_name

    raise missing_name("tf.initializers", name, globals())
