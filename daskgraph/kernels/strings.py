"""String kernels, on the CPU only as in TensorFlow.

The kernels of :mod:`daskgraph.ops.strings`'s ops, each ``kernel(xp, *inputs, **attrs)``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np

from daskgraph.errors import InvalidArgumentError
from daskgraph.kernels.printing import format_value

_HEX = re.compile(r"\s*[+-]?0[xX][0-9a-fA-F]*\.?[0-9a-fA-F]*([pP][+-]?[0-9]+)?\s*")


# -- kernels --------------------------------------------------------------------------------------
def _map(x: Any, function: Callable[[Any], Any], dtype: Any = object) -> np.ndarray:
    """``function`` of each element of ``x``, as an array of ``x``'s shape."""
    x = np.asarray(x)
    out = np.empty(x.shape, dtype=dtype)
    out.reshape(-1)[:] = [function(v) for v in x.reshape(-1)]
    return out


def _as_string_kernel(xp, x, *, spec, kind):
    if kind == "bool":
        return _map(x, lambda v: b"true" if v else b"false")
    if kind == "string":
        return _map(x, lambda v: (spec % v.decode(errors="surrogateescape")).encode(
            errors="surrogateescape"))  # fmt: skip
    convert = int if kind == "int" else float
    return _map(x, lambda v: (spec % convert(v)).encode())


def _string_join_kernel(xp, *inputs, separator):
    arrays = [np.asarray(a) for a in inputs]
    shapes = {a.shape for a in arrays if a.ndim}
    if len(shapes) > 1:
        raise InvalidArgumentError(f"Input shapes do not match: {' vs. '.join(map(str, shapes))}")
    parts = np.broadcast_arrays(*arrays)
    sep = separator.encode()
    out = np.empty(parts[0].shape, dtype=object)
    flat = [p.reshape(-1) for p in parts]
    out.reshape(-1)[:] = [sep.join(row) for row in zip(*flat, strict=True)]
    return out


def _parse_number(text: bytes, out: np.dtype) -> Any:
    s = text.decode(errors="replace")
    if "_" not in s:
        try:
            if out.kind == "f":
                if _HEX.fullmatch(s):  # strtod reads hexadecimal floats too
                    return float.fromhex(s.strip())
                return float(s)
            value = int(s)
            info = np.iinfo(out)
            if info.min <= value <= info.max:
                return value
        except ValueError:
            pass
    raise InvalidArgumentError(f"StringToNumberOp could not correctly convert string: {s}")


def _string_to_number_kernel(xp, x, *, out_type):
    return _map(x, lambda v: _parse_number(v, np.dtype(out_type)), dtype=out_type)


def _chars(value: bytes, unit: str) -> Any:
    return value.decode("utf-8", errors="replace") if unit == "UTF8_CHAR" else value


def _substr_one(index: int, value: bytes, pos: int, size: int, unit: str) -> bytes:
    text = _chars(value, unit)
    if not -len(text) <= pos <= len(text):
        raise InvalidArgumentError(f"pos {pos} out of range for string {value!r} at index {index}")
    start = pos + len(text) if pos < 0 else pos
    piece = text[start : start + max(size, 0)]
    return piece.encode("utf-8") if unit == "UTF8_CHAR" else piece


def _substr_kernel(xp, x, pos, size, *, unit):
    values, starts, sizes = np.broadcast_arrays(np.asarray(x), np.asarray(pos), np.asarray(size))
    out = np.empty(values.shape, dtype=object)
    out.reshape(-1)[:] = [
        _substr_one(i, v, int(p), int(n), unit)
        for i, (v, p, n) in enumerate(
            zip(values.reshape(-1), starts.reshape(-1), sizes.reshape(-1), strict=True)
        )
    ]
    return out


def _length_kernel(xp, x, *, unit):
    return _map(x, lambda v: len(_chars(v, unit)), dtype=np.int32)


def _case_kernel(xp, x, *, upper, utf8):
    def change(v: bytes) -> bytes:
        if utf8:
            text = v.decode("utf-8", errors="surrogateescape")
            return (text.upper() if upper else text.lower()).encode("utf-8", "surrogateescape")
        return v.upper() if upper else v.lower()  # ASCII letters only, as TensorFlow's

    return _map(x, change)


def _strip_kernel(xp, x):
    return _map(x, bytes.strip)


def _regex_replace_kernel(xp, x, *, pattern, rewrite, count):
    compiled = re.compile(pattern.encode())
    template = rewrite.encode()
    return _map(x, lambda v: compiled.sub(template, v, count=count))


def _regex_full_match_kernel(xp, x, *, pattern):
    compiled = re.compile(pattern.encode())
    return _map(x, lambda v: compiled.fullmatch(v) is not None, dtype=bool)


def _reduce_join_kernel(xp, x, *, axes, keepdims, separator):
    x = np.asarray(x, dtype=object)
    axes = tuple(range(x.ndim)) if axes is None else tuple(a % x.ndim for a in axes)
    kept = [d for i, d in enumerate(x.shape) if i not in axes]
    rows = np.moveaxis(x, axes, tuple(range(x.ndim - len(axes), x.ndim))).reshape(*kept, -1)
    sep = separator.encode()
    out = np.empty(tuple(kept), dtype=object)
    out.reshape(-1)[:] = [sep.join(row) for row in rows.reshape(-1, rows.shape[-1])]
    if keepdims:
        out = out.reshape(tuple(1 if i in axes else d for i, d in enumerate(x.shape)))
    return out


def _quoted(value: Any) -> Any:
    array = np.asarray(value)
    if array.dtype.kind != "O":
        return array
    return _map(array, lambda v: '"' + v.decode(errors="replace") + '"')


def _format_kernel(xp, *inputs, pieces, summarize):
    text = pieces[0]
    for value, piece in zip(inputs, pieces[1:], strict=True):
        text += format_value(_quoted(value), summarize) + piece
    return np.array(text.encode(), dtype=object)
