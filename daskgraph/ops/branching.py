"""Many-way branches on :func:`~daskgraph.ops.control_flow.cond`: ``case`` (the first pair
whose predicate holds) and ``switch_case`` (the branch of an index), as TF1's.

Both are chains of ``cond``, so they inherit what ``cond`` does here: every branch is built
and runs, and the taken one's result is selected (a branch may not update variables; see
:mod:`daskgraph.ops.control_flow`). TensorFlow's checks are kept: ``case`` without a
``default`` fails the run when no predicate holds, and ``exclusive=True`` when more than one
does, in TensorFlow's words; ``switch_case`` takes its last branch (``default`` when given)
for an index out of range.

>>> import daskgraph as dg
>>> with dg.Graph().as_default():
...     x = dg.placeholder(dg.int32, [])
...     y = switch_case(x, [lambda: dg.constant(1.0), lambda: dg.constant(2.0)])
...     with dg.Session() as sess:
...         [float(sess.run(y, {x: i})) for i in (0, 1, 5)]
[1.0, 2.0, 2.0]
"""

from __future__ import annotations

import functools
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from daskgraph.framework import dtypes
from daskgraph.framework.graph import Operation, Tensor, name_scope
from daskgraph.framework.scopes import control_dependencies
from daskgraph.ops.array import cast, convert_to_tensor
from daskgraph.ops.asserts import Assert
from daskgraph.ops.control_flow import cond
from daskgraph.ops.logic import equal, greater_equal, less, less_equal, logical_or, where
from daskgraph.ops.math import reduce_sum
from daskgraph.ops.reduction import reduce_any
from daskgraph.ops.shape_ops import stack

__all__ = ["case", "switch_case"]


def _pairs(pred_fn_pairs: Any) -> tuple[list[Tensor], list[Callable]]:
    """TensorFlow's checks of ``case``'s pairs; a dict is ordered by its predicates' names."""
    if not isinstance(pred_fn_pairs, (list, tuple, dict)):
        raise TypeError(
            f"'pred_fn_pairs' must be a list, tuple, or dict. Received: {type(pred_fn_pairs)}"
        )
    if isinstance(pred_fn_pairs, OrderedDict):
        pred_fn_pairs = list(pred_fn_pairs.items())
    elif isinstance(pred_fn_pairs, dict):
        pred_fn_pairs = sorted(pred_fn_pairs.items(), key=lambda item: item[0].name)
    if not pred_fn_pairs:
        raise ValueError("case: pred_fn_pairs must not be empty")
    for pair in pred_fn_pairs:
        if not isinstance(pair, tuple) or len(pair) != 2:
            raise TypeError(f"Each entry in 'pred_fn_pairs' must be a 2-tuple. Received {pair}.")
        pred, fn = pair
        if not isinstance(pred, Tensor):
            raise TypeError(f"pred must be a Tensor, got: {pred}")
        if pred.dtype is not dtypes.bool_:
            raise TypeError(f"pred must be Tensor of type bool: {pred.name}")
        if not callable(fn):
            raise TypeError(f"fn for pred {pred.name} must be callable.")
    return [p for p, _ in pred_fn_pairs], [f for _, f in pred_fn_pairs]


def _at_most_n_true(predicates: list[Tensor], n: int, msg: str) -> Operation:
    preds = stack(predicates, name="preds_c")
    count = reduce_sum(cast(preds, dtypes.int32), name="num_true_conds")
    names = ", ".join(p.name for p in predicates)
    return Assert(
        less_equal(count, n),
        [f"{msg}: more than {n} conditions ({names}) evaluated as True:", preds],
        summarize=len(predicates),
    )


def case(
    pred_fn_pairs: Any,
    default: Callable[[], Any] | None = None,
    exclusive: bool = False,
    strict: bool = False,
    name: str = "case",
) -> Any:
    """The result of the function of the first pair ``(pred, fn)`` whose scalar ``bool``
    ``pred`` holds, else of ``default`` (``tf.case``).

    Without ``default``, the last pair's function is the default, and a run in which no
    predicate holds fails (``InvalidArgumentError``: "Input error: None of conditions evaluated
    as True"). ``exclusive=True`` fails a run in which more than one holds. ``strict`` is
    ``cond``'s.

    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     x = dg.placeholder(dg.int32, [])
    ...     pairs = [(dg.less(x, 0), lambda: dg.constant(-1)),
    ...              (dg.equal(x, 0), lambda: dg.constant(0))]
    ...     y = case(pairs, default=lambda: dg.constant(1))
    ...     with dg.Session() as sess:
    ...         [int(sess.run(y, {x: v})) for v in (-5, 0, 5)]
    [-1, 0, 1]
    """
    predicates, actions = _pairs(pred_fn_pairs)
    if default is not None and not callable(default):
        raise TypeError("default must be callable.")
    with name_scope(name):
        checks = []
        if default is None:
            everything = stack(predicates, name="preds_c")
            checks.append(Assert(reduce_any(everything),
                                 ["Input error: None of conditions evaluated as True:", everything],
                                 summarize=len(predicates)))  # fmt: skip
            default, predicates, actions = actions[-1], predicates[:-1], actions[:-1]
        if exclusive:  # as TensorFlow: among the predicates left once the default is taken
            checks.append(_at_most_n_true(predicates, 1, "Input error: exclusive=True"))
        fn = default
        for predicate, action in reversed(list(zip(predicates, actions, strict=True))):
            fn = functools.partial(cond, predicate, action, fn, strict=strict)
        with control_dependencies(checks):
            return fn()


def _branches(branch_fns: Any, default: Callable[[], Any] | None) -> list[Callable[[], Any]]:
    """TensorFlow's checks of ``switch_case``'s branches: the functions by index, then
    ``default``."""
    if not branch_fns:
        raise ValueError("Must provide at least one item in 'branch_fns'")
    if not isinstance(branch_fns, (list, tuple, dict)):
        raise TypeError("'branch_fns' must be a list, tuple, or dict")
    items = list(branch_fns.items()) if isinstance(branch_fns, dict) else list(branch_fns)
    if all(callable(fn) for fn in items):
        items = list(enumerate(items))
    for pair in items:
        if not isinstance(pair, tuple) or len(pair) != 2:
            raise TypeError(f"Each entry in 'branch_fns' must be a 2-tuple. Received {pair}.")
        key, fn = pair
        if not isinstance(key, int):
            raise TypeError(f"key must be a Python `int`, got {type(key)}")
        if not callable(fn):
            raise TypeError(f"fn for key {key} must be callable.")
    keys = sorted(k for k, _ in items)
    if keys != list(range(len(keys))):
        found = ",".join(map(str, keys))
        raise ValueError(
            f"branch indices (keys) must form contiguous range of [0 to {len(keys)}) but found "
            f"{{{found}}}"
        )
    actions = [fn for _, fn in sorted(items, key=lambda item: item[0])]
    return actions + ([default] if default is not None else [])


def switch_case(
    branch_index: Any,
    branch_fns: Any,
    default: Callable[[], Any] | None = None,
    name: str = "switch_case",
) -> Any:
    """The result of ``branch_fns[branch_index]()`` for the scalar integer tensor
    ``branch_index``; an index out of range takes ``default`` (the last branch when there is
    none), as ``tf.switch_case``. ``branch_fns`` is a list of functions, or of ``(int, fn)``
    pairs or a dict whose keys are 0, 1, ..."""
    if not isinstance(branch_index, Tensor):
        raise TypeError(f"'branch_index' must be a Tensor, got {type(branch_index)}")
    if not branch_index.dtype.is_integer:
        raise TypeError(f"'branch_index' must be an integer Tensor, got {branch_index.dtype}")
    actions = _branches(branch_fns, default)
    last = len(actions) - 1
    with name_scope(name):
        index = convert_to_tensor(branch_index)
        outside = logical_or(less(index, 0), greater_equal(index, len(actions)))
        index = where(outside, convert_to_tensor(last, dtype=index.dtype), index)
        fn = actions[-1]
        for i in range(last - 1, -1, -1):
            fn = functools.partial(cond, equal(index, i), actions[i], fn)
        return fn()
