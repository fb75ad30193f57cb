"""TensorFlow 1's ``tf.data``, minimal: datasets of NumPy values and tensors, transformed,
and read by iterators whose state lives on the CPU worker for the session.

A :class:`Dataset` is a description: its elements' structure (a tuple, a dict, or a single
component; Python lists are values, as in ``tf.data``), each component's dtype and static
shape, and how to make its pipeline (:mod:`daskgraph.kernels.dataset_ops`). An :class:`Iterator`
adds the ops that read it: ``get_next()`` returns the element's structure of tensors; every
run that fetches them takes the next element (components fetched together come from the same
one) and raises :class:`~daskgraph.errors.OutOfRangeError` at the end. A one-shot iterator
starts by itself on its first run; an initializable one on its ``initializer``'s, with the
values of the placeholders its dataset uses fed to that run.

>>> import numpy as np
>>> import daskgraph as dg
>>> with dg.Graph().as_default():
...     ds = Dataset.from_tensor_slices((np.arange(5.0), np.arange(5) * 10)).batch(2)
...     features, labels = ds.make_one_shot_iterator().get_next()
...     with dg.Session() as sess:
...         print(sess.run([features, labels]), sess.run(labels), sess.run(labels))
...         try:
...             sess.run(labels)
...         except dg.errors.OutOfRangeError as error:
...             print(str(error).splitlines()[0])
[array([0., 1.]), array([ 0, 10])] [20 30] [40]
End of sequence
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from daskgraph.data import dataset_ops  # noqa: F401 - registers the iterator ops
from daskgraph.framework import dtypes, nest
from daskgraph.framework.graph import Operation, Shape, Tensor, get_default_graph
from daskgraph.framework.tensor_shape import TensorShape
from daskgraph.kernels import dataset_ops as stages
from daskgraph.ops.array import as_shape, convert_to_tensor
from daskgraph.ops.bundle import unbundle
from daskgraph.ops.random import get_seed
from daskgraph.ops.subgraph import Tracer

__all__ = ["Dataset", "Iterator", "make_initializable_iterator", "make_one_shot_iterator"]

Spec = tuple[dtypes.DType, Shape | None]
#: builds a dataset's stage, given the capture index of each tensor it uses
Builder = Callable[[Callable[[Tensor], int]], stages.Stage]


class _Leaf:
    """A component in a structure template (so that lists stay values, as in ``tf.data``)."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


def _template(value: Any) -> Any:
    """``value``'s structure with :class:`_Leaf` leaves: tuples and dicts nest, nothing else."""
    if isinstance(value, dict):
        return type(value)((k, _template(v)) for k, v in value.items())
    if isinstance(value, tuple):
        items = [_template(v) for v in value]
        return type(value)(*items) if hasattr(value, "_fields") else tuple(items)
    return _Leaf(value)


def _leaves(template: Any) -> list[Any]:
    return [leaf.value for leaf in nest.flatten(template)]


def _as_array(value: Any) -> np.ndarray:
    """A component given as a value: as ``tf.constant`` would type it (Python floats as
    float32, strings as bytes)."""
    if isinstance(value, np.ndarray) and value.dtype.kind not in "OUS":
        return value
    dtype = dtypes.infer_dtype(value)
    if dtype is dtypes.string:
        return dtypes.strings_as_bytes(np.asarray(value, dtype=object))
    return np.asarray(value, dtype=dtype.numpy)


class Dataset:
    """A ``tf.data`` dataset (TensorFlow 1's ``DatasetV1``): made by
    :meth:`from_tensor_slices`, :meth:`from_tensors`, :meth:`range` or :meth:`zip`, changed
    by its methods, read by an :class:`Iterator`."""

    def __init__(
        self, template: Any, specs: Sequence[Spec], captures: Sequence[Tensor], build: Builder
    ) -> None:
        self._template = template
        self._specs = list(specs)
        self._captures = tuple(dict.fromkeys(captures))
        self._build = build

    # -- sources ----------------------------------------------------------------------------
    @staticmethod
    def from_tensor_slices(tensors: Any) -> Dataset:
        """The slices of ``tensors`` (arrays, lists, tensors; a tuple or dict of them) along
        their first dimension, one element each."""
        template, parts, specs, captures = _components(tensors, "from_tensor_slices")
        sizes = set()
        for _, shape in specs:
            if shape is not None and len(shape) == 0:
                raise ValueError("from_tensor_slices: Unbatching a tensor is only supported "
                                 "for rank >= 1")  # fmt: skip
            if shape is not None and shape[0] is not None:
                sizes.add(shape[0])
        if len(sizes) > 1:
            a, b = sorted(sizes)[:2]
            raise ValueError(f"Dimensions {a} and {b} are not compatible")
        specs = [(d, None if s is None else tuple(s[1:])) for d, s in specs]
        return Dataset(template, specs, captures, _parts_builder(stages.Slices, parts))

    @staticmethod
    def from_tensors(tensors: Any) -> Dataset:
        """One element: ``tensors`` (arrays, lists, tensors; a tuple or dict of them)."""
        template, parts, specs, captures = _components(tensors, "from_tensors")
        return Dataset(template, specs, captures, _parts_builder(stages.Tensors, parts))

    @staticmethod
    def range(*args: int, output_type: Any = dtypes.int64) -> Dataset:
        """``range(stop)``, ``range(start, stop[, step])`` as scalars (int64 by default)."""
        if not 1 <= len(args) <= 3:
            raise ValueError(f"range: expects 1 to 3 arguments; got {len(args)}")
        start, stop, step = (0, args[0], 1) if len(args) == 1 else (*args, 1)[:3]
        if int(step) == 0:
            raise ValueError("range: step must not be 0")
        dtype = dtypes.as_dtype(output_type)
        stage = stages.Range(int(start), int(stop), int(step), dtype.numpy)
        return Dataset(_Leaf(None), [(dtype, ())], (), lambda index: stage)

    @staticmethod
    def from_generator(
        generator: Callable[..., Any],
        output_types: Any,
        output_shapes: Any = None,
        args: Any = None,
    ) -> Dataset:
        """The elements ``generator(*args)`` yields, called on the CPU worker each time the
        iterator starts (pickled there with cloudpickle when it lives in another process), of
        the structure and dtypes ``output_types`` (and ``output_shapes``, default unknown).
        ``args`` are tensors or values, given to it as NumPy values."""
        if not callable(generator):
            raise TypeError("from_generator: generator must be a callable")
        template, specs = _declared(output_types, output_shapes, "from_generator")
        parts, captures = [], []
        if args is not None:
            _, parts, _, captures = _components(tuple(args), "from_generator args")
        shallow = nest.map_structure(lambda _: 0, template)
        numpy_types = tuple(d.numpy for d, _ in specs)
        shapes = tuple(s for _, s in specs)

        def build(index: Callable[[Tensor], int]) -> stages.Stage:
            given = tuple(stages.Captured(index(p)) if isinstance(p, Tensor) else p for p in parts)
            return stages.Generator(generator, given, shallow, numpy_types, shapes)

        return Dataset(template, specs, captures, build)

    @staticmethod
    def zip(datasets: Any) -> Dataset:
        """Elements side by side: a (nested) tuple or dict of datasets gives elements of that
        structure; it ends with the shortest."""
        template = _template(datasets)
        members = _leaves(template)
        if not members or not all(isinstance(d, Dataset) for d in members):
            raise TypeError("zip: expects a tuple or dict of Datasets")
        inner = nest.pack_sequence_as(template, [d._template for d in members])
        specs = [s for d in members for s in d._specs]
        captures = [t for d in members for t in d._captures]
        return Dataset(inner, specs, captures, lambda index: stages.Zip(
            tuple(d._build(index) for d in members)
        ))  # fmt: skip

    # -- what the elements are --------------------------------------------------------------
    def _pack(self, values: Sequence[Any]) -> Any:
        return nest.pack_sequence_as(self._template, list(values))

    @property
    def output_types(self) -> Any:
        """The components' dtypes, in the elements' structure."""
        return self._pack([d for d, _ in self._specs])

    @property
    def output_shapes(self) -> Any:
        """The components' static shapes (``TensorShape``), in the elements' structure."""
        return self._pack([TensorShape(s) for _, s in self._specs])

    @property
    def output_classes(self) -> Any:
        """``Tensor`` for every component, in the elements' structure."""
        return self._pack([Tensor for _ in self._specs])

    # -- transformations --------------------------------------------------------------------
    def _then(self, specs: Sequence[Spec] | None, make: Callable[..., stages.Stage]) -> Dataset:
        parent = self._build
        return Dataset(
            self._template,
            self._specs if specs is None else specs,
            self._captures,
            lambda index: make(parent(index)),
        )

    def batch(self, batch_size: int, drop_remainder: bool = False) -> Dataset:
        """Consecutive elements stacked ``batch_size`` at a time; the last batch is smaller
        unless ``drop_remainder`` (then the batch dimension is known)."""
        size = int(batch_size)
        if size <= 0:
            raise ValueError(f"batch: batch_size must be > 0; got {batch_size}")
        first = size if drop_remainder else None
        specs = [(d, None if s is None else (first, *s)) for d, s in self._specs]
        return self._then(specs, lambda stage: stages.Batch(stage, size, bool(drop_remainder)))

    def repeat(self, count: int | None = None) -> Dataset:
        """The elements ``count`` times (forever for None or -1)."""
        times = None if count is None or int(count) < 0 else int(count)
        return self._then(None, lambda stage: stages.Repeat(stage, times))

    def shuffle(
        self, buffer_size: int, seed: int | None = None, reshuffle_each_iteration: bool = True
    ) -> Dataset:
        """The elements in a random order, drawn from a buffer of ``buffer_size`` (TensorFlow
        1's seed rules: the graph's seed and ``seed``; other orders than TensorFlow's)."""
        size = int(buffer_size)
        if size <= 0:
            raise ValueError(f"shuffle: buffer_size must be > 0; got {buffer_size}")
        seeds = get_seed(seed)
        reshuffle = bool(reshuffle_each_iteration)
        return self._then(None, lambda stage: stages.Shuffle(stage, size, seeds, reshuffle))

    def take(self, count: int) -> Dataset:
        """The first ``count`` elements (all for -1)."""
        return self._then(None, lambda stage: stages.Take(stage, int(count)))

    def skip(self, count: int) -> Dataset:
        """All elements but the first ``count`` (none for -1)."""
        return self._then(None, lambda stage: stages.Skip(stage, int(count)))

    def unbatch(self) -> Dataset:
        """Each element's components split along their first dimension, one element a row."""
        for _, shape in self._specs:
            if shape is not None and len(shape) == 0:
                raise ValueError("unbatch: the components must have rank >= 1")
        specs = [(d, None if s is None else tuple(s[1:])) for d, s in self._specs]
        return self._then(specs, stages.Unbatch)

    def enumerate(self, start: int = 0) -> Dataset:
        """``(index, element)`` pairs, the index (int64) counting from ``start``."""
        return Dataset.zip((Dataset.range(int(start), 2**63 - 1), self))

    def prefetch(self, buffer_size: int) -> Dataset:
        """The same elements (elements are made when a run asks for one)."""
        return self

    def cache(self, filename: str = "") -> Dataset:
        """The same elements (TensorFlow keeps them after the first epoch; daskgraph makes
        them again, which gives the same values for pipelines without randomness)."""
        return self

    def apply(self, transformation_func: Callable[[Dataset], Dataset]) -> Dataset:
        """``transformation_func(self)``."""
        return transformation_func(self)

    def concatenate(self, dataset: Dataset) -> Dataset:
        """This dataset's elements, then ``dataset``'s (of the same structure and dtypes)."""
        if [d for d, _ in dataset._specs] != [d for d, _ in self._specs]:
            raise TypeError(
                f"concatenate: the datasets' types differ: {self.output_types} and "
                f"{dataset.output_types}"
            )
        specs = [(d, _merged(a, b)) for (d, a), (_, b) in zip(self._specs, dataset._specs,
                                                              strict=True)]  # fmt: skip
        first, second = self._build, dataset._build
        return Dataset(
            self._template,
            specs,
            self._captures + dataset._captures,
            lambda index: stages.Concatenate(first(index), second(index)),
        )

    def map(self, map_func: Callable[..., Any], num_parallel_calls: Any = None) -> Dataset:
        """Each element through ``map_func``, a function of tensors (the components as
        arguments for a tuple, else the element), traced once and run on the CPU worker."""
        template, tracer = self._trace(map_func, "map")
        outputs = _leaves(template)
        blank = nest.pack_sequence_as(template, [_Leaf(None) for _ in outputs])
        specs = [(t.dtype, t.shape) for t in outputs]
        return self._traced(blank, specs, tracer, outputs, stages.Map)

    def filter(self, predicate: Callable[..., Any]) -> Dataset:
        """The elements for which ``predicate`` (a function of tensors returning a scalar
        bool tensor) is true."""
        template, tracer = self._trace(predicate, "filter")
        found = _leaves(template)
        if (
            len(found) != 1
            or found[0].dtype is not dtypes.bool_
            or found[0].shape
            not in (
                None,
                (),
            )
        ):
            raise ValueError("filter: predicate must return a scalar bool tensor")
        return self._traced(self._template, self._specs, tracer, found, stages.Filter)

    def _trace(self, fn: Callable[..., Any], where: str) -> tuple[Any, Tracer]:
        """Call ``fn`` on placeholders for the components; its result's structure, with
        tensor leaves, and the tracer."""
        if not callable(fn):
            raise TypeError(f"Dataset.{where}: expects a function; got {fn!r}")
        tracer = Tracer(f"Dataset.{where}", colocate=False)
        args = self._pack(tracer.params(self._specs, "component"))
        with tracer.scope(where):
            result = fn(*args) if type(args) is tuple else fn(args)
            template = _template(result)
            tensors = [convert_to_tensor(v) for v in _leaves(template)]
        return nest.pack_sequence_as(template, [_Leaf(t) for t in tensors]), tracer

    def _traced(
        self,
        template: Any,
        specs: Sequence[Spec],
        tracer: Tracer,
        outputs: list[Tensor],
        kind: type,
    ) -> Dataset:
        """A dataset running the traced function ``outputs`` come from, as a stage of
        ``kind``, over this one's elements."""
        compiled = tracer.compile([outputs])
        if "CPU" not in tracer.device_types(compiled):
            raise ValueError(
                f"{tracer.where}: the function has an op without a CPU kernel; dataset "
                "functions run on the CPU worker"
            )
        fn, captured, parent = compiled.subgraphs[0], compiled.captures, self._build
        return Dataset(
            template,
            specs,
            self._captures + captured,
            lambda index: kind(parent(index), fn, tuple(index(t) for t in captured)),
        )

    # -- iterators --------------------------------------------------------------------------
    def make_one_shot_iterator(self) -> Iterator:
        """An iterator that starts by itself on its first run (its dataset may not use
        placeholders: nothing would feed them then)."""
        return make_one_shot_iterator(self)

    def make_initializable_iterator(self, shared_name: str | None = None) -> Iterator:
        """An iterator whose ``initializer`` (re)starts it, reading the tensors the dataset
        uses (placeholders fed to that run) at that moment."""
        return make_initializable_iterator(self, shared_name)


def _components(tensors: Any, where: str) -> tuple[Any, list[Any], list[Spec], list[Tensor]]:
    """A source's components: the structure, each component's part (an array, or a
    :class:`~daskgraph.kernels.dataset_ops.Captured` stand-in for a tensor, numbered later), its
    spec, and the tensors among them."""
    template = _template(tensors)
    parts, specs, captures = [], [], []
    for value in _leaves(template):
        if isinstance(value, Tensor) or hasattr(value, "_as_tensor"):
            tensor = convert_to_tensor(value)
            parts.append(tensor)
            captures.append(tensor)
            specs.append((tensor.dtype, tensor.shape))
        else:
            array = _as_array(value)
            parts.append(array)
            specs.append((dtypes.as_dtype(array.dtype), array.shape))
    if not parts:
        raise ValueError(f"{where}: expects at least one component")
    blank = nest.pack_sequence_as(template, [_Leaf(None) for _ in parts])
    return blank, parts, specs, captures


def _declared(types: Any, shapes: Any, where: str) -> tuple[Any, list[Spec]]:
    """The structure (with blank leaves) and specs of declared ``output_types`` and
    ``output_shapes`` (default: unknown shapes)."""
    template = _template(types)
    found = [dtypes.as_dtype(t) for t in _leaves(template)]
    if shapes is None:
        given: list[Any] = [None] * len(found)
    else:
        given = nest.flatten_up_to(nest.map_structure(lambda _: 0, template), shapes)
    specs = [(t, as_shape(s, where)) for t, s in zip(found, given, strict=True)]
    return nest.pack_sequence_as(template, [_Leaf(None)] * len(found)), specs


def _parts_builder(kind: type, parts: list[Any]) -> Builder:
    def build(index: Callable[[Tensor], int]) -> stages.Stage:
        return kind(tuple(stages.Captured(index(p)) if isinstance(p, Tensor) else p for p in parts))

    return build


def _merged(a: Shape | None, b: Shape | None) -> Shape | None:
    """The most specific shape both ``a`` and ``b`` have (a dimension where they differ is
    unknown).

    >>> _merged((2, 3), (4, 3)), _merged((2,), (2, 1)), _merged(None, (1,))
    ((None, 3), None, None)
    """
    if a is None or b is None or len(a) != len(b):
        return None
    return tuple(x if x == y else None for x, y in zip(a, b, strict=True))


# -- iterators ------------------------------------------------------------------------------------
class Iterator:
    """Reads a dataset's elements: :meth:`get_next` gives tensors whose every run takes the
    next element (TensorFlow 1's ``tf.data.Iterator``).

    Made by :func:`make_one_shot_iterator`, :func:`make_initializable_iterator` or
    :meth:`from_structure` (then :meth:`make_initializer` points it at a dataset of that
    structure). Its state lives on the CPU worker of its ops, one per session.
    """

    def __init__(self, template: Any, specs: Sequence[Spec], name: str = "Iterator") -> None:
        graph = get_default_graph()
        self._template = template
        self._specs = list(specs)
        exact = graph.unique_name(name)
        op = graph.create_op(
            "IteratorV2", [], dtype=dtypes.variant, shape=(), attrs={"key": exact},
            exact_name=exact,
        )  # fmt: skip
        self._handle = op.outputs[0]
        self._initializer: Operation | None = None
        self._one_shot: tuple[stages.Stage, tuple[Tensor, ...]] | None = None

    @staticmethod
    def from_structure(
        output_types: Any,
        output_shapes: Any = None,
        shared_name: str | None = None,
        output_classes: Any = None,
    ) -> Iterator:
        """An iterator over no dataset yet, for elements of ``output_types`` (and
        ``output_shapes``, default unknown); :meth:`make_initializer` gives it one."""
        return Iterator(*_declared(output_types, output_shapes, "Iterator.from_structure"))

    @property
    def initializer(self) -> Operation:
        """The op that (re)starts the iterator at its dataset's first element."""
        if self._initializer is None:
            raise ValueError("Iterator does not have an initializer.")
        return self._initializer

    def make_initializer(self, dataset: Dataset, name: str | None = None) -> Operation:
        """An op that (re)starts the iterator on ``dataset`` (of the iterator's structure
        and dtypes, and compatible shapes)."""
        if [d for d, _ in dataset._specs] != [d for d, _ in self._specs]:
            raise TypeError(
                f"Expected output types {self.output_types} but got dataset with output types "
                f"{dataset.output_types}."
            )
        for (_, mine), (_, theirs) in zip(self._specs, dataset._specs, strict=True):
            if not TensorShape(mine).is_compatible_with(TensorShape(theirs)):
                raise TypeError(
                    f"Expected output shapes compatible with {self.output_shapes} but got "
                    f"dataset with output shapes {dataset.output_shapes}."
                )
        captures = dataset._captures
        stage = dataset._build({t: i for i, t in enumerate(captures)}.__getitem__)
        graph = self._handle.graph
        return graph.create_op(
            "MakeIterator",
            [self._handle, *captures],
            dtype=None,
            attrs={"stage": stage},
            name=name or "MakeIterator",
            colocate_with=self._handle.op,
        )

    def get_next(self, name: str | None = None) -> Any:
        """The next element, as tensors in the elements' structure; every run of them takes
        the next one, and raises ``OutOfRangeError`` ("End of sequence") after the last."""
        graph = self._handle.graph
        exact = graph.unique_name(name or "IteratorGetNext")
        stage, captures = self._one_shot if self._one_shot is not None else (None, ())
        op = graph.create_op(
            "IteratorGetNext",
            [self._handle, *captures],
            dtype=dtypes.variant,
            shape=(),
            attrs={"stage": stage, "name": exact},
            exact_name=exact,
            colocate_with=self._handle.op,
        )
        names = [f"component_{i}" for i in range(len(self._specs))]
        return self._pack(unbundle(op.outputs[0], self._specs, names))

    def _pack(self, values: Sequence[Any]) -> Any:
        return nest.pack_sequence_as(self._template, list(values))

    @property
    def output_types(self) -> Any:
        """The components' dtypes, in the elements' structure."""
        return self._pack([d for d, _ in self._specs])

    @property
    def output_shapes(self) -> Any:
        """The components' static shapes (``TensorShape``), in the elements' structure."""
        return self._pack([TensorShape(s) for _, s in self._specs])

    @property
    def output_classes(self) -> Any:
        """``Tensor`` for every component, in the elements' structure."""
        return self._pack([Tensor for _ in self._specs])


def make_one_shot_iterator(dataset: Dataset) -> Iterator:
    """An iterator over ``dataset`` that starts by itself on its first run
    (``tf.data.make_one_shot_iterator``).

    Raises
    ------
    ValueError
        The dataset uses a placeholder (TensorFlow's words: it cannot be captured by value).
    """
    captures = dataset._captures
    fed = _placeholder_among(captures)
    if fed is not None:
        raise ValueError(
            f"Cannot capture a placeholder (name:{fed.name}, type:{fed.type}) by value."
        )
    iterator = Iterator(dataset._template, dataset._specs, "OneShotIterator")
    stage = dataset._build({t: i for i, t in enumerate(captures)}.__getitem__)
    iterator._one_shot = (stage, captures)
    return iterator


def make_initializable_iterator(dataset: Dataset, shared_name: str | None = None) -> Iterator:
    """An iterator over ``dataset`` whose ``initializer`` (re)starts it
    (``tf.data.make_initializable_iterator``)."""
    iterator = Iterator(dataset._template, dataset._specs)
    iterator._initializer = iterator.make_initializer(dataset)
    return iterator


def _placeholder_among(tensors: Sequence[Tensor]) -> Operation | None:
    """A placeholder the ``tensors`` depend on, if any."""
    seen: set[int] = set()
    stack = [t.op for t in tensors]
    while stack:
        op = stack.pop()
        if op.id in seen:
            continue
        seen.add(op.id)
        if op.type == "Placeholder":
            return op
        stack.extend(t.op for t in op.inputs)
        stack.extend(op.control_inputs)
    return None
