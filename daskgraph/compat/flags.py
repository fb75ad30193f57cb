"""``tf.flags`` (and ``tf.app.flags``): absl's flags as TensorFlow 1 offers them.

Its one job is TensorFlow's two changes to :mod:`absl.flags`, whose every other name it
re-exports: ``FLAGS`` parses ``sys.argv`` by itself the first time a flag is read before
any parse (absl raises ``UnparsedFlagAccessError``), and ``DEFINE_string``/``DEFINE_integer``/
``DEFINE_float``/``DEFINE_boolean``/``DEFINE_bool`` also take TF1's old keyword names
``flag_name``, ``default_value`` and ``docstring``. Flags are absl's, in absl's one
registry: a flag defined through ``tf.flags`` is an ``absl.flags`` flag.

>>> registry = FlagValues()  # a program would use the global one, FLAGS
>>> _ = DEFINE_integer("steps", default_value=3, docstring="steps to run", flag_values=registry)
>>> registry(["prog", "--steps=5"])
['prog']
>>> registry.steps
5
"""

from __future__ import annotations

import functools
import logging
import sys
from collections.abc import Callable
from typing import Any

from absl import flags as _absl
from absl.flags import *  # noqa: F403 - tf.flags is absl.flags

_absl.disclaim_key_flags()  # flags defined through these wrappers belong to their caller

__all__ = list(_absl.__all__)

_RENAMED_ARGUMENTS = {"flag_name": "name", "default_value": "default", "docstring": "help"}


def _with_old_names(define: Callable[..., Any]) -> Callable[..., Any]:
    """``define`` also taking TF1's keyword names (with the warning TensorFlow logs)."""

    @functools.wraps(define)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        old = [name for name in _RENAMED_ARGUMENTS if name in kwargs]
        for name in old:
            kwargs[_RENAMED_ARGUMENTS[name]] = kwargs.pop(name)
        if old:
            logging.warning(
                "Use of the keyword argument names (flag_name, default_value, docstring) is "
                "deprecated, please use (name, default, help) instead."
            )
        return define(*args, **kwargs)

    return wrapper


DEFINE_string = _with_old_names(_absl.DEFINE_string)
DEFINE_boolean = _with_old_names(_absl.DEFINE_boolean)
DEFINE_bool = DEFINE_boolean
DEFINE_float = _with_old_names(_absl.DEFINE_float)
DEFINE_integer = _with_old_names(_absl.DEFINE_integer)


class _FlagValuesWrapper:
    """absl's ``FLAGS`` that parses ``sys.argv`` when a flag is read before any parse."""

    def __init__(self, flag_values: _absl.FlagValues) -> None:
        self.__dict__["__wrapped"] = flag_values

    def __getattribute__(self, name: str) -> Any:
        if name == "__dict__":
            return super().__getattribute__(name)
        return self.__dict__["__wrapped"].__getattribute__(name)

    def __getattr__(self, name: str) -> Any:
        wrapped = self.__dict__["__wrapped"]
        if name.startswith("__") and name.endswith("__"):  # inspect.unwrap, copy, pickle
            raise AttributeError(name)
        if not wrapped.is_parsed():
            wrapped(sys.argv)
        return wrapped.__getattr__(name)

    def __setattr__(self, name: str, value: Any) -> None:
        self.__dict__["__wrapped"].__setattr__(name, value)

    def __delattr__(self, name: str) -> None:
        self.__dict__["__wrapped"].__delattr__(name)

    def __dir__(self) -> list[str]:
        return self.__dict__["__wrapped"].__dir__()

    def __getitem__(self, name: str) -> Any:
        return self.__dict__["__wrapped"].__getitem__(name)

    def __setitem__(self, name: str, flag: Any) -> None:
        self.__dict__["__wrapped"].__setitem__(name, flag)

    def __len__(self) -> int:
        return self.__dict__["__wrapped"].__len__()

    def __iter__(self) -> Any:
        return self.__dict__["__wrapped"].__iter__()

    def __str__(self) -> str:
        return self.__dict__["__wrapped"].__str__()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.__dict__["__wrapped"].__call__(*args, **kwargs)


FLAGS = _FlagValuesWrapper(_absl.FLAGS)


def __getattr__(name: str) -> object:
    """A name tf.flags does not have: the AttributeError pointing to docs/compat.md."""
    from daskgraph.errors import missing_name

    raise missing_name("tf.flags", name, globals())
