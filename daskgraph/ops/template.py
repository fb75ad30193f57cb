"""Templates: functions whose variables are made on the first call and shared by the later ones
(TensorFlow 1's ``make_template``), over :mod:`daskgraph.ops.variable_scope`.

A template calls its function inside one variable scope: the first call opens it (``name``,
made unique as a ``variable_scope``'s ``default_name`` is) and lets ``get_variable`` make
variables; every later call re-enters it with ``reuse=True``, so the same variables are read.
As in TensorFlow, each call opens a name scope of its own for the other ops (``scale/mul``,
``scale_1/mul``), and a later call that makes a trainable variable (a ``Variable`` where
``get_variable`` was meant) is an error.

>>> import daskgraph as dg
>>> def scale(x, factor=2.0):
...     w = dg.get_variable("w", [2], initializer=dg.constant_initializer(factor))
...     return dg.multiply(x, w, name="mul")
>>> with dg.Graph().as_default():
...     t = make_template("scale", scale, factor=3.0)
...     x = dg.constant([1.0, 2.0])
...     a, b = t(x), t(x)
...     [v.op.name for v in dg.global_variables()], a.name, b.name, t.variable_scope_name
(['scale/w'], 'scale/mul:0', 'scale_1/mul:0', 'scale/')
"""

from __future__ import annotations

import functools
import logging
import traceback
from collections.abc import Callable
from typing import Any

from daskgraph.framework.graph import GLOBAL_VARIABLES, TRAINABLE_VARIABLES, get_default_graph
from daskgraph.ops.variable_scope import VariableScope, variable_scope
from daskgraph.ops.variable_status import LOCAL_VARIABLES

__all__ = ["Template", "make_template"]

_log = logging.getLogger(__name__)


class Template:
    """A function that makes its variables on the first call and reuses them after
    (TF1's ``Template``; made by :func:`make_template`).

    Parameters
    ----------
    name
        The name of the variable scope (made unique unless ``unique_name`` is given).
    func
        The function called each time; it makes its variables with ``get_variable``.
    create_scope_now
        Open the variable scope now (its name fixed where the template is made) rather than
        on the first call.
    unique_name
        The scope's name, used as it is (not made unique).
    """

    def __init__(
        self,
        name: str,
        func: Callable[..., Any],
        create_scope_now: bool = False,
        unique_name: str | None = None,
    ) -> None:
        if name is None:
            raise ValueError("name cannot be None.")
        self._func = func
        self._name = name
        self._unique_name = unique_name
        self._stacktrace = traceback.format_stack()[:-2]
        self._variable_scope: VariableScope | None = None
        if create_scope_now:
            with variable_scope(unique_name, name, auxiliary_name_scope=False) as scope:
                self._variable_scope = scope
        self._variables_created = False
        self._first_call = True

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the function in the template's variable scope (reusing its variables after
        the first call)."""
        if self._variable_scope is not None:
            with variable_scope(self._variable_scope, reuse=not self._first_call):
                return self._call_func(args, kwargs)
        with variable_scope(self._unique_name, self._name) as scope:
            self._variable_scope = scope
            return self._call_func(args, kwargs)

    def _call_func(self, args: tuple, kwargs: dict) -> Any:
        try:
            if not self._variables_created:
                self._first_call = False
                try:
                    result = self._func(*args, **kwargs)
                except BaseException:
                    self._first_call = True
                    raise
                self._variables_created = True
                return result
            return self._call_again(args, kwargs)
        except Exception as exc:
            _append_definition(exc, self._stacktrace)
            raise

    def _call_again(self, args: tuple, kwargs: dict) -> Any:
        """A later call: no trainable variable may be made (TensorFlow's check)."""
        graph = get_default_graph()
        variables_at_start = len(graph.get_collection_ref(GLOBAL_VARIABLES))
        trainable_at_start = len(graph.get_collection_ref(TRAINABLE_VARIABLES))
        result = self._func(*args, **kwargs)
        trainable = graph.get_collection_ref(TRAINABLE_VARIABLES)
        if len(trainable) != trainable_at_start:
            raise ValueError(
                "Trainable variable created when calling a template after the first time, "
                "perhaps you used tf.Variable when you meant tf.get_variable: "
                f"{trainable[trainable_at_start:]}"
            )
        variables = graph.get_collection_ref(GLOBAL_VARIABLES)
        if len(variables) != variables_at_start:
            _log.info(
                "New variables created when calling a template after the first time, perhaps "
                "you used tf.Variable when you meant tf.get_variable: %s",
                variables[variables_at_start:],
            )
        return result

    # -- TF1's properties -----------------------------------------------------------------------
    @property
    def name(self) -> str:
        """The name given to the template."""
        return self._name

    @property
    def func(self) -> Callable[..., Any]:
        """The function the template calls."""
        return self._func

    @property
    def variable_scope(self) -> VariableScope | None:
        """The template's variable scope (None until it is opened)."""
        return self._variable_scope

    var_scope = variable_scope

    @property
    def variable_scope_name(self) -> str | None:
        """The variable scope's name with a trailing ``/`` (None until it is opened)."""
        if self._variable_scope is None:
            return None
        name = self._variable_scope.name
        return name if not name or name.endswith("/") else name + "/"

    def _collection(self, key: str) -> list[Any]:
        if not self._variables_created:
            return []
        prefix = self.variable_scope_name or ""
        items = get_default_graph().get_collection(key)
        return [v for v in items if str(getattr(v, "name", "")).startswith(prefix)]

    @property
    def global_variables(self) -> list[Any]:
        """The global variables under the template's scope (none before the first call)."""
        return self._collection(GLOBAL_VARIABLES)

    @property
    def local_variables(self) -> list[Any]:
        """The local variables under the template's scope."""
        return self._collection(LOCAL_VARIABLES)

    @property
    def trainable_variables(self) -> list[Any]:
        """The trainable variables under the template's scope."""
        return self._collection(TRAINABLE_VARIABLES)

    @property
    def non_trainable_variables(self) -> list[Any]:
        """The global variables under the template's scope that are not trainable."""
        trainable = set(map(id, self.trainable_variables))
        return [v for v in self.global_variables if id(v) not in trainable]

    @property
    def variables(self) -> list[Any]:
        """The global and local variables under the template's scope."""
        return self.global_variables + self.local_variables

    weights = variables
    trainable_weights = trainable_variables
    non_trainable_weights = non_trainable_variables

    def __repr__(self) -> str:
        return f"<Template {self._name!r} scope={self.variable_scope_name!r}>"


def _append_definition(exc: Exception, stacktrace: list[str]) -> None:
    """Add where the template was made to ``exc``'s message, as TensorFlow does."""
    here = traceback.format_stack()
    index = next(
        (i for i, (a, b) in enumerate(zip(stacktrace, here, strict=False)) if a != b), None
    )
    trace = "".join(stacktrace[index:] if index is not None else stacktrace[-1:])
    first = exc.args[0] if exc.args else ""
    exc.args = (f"{first}\n\noriginally defined at:\n{trace}", *exc.args[1:])


def make_template(
    name_: str,
    func_: Callable[..., Any],
    create_scope_now_: bool = False,
    unique_name_: str | None = None,
    custom_getter_: Any = None,
    **kwargs: Any,
) -> Template:
    """``func_`` wrapped so that its variables (made with ``get_variable``) are shared by
    every call (``tf.make_template``).

    Parameters
    ----------
    name_
        The variable scope's name, made unique (``scale``, ``scale_1``, ...).
    func_
        The function; ``kwargs`` are bound to it.
    create_scope_now_
        Fix the scope where the template is made rather than at its first call.
    unique_name_
        A scope name used as it is.
    custom_getter_
        Must be None: daskgraph's variable scopes have no custom getters.

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     t = make_template("layer", lambda x: x * dg.get_variable("w", [], dg.float32))
    ...     y1, y2 = t(dg.constant(1.0)), t(dg.constant(2.0))
    ...     [v.op.name for v in t.trainable_variables]
    ['layer/w']
    """
    if custom_getter_ is not None:
        raise ValueError("make_template: custom_getter_ is not supported by daskgraph")
    if kwargs:
        func_ = functools.update_wrapper(functools.partial(func_, **kwargs), func_)
    return Template(name_, func_, create_scope_now_, unique_name_)
