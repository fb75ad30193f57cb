"""Sparse lookup kernels: sparse segment reductions and ``string_split``.

The kernels of :mod:`daskgraph.ops.sparse_lookup`'s ops, each ``kernel(xp, *inputs, **attrs)``.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np


# -- string_split's kernel ------------------------------------------------------------------------
def _tokens(text: bytes, delimiter: bytes, skip_empty: bool) -> list[bytes]:
    """TensorFlow's ``StringSplit`` of one string: every byte of ``delimiter`` separates
    tokens; an empty delimiter splits into bytes; an empty string has no tokens."""
    if not text:
        return []
    if not delimiter:
        return [text[i : i + 1] for i in range(len(text))]
    parts = re.split(b"[" + re.escape(delimiter) + b"]", text)
    return [p for p in parts if p] if skip_empty else parts


def _as_bytes(value: Any) -> bytes:
    return value.encode() if isinstance(value, str) else bytes(value)


def _string_split_kernel(xp, source, delimiter, *, skip_empty):
    sep = _as_bytes(np.asarray(delimiter).reshape(()).item())
    rows = [_tokens(_as_bytes(s), sep, skip_empty) for s in np.asarray(source).reshape(-1)]
    indices = [(i, j) for i, tokens in enumerate(rows) for j in range(len(tokens))]
    values = np.empty(len(indices), dtype=object)
    values[:] = [t for tokens in rows for t in tokens]
    width = max((len(tokens) for tokens in rows), default=0)
    return (
        np.asarray(indices, dtype=np.int64).reshape(-1, 2),
        values,
        np.asarray([len(rows), width], dtype=np.int64),
    )
