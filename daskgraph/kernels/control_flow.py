"""Control-flow kernels: the ``Print`` op's pass-through with a message.

The kernels of :mod:`daskgraph.ops.control_flow`'s ops, each ``kernel(xp, *inputs, **attrs)``.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np


# -- kernels --------------------------------------------------------------------------------------
def _print_kernel(xp, store, x, *data, message, first_n, summarize, key):
    """Print ``message`` and each of ``data`` summarized (as TensorFlow's ``Print``), at most
    ``first_n`` times per session (negative: always); output ``x`` unchanged."""
    count = store.random_generator(key, lambda: [0])  # a per-op object kept for the session
    if first_n < 0 or count[0] < first_n:
        count[0] += 1
        text = "".join(f"[{summarize_value(_host(d), summarize)}]" for d in data)
        print(f"{message}{text}", file=sys.stderr, flush=True)
    return x


def _host(value: Any) -> np.ndarray:
    get = getattr(value, "get", None)  # CuPy arrays come to the host to be printed
    return np.asarray(get() if callable(get) and not isinstance(value, np.ndarray) else value)


def summarize_value(array: np.ndarray, limit: int) -> str:
    """The first ``limit`` elements of ``array`` as TensorFlow's ``SummarizeValue`` prints
    them (nested brackets per dimension, ``...`` where elements were left out; negative
    ``limit``: all).

    >>> summarize_value(np.arange(5), 3), summarize_value(np.array([[1, 2], [3, 4]]), 3)
    ('0 1 2...', '[1 2][3...]...')
    >>> summarize_value(np.float32(2.5), 3), summarize_value(np.array([True, False]), -1)
    ('2.5', '1 0')
    """
    flat = array.reshape(-1)
    limit = flat.size if limit < 0 else min(limit, flat.size)
    items = [_element(v) for v in flat[:limit]]
    if array.ndim == 0:
        text = " ".join(items)
    else:
        text = _dims(list(array.shape), items, [0], limit, top=True)
    return text + ("..." if flat.size > limit else "")


def _dims(shape: list[int], items: list[str], index: list[int], limit: int, top: bool) -> str:
    """TensorFlow's ``PrintOneDim``: ``index[0]`` counts the elements printed so far."""
    if len(shape) == 1:
        out = []
        for _ in range(shape[0]):
            if index[0] >= limit:
                return " ".join(out) + ("" if top else "...")
            out.append(items[index[0]])
            index[0] += 1
        return " ".join(out)
    text = ""
    for _ in range(shape[0]):
        if index[0] < limit:
            text += "[" + _dims(shape[1:], items, index, limit, top=False) + "]"
    return text


def _element(value: Any) -> str:
    """One element as TensorFlow prints it: bools as 1/0, floats in their shortest form."""
    if isinstance(value, (bool, np.bool_)):
        return str(int(value))
    if isinstance(value, bytes):
        return value.decode(errors="replace")
    if isinstance(value, np.floating):
        for digits in (6, 9, 17):
            text = f"{value:.{digits}g}"
            if type(value)(text) == value:
                return text
        return text
    if isinstance(value, float):
        return _element(np.float64(value))
    return str(value)
