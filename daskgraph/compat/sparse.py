"""``tf.sparse``: TensorFlow 1's sparse namespace over daskgraph's sparse ops, and the TF1
signatures of the sparse names whose native ones differ (``add``'s ``thresh``,
``reduce_sum``'s ``keep_dims``/``reduction_axes``, ``concat``'s ``concat_dim``, ``split``'s
keyword-only arguments and ``split_dim``, ``segment_*``'s ``sparse_gradient``,
``string_split``'s ``sep``: TF1 has it at the top level only, so it is not in ``__all__``).

Its one job is to map names: ``tf.sparse.to_dense`` *is*
:func:`daskgraph.ops.sparse_ops.sparse_tensor_to_dense`, ``tf.sparse.SparseTensor`` is
:class:`daskgraph.ops.sparse_tensor.SparseTensor`; :mod:`daskgraph.compat.v1` gives the TF1
top-level names (``tf.sparse_tensor_to_dense``, ``tf.sparse_add``, ...) from here. What
``tf.sparse`` has and daskgraph does not (``mask``, ``merge``, ``cross``, ``bincount``,
``SparseConditionalAccumulator``, ...) is absent: using it raises ``AttributeError``.

>>> import daskgraph.compat.v1 as tf
>>> tf.sparse.to_dense is tf.sparse_tensor_to_dense and tf.sparse.add is tf.sparse_add
True
"""

from __future__ import annotations

from typing import Any

from daskgraph.ops.sparse_elementwise import sparse_maximum as maximum
from daskgraph.ops.sparse_elementwise import sparse_minimum as minimum
from daskgraph.ops.sparse_lookup import (
    sparse_segment_mean,
    sparse_segment_sqrt_n,
    sparse_segment_sum,
)
from daskgraph.ops.sparse_lookup import string_split as native_string_split
from daskgraph.ops.sparse_ops import (
    from_dense,
    sparse_add,
    sparse_reduce_max,
    sparse_reduce_sum,
)
from daskgraph.ops.sparse_ops import sparse_placeholder as placeholder
from daskgraph.ops.sparse_ops import sparse_tensor_dense_matmul as matmul
from daskgraph.ops.sparse_ops import sparse_tensor_dense_matmul as sparse_dense_matmul
from daskgraph.ops.sparse_ops import sparse_tensor_to_dense as to_dense
from daskgraph.ops.sparse_structure import sparse_concat, sparse_split
from daskgraph.ops.sparse_structure import sparse_expand_dims as expand_dims
from daskgraph.ops.sparse_structure import sparse_eye as eye
from daskgraph.ops.sparse_structure import sparse_fill_empty_rows as fill_empty_rows
from daskgraph.ops.sparse_structure import sparse_reorder as reorder
from daskgraph.ops.sparse_structure import sparse_reset_shape as reset_shape
from daskgraph.ops.sparse_structure import sparse_reshape as reshape
from daskgraph.ops.sparse_structure import sparse_retain as retain
from daskgraph.ops.sparse_structure import sparse_slice as slice
from daskgraph.ops.sparse_structure import sparse_softmax as softmax
from daskgraph.ops.sparse_structure import sparse_to_indicator as to_indicator
from daskgraph.ops.sparse_structure import sparse_transpose as transpose
from daskgraph.ops.sparse_tensor import SparseTensor

__all__ = [
    "SparseTensor",
    "add",
    "concat",
    "expand_dims",
    "eye",
    "fill_empty_rows",
    "from_dense",
    "matmul",
    "maximum",
    "minimum",
    "placeholder",
    "reduce_max",
    "reduce_sum",
    "reorder",
    "reset_shape",
    "reshape",
    "retain",
    "segment_mean",
    "segment_sqrt_n",
    "segment_sum",
    "slice",
    "softmax",
    "sparse_dense_matmul",
    "split",
    "to_dense",
    "to_indicator",
    "transpose",
]


def _one_of(new: Any, new_name: str, old: Any, old_name: str) -> Any:
    """The argument given under either of its names (TF1's deprecated alias); both is an
    error, as in TensorFlow."""
    if new is not None and old is not None:
        raise ValueError(f"Cannot specify both '{new_name}' and '{old_name}'.")
    return new if new is not None else old


def add(a: Any, b: Any, threshold: Any = None, thresh: Any = None) -> Any:
    """``tf.sparse.add(a, b, threshold=None, thresh=None)``: ``thresh`` is ``threshold``'s
    TF1 name (default 0)."""
    value = _one_of(threshold, "threshold", thresh, "thresh")
    return sparse_add(a, b, 0 if value is None else value)


def _reduce(native: Any) -> Any:
    def reduce(
        sp_input: Any,
        axis: Any = None,
        keepdims: Any = None,
        reduction_axes: Any = None,
        keep_dims: Any = None,
    ) -> Any:
        axes = _one_of(axis, "axis", reduction_axes, "reduction_axes")
        keep = _one_of(keepdims, "keepdims", keep_dims, "keep_dims")
        return native(sp_input, axes, bool(keep))

    reduce.__name__ = reduce.__qualname__ = native.__name__[len("sparse_") :]
    reduce.__doc__ = (
        f"``tf.sparse.{reduce.__name__}(sp_input, axis, keepdims, reduction_axes, keep_dims)``"
        f": TF1's names for :func:`~daskgraph.ops.sparse_ops.{native.__name__}`'s arguments."
    )
    return reduce


reduce_sum = _reduce(sparse_reduce_sum)
reduce_max = _reduce(sparse_reduce_max)


def concat(
    axis: Any,
    sp_inputs: Any,
    name: str | None = None,
    expand_nonconcat_dim: bool = False,
    concat_dim: Any = None,
    expand_nonconcat_dims: Any = None,
) -> SparseTensor:
    """``tf.sparse.concat`` with TF1's aliases ``concat_dim`` and ``expand_nonconcat_dims``."""
    axis = _one_of(axis, "axis", concat_dim, "concat_dim")
    if expand_nonconcat_dims is not None:
        expand_nonconcat_dim = expand_nonconcat_dims
    return sparse_concat(axis, sp_inputs, name, bool(expand_nonconcat_dim))


class _KeywordRequired:
    """The default of TF1's ``keyword_required``: the other arguments go by keyword."""

    def __repr__(self) -> str:
        return "KeywordRequired()"


_KEYWORD_REQUIRED = _KeywordRequired()


def split(
    keyword_required: Any = _KEYWORD_REQUIRED,
    sp_input: Any = None,
    num_split: Any = None,
    axis: Any = None,
    name: str | None = None,
    split_dim: Any = None,
) -> list[SparseTensor]:
    """``tf.sparse.split(sp_input=..., num_split=..., axis=...)``, keywords only as in TF1
    (``split_dim`` is ``axis``'s old name)."""
    if not isinstance(keyword_required, _KeywordRequired):
        raise ValueError("Keyword arguments are required for this function.")
    if sp_input is None or num_split is None:
        raise ValueError("sp_input and num_split are required.")
    axis = _one_of(axis, "axis", split_dim, "split_dim")
    if axis is None:
        raise ValueError("axis is required.")
    return sparse_split(sp_input, num_split, axis, name)


def _segment(native: Any) -> Any:
    def segment(
        data: Any,
        indices: Any,
        segment_ids: Any,
        name: str | None = None,
        num_segments: Any = None,
        sparse_gradient: bool = False,
    ) -> Any:
        return native(data, indices, segment_ids, name, num_segments)

    segment.__name__ = segment.__qualname__ = native.__name__[len("sparse_") :]
    segment.__doc__ = (
        f"``tf.sparse.{segment.__name__}``: :func:`~daskgraph.ops.sparse_lookup."
        f"{native.__name__}`; ``sparse_gradient`` is ignored (the gradient is dense)."
    )
    return segment


segment_sum = _segment(sparse_segment_sum)
segment_mean = _segment(sparse_segment_mean)
segment_sqrt_n = _segment(sparse_segment_sqrt_n)


def string_split(
    source: Any,
    sep: Any = None,
    skip_empty: bool = True,
    delimiter: Any = None,
    result_type: str = "SparseTensor",
    name: str | None = None,
) -> SparseTensor:
    """TF1's ``tf.string_split``: ``sep`` and ``delimiter`` are one argument (default
    ``" "``); only ``result_type="SparseTensor"`` (daskgraph has no RaggedTensor)."""
    if result_type != "SparseTensor":
        raise ValueError(
            f"string_split: result_type must be 'SparseTensor' (daskgraph has no "
            f"RaggedTensor); got {result_type!r}"
        )
    value = _one_of(delimiter, "delimiter", sep, "sep")
    return native_string_split(source, " " if value is None else value, skip_empty, name)


def __getattr__(name: str) -> object:
    """A name tf.sparse does not have: the AttributeError pointing to docs/compat.md."""
    from daskgraph.errors import missing_name

    raise missing_name("tf.sparse", name, globals(), section="tf")
