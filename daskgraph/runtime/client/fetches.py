"""Fetches and feeds of a run: what the caller asked for, checked, flattened, and given back.

:func:`flatten_fetches` turns a nested structure of tensors, operations, variables and names
into the unique items to run and a function that rebuilds the structure from their values;
:func:`check_feeds` resolves ``feed_dict`` keys and converts the values to the fed tensors'
dtypes and shapes, refusing what TensorFlow refuses and values the conversion would change
(:func:`~daskgraph.framework.casting.cast_exactly`: ``[0.0, 1.0]`` feeds an ``int32``
placeholder, ``3.7`` does not). A composite (a
:class:`~daskgraph.ops.sparse_tensor.SparseTensor`) is fetched and fed as its component tensors,
and its value rebuilt from theirs. Nothing here talks to a cluster.

>>> from daskgraph.framework.graph import Graph
>>> from daskgraph.ops import constant
>>> with Graph().as_default() as g:
...     a = constant(1.0, name="a")
>>> items, rebuild = flatten_fetches({"x": [a, "a:0"]}, g)
>>> len(items), rebuild([2.0])
(1, {'x': [2.0, 2.0]})
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from daskgraph.errors import GraphMismatchError, LossyCastError, LossyIntFeedError, quote
from daskgraph.framework.casting import cast_exactly
from daskgraph.framework.dtypes import strings_as_bytes
from daskgraph.framework.graph import Graph, Operation, Tensor
from daskgraph.ops.sparse_tensor import CompositeTensor

__all__ = ["MAX_FETCH_DEPTH", "as_result", "check_feeds", "flatten_fetches", "item_key", "resolve"]

MAX_FETCH_DEPTH = 100  # lists, tuples and dicts within one another; Python's stack allows ~1000


def resolve(item: Any, graph: Graph, what: str) -> Tensor | Operation:
    """The tensor or operation ``item`` stands for in ``graph``: a tensor, an operation, a
    Variable (its value), or a name (``"op"`` or ``"op:0"``); ``what`` names the argument
    ("fetch" or "feed") in the errors."""
    if isinstance(item, bytes):  # TensorFlow takes names as bytes too
        item = item.decode()
    if isinstance(item, str):
        try:
            return (
                graph.get_tensor_by_name(item) if ":" in item else graph.get_operation_by_name(item)
            )
        except (KeyError, ValueError):
            reason = _not_in_graph(item, graph)
        if what == "Feed key":
            raise TypeError(f"Cannot interpret feed_dict key as Tensor: {reason}")
        shown = item if len(item) <= 80 else quote(item)  # TensorFlow's words, unquoted
        raise ValueError(
            f'Argument `fetch` = {shown} cannot be interpreted as a Tensor. ("{reason}")'
        )
    to_tensor = getattr(item, "_as_tensor", None)
    if to_tensor is not None:
        item = to_tensor()
    if not isinstance(item, (Tensor, Operation)):
        raise TypeError(
            f"{what} {quote(item)} has invalid type {type(item).__name__}; expected a Tensor, an "
            "Operation, a Variable, a name, or a list, tuple or dict of them."
        )
    if item.graph is not graph:  # TensorFlow's words: "... is not an element of this graph."
        field = "tensor" if isinstance(item, Tensor) else "operation"
        raise GraphMismatchError(
            f"{what} {quote(item)} is not an element of this graph: it was built in another "
            "graph than this session's. Run it with a session of that graph, or build it in "
            "this one.",
            **{field: item.name},
        )
    return item


def _not_in_graph(name: str, graph: Graph) -> str:
    """Why ``name`` names nothing in ``graph``, in TensorFlow's words.

    >>> _not_in_graph("x:0", Graph())
    "The name 'x:0' refers to a Tensor which does not exist. The operation, 'x', does not \
exist in the graph."
    """
    op_name, _, index = name.rpartition(":")
    if not op_name:
        return f"The name {quote(name)} refers to an Operation not in the graph."
    try:
        op = graph.get_operation_by_name(op_name)
    except KeyError:
        return (
            f"The name {quote(name)} refers to a Tensor which does not exist. The operation, "
            f"{quote(op_name)}, does not exist in the graph."
        )
    if not index.isdigit():
        return f"The name {quote(name)} looks a like a Tensor name, but is not a valid one."
    return (
        f"The name {quote(name)} refers to a Tensor which does not exist. The operation, "
        f"{quote(op_name)}, exists but only has {len(op.outputs)} outputs."
    )


def _is_attrs(value: Any) -> bool:
    """Whether ``value`` is an instance of an ``attrs`` class (fetched field by field)."""
    return hasattr(type(value), "__attrs_attrs__")


def flatten_fetches(fetches: Any, graph: Graph) -> tuple[list, Callable[[list], Any]]:
    """The unique fetch items of a nested structure, and a function that rebuilds it."""
    items: list[Tensor | Operation] = []
    index: dict[int, int] = {}
    path: list[int] = []  # ids of the structures enclosing the value being walked

    def walk(value: Any) -> Any:
        if not isinstance(value, (list, tuple, Mapping)) and not _is_attrs(value):
            if isinstance(value, CompositeTensor):  # its tensors, and its value rebuilt
                parts = [leaf(t) for t in value._components()]
                return lambda r: value._fetched([p(r) for p in parts])
            return leaf(value)
        _check_nesting(value, path)
        path.append(id(value))
        try:
            return structure(value)
        finally:
            path.pop()

    def structure(value: Any) -> Any:
        if _is_attrs(value):  # an attrs class: rebuilt from its fields, in order, as TF does
            fields = [walk(getattr(value, f.name)) for f in type(value).__attrs_attrs__]
            return lambda r: type(value)(*(p(r) for p in fields))
        if isinstance(value, (list, tuple)):
            parts = [walk(v) for v in value]
            if hasattr(value, "_fields"):  # a namedtuple
                return lambda r: type(value)(*(p(r) for p in parts))
            return lambda r: type(value)(p(r) for p in parts)
        if isinstance(value, Mapping):
            parts = {k: walk(v) for k, v in value.items()}
            if isinstance(value, defaultdict):
                return lambda r: defaultdict(
                    value.default_factory, ((k, p(r)) for k, p in parts.items())
                )
            return lambda r: type(value)((k, p(r)) for k, p in parts.items())

    def leaf(value: Any) -> Any:
        item = resolve(value, graph, "Fetch argument")
        if not graph.is_fetchable(item):
            op = item.op if isinstance(item, Tensor) else item
            raise ValueError(f"Operation {quote(op.name)} has been marked as not fetchable.")
        position = index.get(id(item))
        if position is None:
            position = index[id(item)] = len(items)
            items.append(item)
        return lambda r: r[position]

    rebuild = walk(fetches)
    walk = None  # type: ignore[assignment]  # (its cell and structure's made a cycle)
    return items, rebuild


def _check_nesting(value: Any, path: list[int]) -> None:
    """Refuse a fetch structure that contains itself or nests deeper than the limit."""
    if id(value) in path:
        raise ValueError(
            f"Fetch argument contains itself: a {type(value).__name__} at depth {len(path)} "
            "is one of the structures enclosing it. Fetch a structure without cycles."
        )
    if len(path) >= MAX_FETCH_DEPTH:
        raise ValueError(
            f"Fetch argument is nested more than {MAX_FETCH_DEPTH} levels deep; fetch a "
            "flatter structure of tensors and operations."
        )


def check_feeds(feed_dict: Mapping[Any, Any] | None, graph: Graph) -> tuple[list, list]:
    """The fed tensors of ``graph`` and their values (as arrays of the tensors' dtypes),
    in the same order; raises when a key is not a tensor of the graph or a value does not
    fit its tensor."""
    if feed_dict is None:
        return [], []
    if not isinstance(feed_dict, Mapping):
        raise TypeError(f"feed_dict must be a dict of tensor -> value; got {quote(feed_dict)}")
    tensors, values = [], []
    keys: dict[Tensor, Any] = {}
    for key, value in _feed_pairs(feed_dict):
        tensor = resolve(key, graph, "Feed key")
        if not isinstance(tensor, Tensor):
            what = (
                f"The name {quote(key)} refers to" if isinstance(key, str) else f"{quote(key)} is"
            )
            raise TypeError(
                f"Cannot interpret feed_dict key as Tensor: {what} an Operation, not a Tensor "
                '(tensor names have the form "<op_name>:<output_index>"); feed one of the '
                "operation's output tensors."
            )
        if not graph.is_feedable(tensor):
            raise ValueError(f"Tensor {tensor.name} may not be fed.")
        if tensor in keys:
            raise ValueError(
                f"Tensor {quote(tensor.name)} is fed twice, under the keys "
                f"{quote(keys[tensor])} and {quote(key)}; feed each tensor once."
            )
        keys[tensor] = key
        tensors.append(tensor)
        values.append(_check_feed_value(tensor, value))
    return tensors, values


def _feed_pairs(feed_dict: Mapping[Any, Any]) -> list[tuple[Any, Any]]:
    """The ``(key, value)`` pairs of ``feed_dict``, a key that is a (nested) tuple or list of
    tensors paired element by element with its value, as TensorFlow does."""
    pairs: list[tuple[Any, Any]] = []

    def add(key: Any, value: Any) -> None:
        if isinstance(key, CompositeTensor):  # a SparseTensor: its tensors, each its part
            for k, v in key._feed_pairs(value):
                add(k, v)
        elif isinstance(key, (tuple, list)):
            if not isinstance(value, (tuple, list)) or len(value) != len(key):
                raise ValueError(
                    f"The feed_dict key {quote(key)} is a {type(key).__name__} of {len(key)} "
                    f"tensors; its value must be a tuple or list of as many values, got "
                    f"{quote(value)}"
                )
            for k, v in zip(key, value, strict=True):
                add(k, v)
        else:
            pairs.append((key, value))

    for key, value in feed_dict.items():
        add(key, value)
    add = None  # type: ignore[assignment]  # (a recursive closure's cell is a cycle)
    return pairs


def _check_feed_value(tensor: Tensor, value: Any) -> np.ndarray:
    dtype = tensor.dtype
    if isinstance(value, (Tensor, Operation, CompositeTensor)):
        raise TypeError(
            f"The value of a feed cannot be a Tensor ({quote(value)}); feed NumPy arrays or Python "
            f"values to {quote(tensor.name)}."
        )
    if dtype.name == "string" and isinstance(value, (int, float, np.number)):
        raise TypeError(
            f"Type of feed value {quote(value)} with type {type(value)} is not compatible with "
            f"Tensor type <dtype: 'string'> of {quote(tensor.name)}: feed str or bytes values."
        )
    array = np.asarray(value, dtype=dtype.numpy if dtype.name == "string" else None)
    if dtype.name == "string":
        array = strings_as_bytes(array)
    try:  # converted when every value survives, as TensorFlow converts; see casting's rule
        array = cast_exactly(array, dtype)
    except LossyCastError as exc:
        raise _lossy_feed(tensor, value, array, exc) from None
    shape = tensor.shape
    if shape is not None and (
        len(shape) != array.ndim
        or any(d is not None and d != n for d, n in zip(shape, array.shape, strict=True))
    ):
        wanted = tuple("?" if d is None else d for d in shape)
        raise ValueError(
            f"Cannot feed value of shape {array.shape} for tensor {quote(tensor.name)}, which has "
            f"shape {wanted}".replace("'?'", "?")
        )
    return array


def _lossy_feed(tensor: Tensor, value: Any, array: np.ndarray, exc: LossyCastError) -> Exception:
    """The error for a fed ``value`` that ``tensor``'s dtype cannot hold (``exc`` says why):
    for a Python ``int``, TensorFlow 1's ``TypeError`` and words, else a ``ValueError``."""
    dtype = tensor.dtype
    said = (
        f"Cannot feed value of dtype {array.dtype} to tensor {quote(tensor.name)} of dtype "
        f"{dtype.name}: {exc}"
    )
    if isinstance(value, int) and not isinstance(value, bool):
        return LossyIntFeedError(
            f"Type of feed value {quote(value)} with type {type(value)} is not compatible with "
            f"Tensor type {dtype.numpy.type}. Try explicitly setting the type of the feed "
            f"tensor to a larger type (e.g. int64). ({said}.)",
            tensor=tensor.name,
            **exc.fields,
        )
    return LossyCastError(
        f"{said}. Feed values that {dtype.name} holds (they are converted), convert them "
        "yourself if the change is meant, or give the placeholder a dtype that holds them.",
        tensor=tensor.name,
        **exc.fields,
    )


def item_key(item: Tensor | Operation) -> str:
    """A fetch's key in a run signature: a tensor's name, or ``^name`` for an operation."""
    return item.name if isinstance(item, Tensor) else f"^{item.name}"


def as_result(value: Any) -> Any:
    """A fetched value as the caller gets it: 0-d arrays become NumPy scalars, read-only
    arrays (constants and variables handed over by an in-process worker) are copied, and
    strings are ``bytes``, as in TensorFlow.

    >>> as_result(np.array("text", dtype=object)), as_result(np.array(["a"], dtype=object))
    (b'text', array([b'a'], dtype=object))
    """
    if isinstance(value, np.ndarray):
        if value.dtype.kind in "OU":
            value = strings_as_bytes(value)
        if value.ndim == 0:
            return value[()]
        if not value.flags.writeable:
            return value.copy()
    return value
