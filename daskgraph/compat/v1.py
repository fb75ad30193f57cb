"""TensorFlow 1's names for daskgraph's objects, so TF1 programs run with one changed import.

Its one job is to map names: every attribute is the native daskgraph object itself, except
for the few whose TF1 call signatures differ (``Variable``, ``assign``, ``assign_add``,
``assign_sub``, ``global_variables``, ``trainable_variables``, ``local_variables``,
``get_variable``, ``get_collection``, ``reduce_*``, ``matmul``, ``reshape``, ``transpose``,
``identity``, ``to_float``/``to_int32``/...) and ``GraphKeys`` (TF1's other collection names),
which come from :mod:`daskgraph.compat._signatures` and only translate arguments. The
names are listed by concept in :mod:`daskgraph.compat.v1_names` (graphs, running, variables,
arrays, math, random, control flow, data flow, sparse, strings, namespaces). So
``import daskgraph.compat.v1 as tf`` lets a TensorFlow 1 device-placement program run
unchanged::

    import daskgraph.compat.v1 as tf

    with tf.device("/cpu:0"):
        a = tf.constant([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], shape=[2, 3], name="a")
        b = tf.constant([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], shape=[3, 2], name="b")
    c = tf.matmul(a, b)
    with tf.Session(config=tf.ConfigProto(log_device_placement=True)) as sess:
        print(sess.run(c))

``tf.errors`` *is* :mod:`daskgraph.errors` and ``tf.nn`` *is* :mod:`daskgraph.ops.nn_namespace`;
``tf.ConfigProto`` (a :class:`daskgraph.SessionConfig` taking every TF1 field), the mutable
``tf.DeviceSpec``, ``tf.InteractiveSession``, ``tf.get_default_session`` (None when there is
none) and their kin come from :mod:`daskgraph.compat.sessions` and
:mod:`daskgraph.compat.device_spec`. What TensorFlow 1 has and
daskgraph does not (``tf.image``, ``tf.train.shuffle_batch``, ...) is absent: using it raises an
``AttributeError`` that names it and points to docs/compat.md, here and in every namespace.

>>> import daskgraph
>>> import daskgraph.compat.v1 as tf
>>> isinstance(tf.ConfigProto(), daskgraph.SessionConfig) and tf.Session is daskgraph.Session
True
"""

import functools as _functools
import sys

from daskgraph.compat.v1_names import *  # noqa: F403 - tf.*'s names, by concept
from daskgraph.compat.v1_names import __all__ as __all__
from daskgraph.compat.v1_names.namespaces import compat, summary
from daskgraph.compat.v1_names.running import VERSION
from daskgraph.errors import missing_name as _missing_name

#: the TensorFlow API version followed (``tf.__version__``)
__version__ = VERSION
compat.v1 = sys.modules[__name__]  # tf.compat.v1 is this module, as in TensorFlow


def __getattr__(name: str) -> object:
    """TF1's protocol buffer classes ``tf.Summary``, ``tf.Event``, ``tf.SessionLog``,
    ``tf.SummaryMetadata`` and ``tf.HistogramProto``, loaded on first use; for any other name
    daskgraph does not provide, the AttributeError pointing to docs/compat.md."""
    try:
        return summary.proto_class(name, __name__)
    except AttributeError:
        pass
    if name in _tf1_namespaces():  # tf.image: its own section, and no "did you mean"
        raise _missing_name("tf", name, section=f"tf.{name}") from None
    raise _missing_name("tf", name, globals()) from None


@_functools.cache
def _tf1_namespaces() -> frozenset[str]:
    """The namespaces of TensorFlow 1 that docs/compat.md has a section for (``image``, ...):
    the stored snapshot's, read once (every missing name, ``hasattr`` probes included, asks)."""
    from daskgraph.compat.table import snapshot

    return frozenset(snapshot()["namespaces"]) - {""}
