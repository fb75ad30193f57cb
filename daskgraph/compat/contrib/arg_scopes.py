"""``arg_scope``: default keyword arguments for the layer functions called inside a block.

Its one job is TF-Slim's ``arg_scope`` (``tf.contrib.framework.arg_scope``): a function
decorated with :func:`add_arg_scope` takes, for every keyword it is not given, the value the
innermost ``arg_scope`` naming it set. Scopes nest (inner values win, the others are kept)
and are per thread, so towers built in threads do not see each other's.

>>> @add_arg_scope
... def layer(x, scale=1, shift=0):
...     return x * scale + shift
>>> with arg_scope([layer], scale=10):
...     with arg_scope([layer], shift=1):
...         inner = layer(2)
...     outer = layer(2, shift=5)
>>> inner, outer, layer(2)
(21, 25, 2)
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

__all__ = [
    "add_arg_scope",
    "arg_scope",
    "arg_scoped_arguments",
    "current_arg_scope",
    "has_arg_scope",
]

_local = threading.local()
_DECORATED: dict[tuple[str, str], tuple[str, ...]] = {}  # key -> the function's arguments


def _stack() -> list[dict[tuple[str, str], dict[str, Any]]]:
    stack = getattr(_local, "stack", None)
    if stack is None:
        stack = _local.stack = [{}]
    return stack


def _key(func: Any) -> tuple[str, str]:
    func = getattr(func, "_arg_scope_original", func)
    return (getattr(func, "__module__", ""), getattr(func, "__name__", repr(func)))


def current_arg_scope() -> dict[tuple[str, str], dict[str, Any]]:
    """The innermost scope: function key -> its default keyword arguments."""
    return _stack()[-1]


def has_arg_scope(func: Any) -> bool:
    """Whether ``func`` takes its defaults from ``arg_scope`` (was :func:`add_arg_scope`-ed)."""
    return _key(func) in _DECORATED


def arg_scoped_arguments(func: Any) -> tuple[str, ...]:
    """The arguments ``arg_scope`` may set for ``func``."""
    return _DECORATED[_key(func)]


def add_arg_scope(func: Callable[..., Any]) -> Callable[..., Any]:
    """Make ``func`` take its missing keyword arguments from the innermost ``arg_scope``."""
    key = _key(func)
    code = func.__code__
    _DECORATED[key] = code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]

    @functools.wraps(func)
    def with_scope(*args: Any, **kwargs: Any) -> Any:
        defaults = current_arg_scope().get(key)
        if defaults:
            kwargs = {**defaults, **kwargs}
        return func(*args, **kwargs)

    with_scope._arg_scope_original = func  # type: ignore[attr-defined]
    return with_scope


@contextlib.contextmanager
def arg_scope(
    list_ops_or_scope: Sequence[Any] | dict[tuple[str, str], dict[str, Any]], **kwargs: Any
) -> Iterator[dict[tuple[str, str], dict[str, Any]]]:
    """Set default keyword arguments of the functions in ``list_ops_or_scope`` (decorated
    with :func:`add_arg_scope`) inside the block; or re-enter a scope (the dict a previous
    ``arg_scope`` yielded), with no keyword arguments.

    Raises
    ------
    ValueError
        If a function is not decorated, or keywords come with a scope to re-enter.
    TypeError
        If ``list_ops_or_scope`` is neither a list/tuple of functions nor a scope.
    """
    if isinstance(list_ops_or_scope, dict):
        if kwargs:
            raise ValueError(
                "When attempting to re-use a scope by suppling a dictionary, kwargs must be empty."
            )
        scope = list_ops_or_scope
    elif isinstance(list_ops_or_scope, (list, tuple)):
        scope = dict(current_arg_scope())
        for op in list_ops_or_scope:
            if not has_arg_scope(op):
                raise ValueError(f"{_key(op)[1]} is not decorated with @add_arg_scope")
            key = _key(op)
            scope[key] = {**scope.get(key, {}), **kwargs}
    else:
        raise TypeError(
            "list_ops_or_scope must either be a list/tuple or reused scope (i.e. dict); got "
            f"{list_ops_or_scope!r}"
        )
    stack = _stack()
    stack.append(scope)
    try:
        yield scope
    finally:
        stack.pop()
