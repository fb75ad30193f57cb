"""``tf.compat``: TensorFlow's text and version helpers, for programs that reach for
``tf.compat.as_bytes`` and friends, and ``tf.compat.v1`` itself.

Its one job is those helpers: converting between ``bytes`` and ``str`` as TensorFlow does
(UTF-8 by default, a ``TypeError`` naming the value otherwise) and the type tuples TensorFlow
exports. ``v1`` is :mod:`daskgraph.compat.v1`, filled in by that module.

>>> as_bytes("abc"), as_text(b"abc"), as_str_any(3)
(b'abc', 'abc', '3')
>>> as_bytes(3)
Traceback (most recent call last):
...
TypeError: Expected binary or unicode string, got 3
"""

from __future__ import annotations

import numbers
import os
from typing import Any

import numpy as np

from daskgraph.framework.tensor_shape import dimension_value

__all__ = [
    "as_bytes",
    "as_str",
    "as_str_any",
    "as_text",
    "bytes_or_text_types",
    "complex_types",
    "dimension_value",
    "forward_compatible",
    "integral_types",
    "path_to_str",
    "real_types",
]

bytes_or_text_types = (bytes, str)
integral_types = (numbers.Integral, np.integer)
real_types = (numbers.Real, np.integer, np.floating)
complex_types = (numbers.Complex, np.number)


def as_bytes(bytes_or_text: Any, encoding: str = "utf-8") -> bytes:
    """``bytes_or_text`` as bytes, ``str`` encoded with ``encoding``."""
    if isinstance(bytes_or_text, bytearray):
        return bytes(bytes_or_text)
    if isinstance(bytes_or_text, str):
        return bytes_or_text.encode(encoding)
    if isinstance(bytes_or_text, bytes):
        return bytes_or_text
    raise TypeError(f"Expected binary or unicode string, got {bytes_or_text!r}")


def as_text(bytes_or_text: Any, encoding: str = "utf-8") -> str:
    """``bytes_or_text`` as ``str``, ``bytes`` decoded with ``encoding``."""
    if isinstance(bytes_or_text, str):
        return bytes_or_text
    if isinstance(bytes_or_text, bytes):
        return bytes_or_text.decode(encoding)
    raise TypeError(f"Expected binary or unicode string, got {bytes_or_text!r}")


as_str = as_text


def as_str_any(value: Any, encoding: str = "utf-8") -> str:
    """``value`` as ``str``: bytes decoded, anything else through ``str()``."""
    return as_str(value, encoding) if isinstance(value, bytes) else str(value)


def path_to_str(path: Any) -> Any:
    """A path-like object as its ``str``; anything else unchanged."""
    return os.fspath(path) if isinstance(path, os.PathLike) else path


def forward_compatible(year: int, month: int, day: int) -> bool:
    """Whether the runtime is newer than the date (graph versions): daskgraph has one graph
    format, so True."""
    return True


def __getattr__(name: str) -> object:
    """A name tf.compat does not have: the AttributeError pointing to docs/compat.md."""
    from daskgraph.errors import missing_name

    raise missing_name("tf.compat", name, globals(), section="tf")
