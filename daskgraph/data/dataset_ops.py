"""``tf.data``'s iterator ops registered with their kernels (:mod:`daskgraph.kernels.dataset_ops`,
which also holds the pipeline's stages), CPU only as TensorFlow's, with no gradient.

>>> from daskgraph.framework.op_registry import lookup
>>> lookup("IteratorGetNext").stateful, lookup("IteratorV2").stateful
(True, False)
"""

from __future__ import annotations

from daskgraph.framework.gradient_registry import no_gradient
from daskgraph.framework.op_registry import register
from daskgraph.kernels.dataset_ops import (
    _CPU_ONLY,
    _get_next_kernel,
    _iterator_kernel,
    _make_iterator_kernel,
)

__all__: list[str] = []

register("IteratorV2", _iterator_kernel, **_CPU_ONLY)
register("MakeIterator", _make_iterator_kernel, stateful=True, **_CPU_ONLY)
register("IteratorGetNext", _get_next_kernel, stateful=True, **_CPU_ONLY)
for _type in ("IteratorV2", "MakeIterator", "IteratorGetNext"):
    no_gradient(_type)
