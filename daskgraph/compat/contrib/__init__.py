"""``tf.contrib``: the common subset TF1 multi-GPU and distributed programs reach for.

``tf.contrib.layers`` (:mod:`.layers`), ``tf.contrib.slim`` (:mod:`.slim`) and
``tf.contrib.framework`` (:mod:`.framework`); any other name raises an ``AttributeError``
saying that ``tf.contrib`` is only partly provided and where its names are listed
(``docs/compat.md``).

>>> import daskgraph.compat.v1 as tf
>>> tf.contrib.layers.flatten is tf.contrib.slim.flatten
True
>>> tf.contrib.rnn  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
AttributeError: module 'tf.contrib' has no attribute 'rnn': daskgraph provides only ...
"""

from daskgraph.compat.contrib import framework, layers, slim
from daskgraph.errors import missing_name

__all__ = ["framework", "layers", "slim"]


def __getattr__(name: str) -> object:
    raise missing_name("tf.contrib", name, globals())
