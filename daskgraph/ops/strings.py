"""String ops, on the CPU only as in TensorFlow: ``as_string``, ``string_join``,
``string_to_number``, ``substr``, ``length``, ``lower``/``upper``, ``strip``,
``regex_replace``/``regex_full_match``, ``reduce_join`` and ``format``.

A string tensor's value is a NumPy object array of ``bytes`` (:func:`daskgraph.framework.dtypes.
strings_as_bytes`); each kernel works element by element in Python, as TensorFlow's work on
``tstring``. Regular expressions are Python's :mod:`re` (TensorFlow's are RE2's: the common
syntax is the same; RE2 has no backreferences in patterns, and rewrites are ``\\1``-style in
both). No string op has a gradient.

>>> import daskgraph as dg
>>> with dg.Graph().as_default():
...     x = dg.constant([3.14159, -2.5])
...     s = string_join([as_string(x, precision=2), "!"], separator=" ")
...     with dg.Session() as sess:
...         sess.run(s).tolist()
[b'3.14 !', b'-2.50 !']
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from daskgraph.errors import InvalidArgumentError
from daskgraph.framework import dtypes
from daskgraph.framework.gradient_registry import no_gradient
from daskgraph.framework.graph import Shape, Tensor, get_default_graph
from daskgraph.framework.op_registry import register
from daskgraph.kernels.strings import (
    _as_string_kernel,
    _case_kernel,
    _format_kernel,
    _length_kernel,
    _reduce_join_kernel,
    _regex_full_match_kernel,
    _regex_replace_kernel,
    _string_join_kernel,
    _string_to_number_kernel,
    _strip_kernel,
    _substr_kernel,
)
from daskgraph.ops.array import convert_to_tensor

__all__ = [
    "as_string",
    "length",
    "lower",
    "reduce_join",
    "regex_full_match",
    "regex_replace",
    "string_format",
    "string_join",
    "string_to_number",
    "strip",
    "substr",
    "upper",
]

_STRING = {dtypes.string}
_NUMBERS = frozenset({dtypes.float32, dtypes.float64, dtypes.int32, dtypes.int64})
_UNITS = ("BYTE", "UTF8_CHAR")


register("AsString", _as_string_kernel, gpu=None)
register("StringJoin", _string_join_kernel, cpu=_STRING, gpu=None)
register("StringToNumber", _string_to_number_kernel, cpu=_STRING | _NUMBERS, gpu=None)
register("Substr", _substr_kernel, cpu=_STRING | {dtypes.int32, dtypes.int64}, gpu=None)
register("StringLength", _length_kernel, cpu=_STRING | {dtypes.int32}, gpu=None)
register("StringCase", _case_kernel, cpu=_STRING, gpu=None)
register("StringStrip", _strip_kernel, cpu=_STRING, gpu=None)
register("RegexReplace", _regex_replace_kernel, cpu=_STRING, gpu=None)
register("RegexFullMatch", _regex_full_match_kernel, cpu=_STRING | {dtypes.bool_}, gpu=None)
register("ReduceJoin", _reduce_join_kernel, cpu=_STRING, gpu=None)
register("StringFormat", _format_kernel, gpu=None)
_TYPES = "AsString StringJoin StringToNumber Substr StringLength StringCase StringStrip"
for _type in (_TYPES + " RegexReplace RegexFullMatch ReduceJoin StringFormat").split():
    no_gradient(_type)


# -- builders -------------------------------------------------------------------------------------
def _strings(x: Any, where: str) -> Tensor:
    t = convert_to_tensor(x, dtype=None if isinstance(x, Tensor) else dtypes.string)
    if t.dtype is not dtypes.string:
        raise TypeError(f"{where}: expects a string tensor; {t.name!r} is {t.dtype.name}")
    return t


def _op(op_type: str, inputs: list[Tensor], dtype: Any, shape: Shape | None, name: str | None,
        **attrs: Any) -> Tensor:  # fmt: skip
    graph = get_default_graph()
    op = graph.create_op(op_type, inputs, dtype=dtype, shape=shape, attrs=attrs, name=name)
    return op.outputs[0]


def _static_text(value: Any, where: str, what: str) -> str:
    """A pattern or rewrite that must be known when the graph is built."""
    if isinstance(value, Tensor):
        if value.op.type != "Const":
            raise ValueError(f"{where}: {what} must be known when the graph is built")
        value = np.asarray(value.op.attrs["value"]).reshape(()).item()
    return value.decode() if isinstance(value, bytes) else str(value)


def _unit(unit: str, where: str) -> str:
    if unit not in _UNITS:
        raise ValueError(f"{where}: unit must be one of {_UNITS}; got {unit!r}")
    return unit


def as_string(
    input: Any,
    precision: int = -1,
    scientific: bool = False,
    shortest: bool = False,
    width: int = -1,
    fill: str = "",
    name: str | None = None,
) -> Tensor:
    """Each element of ``input`` (numbers, bools or strings) as a string, with printf's rules:
    ``precision`` digits, ``scientific`` (``%e``) or ``shortest`` (``%g``) notation, padded to
    ``width`` with spaces or ``fill`` (one of ``' ', '+', '-', '0', '#'``), as
    ``tf.as_string``."""
    x = convert_to_tensor(input)
    if len(fill) > 1:
        raise InvalidArgumentError("Fill string must be one or fewer characters")
    if fill and fill not in " +-0#":
        raise InvalidArgumentError(f'Fill argument not supported: "{fill}"')
    if scientific and shortest:
        raise InvalidArgumentError("Cannot select both scientific and shortest notation")
    kind = ("bool" if x.dtype is dtypes.bool_ else "string" if x.dtype is dtypes.string
            else "float" if x.dtype.is_floating else "int")  # fmt: skip
    if kind != "float" and (precision > -1 or scientific or shortest):
        raise InvalidArgumentError(
            f"precision, scientific and shortest apply to floats; got {x.dtype.name}"
        )
    spec = (
        "%"
        + fill
        + (str(width) if width > -1 else "")
        + (f".{precision}" if precision > -1 else "")
    )
    spec += {"float": "g" if shortest else "e" if scientific else "f", "int": "d"}.get(kind, "s")
    return _op("AsString", [x], dtypes.string, x.shape, name or "AsString", spec=spec, kind=kind)


def string_join(inputs: Any, separator: str = "", name: str | None = None) -> Tensor:
    """The strings of ``inputs`` (tensors of one shape, or scalars) joined element by element
    with ``separator`` (``tf.strings.join``/``tf.string_join``)."""
    tensors = [_strings(t, "string_join") for t in inputs]
    if not tensors:
        raise ValueError("string_join: inputs must not be empty")
    shapes = [t.shape for t in tensors if t.shape is None or len(t.shape)]
    shape: Shape | None = () if not shapes else shapes[0]
    for other in shapes[1:]:
        if shape is None or other is None:
            shape = shape if other is None else other
        elif len(shape) != len(other) or any(
            a is not None and b is not None and a != b for a, b in zip(shape, other, strict=True)
        ):
            raise ValueError(
                f"string_join: the inputs' shapes must be equal; got {shape} and {other}"
            )
    return _op(
        "StringJoin", tensors, dtypes.string, shape, name or "StringJoin", separator=separator
    )


def string_to_number(
    string_tensor: Any = None,
    out_type: Any = dtypes.float32,
    name: str | None = None,
    input: Any = None,
) -> Tensor:
    """The number each string spells (``tf.strings.to_number``); ``out_type`` is float32,
    float64, int32 or int64. A string that is not one fails the run (``InvalidArgumentError``),
    as an integer out of ``out_type``'s range does."""
    if (string_tensor is None) == (input is None):
        raise ValueError("string_to_number: give string_tensor or input (its new name), not both")
    x = _strings(input if string_tensor is None else string_tensor, "string_to_number")
    out = dtypes.as_dtype(out_type)
    if out not in _NUMBERS:
        raise TypeError(
            f"string_to_number: out_type must be float32, float64, int32 or int64; got {out.name}"
        )
    return _op("StringToNumber", [x], out, x.shape, name or "StringToNumber", out_type=out.numpy)


def substr(input: Any, pos: Any, len: Any, name: str | None = None, unit: str = "BYTE") -> Tensor:
    """``len`` bytes (or UTF-8 characters, ``unit="UTF8_CHAR"``) of each string from ``pos``
    (from the end when negative), as ``tf.strings.substr``; ``pos`` and ``len`` are scalars or
    of the strings' shape. A ``pos`` beyond a string fails the run."""
    x = _strings(input, "substr")
    pos, size = convert_to_tensor(pos), convert_to_tensor(len, dtype=None)
    for t, what in ((pos, "pos"), (size, "len")):
        if not t.dtype.is_integer:
            raise TypeError(f"substr: {what} must be an integer tensor; got {t.dtype.name}")
    return _op(
        "Substr",
        [x, pos, size],
        dtypes.string,
        x.shape,
        name or "Substr",
        unit=_unit(unit, "substr"),
    )


def length(input: Any, name: str | None = None, unit: str = "BYTE") -> Tensor:
    """The length of each string in bytes (or UTF-8 characters), int32
    (``tf.strings.length``)."""
    x = _strings(input, "length")
    return _op(
        "StringLength",
        [x],
        dtypes.int32,
        x.shape,
        name or "StringLength",
        unit=_unit(unit, "length"),
    )


def _case(input: Any, encoding: str, name: str | None, upper: bool) -> Tensor:
    where = "upper" if upper else "lower"
    if encoding not in ("", "utf-8"):
        raise InvalidArgumentError(f"{where}: encoding must be '' or 'utf-8'; got {encoding!r}")
    x = _strings(input, where)
    op_name = name or ("StringUpper" if upper else "StringLower")
    return _op("StringCase", [x], dtypes.string, x.shape, op_name, upper=upper, utf8=bool(encoding))


def lower(input: Any, encoding: str = "", name: str | None = None) -> Tensor:
    """Each string in lower case: ASCII letters only, or every letter with
    ``encoding="utf-8"`` (``tf.strings.lower``)."""
    return _case(input, encoding, name, upper=False)


def upper(input: Any, encoding: str = "", name: str | None = None) -> Tensor:
    """Each string in upper case (see :func:`lower`)."""
    return _case(input, encoding, name, upper=True)


def strip(input: Any, name: str | None = None) -> Tensor:
    """Each string without its leading and trailing whitespace (``tf.strings.strip``)."""
    x = _strings(input, "strip")
    return _op("StringStrip", [x], dtypes.string, x.shape, name or "StringStrip")


def regex_replace(
    input: Any, pattern: Any, rewrite: Any, replace_global: bool = True, name: str | None = None
) -> Tensor:
    """Each string with the matches of ``pattern`` replaced by ``rewrite`` (``\\1`` for a
    group), all of them or the first only (``tf.strings.regex_replace``).

    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     s = regex_replace(dg.constant(["john smith"]), r"(\\w+) (\\w+)", r"\\2, \\1")
    ...     with dg.Session() as sess:
    ...         sess.run(s).tolist()
    [b'smith, john']
    """
    x = _strings(input, "regex_replace")
    pattern = _static_text(pattern, "regex_replace", "pattern")
    rewrite = _static_text(rewrite, "regex_replace", "rewrite")
    _compile(pattern, "regex_replace")
    return _op("RegexReplace", [x], dtypes.string, x.shape, name or "RegexReplace",
               pattern=pattern, rewrite=rewrite, count=0 if replace_global else 1)  # fmt: skip


def regex_full_match(input: Any, pattern: Any, name: str | None = None) -> Tensor:
    """Whether each whole string matches ``pattern`` (``tf.strings.regex_full_match``)."""
    x = _strings(input, "regex_full_match")
    pattern = _static_text(pattern, "regex_full_match", "pattern")
    _compile(pattern, "regex_full_match")
    return _op(
        "RegexFullMatch", [x], dtypes.bool_, x.shape, name or "RegexFullMatch", pattern=pattern
    )


def _compile(pattern: str, where: str) -> None:
    try:
        re.compile(pattern)
    except re.error as exc:
        raise InvalidArgumentError(f"{where}: invalid pattern {pattern!r}: {exc}") from None


def reduce_join(
    inputs: Any,
    axis: Any = None,
    keep_dims: Any = None,
    separator: str = "",
    name: str | None = None,
    reduction_indices: Any = None,
    keepdims: Any = None,
) -> Tensor:
    """The strings of ``inputs`` joined with ``separator`` along ``axis`` (all axes by
    default, in row-major order), as ``tf.strings.reduce_join`` (TF1's ``keep_dims`` and
    ``reduction_indices`` too)."""
    if axis is not None and reduction_indices is not None:
        raise ValueError("Cannot specify both 'axis' and 'reduction_indices'")
    if keepdims is not None and keep_dims is not None:
        raise ValueError("Cannot specify both 'keepdims' and 'keep_dims'")
    x = _strings(inputs, "reduce_join")
    axis = axis if axis is not None else reduction_indices
    keep = bool(keepdims if keepdims is not None else keep_dims)
    if x.shape is None:
        raise ValueError(f"reduce_join: the rank of {x.name!r} must be known")
    rank = len(x.shape)
    axes = (
        None
        if axis is None
        else tuple(sorted({int(a) % max(rank, 1) for a in np.atleast_1d(axis)}))
    )
    reduced = set(range(rank)) if axes is None else set(axes)
    shape = tuple(1 if i in reduced else d for i, d in enumerate(x.shape)) if keep else tuple(
        d for i, d in enumerate(x.shape) if i not in reduced)  # fmt: skip
    return _op("ReduceJoin", [x], dtypes.string, shape, name or "ReduceJoin",
               axes=axes, keepdims=keep, separator=separator)  # fmt: skip


def string_format(
    template: str, inputs: Any, placeholder: str = "{}", summarize: int = 3, name: str | None = None
) -> Tensor:
    """A scalar string: ``template`` with each ``placeholder`` replaced by the next of
    ``inputs`` formatted as ``tf.print`` writes it (``summarize`` elements at each end of every
    dimension; strings quoted), as ``tf.strings.format``."""
    items = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
    pieces = template.split(placeholder)
    if len(pieces) - 1 != len(items):
        raise ValueError(
            f"The template expects {len(pieces) - 1} tensors, but the inputs only has "
            f"{len(items)}. Please ensure the number of placeholders in template matches "
            "inputs length."
        )
    tensors = [convert_to_tensor(t) for t in items]
    return _op("StringFormat", tensors, dtypes.string, (), name or "StringFormat",
               pieces=tuple(pieces), summarize=int(summarize))  # fmt: skip
