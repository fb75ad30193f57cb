"""Array ops: constants, placeholders, identity, reshape, transpose, cast and no-op.

Each function adds one operation to the default graph and returns its output tensor, with
TensorFlow's op types and default names.

>>> import daskgraph as dg
>>> with dg.Graph().as_default():
...     a = constant([[1.0, 2.0, 3.0]], name="a")
...     p = placeholder(dg.float32, [None, 3])
...     t = transpose(a)
>>> a, p.shape, t.shape
(<Tensor 'a:0' shape=(1, 3) dtype=float32>, (None, 3), (3, 1))
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from daskgraph.errors import quote
from daskgraph.framework import dtypes
from daskgraph.framework.casting import cast_exactly
from daskgraph.framework.graph import Operation, Shape, Tensor, as_operation, get_default_graph
from daskgraph.framework.op_registry import CPU_ALL, GPU_NUMERIC, register
from daskgraph.framework.tensor_conversion import convert_registered
from daskgraph.framework.tensor_shape import TensorShape, dimension_value
from daskgraph.kernels.array import (
    _cast_kernel,
    _const_kernel,
    _identity_kernel,
    _no_op_kernel,
    _placeholder_kernel,
    _reshape_kernel,
    _reshape_to_kernel,
    _shape_from_parts_kernel,
    _transpose_kernel,
)

__all__ = [
    "cast",
    "constant",
    "convert_to_tensor",
    "group",
    "identity",
    "no_op",
    "placeholder",
    "placeholder_with_default",
    "reshape",
    "shape_tensor",
    "transpose",
]


register("Const", _const_kernel)
register("Placeholder", _placeholder_kernel)
register("Identity", _identity_kernel, gpu=GPU_NUMERIC)
register("PlaceholderWithDefault", _identity_kernel, gpu=GPU_NUMERIC)
register("Reshape", _reshape_kernel)
register("Transpose", _transpose_kernel)
register("ShapeFromParts", _shape_from_parts_kernel, cpu={dtypes.int32}, gpu={dtypes.int32})
register("ReshapeTo", _reshape_to_kernel)
register("Cast", _cast_kernel, cpu=CPU_ALL - {dtypes.string})
register("NoOp", _no_op_kernel)


# -- shapes -------------------------------------------------------------------------------------
def as_shape(shape: Any, where: str) -> Shape | None:
    """Normalise a user-given shape (None, int, or sequence of ints/None) to a tuple."""
    if shape is None or (isinstance(shape, TensorShape) and shape.ndims is None):
        return None
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    try:
        values = (dimension_value(d) for d in shape)  # TF1's Dimension objects too
        dims = tuple(None if d is None or d == -1 else int(d) for d in values)
    except (TypeError, ValueError):
        raise TypeError(
            f"{where}: shape must be None or a sequence of ints and None; got {shape!r}"
        ) from None
    if any(d is not None and d < 0 for d in dims):
        raise ValueError(f"{where}: shape dimensions must be >= 0 or None; got {shape!r}")
    return dims


# -- builders -----------------------------------------------------------------------------------
def constant(
    value: Any,
    dtype: Any = None,
    shape: Any = None,
    name: str = "Const",
) -> Tensor:
    """A constant tensor: numbers, nested lists, NumPy arrays or strings.

    Like ``tf.constant``, a scalar or a list whose size divides nothing is broadcast or
    reshaped to ``shape`` when one is given.

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     c = constant(0.0, shape=[2, 2])
    ...     s = constant("hello")
    >>> c.shape, c.dtype, s.dtype
    ((2, 2), float32, string)
    """
    _check_convertible(value)
    dtype = dtypes.as_dtype(dtype) if dtype is not None else dtypes.infer_dtype(value)
    array = _convert(value, dtype, name)
    target = as_shape(shape, "constant")
    if target is not None:
        if None in target:
            raise ValueError(f"constant: shape must be fully defined; got {shape!r}")
        if array.size == 1:
            array = np.full(target, array.reshape(()), dtype=dtype.numpy)
        elif array.size == int(np.prod(target)):
            array = array.reshape(target)
        else:
            raise ValueError(
                f"constant: cannot give a value with {array.size} elements the shape {target}"
            )
    array.flags.writeable = False
    op = get_default_graph().create_op(
        "Const", [], dtype=dtype, shape=array.shape, attrs={"value": array}, name=name
    )
    return op.outputs[0]


def _check_convertible(value: Any) -> None:
    """Refuse, with TensorFlow's errors, a value no tensor holds: ``None`` (``ValueError``),
    or one holding an object that is not a number, a string or bytes (``TypeError``).

    >>> _check_convertible({"a": 1})
    Traceback (most recent call last):
    ...
    TypeError: Failed to convert object of type <class 'dict'> to Tensor. Contents: {'a': 1}. \
Consider casting elements to a supported type.
    """
    if value is None:
        raise ValueError("None values not supported.")
    try:
        array = np.asarray(value)
    except ValueError:  # a ragged sequence: refused when converted
        return
    if array.dtype.kind != "O":
        return
    for element in array.flat:
        if not isinstance(element, (str, bytes, int, float, complex, np.generic)):
            raise TypeError(
                f"Failed to convert object of type {type(value)} to Tensor. Contents: "
                f"{quote(value)}. Consider casting elements to a supported type."
            )


def _check_big_ints(source: np.ndarray, array: np.ndarray, dtype: dtypes.DType) -> None:
    """Refuse Python ints too large for NumPy's integers (an object array) that the float
    array ``array`` made from them does not hold exactly."""
    for given, made in zip(source.flat, array.flat, strict=True):
        if isinstance(given, int) and not (np.isfinite(made) and int(made) == given):
            shown = str(int(made)) if np.isfinite(made) else "inf"
            raise ValueError(
                f"{given} cannot be represented exactly as {dtype.name} (it would become {shown})"
            )


def _convert(value: Any, dtype: dtypes.DType, name: str) -> np.ndarray:
    """``value`` as an array of ``dtype``; refuses conversions that would change values."""
    source = np.asarray(value)
    try:
        with np.errstate(all="ignore"):
            array = np.array(source, dtype=dtype.numpy)
    except (TypeError, ValueError, OverflowError) as exc:
        raise TypeError(
            f"constant {name!r}: cannot convert {quote(value)} to {dtype.name}: {exc}"
        ) from None
    kinds = source.dtype.kind + array.dtype.kind
    try:  # integers out of range or rounded, overflow to infinity: all refused
        if (kinds[0] in "biu" and kinds[1] in "iuf") or kinds == "ff":
            cast_exactly(source, dtype)
        elif kinds == "Of":
            _check_big_ints(source, array, dtype)
    except ValueError as exc:
        raise TypeError(
            f"constant {name!r}: cannot convert {quote(value)} to {dtype.name}: {exc}"
        ) from None
    if (
        source.dtype.kind in "fc"
        and array.dtype.kind in "iub"
        and not np.array_equal(array, source)
    ):
        raise TypeError(
            f"constant {name!r}: expected {dtype.name}, got {value!r} whose values are not "
            f"{dtype.name}; cast explicitly (e.g. cast(x, {source.dtype.name})) if you mean it"
        )
    return dtypes.strings_as_bytes(array) if dtype is dtypes.string else array


def placeholder(dtype: Any, shape: Any = None, name: str | None = None) -> Tensor:
    """A tensor whose value must be fed to ``Session.run`` through ``feed_dict``."""
    dtype = dtypes.as_dtype(dtype)
    op = get_default_graph().create_op(
        "Placeholder", [], dtype=dtype, shape=as_shape(shape, "placeholder"), name=name
    )
    return op.outputs[0]


def placeholder_with_default(input: Any, shape: Any, name: str | None = None) -> Tensor:
    """A tensor that is ``input`` unless a value is fed for it
    (``tf.placeholder_with_default``).

    ``shape`` may be less specific than ``input``'s (``[None, 3]`` for a batch of any size)
    and must be compatible with it.

    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     keep = placeholder_with_default(1.0, shape=[])
    ...     y = keep * 2.0
    ...     with dg.Session() as sess:
    ...         float(sess.run(y)), float(sess.run(y, {keep: 0.5}))
    (2.0, 1.0)
    """
    x = convert_to_tensor(input)
    wanted = as_shape(shape, "placeholder_with_default")
    if wanted is not None and x.shape is not None:
        if not TensorShape(wanted).is_compatible_with(x.shape):
            raise ValueError(
                f"placeholder_with_default: the default value's shape {list(x.shape)} is not "
                f"compatible with the shape {list(wanted)} asked for"
            )
    return _unary("PlaceholderWithDefault", x, wanted, name)


def convert_to_tensor(value: Any, dtype: Any = None, name: str | None = None) -> Tensor:
    """``value`` itself if it is a tensor (or a Variable), the tensor a function registered
    for its type makes (``register_tensor_conversion_function``), else a new constant."""
    if isinstance(value, Tensor):
        if dtype is not None and dtypes.as_dtype(dtype) != value.dtype:
            raise TypeError(
                f"Tensor {value.name!r} has dtype {value.dtype.name}; {dtypes.as_dtype(dtype)}"
                " was expected"
            )
        return value
    to_tensor = getattr(value, "_as_tensor", None)
    if to_tensor is not None:
        return to_tensor()
    converted = convert_registered(value, dtype, name)
    if converted is not None:
        return converted
    return constant(value, dtype=dtype, name=name or "Const")


def identity(x: Any, name: str | None = None) -> Tensor:
    """A new tensor with the value of ``x`` (an ``Identity`` op, e.g. to copy ``x`` to
    another device).

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     y = identity(dg.constant([1.0, 2.0]), name="copy")
    >>> y
    <Tensor 'copy:0' shape=(2,) dtype=float32>
    """
    x = convert_to_tensor(x)
    return _unary("Identity", x, x.shape, name)


def shape_tensor(shape: Any, where: str) -> Tensor | None:
    """``shape`` as a 1-D int32 tensor when it is computed by the graph (a tensor, or a list
    mixing Python ints and scalar tensors such as ``[tf.shape(x)[0], -1]``); None when it is
    all Python ints (or a constant), known when the graph is built.

    >>> from daskgraph.framework.graph import Graph, new_tensor
    >>> with Graph().as_default():
    ...     n = new_tensor("Placeholder", [], dtypes.int32, ())
    ...     shape_tensor([n, -1], "reshape").op.type, shape_tensor([2, 3], "reshape")
    ('ShapeFromParts', None)
    """
    if hasattr(shape, "_as_tensor"):
        shape = shape._as_tensor()
    if isinstance(shape, Tensor):
        if shape.op.type == "Const":
            return None
        if shape.dtype not in (dtypes.int32, dtypes.int64) or (
            shape.shape is not None and len(shape.shape) != 1
        ):
            raise TypeError(
                f"{where}: a shape tensor must be a 1-D int32 or int64 tensor; {shape.name!r} "
                f"is {shape.dtype.name} of shape {shape.shape}"
            )
        return shape
    if not isinstance(shape, (list, tuple)):
        return None
    parts = [p._as_tensor() if hasattr(p, "_as_tensor") else p for p in shape]
    tensors = [p for p in parts if isinstance(p, Tensor)]
    if not tensors:
        return None
    for t in tensors:
        if not t.dtype.is_integer or (t.shape is not None and tuple(t.shape) not in ((), (1,))):
            raise TypeError(
                f"{where}: each tensor in a shape list must be an integer scalar; {t.name!r} "
                f"is {t.dtype.name} of shape {t.shape}"
            )
    template = tuple(None if isinstance(p, Tensor) else int(dimension_value(p)) for p in parts)
    op = get_default_graph().create_op(
        "ShapeFromParts",
        tensors,
        dtype=dtypes.int32,
        shape=(len(parts),),
        attrs={"template": template},
        name="shape",
    )
    return op.outputs[0]


def _static_of_shape_list(shape: Any) -> Shape | None:
    """The sizes of a shape argument known when the graph is built (None where computed)."""
    if isinstance(shape, Tensor) and shape.op.type == "Const":
        return _static_of_shape_list(np.asarray(shape.op.attrs["value"]).reshape(-1).tolist())
    if isinstance(shape, Tensor):
        n = None if shape.shape is None else shape.shape[0]
        return None if n is None else (None,) * n
    dims = []
    for d in shape:
        d = None if isinstance(d, Tensor) or hasattr(d, "_as_tensor") else int(dimension_value(d))
        dims.append(None if d is None or d < 0 else d)
    return tuple(dims)


def reshape(x: Any, shape: Sequence[int], name: str | None = None) -> Tensor:
    """Reshape ``x``; one dimension may be -1 (inferred), as in ``tf.reshape``. ``shape`` may
    be computed by the graph: a 1-D integer tensor, or a list mixing ints and scalar tensors
    (``reshape(x, [shape(x)[0], -1])``).

    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     x = dg.placeholder(dg.float32, [None, 2, 3])
    ...     y = reshape(x, [dg.shape(x)[0], -1])
    ...     with dg.Session() as sess:
    ...         y.shape, sess.run(y, {x: np.ones((4, 2, 3))}).shape
    ((None, None), (4, 6))
    """
    x = convert_to_tensor(x)
    computed = shape_tensor(shape, "reshape")
    if computed is None and isinstance(shape, Tensor):  # a constant: an input all the same,
        computed = shape  # so that a value fed for it reshapes, as in TensorFlow
    if computed is not None:
        static = _static_of_shape_list(shape)
        op = get_default_graph().create_op(
            "ReshapeTo", [x, computed], dtype=x.dtype, shape=static, name=name or "Reshape"
        )
        return op.outputs[0]
    dims = tuple(int(dimension_value(d)) for d in shape)
    if dims.count(-1) > 1 or any(d < -1 for d in dims):
        raise ValueError(f"reshape: at most one dimension may be -1, others >= 0; got {dims}")
    static = tuple(None if d == -1 else d for d in dims)
    if x.shape is not None and None not in x.shape and dims.count(-1) <= 1:
        size = int(np.prod(x.shape))
        known = int(np.prod([d for d in dims if d != -1]))
        if (-1 not in dims and known != size) or (-1 in dims and (known == 0 or size % known)):
            raise ValueError(f"reshape: cannot reshape {x.name!r} of shape {x.shape} to {dims}")
        static = tuple(size // known if d == -1 else d for d in dims)
    return _unary("Reshape", x, static, name, {"shape": dims})


def transpose(x: Any, perm: Sequence[int] | None = None, name: str | None = None) -> Tensor:
    """Permute the dimensions of ``x`` (reverse them by default)."""
    x = convert_to_tensor(x)
    if x.shape is None:
        raise ValueError(f"transpose: the rank of {x.name!r} must be known")
    rank = len(x.shape)
    perm = tuple(range(rank - 1, -1, -1)) if perm is None else tuple(int(p) for p in perm)
    if sorted(perm) != list(range(rank)):
        raise ValueError(f"transpose: perm {perm} is not a permutation of the {rank} dims")
    return _unary("Transpose", x, tuple(x.shape[p] for p in perm), name, {"perm": perm})


def cast(x: Any, dtype: Any, name: str | None = None) -> Tensor:
    """``x`` converted to ``dtype`` elementwise, as ``tf.cast``.

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     y = cast(dg.constant([1, 2]), dg.float64)
    >>> y.dtype
    float64
    """
    x = convert_to_tensor(x)
    dtype = dtypes.as_dtype(dtype)
    op = get_default_graph().create_op(
        "Cast", [x], dtype=dtype, shape=x.shape, attrs={"dtype": dtype.numpy}, name=name
    )
    return op.outputs[0]


def no_op(name: str | None = None) -> Operation:
    """An operation that does nothing (useful with control dependencies)."""
    return get_default_graph().create_op("NoOp", [], dtype=None, name=name)


def group(*inputs: Any, name: str | None = None) -> Operation:
    """An operation that runs after all ``inputs`` (operations, tensors or Variables)."""
    ops = [as_operation(i, "group") for i in inputs]
    return get_default_graph().create_op("NoOp", [], dtype=None, name=name, control_inputs=ops)


def _unary(
    op_type: str, x: Tensor, shape: Shape | None, name: str | None, attrs: dict | None = None
) -> Tensor:
    op = get_default_graph().create_op(
        op_type, [x], dtype=x.dtype, shape=shape, attrs=attrs, name=name
    )
    return op.outputs[0]
