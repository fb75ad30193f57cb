"""Variables: state that lives on the worker of its device and survives between runs.

A :class:`Variable` builds TensorFlow 1's ops: ``name`` (``VariableV2``, whose output is a
reference to the stored value), ``name/initial_value``, ``name/Assign`` (the initializer) and
``name/read`` (an ``Identity`` snapshot used wherever the variable is read). The reference
consumers are colocated with the variable, so the placer puts the whole group on one device.
As in TensorFlow, integer variables have no GPU kernel.

>>> import daskgraph as dg
>>> with dg.Graph().as_default() as g:
...     v = Variable(0, name="counter")
...     step = v.assign_add(1)
...     init = global_variables_initializer()
>>> [op.name for op in g.get_operations()]
['counter/initial_value', 'counter', 'counter/Assign', 'counter/read', 'Const', 'AssignAdd', 'init']
"""

from __future__ import annotations

from typing import Any

from daskgraph.framework import dtypes, scopes
from daskgraph.framework.default_session import run_in_default
from daskgraph.framework.gradient_registry import no_gradient
from daskgraph.framework.graph import (
    GLOBAL_VARIABLES,
    TRAINABLE_VARIABLES,
    Graph,
    Operation,
    Shape,
    Tensor,
    get_default_graph,
)
from daskgraph.framework.graph import _name_scope as graph_name_scope
from daskgraph.framework.op_registry import register
from daskgraph.kernels.state import (
    VariableRef,
    _assign_add_kernel,
    _assign_kernel,
    _assign_sub_kernel,
    _initialized_value_kernel,
    _variable_kernel,
)
from daskgraph.ops.array import convert_to_tensor

__all__ = [
    "Variable",
    "VariableRef",
    "assign",
    "assign_add",
    "assign_sub",
    "global_variables",
    "global_variables_initializer",
    "trainable_variables",
    "variables_initializer",
]

_GPU_VARIABLE_DTYPES = dtypes.FLOATING  # TensorFlow: no GPU kernel for integer variables


_VAR_DTYPES = {"cpu": dtypes.ALL - {dtypes.string}, "gpu": _GPU_VARIABLE_DTYPES}
register("VariableV2", _variable_kernel, stateful=True, produces_ref=True, **_VAR_DTYPES)
register("Assign", _assign_kernel, stateful=True, ref_inputs=(0,), **_VAR_DTYPES)
register("AssignAdd", _assign_add_kernel, stateful=True, ref_inputs=(0,), **_VAR_DTYPES)
register("AssignSub", _assign_sub_kernel, stateful=True, ref_inputs=(0,), **_VAR_DTYPES)
register(
    "InitializedValue", _initialized_value_kernel, stateful=True, ref_inputs=(0,), **_VAR_DTYPES
)
no_gradient("InitializedValue")
no_gradient("AssignSub")  # an update, as Assign and AssignAdd


class Variable:
    """A mutable tensor kept on its device across ``Session.run`` calls.

    Parameters
    ----------
    initial_value
        A tensor or a value convertible to one, or a function without arguments that makes
        it (called under the variable's name scope).
    name
        The variable's name (default ``"Variable"``, made unique).
    dtype
        Converts ``initial_value`` to this dtype when given.
    trainable
        Whether optimizers train it: it joins the ``TRAINABLE_VARIABLES`` collection too.
    collections
        The graph collections it joins (default ``[GLOBAL_VARIABLES]``), as in TensorFlow.
    caching_device
        Where the variable's value is read for its users (a device string or function), as
        TF1's: ``name/read`` goes there, fed by a read on the variable's own device
        (``name/read/value``); by default the read lives with the variable.
    """

    def __init__(
        self,
        initial_value: Any,
        trainable: bool = True,
        name: str | None = None,
        dtype: Any = None,
        validate_shape: bool = True,
        collections: Any = None,
        caching_device: Any = None,
    ) -> None:
        graph = get_default_graph()
        self._caching_device = caching_device
        with scopes.control_dependencies(None):  # as TF1's init_scope: a variable's ops
            self._build(graph, initial_value, name, dtype, validate_shape)  # depend on nothing
        collections = [GLOBAL_VARIABLES] if collections is None else list(collections)
        self.trainable = trainable
        if trainable and TRAINABLE_VARIABLES not in collections:
            collections.append(TRAINABLE_VARIABLES)
        for key in dict.fromkeys(collections):
            graph.add_to_collection(key, self)

    def _build(
        self, graph: Graph, initial_value: Any, name: Any, dtype: Any, validate_shape: bool
    ) -> None:
        """The variable's ops: its initial value, ``VariableV2``, ``Assign`` and ``read``."""
        base = graph.unique_name(name or "Variable")
        made_by_function = None
        with graph_name_scope(graph, base + "/"):
            if callable(initial_value):  # TF1 takes a function that builds the initial value
                first = graph.version
                with graph_name_scope(graph, "Initializer/"), scopes.device(None):
                    initial_value = initial_value()
                made_by_function = graph.get_operations()[first:]
            initial = convert_to_tensor(initial_value, dtype=dtype, name="initial_value")
        self._initial_value = initial
        attrs = {"var_name": base, "shape": initial.shape, "dtype": initial.dtype.numpy}
        self._variable_op = graph.create_op(
            "VariableV2", [], dtype=initial.dtype, shape=initial.shape, attrs=attrs, exact_name=base
        )
        for op in made_by_function or ():  # colocated with the variable, as TF1 does
            op.colocation, op.device = base, self._variable_op.device
        ref = self._variable_op.outputs[0]
        with graph_name_scope(graph, base + "/"):
            self._initializer_op = _make_assign(ref, initial, validate_shape, name="Assign")
            if self._caching_device is None:
                self._snapshot = _read(ref)
            else:
                self._snapshot = _cached_read(ref, self._caching_device)

    # -- identity -------------------------------------------------------------------------------
    @property
    def op(self) -> Operation:
        """The ``VariableV2`` operation (what colocation and control inputs see)."""
        return self._variable_op

    @property
    def name(self) -> str:
        """The name of the variable's reference output, ``<name>:0`` as in TensorFlow."""
        return f"{self._variable_op.name}:0"

    @property
    def dtype(self) -> dtypes.DType:
        """The dtype of the variable's value."""
        return self._snapshot.dtype

    @property
    def shape(self) -> Shape | None:
        """The static shape of the variable's value."""
        return self._snapshot.shape

    def get_shape(self) -> Any:
        """The static shape as TensorFlow 1's ``TensorShape`` (see ``Tensor.get_shape``)."""
        return self._snapshot.get_shape()

    @property
    def device(self) -> str:
        """The device requested for the variable (not where it was placed)."""
        return self._variable_op.device

    @property
    def graph(self) -> Graph:
        """The graph the variable belongs to."""
        return self._variable_op.graph

    @property
    def initializer(self) -> Operation:
        """The ``name/Assign`` operation that stores the initial value."""
        return self._initializer_op

    @property
    def initial_value(self) -> Tensor:
        """The tensor of the initial value (``name/initial_value``)."""
        return self._initial_value

    def value(self) -> Tensor:
        """The tensor that reads the variable (``name/read``)."""
        return self._snapshot

    def read_value(self) -> Tensor:
        """A new read of the variable, made where it is called: inside
        ``control_dependencies`` it reads after those ops ran (TF1's ``read_value``)."""
        ref = self._ref()
        with graph_name_scope(ref.graph, f"{self.op.name}/"):
            return _read(ref)

    def _as_tensor(self) -> Tensor:
        return self._snapshot

    def _ref(self) -> Tensor:
        return self._variable_op.outputs[0]

    # -- updates --------------------------------------------------------------------------------
    def assign(self, value: Any, name: str | None = None) -> Tensor:
        """An op that stores ``value`` in the variable and outputs it."""
        return assign(self, value, name=name)

    def assign_add(self, delta: Any, name: str | None = None) -> Tensor:
        """An op that adds ``delta`` to the variable and outputs the new value."""
        return assign_add(self, delta, name=name)

    def assign_sub(self, delta: Any, name: str | None = None) -> Tensor:
        """An op that subtracts ``delta`` from the variable and outputs the new value."""
        return assign_sub(self, delta, name=name)

    def eval(self, session: Any = None) -> Any:
        """The variable's value, run in ``session`` (default: the default session)."""
        return run_in_default(self, None, session)

    def load(self, value: Any, session: Any = None) -> None:
        """Store ``value`` in the variable now, in ``session`` (default: the default
        session), without adding ops to the graph (TF1's ``Variable.load``): the initializer
        runs with ``value`` fed as the initial value."""
        run_in_default(self.initializer, {self._initial_value: value}, session, "load")

    def initialized_value(self) -> Tensor:
        """The value once initialized, the initial value until then, so that another
        variable's initial value can use it (TF1's ``initialized_value``)."""
        ref = self._ref()
        with scopes.control_dependencies(None):
            return self._initialized_value(ref)

    def _initialized_value(self, ref: Tensor) -> Tensor:
        op = ref.graph.create_op(
            "InitializedValue",
            [ref, self._initial_value],
            dtype=self.dtype,
            shape=self.shape,
            name=f"{self.op.name}/initialized_value",
            colocate_with=ref.op,
        )
        return op.outputs[0]

    def __repr__(self) -> str:
        return f"<Variable {self.name!r} shape={self.shape} dtype={self.dtype.name}>"


def _delegate_operators() -> None:
    """Give Variable the arithmetic operators of its value, as ``tf.Variable`` has."""
    names = (
        "add radd sub rsub mul rmul truediv rtruediv matmul rmatmul neg abs floordiv rfloordiv "
        "mod rmod pow rpow lt le gt ge and rand or ror xor rxor invert getitem"
    ).split()
    for short in names:
        dunder = f"__{short}__"
        setattr(Variable, dunder, _operator(dunder))


def _operator(dunder: str):
    """The operator ``dunder`` of the variable's value, looked up when called: the ops
    modules give Tensor some operators (``[]``, ``<``, ...) after this one is imported."""

    def call(self, *args):
        return getattr(Tensor, dunder)(self._snapshot, *args)

    call.__name__ = dunder
    return call


def _read(ref: Tensor) -> Tensor:
    """A read of the variable ``ref`` (an ``Identity`` named ``read``, colocated with it)."""
    return ref.graph.create_op(
        "Identity", [ref], dtype=ref.dtype, shape=ref.shape, name="read", colocate_with=ref.op
    ).outputs[0]


def _cached_read(ref: Tensor, caching_device: Any) -> Tensor:
    """``name/read`` on ``caching_device``, reading the value a read on the variable's own
    device (``name/read/value``) makes: the value crosses devices once per run, as TF1's
    ``caching_device`` reads do."""
    graph = ref.graph
    value = graph.create_op(
        "Identity", [ref], dtype=ref.dtype, shape=ref.shape, name="read/value",
        colocate_with=ref.op,
    ).outputs[0]  # fmt: skip
    with scopes.device(caching_device):
        return graph.create_op(
            "Identity", [value], dtype=ref.dtype, shape=ref.shape, name="read"
        ).outputs[0]


def _make_assign(ref: Tensor, value: Tensor, validate_shape: bool, name: str) -> Operation:
    return ref.graph.create_op(
        "Assign",
        [ref, value],
        dtype=ref.dtype,
        shape=ref.shape,
        attrs={"validate_shape": validate_shape, "shape": ref.shape if validate_shape else None},
        name=name,
        colocate_with=ref.op,
    )


def _as_variable(var: Any, where: str) -> Variable:
    if not isinstance(var, Variable):
        raise TypeError(f"{where} expects a Variable; got {var!r}")
    return var


def assign(var: Variable, value: Any, name: str | None = None) -> Tensor:
    """Store ``value`` in ``var``; the op outputs the stored value."""
    var = _as_variable(var, "assign")
    value = convert_to_tensor(value, dtype=var.dtype)
    return _make_assign(var._ref(), value, True, name or "Assign").outputs[0]


def assign_add(var: Variable, delta: Any, name: str | None = None) -> Tensor:
    """Add ``delta`` to ``var``; the op outputs the new value."""
    return _update("AssignAdd", var, delta, name, "assign_add")


def assign_sub(var: Variable, delta: Any, name: str | None = None) -> Tensor:
    """Subtract ``delta`` from ``var``; the op outputs the new value.

    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     v = Variable(10.0)
    ...     down = v.assign_sub(2.5)
    ...     with dg.Session() as sess:
    ...         _ = sess.run(v.initializer)
    ...         sess.run(down), sess.run(down)
    (np.float32(7.5), np.float32(5.0))
    """
    return _update("AssignSub", var, delta, name, "assign_sub")


def _update(op_type: str, var: Variable, delta: Any, name: str | None, where: str) -> Tensor:
    var = _as_variable(var, where)
    delta = convert_to_tensor(delta, dtype=var.dtype)
    ref = var._ref()
    op = ref.graph.create_op(
        op_type,
        [ref, delta],
        dtype=ref.dtype,
        shape=ref.shape,
        name=name,
        colocate_with=ref.op,
    )
    return op.outputs[0]


def global_variables(graph: Any = None) -> list[Variable]:
    """The variables of ``graph`` (default graph by default), in creation order."""
    return (graph or get_default_graph()).get_collection(GLOBAL_VARIABLES)


def trainable_variables(graph: Any = None) -> list[Variable]:
    """The variables of ``graph`` (default graph by default) made with ``trainable=True``.

    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     w = Variable(1.0, name="w")
    ...     step = Variable(0, name="step", trainable=False)
    ...     [v.op.name for v in trainable_variables()], len(global_variables())
    (['w'], 2)
    """
    return (graph or get_default_graph()).get_collection(TRAINABLE_VARIABLES)


def variables_initializer(var_list: list[Variable], name: str = "init") -> Operation:
    """An op that runs the initializers of ``var_list``."""
    graph = get_default_graph()
    initializers = [_as_variable(v, "variables_initializer").initializer for v in var_list]
    return graph.create_op("NoOp", [], dtype=None, name=name, control_inputs=initializers)


def global_variables_initializer() -> Operation:
    """An op (``init``) that initializes every variable of the default graph."""
    return variables_initializer(global_variables(), name="init")


_delegate_operators()
