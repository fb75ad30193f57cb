"""``einsum`` and ``tensordot``: contractions named by subscripts, one ``Einsum`` op each, with
the gradient of every operand an einsum again.

The equation is NumPy's (and TensorFlow's): letters name axes, ``...`` stands for the broadcast
batch axes, and without ``->`` the output is the letters that appear once, sorted. The op keeps
the equation in its explicit form. ``tensordot`` writes its axes as such an equation.

>>> import daskgraph as dg
>>> with dg.Graph().as_default():
...     a = dg.placeholder(dg.float32, [None, 2, 3])
...     y = einsum("bij,jk->bik", a, dg.constant(1.0, shape=[3, 4]))
...     t = tensordot(dg.constant(1.0, shape=[2, 3, 4]), dg.constant(1.0, shape=[4, 3]),
...                   [[1, 2], [1, 0]])
>>> y.shape, t.shape, t.op.attrs["equation"]
((None, 2, 4), (2,), 'abc,cb->a')
"""

from __future__ import annotations

import functools
import string
from collections import Counter
from typing import Any

from daskgraph.framework import dtypes
from daskgraph.framework.gradient_registry import register_gradient
from daskgraph.framework.graph import Operation, Shape, Tensor, new_tensor
from daskgraph.framework.op_registry import register
from daskgraph.kernels.einsum import _einsum_kernel
from daskgraph.ops.array import convert_to_tensor
from daskgraph.ops.fill_ops import ones_like
from daskgraph.ops.gradients import unbroadcast
from daskgraph.ops.math import broadcast_shape

__all__ = ["einsum", "parse_equation", "tensordot"]

_LETTERS = frozenset(string.ascii_letters)


register("Einsum", _einsum_kernel, cpu=dtypes.NUMERIC, gpu=dtypes.NUMERIC)


# -- equations ------------------------------------------------------------------------------------
def _subscripts(text: str, equation: str) -> str:
    """One operand's subscripts with its ellipsis as ``.``; ValueError for anything else."""
    marked = text.replace("...", ".")
    if marked.count(".") > 1 or not set(marked) <= _LETTERS | {"."}:
        raise ValueError(
            f"einsum: invalid subscripts {text!r} in {equation!r}: letters, and at most one "
            "'...', per operand"
        )
    return marked


def parse_equation(equation: str, count: int) -> tuple[list[str], str]:
    """The subscripts of ``count`` operands and of the output (``.`` for ``...``), the output
    made explicit.

    >>> parse_equation("ij,jk", 2), parse_equation("...ij,...jk->...ik", 2)
    ((['ij', 'jk'], 'ik'), (['.ij', '.jk'], '.ik'))
    """
    if not isinstance(equation, str):
        raise TypeError(f"einsum: the equation must be a string; got {equation!r}")
    compact = equation.replace(" ", "")
    lhs, arrow, rhs = compact.partition("->")
    inputs = [_subscripts(s, equation) for s in lhs.split(",")]
    if len(inputs) != count:
        raise ValueError(
            f"einsum: {equation!r} has subscripts for {len(inputs)} operands; {count} given"
        )
    if not arrow:
        counts = Counter(c for s in inputs for c in s if c != ".")
        ellipsis = "." if any("." in s for s in inputs) else ""
        return inputs, ellipsis + "".join(sorted(c for c, n in counts.items() if n == 1))
    output = _subscripts(rhs, equation)
    seen = set().union(*inputs)
    for c in output:
        if output.count(c) > 1 or (c not in seen and c != "."):
            raise ValueError(
                f"einsum: output subscript {c!r} of {equation!r} appears twice or in no operand"
            )
    return inputs, output


def _explicit(inputs: list[str], output: str) -> str:
    return ",".join(inputs).replace(".", "...") + "->" + output.replace(".", "...")


def _output_shape(inputs: list[str], output: str, shapes: list[Shape | None]) -> Shape | None:
    """The output's static shape; ValueError where sizes of one letter differ."""
    if any(s is None for s in shapes):
        return None
    sizes: dict[str, int | None] = {}
    batch: list[Shape] = []
    for position, (subs, shape) in enumerate(zip(inputs, shapes, strict=True)):
        named = subs.replace(".", "")
        extra = len(shape) - len(named)
        if extra < 0 or (extra and "." not in subs):
            raise ValueError(
                f"einsum: operand {position} has rank {len(shape)}; its subscripts "
                f"{subs.replace('.', '...')!r} name {len(named)} axes"
            )
        at = subs.index(".") if "." in subs else len(subs)
        batch.append(tuple(shape[at : at + extra]))
        for letter, size in zip(named, shape[:at] + shape[at + extra :], strict=True):
            known = sizes.get(letter)
            if None not in (known, size) and known != size:
                raise ValueError(
                    f"einsum: axis {letter!r} has size {known} and {size} in different places"
                )
            sizes[letter] = size if known is None else known
    ellipsis = functools.reduce(lambda x, y: broadcast_shape(x, y, "einsum"), batch, ())
    out: list[int | None] = []
    for c in output:
        out.extend(ellipsis if c == "." else [sizes.get(c)])
    return tuple(out)


# -- builders -------------------------------------------------------------------------------------
def einsum(equation: str, *inputs: Any, **kwargs: Any) -> Tensor:
    """The contraction of ``inputs`` over the subscripts of ``equation`` (``name=`` as a
    keyword), as ``numpy.einsum``.

    Examples
    --------
    >>> import daskgraph as dg
    >>> import numpy as np
    >>> with dg.Graph().as_default():
    ...     a = dg.constant(np.arange(6.0).reshape(2, 3))
    ...     y = einsum("ij,ij->i", a, a)
    ...     with dg.Session() as sess:
    ...         print(sess.run(y))
    [ 5. 50.]
    """
    name = kwargs.pop("name", None)
    if kwargs:
        raise TypeError(f"einsum: unexpected keyword arguments {sorted(kwargs)}")
    if not inputs:
        raise ValueError("einsum: at least one operand is needed")
    tensors = [convert_to_tensor(x) for x in inputs]
    for t in tensors[1:]:
        if t.dtype != tensors[0].dtype:
            raise TypeError(f"einsum: all operands must have one dtype; got "
                            f"{tensors[0].dtype.name} and {t.dtype.name}")  # fmt: skip
    subscripts, output = parse_equation(equation, len(tensors))
    shape = _output_shape(subscripts, output, [t.shape for t in tensors])
    return new_tensor("Einsum", tensors, tensors[0].dtype, shape, name or "Einsum",
                      equation=_explicit(subscripts, output))  # fmt: skip


def _axes_pair(axes: Any, rank_a: int, rank_b: int) -> tuple[list[int], list[int]]:
    """``tensordot``'s ``axes`` as the contracted axes of ``a`` and of ``b``."""
    if isinstance(axes, int):
        if not 0 <= axes <= min(rank_a, rank_b):
            raise ValueError(f"tensordot: axes {axes} must be in [0, {min(rank_a, rank_b)}]")
        return list(range(rank_a - axes, rank_a)), list(range(axes))
    if not isinstance(axes, (list, tuple)) or len(axes) != 2:
        raise ValueError(f"tensordot: axes must be an int or a pair of lists; got {axes!r}")
    pair = [[a] if isinstance(a, int) else list(a) for a in axes]
    if len(pair[0]) != len(pair[1]):
        raise ValueError(f"tensordot: the two lists of axes differ in length: {axes!r}")
    for axis_list, rank in zip(pair, (rank_a, rank_b), strict=True):
        for a in axis_list:
            if not -rank <= a < rank:
                raise ValueError(f"tensordot: axis {a} is out of range for rank {rank}")
    return [a % rank_a for a in pair[0]], [b % rank_b for b in pair[1]]


def tensordot(a: Any, b: Any, axes: Any, name: str | None = None) -> Tensor:
    """Sum the products of ``a`` and ``b`` over the axes in ``axes``: an int ``n`` (the last
    ``n`` of ``a`` with the first ``n`` of ``b``) or a pair of lists of axes. The ranks must be
    known.

    Examples
    --------
    >>> import daskgraph as dg
    >>> import numpy as np
    >>> with dg.Graph().as_default():
    ...     y = tensordot(dg.constant(np.ones((2, 3))), dg.constant(np.ones((3, 4))), 1)
    ...     with dg.Session() as sess:
    ...         print(sess.run(y).tolist())
    [[3.0, 3.0, 3.0, 3.0], [3.0, 3.0, 3.0, 3.0]]
    """
    x, y = convert_to_tensor(a), convert_to_tensor(b)
    if x.shape is None or y.shape is None:
        raise ValueError("tensordot: the ranks of a and b must be known")
    axes_a, axes_b = _axes_pair(axes, len(x.shape), len(y.shape))
    if len(x.shape) + len(y.shape) - len(axes_a) > len(_LETTERS):
        raise ValueError("tensordot: too many axes")
    letters = iter(string.ascii_letters)
    subs_a = [next(letters) for _ in x.shape]
    subs_b = [""] * len(y.shape)
    for i, j in zip(axes_a, axes_b, strict=True):
        subs_b[j] = subs_a[i]
    subs_b = [s or next(letters) for s in subs_b]
    free = [s for i, s in enumerate(subs_a) if i not in axes_a]
    free += [s for j, s in enumerate(subs_b) if j not in axes_b]
    equation = f"{''.join(subs_a)},{''.join(subs_b)}->{''.join(free)}"
    return einsum(equation, x, y, name=name or "Tensordot")


# -- gradient -------------------------------------------------------------------------------------
@register_gradient("Einsum")
def _einsum_grad(op: Operation, grad: Tensor) -> list[Tensor]:
    """Operand ``i``'s gradient: the einsum of ``grad`` with the other operands onto operand
    ``i``'s subscripts (with ones of its shape where it alone has a letter, which the forward
    op summed)."""
    subscripts, output = parse_equation(op.attrs["equation"], len(op.inputs))
    grads = []
    for i, x in enumerate(op.inputs):
        subs = subscripts[i]
        named = subs.replace(".", "")
        if len(set(named)) != len(named) or ("." in subs and not subs.startswith(".")):
            raise NotImplementedError(
                f"einsum: no gradient for the operand {subs.replace('.', '...')!r} of "
                f"{op.attrs['equation']!r} (a repeated letter, or '...' after a letter)"
            )
        operands = [(output, grad)]
        pairs = enumerate(zip(subscripts, op.inputs, strict=True))
        operands += [(s, t) for j, (s, t) in pairs if j != i]
        if not set(subs) <= set().union(*(s for s, _ in operands)):
            operands.append((subs, ones_like(x)))
        equation = _explicit([s for s, _ in operands], subs)
        g = einsum(equation, *[t for _, t in operands])
        grads.append(unbroadcast(g, x) if "." in subs else g)
    return grads
