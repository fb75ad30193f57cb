"""The worker side of ``tf.data``: a dataset as a pipeline of stages producing elements, and
the iterator ops that read it, their state kept on the CPU worker for the session.

A :class:`Stage` is plain data (the arrays a dataset was made from, the traced function of a
``map``, the batch size, ...) whose :meth:`~Stage.elements` yields the dataset's elements as
tuples of NumPy values, one per component. The graph side (:mod:`daskgraph.data.dataset`) writes the
stages; the iterator ops carry them as an attribute:

* ``IteratorV2`` outputs the iterator's handle (its name) and anchors its other ops, which
  are colocated with it: they share its device, hence its state;
* ``MakeIterator`` (the ``initializer``) starts the pipeline over again, with the values of the
  tensors the dataset captured (a fed placeholder, say);
* ``IteratorGetNext`` outputs the next element as a bundle (one ``BundleGet`` per component, so
  that components fetched together come from one element), starting a one-shot iterator's
  pipeline on its first run; at the end it raises
  :class:`~daskgraph.errors.OutOfRangeError` ("End of sequence"), as TensorFlow does.

The state of an iterator (:class:`IteratorState`) is a per-op object of the session's variable
store on the device, as a random op's generator is: it survives between runs, and the
session's closing frees it. The ops have CPU kernels only, as TensorFlow's.

>>> import numpy as np
>>> stage = Batch(Slices((np.arange(5),)), 2, drop_remainder=False)
>>> [e[0].tolist() for e in stage.elements(Context((), None))]
[[0, 1], [2, 3], [4]]
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from daskgraph.errors import (
    FailedPreconditionError,
    InvalidArgumentError,
    OpError,
    OutOfRangeError,
)
from daskgraph.framework import dtypes, nest
from daskgraph.framework.casting import cast_exactly
from daskgraph.framework.gradient_registry import no_gradient
from daskgraph.framework.op_registry import CPU_ALL, register
from daskgraph.kernels.script_ops import python_error
from daskgraph.ops.subgraph import Subgraph

__all__ = [
    "Batch",
    "Captured",
    "Concatenate",
    "Context",
    "Filter",
    "Generator",
    "IteratorState",
    "Map",
    "Range",
    "Repeat",
    "Shuffle",
    "Skip",
    "Slices",
    "Stage",
    "Take",
    "Tensors",
    "Unbatch",
    "Zip",
]

Element = tuple  # one value per component


class Context:
    """What a pipeline reads while it runs: the captured tensors' values (by capture index),
    the variable store (for the stateful ops of a ``map``), and its stages' generators."""

    def __init__(self, captured: Sequence[Any], store: Any) -> None:
        self.captured = list(captured)
        self.store = store
        self._rngs: dict[int, np.random.Generator] = {}
        self._seeds: dict[int, int] = {}

    def seed(self, stage: Any, seeds: tuple[int | None, int | None]) -> int:
        """The seed of ``stage`` for this run of the pipeline: from the graph's and the op's
        seeds when set (the same order every time the iterator starts), else fresh.

        >>> Context((), None).seed("s", (1, 2)) == Context((), None).seed("s", (1, 2))
        True
        """
        seed = self._seeds.get(id(stage))
        if seed is None:
            entropy = None if seeds[0] is None else [seeds[0], seeds[1] or 0]
            seed = int(np.random.SeedSequence(entropy).generate_state(1)[0])
            self._seeds[id(stage)] = seed
        return seed

    def rng(self, stage: Any, seeds: tuple[int | None, int | None]) -> np.random.Generator:
        """The generator of ``stage`` for this run of the pipeline (one for all its epochs)."""
        rng = self._rngs.get(id(stage))
        if rng is None:
            rng = self._rngs[id(stage)] = np.random.default_rng(self.seed(stage, seeds))
        return rng


@dataclass(frozen=True, slots=True)
class Captured:
    """Stands in a stage for the value of the iterator's captured tensor ``index``."""

    index: int


class Stage:
    """One step of a pipeline: :meth:`elements` yields its elements."""

    def elements(self, ctx: Context) -> Iterator[Element]:
        """The elements, one tuple of NumPy values per element."""
        raise NotImplementedError


def _value(part: Any, ctx: Context) -> Any:
    return ctx.captured[part.index] if isinstance(part, Captured) else part


def _item(value: Any) -> Any:
    """A slice as its own value (not a view of the dataset's array)."""
    return value.copy() if isinstance(value, np.ndarray) else value


@dataclass(frozen=True, slots=True)
class Slices(Stage):
    """``from_tensor_slices``: the slices of the components along their first dimension."""

    parts: tuple

    def elements(self, ctx: Context) -> Iterator[Element]:
        """One element per index of the first dimension."""
        arrays = [np.asarray(_value(p, ctx)) for p in self.parts]
        sizes = {a.shape[0] if a.ndim else -1 for a in arrays}
        if -1 in sizes or len(sizes) > 1:
            raise InvalidArgumentError(
                "from_tensor_slices: the components must have rank >= 1 and one size of their "
                f"first dimension; got shapes {[a.shape for a in arrays]}",
                op="TensorSliceDataset",
            )
        for i in range(sizes.pop() if sizes else 0):
            yield tuple(_item(a[i]) for a in arrays)


@dataclass(frozen=True, slots=True)
class Tensors(Stage):
    """``from_tensors``: one element, the components themselves."""

    parts: tuple

    def elements(self, ctx: Context) -> Iterator[Element]:
        """The one element."""
        yield tuple(_item(np.asarray(_value(p, ctx))[()]) for p in self.parts)


@dataclass(frozen=True, slots=True)
class Range(Stage):
    """``range(start, stop, step)`` as scalars of ``dtype``."""

    start: int
    stop: int
    step: int
    dtype: Any

    def elements(self, ctx: Context) -> Iterator[Element]:
        """The numbers, one element each."""
        kind = np.dtype(self.dtype).type
        for value in range(self.start, self.stop, self.step):
            yield (kind(value),)


@dataclass(frozen=True, slots=True)
class Batch(Stage):
    """Consecutive elements stacked, ``size`` at a time (the last batch smaller unless
    ``drop_remainder``)."""

    input: Stage
    size: int
    drop_remainder: bool

    def elements(self, ctx: Context) -> Iterator[Element]:
        """The batches."""
        source = self.input.elements(ctx)
        while True:
            rows = list(itertools.islice(source, self.size))
            if not rows or (self.drop_remainder and len(rows) < self.size):
                return
            yield tuple(_stacked(column, "batch") for column in zip(*rows, strict=True))


def _stacked(values: Sequence[Any], where: str) -> np.ndarray:
    shapes = {np.shape(v) for v in values}
    if len(shapes) > 1:
        raise InvalidArgumentError(
            f"{where}: cannot batch components of different shapes {sorted(shapes)}",
            op="BatchDataset",
        )
    stacked = np.stack(values)
    if stacked.dtype.kind in "SU":  # strings stay objects (bytes), as a string tensor's are
        stacked = np.empty(len(values), dtype=object)
        stacked[:] = list(values)
    return stacked


@dataclass(frozen=True, slots=True)
class Repeat(Stage):
    """The input's elements ``count`` times (forever for None); an empty input ends."""

    input: Stage
    count: int | None

    def elements(self, ctx: Context) -> Iterator[Element]:
        """The input's elements, epoch after epoch."""
        epochs = itertools.count() if self.count is None else range(self.count)
        for _ in epochs:
            produced = False
            for element in self.input.elements(ctx):
                produced = True
                yield element
            if not produced:
                return


@dataclass(frozen=True, slots=True)
class Shuffle(Stage):
    """The input's elements in a random order, drawn from a buffer of ``buffer_size``
    (TensorFlow's algorithm); a new order each time the input is read again unless
    ``reshuffle`` is false."""

    input: Stage
    buffer_size: int
    seeds: tuple[int | None, int | None]
    reshuffle: bool

    def elements(self, ctx: Context) -> Iterator[Element]:
        """The input's elements, shuffled."""
        if self.reshuffle:
            rng = ctx.rng(self, self.seeds)
        else:  # every epoch in the order of the first
            rng = np.random.default_rng(ctx.seed(self, self.seeds))
        source = self.input.elements(ctx)
        buffer = list(itertools.islice(source, self.buffer_size))
        for element in source:
            j = int(rng.integers(len(buffer)))
            yield buffer[j]
            buffer[j] = element
        while buffer:
            yield buffer.pop(int(rng.integers(len(buffer))))


@dataclass(frozen=True, slots=True)
class Take(Stage):
    """The first ``count`` elements (all for -1)."""

    input: Stage
    count: int

    def elements(self, ctx: Context) -> Iterator[Element]:
        """The first elements."""
        source = self.input.elements(ctx)
        return source if self.count < 0 else itertools.islice(source, self.count)


@dataclass(frozen=True, slots=True)
class Skip(Stage):
    """All elements but the first ``count`` (none for -1)."""

    input: Stage
    count: int

    def elements(self, ctx: Context) -> Iterator[Element]:
        """The elements after the skipped ones."""
        source = self.input.elements(ctx)
        if self.count < 0:
            return iter(())
        return itertools.islice(source, self.count, None)


@dataclass(frozen=True, slots=True)
class Map(Stage):
    """Each element through a traced function (its arguments the components, then the
    values of the tensors it captured, ``captures`` being their capture indices)."""

    input: Stage
    fn: Subgraph
    captures: tuple[int, ...]

    def elements(self, ctx: Context) -> Iterator[Element]:
        """The mapped elements."""
        fn = self.fn.bind(np, ctx.store, [ctx.captured[i] for i in self.captures])
        for element in self.input.elements(ctx):
            yield tuple(fn(element))


@dataclass(frozen=True, slots=True)
class Filter(Stage):
    """The elements for which a traced predicate is true."""

    input: Stage
    predicate: Subgraph
    captures: tuple[int, ...]

    def elements(self, ctx: Context) -> Iterator[Element]:
        """The elements kept."""
        predicate = self.predicate.bind(np, ctx.store, [ctx.captured[i] for i in self.captures])
        for element in self.input.elements(ctx):
            if bool(predicate(element)[0]):
                yield element


@dataclass(frozen=True, slots=True)
class Concatenate(Stage):
    """The elements of ``first``, then those of ``second``."""

    first: Stage
    second: Stage

    def elements(self, ctx: Context) -> Iterator[Element]:
        """Both inputs' elements, one after the other."""
        yield from self.first.elements(ctx)
        yield from self.second.elements(ctx)


@dataclass(frozen=True, slots=True)
class Zip(Stage):
    """The inputs' elements side by side, until the shortest ends."""

    inputs: tuple[Stage, ...]

    def elements(self, ctx: Context) -> Iterator[Element]:
        """The zipped elements."""
        for parts in zip(*(s.elements(ctx) for s in self.inputs)):  # noqa: B905 (shortest)
            yield tuple(v for part in parts for v in part)


@dataclass(frozen=True, slots=True)
class Unbatch(Stage):
    """Each element's components split along their first dimension, one element per row."""

    input: Stage

    def elements(self, ctx: Context) -> Iterator[Element]:
        """The rows."""
        for element in self.input.elements(ctx):
            yield from Slices(element).elements(ctx)


@dataclass(frozen=True, slots=True)
class Generator(Stage):
    """``from_generator``: what ``generator(*args)`` yields, each element flattened along
    ``template`` and its components converted to ``dtypes`` (NumPy dtypes), checked against
    the static ``shapes``."""

    generator: Any
    args: tuple
    template: Any
    dtypes: tuple
    shapes: tuple

    def elements(self, ctx: Context) -> Iterator[Element]:
        """The generator's elements."""
        args = [np.asarray(_value(p, ctx))[()] for p in self.args]
        for value in self.generator(*args):
            try:
                parts = nest.flatten_up_to(self.template, value)
            except ValueError:
                raise InvalidArgumentError(
                    "TypeError: `generator` yielded an element that did not match the expected "
                    f"structure. The expected structure was {self.template!r}, but the yielded "
                    f"element was {value!r}.",
                    op="from_generator",
                ) from None
            items = zip(parts, self.dtypes, self.shapes, strict=True)
            yield tuple(self._component(*item) for item in items)

    @staticmethod
    def _component(value: Any, dtype: Any, shape: tuple | None) -> Any:
        wanted = dtypes.as_dtype(dtype)
        try:
            if wanted is dtypes.string:
                array = dtypes.strings_as_bytes(np.asarray(value, dtype=object))
            else:
                array = cast_exactly(np.asarray(value), wanted)
        except (TypeError, ValueError) as exc:
            raise InvalidArgumentError(
                f"TypeError: `generator` yielded an element that could not be converted to the "
                f"expected type {wanted.name}: {value!r} ({exc})",
                op="from_generator",
            ) from None
        if shape is not None and (
            array.ndim != len(shape)
            or any(d not in (None, n) for d, n in zip(shape, array.shape, strict=True))
        ):
            raise InvalidArgumentError(
                f"TypeError: `generator` yielded an element of shape {array.shape} where an "
                f"element of shape {tuple(shape)} was expected.",
                op="from_generator",
            )
        return array[()] if array.ndim == 0 else array


# -- the iterator's state and ops -----------------------------------------------------------------
class IteratorState:
    """An iterator's position in its pipeline, kept on the worker for the session; its ops
    (its initializer, its ``GetNext`` ops) take ``lock`` while they use it, as the runs of
    several threads may."""

    def __init__(self) -> None:
        self.elements: Iterator[Element] | None = None
        self.started = False
        self.lock = threading.RLock()

    def start(self, stage: Stage, captured: Sequence[Any], store: Any) -> None:
        """Read ``stage`` from its first element on (an initializer's run)."""
        self.elements = iter(stage.elements(Context(captured, store)))
        self.started = True

    def next(self, name: str) -> Element:
        """The next element; TensorFlow's errors when there is none."""
        if self.elements is None:
            raise FailedPreconditionError(
                "GetNext() failed because the iterator has not been initialized. Ensure that "
                "you have run the initializer operation for this iterator before getting the "
                f"next element.\n\t [[{{{{node {name}}}}}]]",
                op=name,
            )
        try:
            return next(self.elements)
        except StopIteration:
            raise OutOfRangeError(f"End of sequence\n\t [[{{{{node {name}}}}}]]", op=name) from None
        except OpError:
            raise
        except Exception as exc:  # a generator's own error, as a py_func's
            raise python_error(exc, name) from exc


def _state(store: Any, key: str) -> IteratorState:
    return store.random_generator(("Iterator", key), IteratorState)


def _iterator_kernel(xp, *, key):
    return key


def _make_iterator_kernel(xp, store, handle, *captured, stage):
    state = _state(store, handle)
    with state.lock:
        state.start(stage, captured, store)


def _get_next_kernel(xp, store, handle, *captured, stage, name):
    state = _state(store, handle)
    with state.lock:
        if stage is not None and not state.started:  # a one-shot iterator starts on its own
            state.start(stage, captured, store)
        return state.next(name)


_CPU_ONLY = {"cpu": CPU_ALL | {dtypes.variant}, "gpu": None}  # TensorFlow: CPU kernels only
register("IteratorV2", _iterator_kernel, **_CPU_ONLY)
register("MakeIterator", _make_iterator_kernel, stateful=True, **_CPU_ONLY)
register("IteratorGetNext", _get_next_kernel, stateful=True, **_CPU_ONLY)
for _type in ("IteratorV2", "MakeIterator", "IteratorGetNext"):
    no_gradient(_type)
