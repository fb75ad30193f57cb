"""The ``layers`` namespace: TensorFlow 1's ``tf.layers``, functions and classes.

Its one job is to gather names: :mod:`~daskgraph.layers.base` (the :class:`Layer` base: the
layer's variable scope, weights, regularization losses and updates),
:mod:`~daskgraph.layers.core` (``dense``, ``flatten``, ``dropout``),
:mod:`~daskgraph.layers.convolutional` (``conv2d``, ``max_pooling2d``,
``average_pooling2d``) and :mod:`~daskgraph.layers.normalization`
(``batch_normalization``). :mod:`daskgraph.compat.v1` exposes this module as ``tf.layers``.

>>> import daskgraph as dg
>>> with dg.Graph().as_default():
...     images = dg.placeholder(dg.float32, [None, 8, 8, 1])
...     training = dg.placeholder(dg.bool_, [])
...     h = dg.layers.conv2d(images, 4, 3, activation=dg.nn.relu)
...     h = dg.layers.batch_normalization(h, training=training)
...     h = dg.layers.max_pooling2d(h, 2, 2)
...     logits = dg.layers.dense(dg.layers.flatten(h), 10)
...     logits.shape, len(dg.trainable_variables())
((None, 10), 6)
"""

from daskgraph.layers.base import Layer
from daskgraph.layers.convolutional import (
    AveragePooling2D,
    Conv2D,
    MaxPooling2D,
    average_pooling2d,
    conv2d,
    max_pooling2d,
)
from daskgraph.layers.core import Dense, Dropout, Flatten, dense, dropout, flatten
from daskgraph.layers.normalization import BatchNormalization, batch_normalization

__all__ = [
    "AveragePooling2D",
    "BatchNormalization",
    "Conv2D",
    "Dense",
    "Dropout",
    "Flatten",
    "Layer",
    "MaxPooling2D",
    "average_pooling2d",
    "batch_normalization",
    "conv2d",
    "dense",
    "dropout",
    "flatten",
    "max_pooling2d",
]


def __getattr__(name: str) -> object:
    """A name tf.layers does not have: the AttributeError pointing to docs/compat.md."""
    from daskgraph.errors import missing_name

    raise missing_name("tf.layers", name, globals())
