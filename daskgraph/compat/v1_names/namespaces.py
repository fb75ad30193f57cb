"""TensorFlow 1's namespaces: ``tf.nn``, ``tf.train``, ``tf.errors``, ``tf.compat``, ...

Its one job is to name the modules that :mod:`daskgraph.compat.v1` exposes as namespaces
(``tf.layers`` is :mod:`daskgraph.layers`, ``tf.nn`` is :mod:`daskgraph.ops.nn_namespace`, ...).
"""

from daskgraph import (
    errors,
    layers,
    summary,
)
from daskgraph.compat import (
    app,
    config,
    contrib,
    data,
    dtypes,
    flags,
    gfile,
    initializers,
    io,
    linalg,
    logging,
    math,
    random,
    sparse,
    strings,
    test,
    train,
    xla,
)
from daskgraph.compat import (
    tf_compat as compat,
)
from daskgraph.framework import (
    nest,
)
from daskgraph.metrics import (
    core as metrics,
)
from daskgraph.ops import (
    losses,
)
from daskgraph.ops import (
    nn_namespace as nn,
)

__all__ = [
    "app",
    "compat",
    "config",
    "contrib",
    "data",
    "dtypes",
    "errors",
    "flags",
    "gfile",
    "initializers",
    "io",
    "layers",
    "linalg",
    "logging",
    "losses",
    "math",
    "metrics",
    "nest",
    "nn",
    "random",
    "sparse",
    "strings",
    "summary",
    "test",
    "train",
    "xla",
]
