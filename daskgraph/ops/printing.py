"""``tf.print``: an op that prints its inputs when it runs, formatted as TensorFlow's
``tf.print`` formats them (NumPy-style brackets, ``...`` in the middle of long dimensions).

Unlike ``tf.Print`` (:mod:`daskgraph.ops.control_flow`, an identity that prints), ``tf.print``
returns an operation without output: run it, or make it a control dependency of what
should print. Plain Python values among the inputs are formatted once, when the op is built.
It prints on the worker that runs it; the embedded cluster's CPU worker is the program's
own process, so by default a program sees the lines on its own standard error.

>>> import contextlib, io
>>> import daskgraph as dg
>>> with dg.Graph().as_default():
...     x = dg.constant([[1.5, 2.0], [3.0, 4.0]])
...     op = print_v2("x:", x, "sum", dg.reduce_sum(x), output_stream="stdout")
...     out = io.StringIO()
...     with dg.Session() as sess, contextlib.redirect_stdout(out):
...         _ = sess.run(op)
>>> print(out.getvalue(), end="")
x: [[1.5 2]
 [3 4]] sum 10.5
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from daskgraph.framework.gradient_registry import no_gradient
from daskgraph.framework.graph import Operation, Tensor, get_default_graph
from daskgraph.framework.op_registry import CPU_ALL, GPU_NUMERIC, register
from daskgraph.ops.array import convert_to_tensor
from daskgraph.ops.control_flow import _element, _host

__all__ = ["format_value", "print_v2"]

_STREAMS = {"stderr": "stderr", "stdout": "stdout"}


def format_value(value: Any, summarize: int = 3) -> str:
    """``value`` as ``tf.print`` writes it: scalars bare, arrays in nested brackets with at
    most ``summarize`` elements at each end of every dimension (negative: all).

    >>> format_value(np.arange(10)), format_value(np.float32(0.1)), format_value(b"hi")
    ('[0 1 2 ... 7 8 9]', '0.1', 'hi')
    >>> format_value(np.array([True, False]))
    '[1 0]'
    """
    array = np.asarray(value)
    if array.ndim == 0:
        return _element(array[()])
    threshold = sys.maxsize if summarize is None or summarize < 0 else 0
    edge = 3 if summarize is None or summarize < 0 else max(int(summarize), 1)
    return np.array2string(
        array,
        separator=" ",
        threshold=threshold,
        edgeitems=edge,
        max_line_width=sys.maxsize,
        formatter={"all": _element},
    )


def _print_v2_kernel(xp, store, *values, template, summarize, stream, sep, end):
    """Print the template's texts and the formatted ``values`` in order; no output."""
    pieces = [
        format_value(_host(values[item]), summarize) if isinstance(item, int) else item
        for item in template
    ]
    out = sys.stdout if stream == "stdout" else sys.stderr
    print(sep.join(pieces), end=end, file=out, flush=True)


register("PrintV2", _print_v2_kernel, stateful=True, cpu=CPU_ALL, gpu=GPU_NUMERIC)
no_gradient("PrintV2")


def _stream_name(output_stream: Any) -> str:
    if output_stream is sys.stdout or output_stream == "stdout":
        return "stdout"
    if output_stream is None or output_stream is sys.stderr or output_stream == "stderr":
        return "stderr"
    raise ValueError(
        f"tf.print: output_stream must be sys.stdout, sys.stderr, 'stdout' or 'stderr'; got "
        f"{output_stream!r}"
    )


def print_v2(
    *inputs: Any,
    output_stream: Any = None,
    summarize: int = 3,
    sep: str = " ",
    end: str = "\n",
    name: str | None = None,
) -> Operation:
    """An op that prints ``inputs`` (tensors and Python values) when it runs (``tf.print``).

    Parameters
    ----------
    *inputs
        Tensors, and Python values printed as ``str`` (strings as they are).
    output_stream : sys.stderr (default), sys.stdout, "stderr" or "stdout"
        Where the worker that runs the op prints.
    summarize : int
        Elements printed at each end of each dimension (``-1``: all).
    sep, end : str
        As Python's ``print``.

    Returns
    -------
    Operation
        The print op, with no output: run it or depend on it.
    """
    template: list[Any] = []
    tensors: list[Tensor] = []
    for item in inputs:
        if isinstance(item, Tensor) or hasattr(item, "_as_tensor"):
            template.append(len(tensors))
            tensors.append(convert_to_tensor(item))
        else:
            template.append(item if isinstance(item, str) else format_value(item, summarize))
    attrs = {
        "template": tuple(template),
        "summarize": int(summarize),
        "stream": _stream_name(output_stream),
        "sep": str(sep),
        "end": str(end),
    }
    return get_default_graph().create_op("PrintV2", tensors, dtype=None, attrs=attrs, name=name)
