"""Variable scopes and ``get_variable``: variables shared by name, as in TensorFlow 1.

Each graph keeps a store of the variables made with :func:`get_variable`, keyed by their
scoped name (``tower/w``). Inside ``variable_scope(..., reuse=True)`` (inherited by inner
scopes) ``get_variable`` returns the stored variable and refuses to make a new one; outside,
it makes a new one and refuses to return an existing one; with :data:`AUTO_REUSE` it does
whichever applies. That is how towers on several GPUs share one set of variables, made under
``device("/cpu:0")``:

>>> import daskgraph as dg
>>> with dg.Graph().as_default():
...     for gpu in range(2):
...         with dg.device(f"/gpu:{gpu}"), variable_scope("model", reuse=gpu > 0):
...             with dg.device("/cpu:0"):
...                 w = get_variable("w", [2], initializer=dg.zeros_initializer())
...             y = w * 2.0
...     [v.op.name for v in dg.global_variables()], w.device, y.op.name, y.device
(['model/w'], '/device:CPU:0', 'model_1/mul', '/device:GPU:1')

As in TensorFlow, a variable scope also opens a name scope for the other ops (``model_1``
above), while variables are named by the variable scope alone. The ops that compute a new
variable's initial value are named ``<name>/Initializer/...`` and colocated with it.
"""

from __future__ import annotations

import enum
import inspect
import pathlib
import traceback
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from contextvars import ContextVar
from typing import Any

from daskgraph.framework import dtypes, scopes
from daskgraph.framework.graph import REGULARIZATION_LOSSES, Graph, Tensor, get_default_graph
from daskgraph.framework.tensor_shape import dimension_value
from daskgraph.ops.array import convert_to_tensor
from daskgraph.ops.state import Variable

__all__ = [
    "AUTO_REUSE",
    "VariableScope",
    "get_variable",
    "get_variable_scope",
    "new_variable",
    "stored_variables",
    "variable_scope",
]


class _ReuseMode(enum.Enum):
    """``reuse=AUTO_REUSE``: make a variable when it does not exist, else return it."""

    AUTO_REUSE = 1


#: ``reuse=AUTO_REUSE``: get_variable makes the variable if it does not exist yet, else reuses it
AUTO_REUSE = _ReuseMode.AUTO_REUSE

_STORE_COLLECTION = "__daskgraph_variable_store"
_PACKAGE = str(pathlib.Path(__file__).resolve().parent)


class VariableScope:
    """A variable scope: the prefix of variable names, the reuse mode and defaults.

    Attributes
    ----------
    name
        The scope's full name (``""`` for the root scope).
    reuse
        ``False``, ``True`` or :data:`AUTO_REUSE`.
    initializer
        The default initializer of ``get_variable`` in this scope, or None.
    regularizer
        The default regularizer of ``get_variable`` in this scope, or None.
    original_name_scope
        The name scope opened when the scope was first entered (``"model/"``).
    """

    def __init__(
        self,
        reuse: Any,
        name: str = "",
        initializer: Any = None,
        name_scope: str = "",
        dtype: Any = dtypes.float32,
        regularizer: Any = None,
    ) -> None:
        self.name = name
        self.regularizer = regularizer
        self._reuse = reuse if reuse is AUTO_REUSE else bool(reuse)
        self.initializer = initializer
        self.original_name_scope = name_scope
        self.dtype = dtypes.as_dtype(dtype)
        self.caching_device: Any = None  # the default of get_variable's, inherited

    @property
    def reuse(self) -> Any:
        """``False``, ``True`` or :data:`AUTO_REUSE`."""
        return self._reuse

    def reuse_variables(self) -> None:
        """Make ``get_variable`` in this scope (and in scopes entered from now on inside it)
        reuse existing variables."""
        self._reuse = True

    def set_initializer(self, initializer: Any) -> None:
        """Set the default initializer of this scope."""
        self.initializer = initializer

    def set_dtype(self, dtype: Any) -> None:
        """Set the default dtype of this scope."""
        self.dtype = dtypes.as_dtype(dtype)

    def set_regularizer(self, regularizer: Any) -> None:
        """Set the default regularizer of this scope."""
        self.regularizer = regularizer

    def __repr__(self) -> str:
        return f"<VariableScope {self.name!r} reuse={self._reuse}>"


class _VariableStore:
    """One graph's variables made by ``get_variable``, its root scope and scope counts."""

    def __init__(self) -> None:
        self.variables: dict[str, Variable] = {}
        self.origins: dict[str, str] = {}
        self.root = VariableScope(False)
        self.scope_counts: dict[str, int] = {}

    def open_scope(self, name: str) -> None:
        self.scope_counts[name] = self.scope_counts.get(name, 0) + 1

    def close_subscopes(self, name: str) -> None:
        prefix = f"{name}/" if name else ""
        for key in self.scope_counts:
            if key.startswith(prefix):
                self.scope_counts[key] = 0

    def unique_scope(self, parent: str, prefix: str) -> str:
        full = f"{parent}/{prefix}" if parent else prefix
        if not self.scope_counts.get(full):
            return prefix
        index = 1
        while self.scope_counts.get(f"{full}_{index}"):
            index += 1
        return f"{prefix}_{index}"


def _store(graph: Graph) -> _VariableStore:
    """The variable store of ``graph`` (kept in one of its collections, as TensorFlow does)."""
    found = graph.get_collection(_STORE_COLLECTION)
    if found:
        return found[0]
    store = _VariableStore()
    graph.add_to_collection(_STORE_COLLECTION, store)
    return store


def stored_variables(graph: Graph | None = None) -> dict[str, Variable]:
    """The variables :func:`get_variable` made in ``graph`` (default: the default graph), by
    full name (TensorFlow's default variable store).

    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     with variable_scope("a"):
    ...         w = get_variable("w", shape=[2])
    ...     list(stored_variables()) == ["a/w"] and stored_variables()["a/w"] is w
    True
    """
    return dict(_store(graph or get_default_graph()).variables)


_current: ContextVar[tuple[Graph, VariableScope] | None] = ContextVar(
    "daskgraph_variable_scope", default=None
)


def get_variable_scope() -> VariableScope:
    """The variable scope in force for the default graph (its root scope outside any).

    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     with variable_scope("a"):
    ...         with variable_scope("b", reuse=True):
    ...             inner = get_variable_scope()
    ...     root = get_variable_scope()
    >>> inner.name, inner.reuse, inner.original_name_scope, root.name, root.reuse
    ('a/b', True, 'a/b/', '', False)
    """
    graph = get_default_graph()
    current = _current.get()
    if current is not None and current[0] is graph:
        return current[1]
    return _store(graph).root


def _check_reuse(reuse: Any) -> Any:
    if reuse is None or reuse is False:
        return None
    if reuse is True or reuse is AUTO_REUSE:
        return reuse
    raise ValueError(
        f"variable_scope: reuse must be True, False, None or AUTO_REUSE; got {reuse!r}"
    )


@contextmanager
def variable_scope(
    name_or_scope: str | VariableScope | None = None,
    default_name: str | None = None,
    values: Any = None,
    initializer: Any = None,
    reuse: Any = None,
    dtype: Any = None,
    auxiliary_name_scope: bool = True,
    *,
    regularizer: Any = None,
    caching_device: Any = None,
    partitioner: Any = None,
    custom_getter: Any = None,
    use_resource: Any = None,
    constraint: Any = None,
) -> Iterator[VariableScope]:
    """Open a variable scope (and a name scope of the same name) for ``get_variable``.

    Parameters
    ----------
    name_or_scope
        A name, appended to the enclosing scope's, or a :class:`VariableScope` to re-enter.
    default_name
        Used when ``name_or_scope`` is None, made unique (``dense``, ``dense_1``, ...).
    initializer, dtype
        Defaults of ``get_variable`` in the scope (inherited by inner scopes).
    reuse
        ``True`` or :data:`AUTO_REUSE` (inherited by inner scopes); ``None``/``False``
        inherit the enclosing scope's mode.
    auxiliary_name_scope
        Whether to open the name scope too.
    regularizer
        The default regularizer of ``get_variable`` in the scope (inherited).
    caching_device
        The default ``caching_device`` of ``get_variable`` in the scope (inherited): where
        the variables' values are read for their users.
    use_resource
        Accepted, as TF1's; daskgraph has reference variables only.
    partitioner, custom_getter, constraint
        Refused when given (ValueError), as by ``get_variable``.

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     with variable_scope(None, default_name="dense"):
    ...         a = get_variable("w", [1])
    ...     with variable_scope(None, default_name="dense"):
    ...         b = get_variable("w", [1])
    ...     with variable_scope("dense", reuse=True):
    ...         c = get_variable("w", [1])
    >>> a.op.name, b.op.name, c is a
    ('dense/w', 'dense_1/w', True)
    """
    _check_scope_arguments(name_or_scope, default_name, partitioner, custom_getter, constraint)
    reuse = _check_reuse(reuse)
    graph = get_default_graph()
    store = _store(graph)
    old = get_variable_scope()
    scope_name = name_or_scope  # the name scope's name (TF: default_name's, made unique)
    if name_or_scope is None:
        if reuse is True:
            raise ValueError("variable_scope: reuse=True cannot be used without a name_or_scope")
        name_or_scope, scope_name = store.unique_scope(old.name, default_name), default_name
    with ExitStack() as stack:
        defaults = (reuse, initializer, dtype, regularizer)
        if isinstance(name_or_scope, VariableScope):
            new = _reenter(stack, graph, store, name_or_scope, defaults, auxiliary_name_scope)
        else:
            opened = (
                stack.enter_context(graph.name_scope(scope_name)) if auxiliary_name_scope else ""
            )
            new = _extend(stack, store, old, name_or_scope, defaults, opened)
        if caching_device is not None:
            new.caching_device = caching_device
        token = _current.set((graph, new))
        stack.callback(_current.reset, token)
        yield new


def _check_scope_arguments(
    name_or_scope: Any, default_name: Any, partitioner: Any, custom_getter: Any, constraint: Any
) -> None:
    """Raise for a :func:`variable_scope` without a name, with a name of another type, or
    with an option daskgraph does not support (``TypeError``, ``ValueError``)."""
    if name_or_scope is None and default_name is None:
        raise TypeError("variable_scope: give name_or_scope or default_name")
    if not isinstance(name_or_scope, (str, VariableScope, type(None))):
        raise TypeError(
            f"variable_scope: name_or_scope must be a string or a VariableScope; "
            f"got {name_or_scope!r}"
        )
    for what, value in (
        ("partitioner", partitioner),
        ("custom_getter", custom_getter),
        ("constraint", constraint),
    ):
        if value is not None:
            raise ValueError(f"variable_scope: {what} is not supported by daskgraph")


def _reenter(
    stack: ExitStack,
    graph: Graph,
    store: _VariableStore,
    scope: VariableScope,
    defaults: tuple[Any, Any, Any, Any],
    auxiliary_name_scope: bool,
) -> VariableScope:
    """Enter ``scope`` again: its name, and a new name scope named after its last part; the
    sub-scope counts are restored on leaving (as TensorFlow's)."""
    reuse, initializer, dtype, regularizer = defaults
    if auxiliary_name_scope:
        stack.enter_context(graph.name_scope(scope.name.rsplit("/", 1)[-1]))
    new = VariableScope(
        reuse or scope.reuse,
        scope.name,
        initializer if initializer is not None else scope.initializer,
        scope.original_name_scope,
        dtype if dtype is not None else scope.dtype,
        regularizer if regularizer is not None else scope.regularizer,
    )
    new.caching_device = scope.caching_device
    store.open_scope(scope.name)
    saved = dict(store.scope_counts)
    stack.callback(setattr, store, "scope_counts", saved)
    return new


def _extend(
    stack: ExitStack,
    store: _VariableStore,
    old: VariableScope,
    name: str,
    defaults: tuple[Any, Any, Any, Any],
    opened: str,
) -> VariableScope:
    """Enter the scope ``<old>/<name>`` (``opened``: the name scope opened for it, if any),
    inheriting ``old``'s reuse mode and defaults; the counts of its sub-scopes restart when
    it is left."""
    reuse, initializer, dtype, regularizer = defaults
    new_name = f"{old.name}/{name}" if old.name else name
    new = VariableScope(
        reuse or old.reuse,
        new_name,
        initializer if initializer is not None else old.initializer,
        opened,
        dtype if dtype is not None else old.dtype,
        regularizer if regularizer is not None else old.regularizer,
    )
    new.caching_device = old.caching_device
    store.open_scope(new_name)
    stack.callback(store.close_subscopes, new_name)
    return new


def get_variable(
    name: str,
    shape: Any = None,
    dtype: Any = None,
    initializer: Any = None,
    *,
    regularizer: Any = None,
    trainable: bool | None = None,
    collections: Any = None,
    validate_shape: bool = True,
    caching_device: Any = None,
) -> Variable:
    """The variable ``<scope>/<name>``: a new one, or an existing one under ``reuse``.

    Parameters
    ----------
    name
        The name within the current variable scope.
    shape
        The variable's shape (must be fully defined for a new variable with an initializer
        function; omitted when ``initializer`` is a value).
    dtype
        Default: the scope's (float32).
    initializer
        A function ``init(shape, dtype=..., partition_info=None)`` (see
        :mod:`daskgraph.ops.initializers`), or a value or tensor to start from. Default: the
        scope's, else Glorot uniform for floats and zeros for integers and bools.
    regularizer
        A function of a new variable; the tensor it returns (if any) joins the
        ``REGULARIZATION_LOSSES`` collection.
    trainable
        Whether optimizers train it (default True).
    collections
        The graph collections it joins (default ``[GLOBAL_VARIABLES]``).
    caching_device
        Where its value is read for its users (default: the scope's, else with the
        variable; see :class:`~daskgraph.ops.state.Variable`).

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     with variable_scope("x"):
    ...         w = get_variable("w", [2])
    ...         w_again = get_variable("w", [2])
    Traceback (most recent call last):
    ...
    ValueError: Variable x/w already exists, disallowed. Did you mean to set reuse=True or ...
    >>> with dg.Graph().as_default():
    ...     with variable_scope("x", reuse=True):
    ...         w = get_variable("w", [2])
    Traceback (most recent call last):
    ...
    ValueError: Variable x/w does not exist, or was not created with tf.get_variable(). ...
    """
    if not isinstance(name, str):
        raise TypeError(f"get_variable: name must be a string; got {name!r}")
    scope = get_variable_scope()
    full = f"{scope.name}/{name}" if scope.name and name else (name or scope.name)
    store = _store(get_default_graph())
    found = store.variables.get(full)
    if found is not None or scope.reuse is True:
        return _reused(store, scope, full, found, shape, dtype)
    if initializer is None:
        initializer = scope.initializer
    if regularizer is None:
        regularizer = scope.regularizer
    if caching_device is None:
        caching_device = scope.caching_device
    if dtype is None and (initializer is None or callable(initializer)):
        dtype = scope.dtype
    variable = new_variable(
        full,
        shape,
        dtype,
        initializer,
        True if trainable is None else bool(trainable),
        collections,
        validate_shape,
        caching_device,
    )
    store.variables[full] = variable
    store.origins[full] = _where_defined()
    if regularizer is not None:
        _regularize(full, variable, regularizer)
    return variable


def _reused(
    store: _VariableStore,
    scope: VariableScope,
    full: str,
    found: Variable | None,
    shape: Any,
    dtype: Any,
) -> Variable:
    """What :func:`get_variable` returns for ``full`` when it exists (``found``) or the scope
    reuses (``scope.reuse is True``): the stored variable, or the error TensorFlow raises when
    the scope does not reuse, the variable does not exist, or it differs from what was asked."""
    if found is None:
        raise ValueError(
            f"Variable {full} does not exist, or was not created with tf.get_variable(). "
            "Did you mean to set reuse=tf.AUTO_REUSE in VarScope?"
        )
    if scope.reuse is False:
        raise ValueError(
            f"Variable {full} already exists, disallowed. Did you mean to set reuse=True "
            f"or reuse=tf.AUTO_REUSE in VarScope? Originally defined at:\n\n"
            f"{store.origins.get(full, '')}"
        )
    _check_shared(found, full, shape, dtype)
    return found


def _regularize(full: str, variable: Variable, regularizer: Any) -> None:
    """Add ``regularizer(variable)`` (made under ``<full>/Regularizer/``), unless it is None,
    to the graph's ``REGULARIZATION_LOSSES``."""
    graph = get_default_graph()
    with graph.name_scope(f"{full}/Regularizer/"):
        loss = regularizer(variable)
    if loss is not None:
        graph.add_to_collection(REGULARIZATION_LOSSES, loss)


def _check_shared(found: Variable, full: str, shape: Any, dtype: Any) -> None:
    """Raise when a reused variable does not match the shape or dtype asked for."""
    if shape is not None:
        wanted = _as_shape(shape, full)
        have = found.shape
        if not _compatible(wanted, have):
            raise ValueError(
                f"Trying to share variable {full}, but specified shape {_show(wanted)} and found "
                f"shape {_show(have)}."
            )
    if dtype is not None and dtypes.as_dtype(dtype) != found.dtype:
        raise ValueError(
            f"Trying to share variable {full}, but specified dtype {dtypes.as_dtype(dtype).name} "
            f"and found dtype {found.dtype.name}."
        )


def _as_shape(shape: Any, where: str) -> tuple | None:
    if shape is None:
        return None
    if isinstance(shape, int):
        shape = (shape,)
    try:
        values = (dimension_value(d) for d in shape)  # TF1's Dimension objects too
        return tuple(None if d is None or d == -1 else int(d) for d in values)
    except (TypeError, ValueError):
        raise TypeError(
            f"get_variable {where}: shape must be a sequence of ints; got {shape!r}"
        ) from None


def _compatible(a: tuple | None, b: tuple | None) -> bool:
    if a is None or b is None:
        return True
    if len(a) != len(b):
        return False
    return all(x is None or y is None or x == y for x, y in zip(a, b, strict=True))


def _show(shape: tuple | None) -> str:
    return "<unknown>" if shape is None else str(list(shape))


def _where_defined() -> str:
    """The caller's frames outside daskgraph, as TensorFlow's "Originally defined at"."""
    frames = [f for f in traceback.extract_stack()[:-2] if not f.filename.startswith(_PACKAGE)]
    return "".join(traceback.format_list(frames[-3:]))


def new_variable(
    name: str,
    shape: Any = None,
    dtype: Any = None,
    initializer: Any = None,
    trainable: bool = True,
    collections: Any = None,
    validate_shape: bool = True,
    caching_device: Any = None,
) -> Variable:
    """A new variable called ``name`` (made unique), whose initial value is computed by ops
    named ``<name>/Initializer/...`` and colocated with it, ignoring the name scope and the
    control dependencies in force (TensorFlow's ``init_scope``); device scopes and
    ``colocate_with`` apply. It is not registered for ``get_variable`` (slot variables of
    optimizers are made this way).

    ``initializer`` is a function ``init(shape, dtype=..., partition_info=None)`` (the
    shape must then be fully defined; ``dtype`` defaults to float32), an initializer class, or
    a value (then ``shape`` must be None).

    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     with dg.name_scope("ignored"), dg.device("/cpu:0"):
    ...         v = new_variable("w/Momentum", [2], initializer=dg.zeros_initializer())
    ...     v.op.name, v.initial_value.op.name, v.initial_value.op.colocation, v.trainable
    ('w/Momentum', 'w/Momentum/Initializer/zeros', 'w/Momentum', True)
    """
    graph = get_default_graph()
    dtype = dtypes.as_dtype(dtype) if dtype is not None else None
    from_value = initializer is not None and not callable(initializer)
    if from_value and shape is not None:
        raise ValueError(
            f"get_variable {name}: if initializer is a constant, do not specify shape."
        )
    if isinstance(initializer, type):
        initializer = initializer(dtype=dtype or dtypes.float32)
    with ExitStack() as stack:
        # as TensorFlow's init_scope: the variable ignores the name scope and the control
        # dependencies in force; device scopes and colocation still apply
        stack.enter_context(scopes.control_dependencies(None))
        stack.enter_context(graph.name_scope(None))
        base = graph.unique_name(name, mark_as_used=False)
        start = graph.version
        with graph.name_scope(f"{base}/Initializer/"):
            if from_value:
                initial = convert_to_tensor(initializer, dtype=dtype, name="initial_value")
            else:
                dtype = dtype or dtypes.float32
                initial = _initial_value(base, _fully_defined(base, shape), dtype, initializer)
        variable = Variable(
            initial,
            trainable=trainable,
            name=base,
            validate_shape=validate_shape,
            collections=collections,
            caching_device=caching_device,
        )
    _colocate(graph, start, variable)
    return variable


def _fully_defined(full: str, shape: Any) -> tuple:
    wanted = _as_shape(shape, full)
    if wanted is None or None in wanted:
        raise ValueError(
            f"Shape of a new variable ({full}) must be fully defined, but instead was "
            f"{_show(wanted)}."
        )
    return wanted


def _initial_value(full: str, shape: tuple, dtype: dtypes.DType, initializer: Any) -> Tensor:
    if initializer is None:
        initializer = _default_initializer(full, dtype)
    kwargs: dict[str, Any] = {"dtype": dtype}
    if _accepts(initializer, "partition_info"):
        kwargs["partition_info"] = None
    value = convert_to_tensor(initializer(list(shape), **kwargs))
    if value.dtype != dtype:
        raise TypeError(
            f"get_variable {full}: the initializer made a {value.dtype.name} value for a "
            f"{dtype.name} variable"
        )
    return value


def _default_initializer(full: str, dtype: dtypes.DType) -> Any:
    """TensorFlow's default: Glorot uniform for floats, zeros for integers and bools."""
    from daskgraph.ops import initializers

    if dtype.is_floating:
        return initializers.glorot_uniform_initializer()
    if dtype.is_integer or dtype == dtypes.bool_:
        return initializers.zeros_initializer()
    raise ValueError(f"An initializer for variable {full} of {dtype.name} is required")


def _accepts(fn: Any, keyword: str) -> bool:
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return True
    return keyword in params or any(p.kind is p.VAR_KEYWORD for p in params.values())


def _colocate(graph: Graph, start: int, variable: Variable) -> None:
    """Colocate the ops made for ``variable``'s initial value with it, as TensorFlow does
    (the variable did not exist yet when they were made)."""
    target = variable.op
    for op in graph.get_operations()[start : target.id]:
        if op.colocation is None or op.colocation == target.colocation:
            op.colocation = target.colocation or target.name
            op.device = target.device
