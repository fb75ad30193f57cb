"""``py_func`` and ``numpy_function``: an op that calls a Python function on NumPy arrays.

As in TensorFlow, the op (``PyFunc``; ``PyFuncStateless`` for ``stateful=False``) has a CPU
kernel only, so it runs on a CPU device (explicitly placed on a GPU, it needs soft
placement, which moves it). The function travels to the CPU worker with the program
(pickled by Dask, with cloudpickle for lambdas and closures); on the embedded cluster that
worker lives in the program's own process, so the function sees the program's globals.

The function gets each input as a NumPy array (a NumPy scalar, or ``bytes`` for a string,
when it is a scalar) and returns one value per dtype of ``Tout`` (a list or tuple for
several), each of exactly that dtype, as TensorFlow checks them. Its exceptions become
TensorFlow's errors: ``ValueError``/``TypeError`` an
:class:`~daskgraph.errors.InvalidArgumentError`, ``StopIteration`` an
:class:`~daskgraph.errors.OutOfRangeError`, ``MemoryError`` a
:class:`~daskgraph.errors.ResourceExhaustedError`, ``NotImplementedError`` an
:class:`~daskgraph.errors.UnimplementedError`, anything else an
:class:`~daskgraph.errors.UnknownError`, each naming the op. The function is called once
per run however many of its results are fetched (:mod:`daskgraph.ops.bundle`); no gradient
flows through it, as in TensorFlow.

>>> import numpy as np
>>> import daskgraph as dg
>>> with dg.Graph().as_default():
...     x = dg.constant([1.0, 4.0, 9.0])
...     root, total = py_func(lambda a: (np.sqrt(a), a.sum()), [x], [dg.float32, dg.float32])
...     with dg.Session() as sess:
...         sess.run([root, total])
[array([1., 2., 3.], dtype=float32), np.float32(14.0)]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from daskgraph.framework import dtypes
from daskgraph.framework.gradient_registry import no_gradient
from daskgraph.framework.graph import Operation, Tensor, get_default_graph
from daskgraph.framework.op_registry import CPU_ALL, mark_unpredictable, register
from daskgraph.kernels.script_ops import _py_func_kernel, _py_func_stateless_kernel, python_error
from daskgraph.ops.array import convert_to_tensor
from daskgraph.ops.bundle import unbundle

__all__ = ["numpy_function", "py_func", "python_error"]


_CPU_ONLY = {"cpu": CPU_ALL | {dtypes.variant}, "gpu": None}  # TensorFlow: no GPU kernel
register("PyFunc", _py_func_kernel, stateful=True, **_CPU_ONLY)
register("PyFuncStateless", _py_func_stateless_kernel, **_CPU_ONLY)
mark_unpredictable("PyFunc")  # Python code: any length, whatever the shapes
mark_unpredictable("PyFuncStateless")
no_gradient("PyFunc")  # as in TensorFlow
no_gradient("PyFuncStateless")


# -- builders -------------------------------------------------------------------------------------
def py_func(
    func: Callable[..., Any],
    inp: Any,
    Tout: Any,
    stateful: bool = True,
    name: str | None = None,
) -> Tensor | list[Tensor] | Operation:
    """``func`` called on the values of ``inp`` when the graph runs (``tf.py_func``).

    Parameters
    ----------
    func
        Takes one NumPy value per input; returns one value per dtype of ``Tout`` (a list or
        tuple of them for several), each of exactly that dtype.
    inp
        Tensors (or values convertible to tensors), one per argument of ``func``.
    Tout
        A dtype (the result is one tensor) or a list or tuple of dtypes (a list of tensors;
        an empty one: the result is the op itself).
    stateful
        Whether ``func`` has effects or gives other results for the same inputs (the op is
        then run once per run and never merged away; ``False`` marks it pure).

    Returns
    -------
    Tensor, list of Tensor, or Operation
        The results, of unknown shape, as in TensorFlow.

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     y = py_func(lambda s: s.upper(), [dg.constant("abc")], dg.string)
    ...     with dg.Session() as sess:
    ...         sess.run(y)
    b'ABC'
    """
    if not callable(func):
        raise TypeError(f"py_func: func must be callable; got {func!r}")
    several = isinstance(Tout, (list, tuple))
    wanted = [dtypes.as_dtype(t) for t in (Tout if several else [Tout])]
    inputs = [convert_to_tensor(v) for v in (inp if isinstance(inp, (list, tuple)) else [inp])]
    graph = get_default_graph()
    op_type = "PyFunc" if stateful else "PyFuncStateless"
    exact = graph.unique_name(name or "PyFunc")
    attrs = {"func": func, "tout": tuple(t.name for t in wanted), "name": exact}
    op = graph.create_op(
        op_type, inputs, dtype=dtypes.variant, shape=(), attrs=attrs, exact_name=exact
    )
    if not wanted:
        return op
    results = unbundle(op.outputs[0], [(t, None) for t in wanted])
    return results if several else results[0]


def numpy_function(
    func: Callable[..., Any],
    inp: Any,
    Tout: Any,
    stateful: bool = True,
    name: str | None = None,
) -> Tensor | list[Tensor] | Operation:
    """``func`` called on NumPy values of ``inp`` when the graph runs
    (``tf.numpy_function``): :func:`py_func` under its TensorFlow 2 name.

    >>> import numpy as np
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     y = numpy_function(lambda a: np.cumsum(a), [dg.constant([1, 2, 3], dg.int64)],
    ...                        dg.int64)
    ...     with dg.Session() as sess:
    ...         sess.run(y)
    array([1, 3, 6])
    """
    return py_func(func, inp, Tout, stateful=stateful, name=name)
