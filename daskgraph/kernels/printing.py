"""The ``PrintV2`` kernel: inputs printed as TensorFlow formats them, when the op runs.

The kernels of :mod:`daskgraph.ops.printing`'s ops, each ``kernel(xp, *inputs, **attrs)``.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from daskgraph.kernels.control_flow import _element, _host


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
