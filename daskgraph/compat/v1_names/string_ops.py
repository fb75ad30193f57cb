"""TensorFlow 1's top-level string names: converting, joining, splitting and editing strings.

Its one job is to name ``tf.as_string``, ``tf.string_join``, ``tf.string_split``,
``tf.regex_replace`` and their kin.
"""

from daskgraph.compat.sparse import (
    string_split,
)
from daskgraph.ops.strings import (
    as_string,
    reduce_join,
    regex_replace,
    string_join,
    string_to_number,
    substr,
)
from daskgraph.ops.strings import (
    strip as string_strip,
)

__all__ = [
    "as_string",
    "reduce_join",
    "regex_replace",
    "string_join",
    "string_split",
    "string_strip",
    "string_to_number",
    "substr",
]
