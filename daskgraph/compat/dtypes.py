"""``tf.dtypes``: TensorFlow 1's names for :mod:`daskgraph.framework.dtypes` (``bool``, ``double``,
``half``, ...) and the dtype functions TF1 keeps there (``cast``, ``saturate_cast``,
``as_string``).

Its one job is naming. daskgraph has no complex, quantized, ``bfloat16`` or 16/32/64-bit
unsigned dtypes, so those names are absent.

>>> import daskgraph.compat.v1 as tf
>>> tf.dtypes.double is tf.float64 and tf.dtypes.bool is tf.bool and tf.dtypes.cast is tf.cast
True
"""

from daskgraph.framework.dtypes import (
    DType,
    as_dtype,
    float16,
    float32,
    float64,
    int8,
    int16,
    int32,
    int64,
    string,
    uint8,
    variant,
)
from daskgraph.framework.dtypes import bool_ as bool  # TensorFlow's name: tf.dtypes.bool
from daskgraph.framework.dtypes import float16 as half
from daskgraph.framework.dtypes import float64 as double
from daskgraph.ops.array import cast
from daskgraph.ops.manip import saturate_cast
from daskgraph.ops.strings import as_string

__all__ = [
    "DType",
    "as_dtype",
    "as_string",
    "bool",
    "cast",
    "double",
    "float16",
    "float32",
    "float64",
    "half",
    "int8",
    "int16",
    "int32",
    "int64",
    "saturate_cast",
    "string",
    "uint8",
    "variant",
]


def __getattr__(name: str) -> object:
    """A name tf.dtypes does not have: the AttributeError pointing to docs/compat.md."""
    from daskgraph.errors import missing_name

    raise missing_name("tf.dtypes", name, globals())
