"""Nested structures of values (tuples, lists, dicts, named tuples) flattened to a list and
packed back, as TensorFlow's ``tf.nest`` does it: what ``while_loop``'s loop variables,
``map_fn``'s elements and a dataset's elements are.

Dicts flatten in the order of their sorted keys; anything that is not a tuple, list or dict
(a tensor, an array, a number, None) is a leaf.

>>> flatten({"b": 2, "a": (1, [3])})
[1, 3, 2]
>>> pack_sequence_as({"b": 0, "a": (0, [0])}, ["x", "y", "z"])
{'b': 'z', 'a': ('x', ['y'])}
>>> map_structure(lambda v: v * 10, (1, {"k": 2}))
(10, {'k': 20})
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

__all__ = [
    "assert_same_structure",
    "flatten",
    "flatten_up_to",
    "is_nested",
    "map_structure",
    "pack_sequence_as",
]


def is_nested(seq: Any) -> bool:
    """Whether ``seq`` is a structure (a tuple, list or dict) rather than a leaf.

    >>> is_nested([1]), is_nested(1), is_nested("ab")
    (True, False, False)
    """
    return isinstance(seq, (tuple, list, dict))


def _children(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [value[k] for k in _sorted_keys(value)]
    return list(value)


def _sorted_keys(mapping: dict) -> list[Any]:
    try:
        return sorted(mapping)
    except TypeError:
        raise TypeError(f"nest: the keys of a dict must be sortable; got {list(mapping)}") from None


def _leaves(value: Any) -> Iterator[Any]:
    if is_nested(value):
        for child in _children(value):
            yield from _leaves(child)
    else:
        yield value


def flatten(structure: Any, expand_composites: bool = False) -> list[Any]:
    """The leaves of ``structure``, depth first (a leaf alone is a list of one;
    ``expand_composites`` is TensorFlow's, for composite tensors daskgraph has not).

    >>> flatten(5), flatten([(1, 2), [], {"a": 3}])
    ([5], [1, 2, 3])
    """
    return list(_leaves(structure))


def flatten_up_to(shallow: Any, structure: Any) -> list[Any]:
    """The parts of ``structure`` at the leaves of ``shallow`` (which ``structure`` nests
    like, down to there): a leaf of ``shallow`` takes the whole part below it.

    >>> flatten_up_to((0, 0), ([1, 2], [None]))
    [[1, 2], [None]]
    >>> flatten_up_to((0, 0), [1])
    Traceback (most recent call last):
    ...
    ValueError: nest: [1] does not nest like (0, 0)
    """
    if not is_nested(shallow):
        return [structure]
    if not is_nested(structure) or isinstance(shallow, dict) != isinstance(structure, dict):
        raise ValueError(f"nest: {structure!r} does not nest like {shallow!r}")
    mine, theirs = _children(shallow), _children(structure)
    if len(mine) != len(theirs) or (
        isinstance(shallow, dict) and _sorted_keys(shallow) != _sorted_keys(structure)
    ):
        raise ValueError(f"nest: {structure!r} does not nest like {shallow!r}")
    return [part for a, b in zip(mine, theirs, strict=True) for part in flatten_up_to(a, b)]


def _rebuild(template: Any, children: list[Any]) -> Any:
    if isinstance(template, dict):
        keys = _sorted_keys(template)
        by_key = dict(zip(keys, children, strict=True))
        return type(template)((k, by_key[k]) for k in template)
    if isinstance(template, tuple) and hasattr(template, "_fields"):  # a named tuple
        return type(template)(*children)
    return type(template)(children)


def _pack(template: Any, leaves: Iterator[Any]) -> Any:
    if not is_nested(template):
        return next(leaves)
    return _rebuild(template, [_pack(child, leaves) for child in _children(template)])


def pack_sequence_as(structure: Any, flat_sequence: Any, expand_composites: bool = False) -> Any:
    """``flat_sequence`` put back into the shape of ``structure`` (the inverse of
    :func:`flatten`).

    >>> pack_sequence_as((0, [0, 0]), [1, 2, 3])
    (1, [2, 3])
    >>> pack_sequence_as((0, 0), [1])
    Traceback (most recent call last):
    ...
    ValueError: nest: the structure has 2 leaves but 1 values were given
    """
    flat = list(flat_sequence)
    count = len(flatten(structure))
    if count != len(flat):
        raise ValueError(
            f"nest: the structure has {count} leaves but {len(flat)} values were given"
        )
    return _pack(structure, iter(flat))


def assert_same_structure(
    nest1: Any, nest2: Any, check_types: bool = True, expand_composites: bool = False
) -> None:
    """Raise ``ValueError`` unless ``nest1`` and ``nest2`` nest the same way (same lengths and
    dict keys; with ``check_types``, the same kinds of sequence too: a list is not a tuple).

    >>> assert_same_structure((1, [2]), (3, [4]))
    >>> assert_same_structure((1, [2]), (3, 4))
    Traceback (most recent call last):
    ...
    ValueError: nest: the two structures differ: (1, [2]) and (3, 4)
    """
    if not _same(nest1, nest2, check_types):
        raise ValueError(f"nest: the two structures differ: {nest1!r} and {nest2!r}")


def _same(a: Any, b: Any, check_types: bool) -> bool:
    if is_nested(a) != is_nested(b):
        return False
    if not is_nested(a):
        return True
    if isinstance(a, dict) != isinstance(b, dict):
        return False
    if check_types and type(a) is not type(b):
        return False
    if isinstance(a, dict) and _sorted_keys(a) != _sorted_keys(b):
        return False
    ca, cb = _children(a), _children(b)
    return len(ca) == len(cb) and all(_same(x, y, check_types) for x, y in zip(ca, cb, strict=True))


def map_structure(func: Callable[..., Any], *structure: Any, **kwargs: Any) -> Any:
    """``func`` applied to the leaves of the ``structure`` arguments (all of one structure)
    position by position, in that structure (``check_types``, default True, as in
    :func:`assert_same_structure`).

    >>> map_structure(lambda a, b: a + b, [1, (2,)], [10, (20,)])
    [11, (22,)]
    """
    check_types = kwargs.pop("check_types", True)
    kwargs.pop("expand_composites", None)
    if kwargs:
        raise ValueError(f"map_structure: unexpected arguments {sorted(kwargs)}")
    if not structure:
        raise ValueError("map_structure: give at least one structure")
    for other in structure[1:]:
        assert_same_structure(structure[0], other, check_types)
    flats = [flatten(s) for s in structure]
    return pack_sequence_as(structure[0], [func(*values) for values in zip(*flats, strict=True)])
