"""Element-wise sparse arithmetic: a SparseTensor times or divided by a dense tensor
(``sp * x``, ``x * sp``, ``sp / x``, as TensorFlow 1's SparseTensor operators) and
``sparse_maximum``/``sparse_minimum`` of two SparseTensors.

``sp * x`` reads the dense operand at each entry's place (``SparseDenseGather``: ``x``
broadcast to the dense shape, never materialised) and multiplies the values, so the
gradients reach the values (``Mul``'s) and ``x`` (the gather's: the gradients summed back into
``x``'s places), as TensorFlow's ``SparseDenseCwiseMul``. The maximum and minimum of two
SparseTensors hold the union of their entries, a missing entry counting as zero, as
TensorFlow's ``SparseSparseMaximum``; they have no gradient, as there.

>>> import daskgraph as dg
>>> from daskgraph.ops.sparse_tensor import SparseTensor
>>> with dg.Graph().as_default():
...     sp = SparseTensor([[0, 1], [1, 0]], [1.0, 2.0], [2, 2])
...     scaled = sp * dg.constant([[10.0], [100.0]])
...     with dg.Session() as sess:
...         sess.run(scaled).values.tolist()
[10.0, 200.0]
"""

from __future__ import annotations

from typing import Any

from daskgraph.framework import dtypes
from daskgraph.framework.gradient_registry import no_gradient, register_gradient
from daskgraph.framework.graph import Operation, Tensor, get_default_graph, name_scope
from daskgraph.framework.op_registry import register
from daskgraph.kernels.sparse_elementwise import (
    _extremum_indices_kernel,
    _extremum_values_kernel,
    _gather_grad_kernel,
    _gather_kernel,
)
from daskgraph.ops.array import cast, convert_to_tensor
from daskgraph.ops.sparse_ops import dense_static
from daskgraph.ops.sparse_tensor import SparseTensor, as_sparse, is_sparse

__all__ = ["sparse_dense_cwise_div", "sparse_dense_cwise_mul", "sparse_maximum", "sparse_minimum"]

_NUM = dtypes.NUMERIC


register("SparseDenseGather", _gather_kernel, cpu=_NUM, gpu=_NUM)
register("SparseDenseGatherGrad", _gather_grad_kernel, cpu=_NUM, gpu=_NUM)
register("SparseExtremumIndices", _extremum_indices_kernel, cpu=_NUM, gpu=None)
register("SparseExtremumValues", _extremum_values_kernel, cpu=_NUM, gpu=None)


# -- builders -------------------------------------------------------------------------------------
def _gathered(sp: SparseTensor, dense: Any, where: str) -> Tensor:
    """The dense operand at each entry of ``sp`` (``SparseDenseGather``)."""
    x = convert_to_tensor(dense, dtype=sp.dtype)
    dims = dense_static(sp)
    if dims is not None and x.shape is not None:
        lead = len(dims) - len(x.shape)
        known = [(d, dims[lead + k]) for k, d in enumerate(x.shape) if lead >= 0]
        if lead < 0 or any(None not in (d, s) and d not in (1, s) for d, s in known):
            raise ValueError(f"{where}: the dense operand of shape {x.shape} does not broadcast "
                             f"to the SparseTensor's shape {dims}")  # fmt: skip
    op = get_default_graph().create_op(
        "SparseDenseGather", [sp.indices, sp.dense_shape, x], dtype=x.dtype,
        shape=sp.values.shape, name="SparseDenseGather",
    )  # fmt: skip
    return op.outputs[0]


def sparse_dense_cwise_mul(sp_input: Any, dense: Any, name: str | None = None) -> SparseTensor:
    """``sp_input * dense`` at the entries of ``sp_input`` (``dense`` broadcast to its dense
    shape): a SparseTensor of the same indices (TensorFlow's ``SparseDenseCwiseMul``)."""
    sp = as_sparse(sp_input, "sparse_dense_cwise_mul")
    with name_scope(name or "SparseDenseCwiseMul"):
        return sp.with_values(sp.values * _gathered(sp, dense, "SparseTensor * dense"))


def sparse_dense_cwise_div(sp_input: Any, dense: Any, name: str | None = None) -> SparseTensor:
    """``sp_input / dense`` at the entries of ``sp_input``, as Python 3's ``/``: integers are
    divided as floating point numbers (TensorFlow's ``truediv``)."""
    sp = as_sparse(sp_input, "sparse_dense_cwise_div")
    with name_scope(name or "SparseDenseCwiseDiv"):
        values, gathered = sp.values, _gathered(sp, dense, "SparseTensor / dense")
        if sp.dtype.is_integer:
            wide = dtypes.float64 if sp.dtype in (dtypes.int32, dtypes.int64) else dtypes.float32
            values, gathered = cast(values, wide), cast(gathered, wide)
        return sp.with_values(values / gathered)


def _extremum_op(kind: str, sp_a: Any, sp_b: Any, name: str | None) -> SparseTensor:
    where = f"sparse_{kind}"
    a, b = as_sparse(sp_a, where), as_sparse(sp_b, where)
    if a.dtype is not b.dtype:
        raise TypeError(f"{where}: the values' dtypes differ: {a.dtype} and {b.dtype}")
    a.shape.assert_is_compatible_with(b.shape)
    inputs = [a.indices, a.values, a.dense_shape, b.indices, b.values, b.dense_shape]
    graph = get_default_graph()
    with name_scope(name or f"Sparse{kind.title()}"):
        rank = a.shape.ndims if a.shape.ndims is not None else b.shape.ndims
        indices = graph.create_op("SparseExtremumIndices", inputs, dtype=dtypes.int64,
                                  shape=(None, rank), attrs={"kind": kind}).outputs[0]  # fmt: skip
        values = graph.create_op("SparseExtremumValues", inputs, dtype=a.dtype, shape=(None,),
                                 attrs={"kind": kind}).outputs[0]  # fmt: skip
    result = SparseTensor(indices, values, a.dense_shape)
    result._shape = a.shape.merge_with(b.shape)._raw()
    return result


def sparse_maximum(sp_a: Any, sp_b: Any, name: str | None = None) -> SparseTensor:
    """The element-wise maximum of two SparseTensors of one shape (``tf.sparse.maximum``):
    an entry in one only is compared with 0.

    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     a = SparseTensor([[0, 0], [1, 1]], [-1.0, 3.0], [2, 2])
    ...     b = SparseTensor([[0, 0]], [5.0], [2, 2])
    ...     with dg.Session() as sess:
    ...         sess.run(sparse_maximum(a, b)).values.tolist()
    [5.0, 3.0]
    """
    return _extremum_op("maximum", sp_a, sp_b, name)


def sparse_minimum(sp_a: Any, sp_b: Any, name: str | None = None) -> SparseTensor:
    """The element-wise minimum of two SparseTensors of one shape (``tf.sparse.minimum``):
    an entry in one only is compared with 0."""
    return _extremum_op("minimum", sp_a, sp_b, name)


def _install_operators() -> None:
    """TensorFlow 1's SparseTensor operators: ``*`` and ``/`` with a dense operand, and a
    tensor's ``*`` with a SparseTensor (as in TensorFlow, ``+``, ``-`` and the others have
    none)."""

    def dense_only(f, where):
        def apply(self, other):
            if is_sparse(other):
                raise TypeError(f"{where} of two SparseTensors is not supported; use "
                                "tf.sparse.add/maximum/minimum or densify one")  # fmt: skip
            return f(self, other)

        return apply

    SparseTensor.__mul__ = dense_only(sparse_dense_cwise_mul, "SparseTensor * SparseTensor")
    SparseTensor.__rmul__ = SparseTensor.__mul__
    SparseTensor.__truediv__ = dense_only(sparse_dense_cwise_div, "SparseTensor / SparseTensor")
    dense_mul = Tensor.__mul__

    def tensor_mul(self: Tensor, other: Any) -> Any:
        if isinstance(other, SparseTensor):  # dense * sparse: the sparse operand's product
            return sparse_dense_cwise_mul(other, self)
        return dense_mul(self, other)

    Tensor.__mul__ = tensor_mul


_install_operators()


# -- gradients ------------------------------------------------------------------------------------
@register_gradient("SparseDenseGather")
def _gather_grad(op: Operation, grad: Tensor) -> list[Tensor | None]:
    indices, shape, dense = op.inputs
    out = get_default_graph().create_op(
        "SparseDenseGatherGrad", [grad, indices, shape, dense], dtype=grad.dtype,
        shape=dense.shape,
    )  # fmt: skip
    return [None, None, out.outputs[0]]


for _type in ("SparseDenseGatherGrad", "SparseExtremumIndices", "SparseExtremumValues"):
    no_gradient(_type)
