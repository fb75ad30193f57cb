"""TF1's other names for variable helpers, and the enums ``tf.Variable`` takes for distributed
variables (accepted, changing nothing here).

Its one job is naming: ``all_variables`` is ``global_variables``, ``initialize_variables`` is
``variables_initializer``; ``tables_initializer`` is the ``NoOp`` named ``init_all_tables``
that TensorFlow returns when the graph has no lookup tables (daskgraph has none);
``no_regularizer`` returns None.

>>> import daskgraph as dg
>>> with dg.Graph().as_default():
...     init = tables_initializer()
>>> init.name, init.type
('init_all_tables', 'NoOp')
"""

from __future__ import annotations

import enum
from typing import Any

from daskgraph.framework.graph import Operation
from daskgraph.ops.array import no_op
from daskgraph.ops.state import Variable, global_variables, variables_initializer

__all__ = [
    "VariableAggregation",
    "VariableSynchronization",
    "all_variables",
    "initialize_all_tables",
    "initialize_variables",
    "no_regularizer",
    "tables_initializer",
]


class VariableSynchronization(enum.Enum):
    """When a distributed variable's copies are synchronized (``tf.VariableSynchronization``):
    daskgraph's variables have one copy, on their device, so every value means the same."""

    AUTO = 0
    NONE = 1
    ON_WRITE = 2
    ON_READ = 3


class VariableAggregation(enum.Enum):
    """How a distributed variable's updates from several replicas combine
    (``tf.VariableAggregation``): daskgraph's updates all apply to the one copy."""

    NONE = 0
    SUM = 1
    MEAN = 2
    ONLY_FIRST_REPLICA = 3
    ONLY_FIRST_TOWER = 3  # TF1's older name of ONLY_FIRST_REPLICA


def all_variables() -> list[Variable]:
    """``tf.all_variables()``: TF1's old name of ``global_variables()``."""
    return global_variables()


def initialize_variables(var_list: list[Variable], name: str = "init") -> Operation:
    """``tf.initialize_variables(var_list, name)``: TF1's old name of
    ``variables_initializer``."""
    return variables_initializer(var_list, name=name)


def tables_initializer(name: str = "init_all_tables") -> Operation:
    """An op initializing the graph's lookup tables: a ``NoOp``, as TensorFlow's when there
    are none (daskgraph has no lookup tables)."""
    return no_op(name=name)


initialize_all_tables = tables_initializer


def no_regularizer(_: Any) -> None:
    """``tf.no_regularizer``: the regularizer that adds no loss (a ``get_variable``
    regularizer returning None)."""
    return None
