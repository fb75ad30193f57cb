"""TensorFlow 1 call signatures for the few daskgraph functions whose native ones differ.

The native API keeps Pythonic signatures (``keepdims``, keyword ``name``); TF1 programs pass
``keep_dims=``/``reduction_indices=``, give ``tf.Variable`` its arguments in TF1's positional
order, or ask ``tf.global_variables(scope)`` by name scope. These adapters translate the call
and hand it to the native function; they hold no other logic.
"""

from __future__ import annotations

import re
from typing import Any

from daskgraph import ops
from daskgraph.framework import dtypes
from daskgraph.framework.graph import GraphKeys as NativeGraphKeys
from daskgraph.framework.graph import Tensor, get_default_graph
from daskgraph.metrics.base import METRIC_VARIABLES
from daskgraph.ops.variable_scope import get_variable as native_get_variable


class Variable(ops.Variable):
    """``tf.Variable`` with TF1's positional order (``collections`` third, ``name`` sixth);
    ``use_resource``, ``synchronization`` and ``aggregation`` are accepted and ignored (one
    kind of variable, one copy of it)."""

    def __init__(
        self,
        initial_value: Any = None,
        trainable: bool = True,
        collections: Any = None,
        validate_shape: bool = True,
        caching_device: Any = None,
        name: str | None = None,
        variable_def: Any = None,
        dtype: Any = None,
        expected_shape: Any = None,
        import_scope: Any = None,
        constraint: Any = None,
        use_resource: Any = None,
        synchronization: Any = None,
        aggregation: Any = None,
    ) -> None:
        if initial_value is None:
            raise ValueError("tf.Variable: initial_value must be given")
        if constraint is not None:
            raise ValueError("tf.Variable: constraint is not supported by daskgraph")
        super().__init__(
            initial_value,
            trainable=trainable,
            name=name,
            dtype=dtype,
            validate_shape=validate_shape,
            collections=collections,
            caching_device=caching_device,
        )

    def assign(
        self,
        value: Any,
        use_locking: bool = False,
        name: str | None = None,
        read_value: bool = True,
    ) -> Tensor:
        """``Variable.assign(value, use_locking, name, read_value)``."""
        return ops.assign(self, value, name=name)

    def assign_add(
        self,
        delta: Any,
        use_locking: bool = False,
        name: str | None = None,
        read_value: bool = True,
    ) -> Tensor:
        """``Variable.assign_add(delta, use_locking, name, read_value)``."""
        return ops.assign_add(self, delta, name=name)

    def assign_sub(
        self,
        delta: Any,
        use_locking: bool = False,
        name: str | None = None,
        read_value: bool = True,
    ) -> Tensor:
        """``Variable.assign_sub(delta, use_locking, name, read_value)``."""
        return ops.assign_sub(self, delta, name=name)


def _reduction(native):
    def reduce(
        input_tensor: Any,
        axis: Any = None,
        keepdims: bool | None = None,
        name: str | None = None,
        reduction_indices: Any = None,
        keep_dims: bool | None = None,
    ) -> Tensor:
        if axis is not None and reduction_indices is not None:
            raise ValueError("Cannot specify both 'axis' and 'reduction_indices'")
        if keepdims is not None and keep_dims is not None:
            raise ValueError("Cannot specify both 'keepdims' and 'keep_dims'")
        axis = axis if axis is not None else reduction_indices
        keep = bool(keepdims if keepdims is not None else keep_dims)
        return native(input_tensor, axis=axis, keepdims=keep, name=name)

    reduce.__name__ = native.__name__
    reduce.__doc__ = native.__doc__
    return reduce


reduce_sum = _reduction(ops.reduce_sum)
reduce_mean = _reduction(ops.reduce_mean)
reduce_max = _reduction(ops.reduce_max)
reduce_min = _reduction(ops.reduce_min)
reduce_prod = _reduction(ops.reduce_prod)
reduce_any = _reduction(ops.reduce_any)
reduce_all = _reduction(ops.reduce_all)
reduce_logsumexp = _reduction(ops.reduce_logsumexp)


def assign(
    ref: Any, value: Any, validate_shape: Any = None, use_locking: Any = None, name: Any = None
) -> Tensor:
    """``tf.assign(ref, value, validate_shape, use_locking, name)``."""
    return ops.assign(ref, value, name=name)


def assign_add(ref: Any, value: Any, use_locking: Any = None, name: Any = None) -> Tensor:
    """``tf.assign_add(ref, value, use_locking, name)``."""
    return ops.assign_add(ref, value, name=name)


def assign_sub(ref: Any, value: Any, use_locking: Any = None, name: Any = None) -> Tensor:
    """``tf.assign_sub(ref, value, use_locking, name)``."""
    return ops.assign_sub(ref, value, name=name)


def global_variables(scope: str | None = None) -> list[ops.Variable]:
    """``tf.global_variables(scope)``: the default graph's variables under a name scope."""
    variables = ops.global_variables(get_default_graph())
    if scope is None:
        return variables
    return [v for v in variables if v.op.name.startswith(scope)]


def trainable_variables(scope: str | None = None) -> list[ops.Variable]:
    """``tf.trainable_variables(scope)``: the default graph's trainable variables under a name
    scope."""
    variables = ops.trainable_variables(get_default_graph())
    if scope is None:
        return variables
    return [v for v in variables if v.op.name.startswith(scope)]


def get_collection(key: str, scope: str | None = None) -> list[Any]:
    """``tf.get_collection(key, scope)``: the default graph's collection ``key``, its items
    whose name matches the regular expression ``scope`` when one is given."""
    items = get_default_graph().get_collection(key)
    if scope is None:
        return items
    return [i for i in items if re.match(scope, str(getattr(i, "name", "")))]


def add_to_collection(name: str, value: Any) -> None:
    """``tf.add_to_collection(name, value)`` on the default graph."""
    get_default_graph().add_to_collection(name, value)


def get_variable(
    name: str,
    shape: Any = None,
    dtype: Any = None,
    initializer: Any = None,
    regularizer: Any = None,
    trainable: bool | None = None,
    collections: Any = None,
    caching_device: Any = None,
    partitioner: Any = None,
    validate_shape: bool = True,
    use_resource: Any = None,
    custom_getter: Any = None,
    constraint: Any = None,
    synchronization: Any = None,
    aggregation: Any = None,
) -> ops.Variable:
    """``tf.get_variable`` with TF1's positional order; partitioned variables, custom getters
    and constraints are not supported (ValueError)."""
    for what, value in (
        ("partitioner", partitioner),
        ("custom_getter", custom_getter),
        ("constraint", constraint),
    ):
        if value is not None:
            raise ValueError(f"tf.get_variable: {what} is not supported by daskgraph")
    return native_get_variable(
        name,
        shape,
        dtype,
        initializer,
        regularizer=regularizer,
        trainable=trainable,
        collections=collections,
        validate_shape=validate_shape,
        caching_device=caching_device,
    )


def gather(
    params: Any,
    indices: Any,
    validate_indices: Any = None,
    name: str | None = None,
    axis: Any = None,
    batch_dims: int = 0,
) -> Tensor:
    """``tf.gather(params, indices, validate_indices, name, axis, batch_dims)`` (TF1's order;
    ``batch_dims`` must be 0)."""
    if batch_dims:
        raise ValueError(f"tf.gather: batch_dims must be 0 here; got {batch_dims}")
    return ops.gather(params, indices, axis=0 if axis is None else axis, name=name)


def _to(function: str, dtype: dtypes.DType, default_name: str):
    def convert(x: Any, name: str = default_name) -> Tensor:
        return ops.cast(x, dtype, name=name)

    convert.__name__ = convert.__qualname__ = function
    convert.__doc__ = f"``tf.{function}(x, name={default_name!r})``: ``cast(x, {dtype.name})``."
    return convert


to_float = _to("to_float", dtypes.float32, "ToFloat")
to_double = _to("to_double", dtypes.float64, "ToDouble")
to_int32 = _to("to_int32", dtypes.int32, "ToInt32")
to_int64 = _to("to_int64", dtypes.int64, "ToInt64")


def matmul(
    a: Any,
    b: Any,
    transpose_a: bool = False,
    transpose_b: bool = False,
    adjoint_a: bool = False,
    adjoint_b: bool = False,
    a_is_sparse: bool = False,
    b_is_sparse: bool = False,
    output_type: Any = None,
    grad_a: bool = False,
    grad_b: bool = False,
    name: str | None = None,
) -> Tensor:
    """``tf.matmul`` with TF1's arguments: ``adjoint_*`` is ``transpose_*`` for real tensors;
    the sparsity hints and ``grad_*`` are accepted and ignored; ``output_type`` must be
    ``None``."""
    if (transpose_a and adjoint_a) or (transpose_b and adjoint_b):
        raise ValueError("tf.matmul: give transpose_x or adjoint_x, not both")
    if output_type is not None:
        raise ValueError("tf.matmul: output_type is not supported by daskgraph")
    return ops.matmul(
        a, b, transpose_a=transpose_a or adjoint_a, transpose_b=transpose_b or adjoint_b, name=name
    )


def identity(input: Any, name: str | None = None) -> Tensor:
    """``tf.identity(input, name)``."""
    return ops.identity(input, name=name)


def reshape(tensor: Any, shape: Any, name: str | None = None) -> Tensor:
    """``tf.reshape(tensor, shape, name)``."""
    return ops.reshape(tensor, shape, name=name)


def transpose(a: Any, perm: Any = None, name: str = "transpose", conjugate: bool = False) -> Tensor:
    """``tf.transpose(a, perm, name, conjugate)`` (``conjugate`` changes nothing for real
    tensors)."""
    return ops.transpose(a, perm, name=name)


def local_variables(scope: str | None = None) -> list[ops.Variable]:
    """``tf.local_variables(scope)``."""
    return ops.local_variables(scope)


class GraphKeys(NativeGraphKeys):
    """``tf.GraphKeys``: daskgraph's collection names and the other standard ones of TF1."""

    LOCAL_VARIABLES = ops.LOCAL_VARIABLES
    METRIC_VARIABLES = METRIC_VARIABLES
    MODEL_VARIABLES = "model_variables"
    UPDATE_OPS = "update_ops"
    LOSSES = "losses"
    SUMMARIES = "summaries"
    ACTIVATIONS = "activations"
    INIT_OP = "init_op"
    LOCAL_INIT_OP = "local_init_op"
    READY_OP = "ready_op"
    READY_FOR_LOCAL_INIT_OP = "ready_for_local_init_op"
    SAVERS = "savers"
    WEIGHTS = "weights"
    BIASES = "biases"
    QUEUE_RUNNERS = "queue_runners"
    MOVING_AVERAGE_VARIABLES = "moving_average_variables"


def get_collection_ref(key: str) -> list[Any]:
    """``tf.get_collection_ref(key)``: the default graph's collection ``key`` itself (a list
    that changes the collection when changed)."""
    return get_default_graph().get_collection_ref(key)


def add_to_collections(names: Any, value: Any) -> None:
    """``tf.add_to_collections(names, value)``: ``value`` added to each named collection (a
    single name works too)."""
    get_default_graph().add_to_collections(names, value)


def get_local_variable(name: str, shape: Any = None, dtype: Any = None, **kwargs: Any) -> Any:
    """``tf.get_local_variable``: :func:`get_variable` for a variable in LOCAL_VARIABLES that
    is not trainable."""
    collections = list(kwargs.pop("collections", None) or [])
    kwargs["trainable"] = False
    kwargs["collections"] = [ops.LOCAL_VARIABLES, *collections]
    return get_variable(name, shape, dtype, **kwargs)


def model_variables(scope: str | None = None) -> list[Any]:
    """``tf.model_variables(scope)``: the MODEL_VARIABLES collection."""
    return get_collection(GraphKeys.MODEL_VARIABLES, scope)


def is_tensor(x: Any) -> bool:
    """``tf.is_tensor(x)``: whether ``x`` is a graph tensor (a Tensor or a Variable)."""
    return isinstance(x, (Tensor, ops.Variable))
