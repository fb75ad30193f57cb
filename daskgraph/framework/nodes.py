"""The nodes of a graph: :class:`Operation` and the :class:`Tensor` values it outputs.

An operation is created by :meth:`daskgraph.framework.graph.Graph.create_op` (through the op
constructors of :mod:`daskgraph.ops`); this module only holds the two node types and
:func:`as_operation`, so that the construction scopes (:mod:`daskgraph.framework.scopes`) can take
operations, tensors and Variables without importing the graph.

>>> import daskgraph as dg
>>> with dg.Graph().as_default():
...     t = dg.constant(1.0, name="one")
>>> t, t.op
(<Tensor 'one:0' shape=() dtype=float32>, <Operation 'one' type=Const>)
>>> as_operation(t, "example") is t.op
True
>>> as_operation(1.0, "example")
Traceback (most recent call last):
...
TypeError: example expects an Operation, a Tensor or a Variable; got 1.0
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from daskgraph.framework import dtypes
from daskgraph.framework.default_session import run_in_default
from daskgraph.framework.device import DeviceSpec
from daskgraph.framework.tensor_shape import TensorShape, static_shape

if TYPE_CHECKING:
    from daskgraph.framework.graph import Graph

__all__ = ["GraphDef", "NodeDef", "Operation", "Shape", "Tensor", "as_operation"]

Shape = tuple  # a static shape: a tuple of ints and None (unknown size), or None (unknown rank)


class Tensor:
    """One output of an :class:`Operation`: a symbolic value with a dtype and a static shape.

    Tensors compare and hash by identity, as in TensorFlow 1, so they can key feed dicts.
    Arithmetic operators (``+ - * / @``, unary ``-``) build new operations.
    """

    __slots__ = ("_shape", "dtype", "index", "op")
    __array_priority__ = 100  # NumPy defers ``ndarray + Tensor`` to Tensor.__radd__

    def __init__(self, op: Operation, index: int, dtype: dtypes.DType, shape: Shape | None):
        self.op = op
        self.index = index
        self.dtype = dtype
        if type(shape) is TensorShape and not shape._v1:  # (most ops: an input's shape)
            self._shape = shape
        else:
            self._shape = None if shape is None else static_shape(shape)

    @property
    def shape(self) -> TensorShape | None:
        """The static shape: a :class:`~daskgraph.framework.tensor_shape.TensorShape`, a tuple of
        ints
        and None (unknown sizes) indexing to ints as TensorFlow 2's; None for an unknown rank
        (:meth:`get_shape` gives TensorFlow 1's ``TensorShape(None)`` then)."""
        return self._shape

    @shape.setter
    def shape(self, shape: Shape | None) -> None:
        """Set the static shape (a tuple of ints and None, or None)."""
        self._shape = None if shape is None else static_shape(shape)

    @property
    def name(self) -> str:
        """``<op name>:<output index>``, as in TensorFlow."""
        return f"{self.op.name}:{self.index}"

    @property
    def graph(self) -> Graph:
        """The graph of the producing operation."""
        return self.op.graph

    @property
    def device(self) -> str:
        """The device requested for the producing operation (not where it was placed)."""
        return self.op.device

    def get_shape(self) -> TensorShape:
        """The static shape as TensorFlow 1's ``TensorShape``: it indexes and iterates to
        :class:`~daskgraph.framework.tensor_shape.Dimension` objects (``.value``), and is
        ``TensorShape(None)`` for an unknown rank."""
        return TensorShape(self._shape, v1=True)

    def eval(self, feed_dict: Mapping[Any, Any] | None = None, session: Any = None) -> Any:
        """This tensor's value, run in ``session`` (default: the default session), as TF1's
        ``Tensor.eval``; a shorthand for ``session.run(tensor, feed_dict)``."""
        return run_in_default(self, feed_dict, session)

    @property
    def value_index(self) -> int:
        """Which output of its operation this tensor is (TensorFlow's ``value_index``)."""
        return self.index

    def set_shape(self, shape: Any) -> None:
        """Refine the static shape with ``shape`` (TF1's ``set_shape``): unknown sizes become
        known; a shape that is not compatible raises ValueError.

        >>> from daskgraph.framework.graph import Graph, new_tensor
        >>> with Graph().as_default():
        ...     t = new_tensor("Placeholder", [], dtypes.float32, None)
        ...     t.set_shape([None, 3]); t.set_shape([2, None])
        >>> t.shape
        (2, 3)
        """
        wanted = TensorShape(shape)
        if self._shape is None:
            self.shape = wanted._raw()
            return
        try:
            merged = TensorShape(self._shape).merge_with(wanted)
        except ValueError:
            raise ValueError(
                f"Tensor {self.name!r} has shape {self._shape}; the shape {wanted} asked for "
                "by set_shape is not compatible with it"
            ) from None
        self.shape = merged._raw()

    def consumers(self) -> list[Operation]:
        """The operations that take this tensor as an input, in creation order."""
        return [op for op in self.op.graph.get_operations() if any(t is self for t in op.inputs)]

    def __repr__(self) -> str:
        return f"<Tensor {self.name!r} shape={self.shape} dtype={self.dtype.name}>"

    def __bool__(self) -> bool:
        raise TypeError(
            f"Using tensor {self.name!r} as a Python bool is not allowed: its value is only "
            "known when a Session runs it. Use Session.run to get the value first."
        )

    def __iter__(self):
        raise TypeError(f"Tensor {self.name!r} is not iterable before it is run.")


class _ReadOnlyList(list):
    """The empty list that every operation without control inputs (or without outputs)
    shares: read-only, so that no op's change reaches the others (a million ops, a million
    empty lists less)."""

    __slots__ = ()

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("an Operation's control_inputs and outputs cannot be changed")

    append = extend = insert = remove = pop = clear = sort = reverse = _refuse
    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse


class _ReadOnlyDict(dict):
    """The empty attributes that every operation without attributes shares, read-only. It
    pickles as a plain dict, so that a worker unpickling a program's steps (which carry their
    ops' attributes) never imports the graph's nodes.

    >>> import pickle
    >>> type(pickle.loads(pickle.dumps(NO_ATTRS))), b"nodes" in pickle.dumps(NO_ATTRS)
    (<class 'dict'>, False)
    """

    __slots__ = ()

    def __reduce__(self) -> tuple[Any, ...]:
        return (dict, (dict(self),))

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("an Operation's attrs cannot be changed")

    __setitem__ = __delitem__ = __ior__ = update = setdefault = pop = popitem = clear = _refuse


NO_OPS: list[Any] = _ReadOnlyList()  # (the control inputs, or outputs, of an op with none)
NO_ATTRS: dict[str, Any] = _ReadOnlyDict()  # (the attributes of an op with none)


class Operation:
    """A node of the graph.

    Attributes
    ----------
    name, type
        Unique name and op type (``"MatMul"``).
    inputs
        Input tensors, in order.
    control_inputs
        Operations that must run before this one.
    attrs
        Op attributes (``value`` of a constant, ``perm`` of a transpose, ...).
    outputs
        Output tensors.
    device
        Canonical string of the device requested for it ('' when none).
    colocation
        Name of the operation this one must share a device with, or None.
    """

    __slots__ = (
        "attrs",
        "colocation",
        "control_inputs",
        "device",
        "graph",
        "id",
        "inputs",
        "name",
        "outputs",
        "type",
    )

    def __init__(
        self,
        graph: Graph,
        op_id: int,
        name: str,
        op_type: str,
        inputs: tuple[Tensor, ...],
        control_inputs: Sequence[Operation],
        attrs: dict[str, Any] | None,
    ) -> None:
        self.graph = graph
        self.id = op_id  # position in the graph: creation order, a topological order
        self.name = name
        self.type = op_type
        self.inputs = inputs
        # lists, as TensorFlow gives them (ops without any share one read-only empty list)
        self.control_inputs = list(control_inputs) if control_inputs else NO_OPS
        self.attrs = attrs or NO_ATTRS
        self.outputs: list[Tensor] = NO_OPS  # (create_op sets them)
        self.device = ""
        self.colocation: str | None = None

    def _set_device(self, spec: DeviceSpec) -> None:
        self.device = spec.to_string()

    def run(self, feed_dict: Mapping[Any, Any] | None = None, session: Any = None) -> None:
        """Run this operation in ``session`` (default: the default session), as TF1's ``run``."""
        run_in_default(self, feed_dict, session, "run")

    def values(self) -> tuple[Tensor, ...]:
        """The output tensors, as a tuple (TensorFlow's ``Operation.values()``)."""
        return tuple(self.outputs)

    def get_attr(self, name: str) -> Any:
        """The attribute ``name`` (``dtype`` is the output's dtype when not an attribute);
        ValueError in TensorFlow's words when there is none."""
        if name in self.attrs:
            return self.attrs[name]
        if name == "_XlaCompile" and self.graph.jit_compiled(self):
            return True  # (made under a jit_scope)
        if name == "dtype" and self.outputs:
            return self.outputs[0].dtype
        if name == "T" and (self.inputs or self.outputs):  # most ops' element type
            return (self.inputs or self.outputs)[0].dtype
        raise ValueError(f"Operation {self.name!r} has no attr named {name!r}.")

    def colocation_groups(self) -> list[bytes]:
        """TensorFlow's colocation groups: ``[b"loc:@<op>"]``, the op this one is colocated
        with, or itself."""
        return [f"loc:@{self.colocation or self.name}".encode()]

    @property
    def node_def(self) -> NodeDef:
        """The operation as TensorFlow's ``NodeDef``: name, op type, inputs (``^name`` for
        control inputs), requested device and attributes."""
        inputs = [t.name for t in self.inputs] + [f"^{c.name}" for c in self.control_inputs]
        return NodeDef(self.name, self.type, inputs, self.device, dict(self.attrs))

    def __repr__(self) -> str:
        return f"<Operation {self.name!r} type={self.type}>"


class GraphDef(NamedTuple):
    """A graph described as TensorFlow's ``GraphDef`` protocol buffer's fields: its nodes
    (``graph_def.node``), in creation order."""

    node: list[NodeDef]
    versions: dict[str, int]


class NodeDef(NamedTuple):
    """An operation described as TensorFlow's ``NodeDef`` protocol buffer's fields."""

    name: str
    op: str
    input: list[str]
    device: str
    attr: dict[str, Any]


def as_operation(value: Any, where: str) -> Operation:
    """The operation behind an Operation, a Tensor or a Variable, or a clear TypeError."""
    if isinstance(value, Operation):
        return value
    if isinstance(value, Tensor):
        return value.op
    op = getattr(value, "op", None)
    if isinstance(op, Operation):
        return op
    raise TypeError(f"{where} expects an Operation, a Tensor or a Variable; got {value!r}")
