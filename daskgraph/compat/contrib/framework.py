"""``tf.contrib.framework``'s most used names: ``arg_scope`` and the variable helpers.

Its one job is to name them as TF 1.15 does: ``arg_scope`` and ``add_arg_scope``
(:mod:`~daskgraph.compat.contrib.arg_scopes`), ``model_variable``, and the lookups of
variables by scope, suffix and name that TF-Slim programs use to pick what to train or
restore (``get_variables``, ``get_model_variables``, ``get_variables_to_restore``, ...).

>>> import daskgraph as dg
>>> from daskgraph.compat.contrib.layers import fully_connected
>>> with dg.Graph().as_default():
...     _ = fully_connected(dg.ones([1, 2]), 3, scope="fc1")
...     _ = fully_connected(dg.ones([1, 2]), 3, scope="fc2")
...     names = [v.op.name for v in get_variables_to_restore(exclude=["fc2"])]
>>> names
['fc1/weights', 'fc1/biases']
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from daskgraph.compat.contrib.arg_scopes import (
    add_arg_scope,
    arg_scope,
    arg_scoped_arguments,
    current_arg_scope,
    has_arg_scope,
)
from daskgraph.compat.contrib.layers import MODEL_VARIABLES, model_variable
from daskgraph.framework.graph import GLOBAL_VARIABLES, TRAINABLE_VARIABLES, get_default_graph
from daskgraph.training.global_step import get_global_step, get_or_create_global_step

__all__ = [
    "add_arg_scope",
    "arg_scope",
    "arg_scoped_arguments",
    "current_arg_scope",
    "get_global_step",
    "get_model_variables",
    "get_or_create_global_step",
    "get_trainable_variables",
    "get_variables",
    "get_variables_by_name",
    "get_variables_by_suffix",
    "get_variables_to_restore",
    "has_arg_scope",
    "model_variable",
]


def _name(variable: Any) -> str:
    return variable.op.name


def get_variables(
    scope: Any = None, suffix: str | None = None, collection: str = GLOBAL_VARIABLES
) -> list[Any]:
    """The variables of ``collection`` whose names start with ``scope`` (a name, or a scope
    object with a ``name``) and end with ``suffix``."""
    if scope is not None and not isinstance(scope, str):
        scope = scope.name
    found = get_default_graph().get_collection(collection)
    if scope:
        found = [v for v in found if re.match(scope, _name(v))]
    if suffix is not None:
        found = [v for v in found if _name(v).endswith(suffix)]
    return found


def get_model_variables(scope: Any = None, suffix: str | None = None) -> list[Any]:
    """:func:`get_variables` of the ``model_variables`` collection."""
    return get_variables(scope, suffix, MODEL_VARIABLES)


def get_trainable_variables(scope: Any = None, suffix: str | None = None) -> list[Any]:
    """:func:`get_variables` of the ``trainable_variables`` collection."""
    return get_variables(scope, suffix, TRAINABLE_VARIABLES)


def get_variables_by_suffix(suffix: str, scope: Any = None) -> list[Any]:
    """The global variables whose names end with ``suffix``."""
    return get_variables(scope=scope, suffix=suffix)


def get_variables_by_name(given_name: str, scope: Any = None) -> list[Any]:
    """The global variables whose last name component is ``given_name``."""
    return [v for v in get_variables(scope=scope) if _name(v).split("/")[-1] == given_name]


def get_variables_to_restore(
    include: Sequence[str] | None = None, exclude: Sequence[str] | None = None
) -> list[Any]:
    """The global variables under the scopes of ``include`` (all by default) and not under
    those of ``exclude``: what a ``Saver`` restoring a pretrained model is given."""
    if include is None:
        chosen = get_variables()
    else:
        chosen = [v for scope in include for v in get_variables(scope)]
    dropped = {id(v) for scope in exclude or () for v in get_variables(scope)}
    return [v for v in dict.fromkeys(chosen) if id(v) not in dropped]


def __getattr__(name: str) -> object:
    """A name tf.contrib.framework does not have: the AttributeError pointing to docs/compat.md."""
    from daskgraph.errors import missing_name

    raise missing_name("tf.contrib.framework", name, globals())
