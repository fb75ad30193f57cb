"""``tf.strings``: TensorFlow's string functions, daskgraph's string ops
(:mod:`daskgraph.ops.strings`) under their ``tf.strings`` names.

Its one job is naming. What daskgraph lacks is absent: ``split`` and ``bytes_split`` (sparse or
ragged results), ``ngrams``, the ``unicode_*`` functions, the ``to_hash_bucket*`` hashes and
``unsorted_segment_join``.

>>> import daskgraph.compat.v1 as tf
>>> tf.strings.join is tf.string_join and tf.strings.to_number is tf.string_to_number
True
"""

from daskgraph.ops.strings import (
    as_string,
    length,
    lower,
    reduce_join,
    regex_full_match,
    regex_replace,
    strip,
    substr,
    upper,
)
from daskgraph.ops.strings import string_format as format  # tf.strings.format
from daskgraph.ops.strings import string_join as join
from daskgraph.ops.strings import string_to_number as to_number

__all__ = [
    "as_string",
    "format",
    "join",
    "length",
    "lower",
    "reduce_join",
    "regex_full_match",
    "regex_replace",
    "strip",
    "substr",
    "to_number",
    "upper",
]


def __getattr__(name: str) -> object:
    """A name tf.strings does not have: the AttributeError pointing to docs/compat.md."""
    from daskgraph.errors import missing_name

    raise missing_name("tf.strings", name, globals(), section="tf")
