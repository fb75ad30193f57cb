"""Loops: ``while_loop``, and ``map_fn``, ``scan``, ``foldl`` and ``foldr`` over the first
dimension of tensors.

Each loop is one op (``While``, or ``StatelessWhile`` when its functions have no stateful op)
that runs its traced functions (:mod:`daskgraph.ops.subgraph`) in-process on its device, as
many times as the loop needs, and outputs every loop variable (or result) at once as a
bundle; one ``BundleGet`` per variable picks it (:mod:`daskgraph.ops.bundle`). So the loop
runs once per run however many of its results are fetched. The loop op, its functions' ops
and the picks form one colocation group: the placer puts the loop on a device with a kernel
for every op of its functions (a ``py_func`` in the body keeps it on the CPU).

Tensors of the graph the functions use are read once per run, before the loop starts; a
variable read in the body has its value at that moment, and the functions may not update
variables (:class:`~daskgraph.errors.UnimplementedError`). No gradient flows through a loop:
``gradients`` raises :class:`~daskgraph.errors.UnimplementedError` where it would need one.

>>> import daskgraph as dg
>>> with dg.Graph().as_default():
...     i, total = while_loop(lambda i, s: i < 5, lambda i, s: (i + 1, s + i), (0, 0))
...     squares = map_fn(lambda x: x * x, dg.constant([1.0, 2.0, 3.0]))
...     with dg.Session() as sess:
...         sess.run([i, total, squares])
[np.int32(5), np.int32(10), array([1., 4., 9.], dtype=float32)]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from daskgraph.errors import InvalidArgumentError
from daskgraph.framework import dtypes, nest
from daskgraph.framework.gradient_registry import no_gradient
from daskgraph.framework.graph import Operation, Shape, Tensor, get_default_graph
from daskgraph.framework.graph import _name_scope as graph_name_scope
from daskgraph.framework.op_registry import CPU_ALL, GPU_NUMERIC, mark_unpredictable, register
from daskgraph.kernels.loops import _loop_kernel, _stateless_loop_kernel
from daskgraph.ops.array import as_shape, convert_to_tensor
from daskgraph.ops.bundle import refuse_gradients, unbundle
from daskgraph.ops.subgraph import Compiled, Subgraph, Tracer

__all__ = ["foldl", "foldr", "map_fn", "scan", "while_loop"]

Spec = tuple[dtypes.DType, Shape | None]


# -- what the loop op runs ------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class WhilePlan:
    """A ``while_loop``: inputs are the loop variables, the iteration limit (if any), then
    the captured tensors."""

    n_vars: int
    has_limit: bool
    cond: Subgraph
    body: Subgraph

    def run(self, xp: Any, store: Any, inputs: Sequence[Any]) -> tuple:
        """The loop variables once ``cond`` is false (or the limit is reached)."""
        n = self.n_vars
        values = list(inputs[:n])
        limit = int(inputs[n]) if self.has_limit else None
        captures = list(inputs[n + self.has_limit :])
        cond = self.cond.bind(xp, store, captures)
        body = self.body.bind(xp, store, captures)
        count = 0
        while limit is None or count < limit:
            if not bool(cond(values)[0]):
                break
            values = body(values)
            count += 1
        return tuple(values)


@dataclass(frozen=True, slots=True)
class ScanPlan:
    """A ``map_fn`` (``mode="map"``), ``scan`` or fold (``"fold"``) over the first dimension of
    ``n_elems`` tensors; inputs are those, the ``n_init`` initial accumulators, then the
    captured tensors. ``outputs`` are the results' NumPy dtypes and static shapes (to make
    empty results)."""

    name: str
    mode: str
    n_elems: int
    n_init: int
    reverse: bool
    fn: Subgraph
    outputs: tuple[tuple[Any, Shape | None], ...]

    def run(self, xp: Any, store: Any, inputs: Sequence[Any]) -> tuple:
        """The stacked results (map, scan) or the last accumulator (fold)."""
        elems = list(inputs[: self.n_elems])
        acc = list(inputs[self.n_elems : self.n_elems + self.n_init])
        captures = list(inputs[self.n_elems + self.n_init :])
        order = list(range(self._length(elems)))
        if self.reverse:
            order.reverse()
        fn = self.fn.bind(xp, store, captures)
        if self.mode == "map":
            return self._stacked(xp, [(i, fn([e[i] for e in elems])) for i in order])
        rows = []
        if not acc:
            if not order:
                raise InvalidArgumentError(
                    f"{self.name}: elems has no element and no initializer was given",
                    op=self.name,
                )
            first = order.pop(0)
            acc = [e[first] for e in elems]
            rows.append((first, acc))
        for i in order:
            acc = fn(acc + [e[i] for e in elems])
            rows.append((i, acc))
        return tuple(acc) if self.mode == "fold" else self._stacked(xp, rows)

    def _length(self, elems: list[Any]) -> int:
        lengths = {int(e.shape[0]) if getattr(e, "ndim", 0) else -1 for e in elems}
        if len(lengths) != 1 or -1 in lengths:
            raise InvalidArgumentError(
                f"{self.name}: the elements must be tensors of rank >= 1 with one size of "
                f"their first dimension; got first dimensions {sorted(lengths)} (-1: a scalar)",
                op=self.name,
            )
        return lengths.pop()

    def _stacked(self, xp: Any, rows: list[tuple[int, list[Any]]]) -> tuple:
        rows.sort(key=lambda row: row[0])
        out = []
        for k, (dtype, shape) in enumerate(self.outputs):
            if not rows:
                dims = () if shape is None else tuple(d or 0 for d in shape)
                out.append(xp.zeros((0, *dims), dtype=dtype))
                continue
            stacked = xp.stack([xp.asarray(values[k]) for _, values in rows])
            out.append(stacked.astype(dtype, copy=False))
        return tuple(out)


_LOOP_DTYPES = {"cpu": CPU_ALL | {dtypes.variant}, "gpu": GPU_NUMERIC | {dtypes.variant}}
register("While", _loop_kernel, stateful=True, **_LOOP_DTYPES)
mark_unpredictable("While")  # as many iterations as its condition says
register("StatelessWhile", _stateless_loop_kernel, **_LOOP_DTYPES)
for _type in ("While", "StatelessWhile"):
    no_gradient(_type)  # (the variant output takes none; BundleGet's gradient refuses)
    refuse_gradients(
        _type,
        "daskgraph has no gradients through while_loop, map_fn, scan, foldl or foldr "
        "(TensorFlow has them); compute the gradient without the loop, or stop it with "
        "stop_gradient",
    )


# -- shapes ---------------------------------------------------------------------------------------
def _fits(shape: Shape | None, invariant: Shape | None) -> bool:
    """Whether ``shape`` is as specific as ``invariant`` or more (TF's shape invariants).

    >>> _fits((2, 3), (None, 3)), _fits((None, 3), (2, 3)), _fits(None, None), _fits(None, ())
    (True, False, True, False)
    """
    if invariant is None:
        return True
    if shape is None or len(shape) != len(invariant):
        return False
    return all(i is None or i == s for s, i in zip(shape, invariant, strict=True))


def _shown(shape: Shape | None) -> str:
    return "<unknown>" if shape is None else str(tuple(shape))


def _check_results(outputs: list[Tensor], starts: list[Any], specs: list[Spec], where: str) -> None:
    """Raise TensorFlow's errors where a result's dtype or shape leaves its loop variable's."""
    for out, start, (dtype, shape) in zip(outputs, starts, specs, strict=True):
        label = getattr(start, "name", repr(start))
        if out.dtype is not dtype:
            raise TypeError(
                f"Loop var {label} enters the loop with type {dtype.name} but has type "
                f"{out.dtype.name} after 1 iteration. {label} type should remain constant."
            )
        if not _fits(out.shape, shape):
            raise ValueError(
                f"Input tensor `{label}` enters the loop with shape {_shown(shape)}, but has "
                f"shape {_shown(out.shape)} after one iteration. To allow the shape to vary "
                f"across iterations, use the `shape_invariants` argument of {where} to "
                "specify a less-specific shape."
            )


def _invariants(shape_invariants: Any, structure: Any, tensors: list[Tensor]) -> list[Any]:
    if shape_invariants is None:
        return [t.shape for t in tensors]
    try:
        given = nest.flatten_up_to(structure, shape_invariants)
    except ValueError:
        raise ValueError(
            f"while_loop: shape_invariants {shape_invariants!r} must have the structure of "
            f"the loop variables {structure!r}"
        ) from None
    shapes = [as_shape(s, "while_loop shape_invariants") for s in given]
    for t, shape in zip(tensors, shapes, strict=True):
        if not _fits(t.shape, shape):
            raise ValueError(
                f"The shape invariant specified for {t.name} is not compatible with the "
                f"initial shape of the loop variable. It enters the loop with shape "
                f"{_shown(t.shape)}, but the specified shape invariant is {_shown(shape)}."
            )
    return shapes


# -- while_loop -----------------------------------------------------------------------------------
def while_loop(
    cond: Callable[..., Any],
    body: Callable[..., Any],
    loop_vars: Any,
    shape_invariants: Any = None,
    parallel_iterations: int = 10,
    back_prop: bool = True,
    swap_memory: bool = False,
    name: str | None = None,
    maximum_iterations: Any = None,
    return_same_structure: bool = False,
) -> Any:
    """Repeat ``body`` while ``cond`` is true (``tf.while_loop``).

    Parameters
    ----------
    cond, body
        Functions of the loop variables (one argument each when ``loop_vars`` is a list or
        tuple): ``cond`` returns a scalar bool tensor, ``body`` new values of the loop
        variables, of the same structure, dtypes and (see ``shape_invariants``) shapes.
    loop_vars
        A tensor, or a (nested) list, tuple or dict of tensors or values.
    shape_invariants
        The shapes the loop variables may take (default: their initial shapes), of the
        structure of ``loop_vars``.
    maximum_iterations
        Stop after this many iterations at most.
    return_same_structure
        Return the structure of ``loop_vars`` even for a single variable (else a single
        variable in a list or tuple comes back as a tensor, as in TensorFlow 1).
    parallel_iterations, back_prop, swap_memory
        Accepted for TensorFlow's sake; iterations run one after another.

    Examples
    --------
    >>> import numpy as np
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     x = dg.placeholder(dg.float32, [None])
    ...     doubled = while_loop(lambda v: dg.reduce_sum(v) < 100.0, lambda v: v * 2.0, [x])
    ...     with dg.Session() as sess:
    ...         sess.run(doubled, {x: np.array([1.0, 2.0])})
    array([ 64., 128.], dtype=float32)
    """
    if not callable(cond) or not callable(body):
        raise TypeError("while_loop: cond and body must be callable.")
    flat = nest.flatten(loop_vars)
    if not flat:
        raise ValueError("No loop variables provided")
    graph = get_default_graph()
    base = graph.unique_name(name or "while")
    with graph_name_scope(graph, base + "/"):
        tensors = [convert_to_tensor(v) for v in flat]
        limit = None
        if maximum_iterations is not None:
            limit = convert_to_tensor(maximum_iterations, name="maximum_iterations")
            if not limit.dtype.is_integer or limit.shape not in (None, ()):
                raise ValueError("while_loop: maximum_iterations must be a scalar integer")
        specs = list(
            zip(
                [t.dtype for t in tensors],
                _invariants(shape_invariants, loop_vars, tensors),
                strict=True,
            )
        )
        tracer = Tracer("while_loop")
        params = tracer.params(specs, "loop_var")
        compiled = _trace_while(tracer, cond, body, loop_vars, params, tensors, specs)
    plan = WhilePlan(len(tensors), limit is not None, *compiled.subgraphs)
    extra = [limit] if limit is not None else []
    bundle = _loop_op(graph, base, compiled, [*tensors, *extra], plan, tracer)
    results = unbundle(bundle, specs, names=["Exit"] * len(specs))
    if not return_same_structure and len(results) == 1 and not isinstance(loop_vars, dict):
        return results[0]
    return nest.pack_sequence_as(loop_vars, results)


def _trace_while(
    tracer: Tracer,
    cond: Callable[..., Any],
    body: Callable[..., Any],
    loop_vars: Any,
    params: list[Tensor],
    tensors: list[Tensor],
    specs: list[Spec],
) -> Compiled:
    """Trace ``cond`` and ``body`` on ``params`` and compile them."""
    packed = nest.pack_sequence_as(loop_vars, params)
    args = list(packed) if isinstance(loop_vars, (list, tuple)) else [packed]
    with tracer.scope("cond"):
        go = convert_to_tensor(cond(*args))
    if go.dtype is not dtypes.bool_ or go.shape not in (None, ()):
        raise TypeError(
            f"while_loop: cond must return a scalar bool tensor; it returned {go.name!r} of "
            f"dtype {go.dtype.name} and shape {_shown(go.shape)}"
        )
    with tracer.scope("body"):
        result = body(*args)
        if isinstance(loop_vars, (list, tuple)) and not isinstance(result, (list, tuple)):
            result = [result]
        flat = nest.flatten(result)
        if len(flat) != len(params) or (
            isinstance(loop_vars, dict) and not isinstance(result, dict)
        ):
            raise ValueError(
                f"while_loop: body returned {result!r}, not the structure of the loop "
                f"variables {loop_vars!r}"
            )
        outputs = [convert_to_tensor(v) for v in flat]
    _check_results(outputs, tensors, specs, "tf.while_loop")
    return tracer.compile([[go], outputs])


def _loop_op(
    graph: Any, base: str, compiled: Compiled, inputs: list[Tensor], plan: Any, tracer: Tracer
) -> Tensor:
    """The loop op (named ``base``), colocated with its functions' ops."""
    op_type = "While" if compiled.stateful else "StatelessWhile"
    op: Operation = graph.create_op(
        op_type,
        [*inputs, *compiled.captures],
        dtype=dtypes.variant,
        shape=(),
        attrs={"plan": plan},
        exact_name=base,
        control_inputs=compiled.control_inputs,
        colocate_with=tracer.anchor,
    )
    return op.outputs[0]


# -- map_fn, scan, foldl, foldr -------------------------------------------------------------------
def map_fn(
    fn: Callable[[Any], Any],
    elems: Any,
    dtype: Any = None,
    parallel_iterations: int | None = None,
    back_prop: bool = True,
    swap_memory: bool = False,
    infer_shape: bool = True,
    name: str | None = None,
    fn_output_signature: Any = None,
) -> Any:
    """``fn`` applied to each slice of ``elems`` along its first dimension, the results
    stacked (``tf.map_fn``).

    ``elems`` is a tensor or a (nested) structure of tensors of one first dimension; ``fn``
    takes one slice of that structure and returns a tensor or a structure of them (``dtype``
    or ``fn_output_signature``, when given, must name its dtypes).

    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     x = dg.constant([[1, 2], [3, 4]])
    ...     sums, firsts = map_fn(lambda r: (dg.reduce_sum(r), r[0]), x, (dg.int32, dg.int32))
    ...     with dg.Session() as sess:
    ...         sess.run([sums, firsts])
    [array([3, 7], dtype=int32), array([1, 3], dtype=int32)]
    """
    signature = fn_output_signature if fn_output_signature is not None else dtype
    return _over_elements("map", fn, elems, None, False, name or "map", signature)


def scan(
    fn: Callable[[Any, Any], Any],
    elems: Any,
    initializer: Any = None,
    parallel_iterations: int = 10,
    back_prop: bool = True,
    swap_memory: bool = False,
    infer_shape: bool = True,
    reverse: bool = False,
    name: str | None = None,
) -> Any:
    """The successive accumulators ``a = fn(a, x)`` over the slices ``x`` of ``elems``,
    stacked (``tf.scan``); without ``initializer`` the first slice is the first accumulator.

    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     running = scan(lambda a, x: a + x, dg.constant([1, 2, 3, 4]))
    ...     backwards = scan(lambda a, x: a + x, dg.constant([1, 2, 3, 4]), reverse=True)
    ...     with dg.Session() as sess:
    ...         sess.run([running, backwards])
    [array([ 1,  3,  6, 10], dtype=int32), array([10,  9,  7,  4], dtype=int32)]
    """
    return _over_elements("scan", fn, elems, initializer, reverse, name or "scan", None)


def foldl(
    fn: Callable[[Any, Any], Any],
    elems: Any,
    initializer: Any = None,
    parallel_iterations: int = 10,
    back_prop: bool = True,
    swap_memory: bool = False,
    name: str | None = None,
) -> Any:
    """The last accumulator of ``a = fn(a, x)`` over the slices of ``elems`` from the first
    (``tf.foldl``).

    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     y = foldl(lambda a, x: a * 10 + x, dg.constant([1, 2, 3]), initializer=0)
    ...     with dg.Session() as sess:
    ...         sess.run(y)
    np.int32(123)
    """
    return _over_elements("fold", fn, elems, initializer, False, name or "foldl", None)


def foldr(
    fn: Callable[[Any, Any], Any],
    elems: Any,
    initializer: Any = None,
    parallel_iterations: int = 10,
    back_prop: bool = True,
    swap_memory: bool = False,
    name: str | None = None,
) -> Any:
    """The last accumulator of ``a = fn(a, x)`` over the slices of ``elems`` from the last
    (``tf.foldr``).

    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     y = foldr(lambda a, x: a * 10 + x, dg.constant([1, 2, 3]), initializer=0)
    ...     with dg.Session() as sess:
    ...         sess.run(y)
    np.int32(321)
    """
    return _over_elements("fold", fn, elems, initializer, True, name or "foldr", None)


def _over_elements(
    mode: str,
    fn: Callable[..., Any],
    elems: Any,
    initializer: Any,
    reverse: bool,
    name: str,
    signature: Any,
) -> Any:
    """Build a map (``mode="map"``), scan or fold of ``fn`` over ``elems``."""
    where = {"map": "map_fn", "scan": "scan"}.get(mode, "foldr" if reverse else "foldl")
    if not callable(fn):
        raise TypeError(f"{where}: fn must be callable")
    graph = get_default_graph()
    base = graph.unique_name(name)
    with graph_name_scope(graph, base + "/"):
        flat = [convert_to_tensor(e) for e in nest.flatten(elems)]
        if not flat:
            raise ValueError(f"{where}: elems must be a tensor or a structure of tensors")
        slices = _slice_specs(flat, where)
        init = (
            [] if initializer is None else [convert_to_tensor(v) for v in nest.flatten(initializer)]
        )
        tracer = Tracer(where)
        if mode == "map":
            structure, outputs, specs = _trace_map(tracer, fn, elems, slices, signature, where)
        else:
            acc = initializer if initializer is not None else elems
            acc_specs = [(t.dtype, t.shape) for t in init] if init else slices
            structure, outputs, specs = _trace_step(tracer, fn, acc, acc_specs, elems, slices)
            _check_results(outputs, init or flat, acc_specs, where)
        compiled = tracer.compile([outputs])
    plan = ScanPlan(
        base,
        "map" if mode == "map" else mode,
        len(flat),
        len(init),
        reverse,
        compiled.subgraphs[0],
        tuple((dtype.numpy, shape) for dtype, shape in specs),
    )
    bundle = _loop_op(graph, base, compiled, [*flat, *init], plan, tracer)
    if mode != "fold":
        n = flat[0].shape[0] if flat[0].shape is not None else None
        specs = [(dtype, None if shape is None else (n, *shape)) for dtype, shape in specs]
    return nest.pack_sequence_as(structure, unbundle(bundle, specs))


def _slice_specs(flat: list[Tensor], where: str) -> list[Spec]:
    """The dtype and static shape of one slice of each tensor along its first dimension."""
    specs: list[Spec] = []
    sizes = set()
    for t in flat:
        if t.shape is not None and len(t.shape) == 0:
            raise ValueError(f"{where}: elements must have rank >= 1; {t.name!r} is a scalar")
        if t.shape is not None and t.shape[0] is not None:
            sizes.add(t.shape[0])
        specs.append((t.dtype, None if t.shape is None else tuple(t.shape[1:])))
    if len(sizes) > 1:
        raise ValueError(f"{where}: the elements' first dimensions differ: {sorted(sizes)}")
    return specs


def _trace_map(
    tracer: Tracer,
    fn: Callable[..., Any],
    elems: Any,
    slices: list[Spec],
    signature: Any,
    where: str,
) -> tuple[Any, list[Tensor], list[Spec]]:
    params = tracer.params(slices, "elem")
    with tracer.scope("fn"):
        result = fn(nest.pack_sequence_as(elems, params))
        outputs = [convert_to_tensor(v) for v in nest.flatten(result)]
    if signature is not None:
        wanted = [dtypes.as_dtype(d) for d in nest.flatten(signature)]
        if wanted != [t.dtype for t in outputs]:
            raise TypeError(
                f"{where}: fn returned dtypes {[t.dtype.name for t in outputs]}, not the dtypes "
                f"given, {[d.name for d in wanted]}"
            )
    return result, outputs, [(t.dtype, t.shape) for t in outputs]


def _trace_step(
    tracer: Tracer,
    fn: Callable[..., Any],
    acc: Any,
    acc_specs: list[Spec],
    elems: Any,
    slices: list[Spec],
) -> tuple[Any, list[Tensor], list[Spec]]:
    acc_params = tracer.params(acc_specs, "accumulator")
    elem_params = tracer.params(slices, "elem")
    with tracer.scope("fn"):
        result = fn(
            nest.pack_sequence_as(acc, acc_params), nest.pack_sequence_as(elems, elem_params)
        )
        flat = nest.flatten(result)
        if len(flat) != len(acc_params):
            raise ValueError(
                f"fn returned {result!r}, not the structure of the accumulator {acc!r}"
            )
        outputs = [convert_to_tensor(v) for v in flat]
    return acc, outputs, acc_specs
