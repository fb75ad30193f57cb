"""TensorFlow 1's ``tf.metrics``: streaming metrics as local variables and update ops.

The package is ``tf.metrics``: it gathers the names of :mod:`daskgraph.metrics.core` (the
metrics), built on :mod:`~daskgraph.metrics.base` (their variables and update ops), with the
thresholded metrics in :mod:`~daskgraph.metrics.thresholds` and the top-k ones in
:mod:`~daskgraph.metrics.at_k`.
"""

from daskgraph.metrics.core import *  # noqa: F403 - the metrics are the public API
from daskgraph.metrics.core import __all__ as __all__
