"""TensorFlow 1's top-level sparse names: sparse tensors, indexed slices, ``tf.sparse_*`` ops.

Its one job is to name ``tf.SparseTensor``, ``tf.IndexedSlices`` and the sparse ops TF1 has at
the top level (``tf.sparse_add`` is :func:`daskgraph.compat.sparse.add`, ...).
"""

from daskgraph.compat.sparse import (
    add as sparse_add,
)
from daskgraph.compat.sparse import (
    concat as sparse_concat,
)
from daskgraph.compat.sparse import (
    fill_empty_rows as sparse_fill_empty_rows,
)
from daskgraph.compat.sparse import (
    matmul as sparse_tensor_dense_matmul,
)
from daskgraph.compat.sparse import (
    maximum as sparse_maximum,
)
from daskgraph.compat.sparse import (
    minimum as sparse_minimum,
)
from daskgraph.compat.sparse import (
    placeholder as sparse_placeholder,
)
from daskgraph.compat.sparse import (
    reduce_max as sparse_reduce_max,
)
from daskgraph.compat.sparse import (
    reduce_sum as sparse_reduce_sum,
)
from daskgraph.compat.sparse import (
    reorder as sparse_reorder,
)
from daskgraph.compat.sparse import (
    reset_shape as sparse_reset_shape,
)
from daskgraph.compat.sparse import (
    reshape as sparse_reshape,
)
from daskgraph.compat.sparse import (
    retain as sparse_retain,
)
from daskgraph.compat.sparse import (
    segment_mean as sparse_segment_mean,
)
from daskgraph.compat.sparse import (
    segment_sqrt_n as sparse_segment_sqrt_n,
)
from daskgraph.compat.sparse import (
    segment_sum as sparse_segment_sum,
)
from daskgraph.compat.sparse import (
    slice as sparse_slice,
)
from daskgraph.compat.sparse import (
    softmax as sparse_softmax,
)
from daskgraph.compat.sparse import (
    split as sparse_split,
)
from daskgraph.compat.sparse import (
    to_dense as sparse_tensor_to_dense,
)
from daskgraph.compat.sparse import (
    to_indicator as sparse_to_indicator,
)
from daskgraph.compat.sparse import (
    transpose as sparse_transpose,
)
from daskgraph.ops.indexed_slices import (
    IndexedSlices,
    IndexedSlicesValue,
)
from daskgraph.ops.sparse_ops import (
    sparse_to_dense,
)
from daskgraph.ops.sparse_tensor import (
    SparseTensor,
    SparseTensorValue,
    convert_to_tensor_or_sparse_tensor,
)

__all__ = [
    "IndexedSlices",
    "IndexedSlicesValue",
    "SparseTensor",
    "SparseTensorValue",
    "convert_to_tensor_or_sparse_tensor",
    "sparse_add",
    "sparse_concat",
    "sparse_fill_empty_rows",
    "sparse_maximum",
    "sparse_minimum",
    "sparse_placeholder",
    "sparse_reduce_max",
    "sparse_reduce_sum",
    "sparse_reorder",
    "sparse_reset_shape",
    "sparse_reshape",
    "sparse_retain",
    "sparse_segment_mean",
    "sparse_segment_sqrt_n",
    "sparse_segment_sum",
    "sparse_slice",
    "sparse_softmax",
    "sparse_split",
    "sparse_tensor_dense_matmul",
    "sparse_tensor_to_dense",
    "sparse_to_dense",
    "sparse_to_indicator",
    "sparse_transpose",
]
