"""``tf.data``'s names (TensorFlow 1's) for :mod:`daskgraph.data.dataset`: ``Dataset`` (TF1's
``DatasetV1``, with ``make_one_shot_iterator``), ``Iterator``, the iterator functions, the
``get_output_*`` functions and the cardinality constants.

>>> import numpy as np
>>> import daskgraph.compat.v1 as tf
>>> with tf.Graph().as_default():
...     ds = tf.data.Dataset.from_tensor_slices({"x": np.arange(3.0)}).map(lambda e: e["x"] * 2)
...     get_output_types(ds), get_output_shapes(ds)
(float64, TensorShape([]))
"""

from typing import Any

from daskgraph.data.dataset import (
    Dataset,
    Iterator,
    make_initializable_iterator,
    make_one_shot_iterator,
)

__all__ = [
    "AUTOTUNE",
    "INFINITE_CARDINALITY",
    "UNKNOWN_CARDINALITY",
    "Dataset",
    "Iterator",
    "get_output_classes",
    "get_output_shapes",
    "get_output_types",
    "make_initializable_iterator",
    "make_one_shot_iterator",
]

#: TensorFlow's constants (``prefetch(AUTOTUNE)`` and ``num_parallel_calls=AUTOTUNE`` are
#: accepted: elements are made one at a time when a run asks for one)
AUTOTUNE = -1
INFINITE_CARDINALITY = -1
UNKNOWN_CARDINALITY = -2


def get_output_types(dataset_or_iterator: Any) -> Any:
    """The dtypes of a dataset's or an iterator's components, in its elements' structure."""
    return dataset_or_iterator.output_types


def get_output_shapes(dataset_or_iterator: Any) -> Any:
    """The static shapes of a dataset's or an iterator's components."""
    return dataset_or_iterator.output_shapes


def get_output_classes(dataset_or_iterator: Any) -> Any:
    """The classes (``Tensor``) of a dataset's or an iterator's components."""
    return dataset_or_iterator.output_classes


def __getattr__(name: str) -> object:
    """A name tf.data does not have: the AttributeError pointing to docs/compat.md."""
    from daskgraph.errors import missing_name

    raise missing_name("tf.data", name, globals())
