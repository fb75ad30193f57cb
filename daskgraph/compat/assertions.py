"""The array assertions of TensorFlow's ``tf.test.TestCase``, as a mixin of ``unittest.TestCase``.

Its one job is those assertions with TensorFlow's behaviour and messages: ``assertAllClose``
(nested dicts, namedtuples, lists and tuples; ``rtol``/``atol`` 1e-6 as TensorFlow),
``assertAllCloseAccordingToType`` (looser for float32 and float16), ``assertAllEqual`` (NaN
equal to NaN in floats, str equal to bytes), ``assertAllGreater``/``Less``/...,
``assertAllInRange``, ``assertArrayNear``, ``assertNear``, ``assertNDArrayNear``,
``assertShapeEqual`` (static shapes of tensors), ``assertDeviceEqual`` (canonical device
names), ``assertRaisesOpError`` and ``assertRaisesWithPredicateMatch``. A tensor or variable
given to any of them is evaluated first, by the test case's ``evaluate``.

>>> import unittest
>>> class Check(ArrayAssertions, unittest.TestCase):
...     def runTest(self):
...         pass
>>> check = Check()
>>> check.assertAllClose({"a": [1.0, 2.0], "b": (3.0,)}, {"a": [1.0, 2.0 + 1e-7], "b": (3.0,)})
>>> check.assertAllEqual([1, 2], [1, 3])
Traceback (most recent call last):
...
AssertionError: ...
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import math
import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import numpy as np

from daskgraph import errors
from daskgraph.framework.device import parse
from daskgraph.framework.graph import Tensor

__all__ = ["ArrayAssertions", "is_tensor_like"]

logger = logging.getLogger("tensorflow")


def is_tensor_like(value: Any) -> bool:
    """Whether ``value`` is a tensor or a variable (something a session runs to a value)."""
    return isinstance(value, Tensor) or hasattr(value, "_as_tensor")


def _canonical_device(device: Any) -> str:
    if device is None:
        return ""
    if hasattr(device, "to_string"):
        return device.to_string()
    return parse(device).to_string()


class ArrayAssertions:
    """TensorFlow's array assertions; the test case provides ``evaluate(tensors)``."""

    evaluate: Callable[[Any], Any]

    # -- values -----------------------------------------------------------------------------
    def _GetNdArray(self, a: Any) -> np.ndarray:
        if is_tensor_like(a):
            a = self.evaluate(a)
        if not isinstance(a, np.ndarray):
            try:
                return np.array(a)
            except ValueError as e:
                if "inhomogeneous shape" in str(e):
                    return np.array(a, dtype=object)
                raise
        return a

    def evaluate_if_both_tensors(self, a: Any, b: Any) -> tuple[Any, Any]:
        """``(a, b)`` evaluated together when both are tensors, else as they are."""
        if is_tensor_like(a) and is_tensor_like(b):
            return tuple(self.evaluate((a, b)))
        return (a, b)

    # -- closeness ------------------------------------------------------------------------------
    def assertNear(self, f1: Any, f2: Any, err: float, msg: str | None = None) -> None:
        """Assert ``|f1 - f2| <= err`` for two floats (inf equals inf)."""
        f1, f2 = np.squeeze(f1), np.squeeze(f2)
        if f1 != f2:
            diff = math.fabs(f1 - f2)
            extra = f" ({msg})" if msg is not None else ""
            self.assertTrue(
                diff <= err, f"{f1:f} != {f2:f} +/- {err:f} (difference: {diff:g}){extra}"
            )

    def assertArrayNear(self, farray1: Any, farray2: Any, err: float, msg: str | None = None):
        """Assert two float sequences are near, element by element (``assertNear``)."""
        self.assertEqual(len(farray1), len(farray2), msg=msg)
        for f1, f2 in zip(farray1, farray2, strict=True):
            self.assertNear(float(f1), float(f2), err, msg=msg)

    def _NDArrayNear(self, ndarray1: Any, ndarray2: Any, err: float) -> bool:
        return bool(np.linalg.norm(ndarray1 - ndarray2) < err)

    def assertNDArrayNear(self, ndarray1: Any, ndarray2: Any, err: float, msg: str | None = None):
        """Assert the norm of ``ndarray1 - ndarray2`` is below ``err``."""
        self.assertTrue(self._NDArrayNear(ndarray1, ndarray2, err), msg=msg)

    def _assertArrayLikeAllClose(self, a, b, rtol=1e-6, atol=1e-6, msg=None) -> None:
        a, b = self.evaluate_if_both_tensors(a, b)
        a, b = self._GetNdArray(a), self._GetNdArray(b)
        if a.shape != b.shape and (b.ndim <= 3 or b.size < 500):
            mismatch = f"Shape mismatch: expected {a.shape}, got {b.shape} with contents {b}."
        else:
            mismatch = f"Shape mismatch: expected {a.shape}, got {b.shape}."
        self.assertEqual(a.shape, b.shape, mismatch)
        if np.allclose(a, b, rtol=rtol, atol=atol):
            return
        msgs = [msg]
        cond = np.logical_or(np.abs(a - b) > atol + rtol * np.abs(b), np.isnan(a) != np.isnan(b))
        x, y = (a[np.where(cond)], b[np.where(cond)]) if a.ndim else (a, b)
        if a.ndim:
            msgs.append(f"not close where = {np.where(cond)}")
        msgs += [f"not close lhs = {x}", f"not close rhs = {y}", f"not close dif = {np.abs(x - y)}"]
        msgs += [
            f"not close tol = {atol + rtol * np.abs(y)}",
            f"dtype = {a.dtype}, shape = {a.shape}",
        ]
        np.testing.assert_allclose(
            a, b, rtol=rtol, atol=atol, err_msg="\n".join(map(str, msgs)), equal_nan=True
        )

    def _assertAllCloseRecursive(self, a, b, rtol=1e-6, atol=1e-6, path=None, msg=None):
        path = path or []
        where = "[" + "][".join(str(p) for p in path) + "]" if path else ""
        msg = msg or ""
        a = a._asdict() if hasattr(a, "_asdict") else a
        b = b._asdict() if hasattr(b, "_asdict") else b
        a_is_dict = isinstance(a, Mapping)
        if a_is_dict != isinstance(b, Mapping):
            raise ValueError(f"Can't compare dict to non-dict, a{where} vs b{where}. {msg}")
        if a_is_dict:
            self.assertCountEqual(
                a.keys(),
                b.keys(),
                msg=f"mismatched keys: a{where} has keys {a.keys()}, but b{where} has keys "
                f"{b.keys()}. {msg}",
            )
            for k in a:
                self._assertAllCloseRecursive(a[k], b[k], rtol, atol, [*path, k], msg)
            return
        mismatch = f"Mismatched value: a{where} is different from b{where}. {msg}"
        if isinstance(a, (list, tuple)):
            try:
                a, b = self.evaluate_if_both_tensors(a, b)
                a_array, b_array = self._GetNdArray(a), self._GetNdArray(b)
                self._assertArrayLikeAllClose(a_array, b_array, rtol, atol, mismatch)
            except (ValueError, TypeError, NotImplementedError):
                if len(a) != len(b):
                    raise ValueError(
                        f"Mismatched length: a{where} has {len(a)} items, but b{where} has "
                        f"{len(b)} items. {msg}"
                    ) from None
                for i, (a_item, b_item) in enumerate(zip(a, b, strict=True)):
                    self._assertAllCloseRecursive(a_item, b_item, rtol, atol, [*path, str(i)], msg)
            return
        try:
            self._assertArrayLikeAllClose(a, b, rtol, atol, mismatch)
        except TypeError as e:
            note = f"Error: a{where} has {type(a)}, but b{where} has {type(b)}. {msg}"
            e.args = (f"{e.args[0]} : {note}", *e.args[1:]) if e.args else (note,)
            raise

    def assertAllClose(self, a: Any, b: Any, rtol: float = 1e-6, atol: float = 1e-6, msg=None):
        """Assert two (nested dict/namedtuple/list/tuple) structures of arrays or tensors are
        elementwise close: ``|a - b| <= atol + rtol * |b|``.

        Raises ``ValueError`` where only one of ``a[p]``, ``b[p]`` is a dict, or their
        lengths differ.
        """
        self._assertAllCloseRecursive(a, b, rtol=rtol, atol=atol, msg=msg)

    def assertAllCloseAccordingToType(
        self, a, b, rtol=1e-6, atol=1e-6, float_rtol=1e-6, float_atol=1e-6, half_rtol=1e-3,
        half_atol=1e-3, bfloat16_rtol=1e-2, bfloat16_atol=1e-2, msg=None,
    ) -> None:  # fmt: skip
        """``assertAllClose`` with tolerances at least ``float_*`` for float32 and ``half_*``
        for float16 (``bfloat16_*`` are accepted; daskgraph has no bfloat16)."""
        a, b = self.evaluate_if_both_tensors(a, b)
        a, b = self._GetNdArray(a), self._GetNdArray(b)
        if np.float32 in (a.dtype, b.dtype) or np.complex64 in (a.dtype, b.dtype):
            rtol, atol = max(rtol, float_rtol), max(atol, float_atol)
        if np.float16 in (a.dtype, b.dtype):
            rtol, atol = max(rtol, half_rtol), max(atol, half_atol)
        self.assertAllClose(a, b, rtol=rtol, atol=atol, msg=msg)

    def assertNotAllClose(self, a, b, rtol=1e-6, atol=1e-6, msg=None) -> None:
        """Assert ``a`` and ``b`` differ (beyond the tolerances) somewhere."""
        try:
            self.assertAllClose(a, b, rtol=rtol, atol=atol, msg=msg)
        except AssertionError:
            return
        raise AssertionError(f"The two values are close at all elements. {msg or ''}")

    # -- equality and order ---------------------------------------------------------------------
    def assertAllEqual(self, a: Any, b: Any, msg: str | None = None) -> None:
        """Assert two arrays or tensors have the same shape and values (NaN equals NaN)."""
        msg = msg or ""
        a, b = self.evaluate_if_both_tensors(a, b)
        a, b = self._GetNdArray(a), self._GetNdArray(b)
        contents = f" Contents: {b!r}. \n{msg}." if b.ndim <= 3 or b.size < 500 else f" {msg}"
        self.assertEqual(
            a.shape, b.shape, f"Shape mismatch: expected {a.shape}, got {b.shape}.{contents}"
        )
        same = a == b
        if np.issubdtype(a.dtype, np.floating):
            same = np.logical_or(same, np.logical_and(np.isnan(a), np.isnan(b)))
        if np.all(same):
            return
        msgs = [msg]
        diff = np.logical_not(same)
        if a.ndim:
            x, y = a[np.where(diff)], b[np.where(diff)]
            msgs.append(f"not equal where = {np.where(diff)}")
        else:
            x, y = a, b
        msgs += [f"not equal lhs = {x!r}", f"not equal rhs = {y!r}"]
        if a.dtype.kind != b.dtype.kind and {a.dtype.kind, b.dtype.kind} <= {"U", "S", "O"}:
            a, b = (
                np.array([i.encode("utf-8") if isinstance(i, str) else i for i in arr.flat])
                for arr in (a, b)
            )
        np.testing.assert_array_equal(a, b, err_msg="\n".join(msgs))

    def assertNotAllEqual(self, a: Any, b: Any, msg: str | None = None) -> None:
        """Assert ``a`` and ``b`` differ somewhere."""
        try:
            self.assertAllEqual(a, b)
        except AssertionError:
            return
        raise AssertionError(f"The two values are equal at all elements. {msg or ''}")

    def assertAllGreater(self, a: Any, comparison_target: Any) -> None:
        """Assert every element of ``a`` is greater than ``comparison_target``."""
        a, comparison_target = self.evaluate_if_both_tensors(a, comparison_target)
        self.assertGreater(np.min(self._GetNdArray(a)), comparison_target)

    def assertAllLess(self, a: Any, comparison_target: Any) -> None:
        """Assert every element of ``a`` is less than ``comparison_target``."""
        a, comparison_target = self.evaluate_if_both_tensors(a, comparison_target)
        self.assertLess(np.max(self._GetNdArray(a)), comparison_target)

    def assertAllGreaterEqual(self, a: Any, comparison_target: Any) -> None:
        """Assert every element of ``a`` is at least ``comparison_target``."""
        a, comparison_target = self.evaluate_if_both_tensors(a, comparison_target)
        self.assertGreaterEqual(np.min(self._GetNdArray(a)), comparison_target)

    def assertAllLessEqual(self, a: Any, comparison_target: Any) -> None:
        """Assert every element of ``a`` is at most ``comparison_target``."""
        a, comparison_target = self.evaluate_if_both_tensors(a, comparison_target)
        self.assertLessEqual(np.max(self._GetNdArray(a)), comparison_target)

    def _format_subscripts(self, subscripts, value, limit=10, indent=2) -> list[str]:
        prefix = " " * indent
        if np.ndim(value) == 0:
            return [f"{prefix}[0] : {value}"]
        subscripts = np.transpose(subscripts)
        lines = [f"{prefix}{s} : {value[tuple(s)]}" for s in itertools.islice(subscripts, limit)]
        return [*lines, f"{prefix}..."] if len(subscripts) > limit else lines

    def assertAllInRange(
        self, target, lower_bound, upper_bound, open_lower_bound=False, open_upper_bound=False
    ) -> None:
        """Assert every element of ``target`` (ints or floats, no NaN) is in the range."""
        target = self._GetNdArray(target)
        if not (
            np.issubdtype(target.dtype, np.floating) or np.issubdtype(target.dtype, np.integer)
        ):
            raise AssertionError(
                f"The value of {target} does not have an ordered numeric type, instead it has "
                f"type: {target.dtype}"
            )
        nans = np.where(np.isnan(target))
        if np.size(nans):
            raise AssertionError(
                f"{len(nans[0])} of the {np.size(target)} element(s) are NaN. Subscripts(s) and "
                "value(s) of the NaN element(s):\n"
                + "\n".join(self._format_subscripts(nans, target))
            )
        range_str = (
            f"{'(' if open_lower_bound else '['}{lower_bound}, {upper_bound}"
            f"{')' if open_upper_bound else ']'}"
        )
        below = target <= lower_bound if open_lower_bound else target < lower_bound
        above = target >= upper_bound if open_upper_bound else target > upper_bound
        outside = np.where(np.logical_or(below, above))
        if np.size(outside):
            raise AssertionError(
                f"{len(outside[0])} of the {np.size(target)} element(s) are outside the range "
                f"{range_str}. Subscript(s) and value(s) of the offending elements:\n"
                + "\n".join(self._format_subscripts(outside, target))
            )

    def assertAllInSet(self, target: Any, expected_set: Any) -> None:
        """Assert every element of ``target`` is in ``expected_set``."""
        target = self._GetNdArray(target)
        diff = np.setdiff1d(target.flatten(), list(expected_set))
        if np.size(diff):
            raise AssertionError(
                f"{np.size(diff)} unique element(s) are not in the set {expected_set}: {diff}"
            )

    def assertDTypeEqual(self, target: Any, expected_dtype: Any) -> None:
        """Assert the value of ``target`` has NumPy dtype ``expected_dtype``."""
        self.assertEqual(self._GetNdArray(target).dtype, expected_dtype)

    # -- shapes, devices, strings ---------------------------------------------------------------
    def assertShapeEqual(self, input_a: Any, input_b: Any, msg: str | None = None) -> None:
        """Assert two arrays or tensors have the same shape (a tensor's static shape)."""
        shapes = []
        for name, value in (("input_a", input_a), ("input_b", input_b)):
            if not isinstance(value, (np.ndarray, np.generic, Tensor)):
                raise TypeError(
                    f"{name} must be a Numpy ndarray, Numpy scalar, or a Tensor.Instead received "
                    f"{type(value)}"
                )
            shapes.append(value.get_shape().as_list() if isinstance(value, Tensor) else value.shape)
        self.assertAllEqual(shapes[0], shapes[1], msg=msg)

    def assertDeviceEqual(self, device1: Any, device2: Any, msg: str | None = None) -> None:
        """Assert two device names (or specs) are the same once canonical."""
        device1, device2 = _canonical_device(device1), _canonical_device(device2)
        self.assertEqual(device1, device2, f"Devices {device1} and {device2} are not equal. {msg}")

    def assertStartsWith(self, actual: str, expected_start: str, msg: str | None = None) -> None:
        """Assert ``actual.startswith(expected_start)``."""
        if not actual.startswith(expected_start):
            self.fail(
                f"{actual!r} does not start with {expected_start!r}"
                + (f" : {msg!r}" if msg else "")
            )

    def assertDictEqual(self, a: Any, b: Any, msg: str | None = None) -> None:
        """``unittest``'s ``assertDictEqual``, or, where that fails, the same keys with close
        (floats) or equal values, arrays and tensors compared by value."""
        try:
            super().assertDictEqual(a, b, msg)  # type: ignore[misc]
        except Exception:
            self.assertCountEqual(a.keys(), b.keys())
            for k, v in a.items():
                a_k, b_k = self.evaluate_if_both_tensors(v, b[k])
                if np.issubdtype(self._GetNdArray(a_k).dtype, np.floating):
                    self.assertAllClose(a_k, b_k, msg=k)
                else:
                    self.assertAllEqual(a_k, b_k, msg=k)

    # -- errors ---------------------------------------------------------------------------------
    @contextlib.contextmanager
    def assertRaisesWithPredicateMatch(
        self, exception_type: Any, expected_err_re_or_predicate: Any
    ) -> Iterator[None]:
        """A context expecting an ``exception_type`` whose message matches the regular
        expression (searched), or for which the predicate is true."""
        if callable(expected_err_re_or_predicate):
            predicate = expected_err_re_or_predicate
        else:

            def predicate(e: BaseException) -> bool:
                text = e.message if isinstance(e, errors.OpError) else str(e)
                logger.info("Searching within error strings: '%s' within '%s'",
                            expected_err_re_or_predicate, text)  # fmt: skip
                return re.search(expected_err_re_or_predicate, str(text)) is not None

        try:
            yield
            self.fail(f"{exception_type.__name__} not raised")  # type: ignore[attr-defined]
        except Exception as e:
            if not isinstance(e, exception_type) or not predicate(e):
                raise AssertionError(f"Exception of type {type(e)}: {e}") from e

    def assertRaisesOpError(self, expected_err_re_or_predicate: Any):
        """A context expecting a ``tf.errors.OpError`` matching the pattern or predicate."""
        return self.assertRaisesWithPredicateMatch(errors.OpError, expected_err_re_or_predicate)

    def assertRaisesIncompatibleShapesError(self, exception_type=errors.InvalidArgumentError):
        """A context expecting an error about shapes that do not broadcast."""
        return self.assertRaisesWithPredicateMatch(
            exception_type,
            r"Incompatible shapes|Dimensions must be equal|required broadcastable shapes",
        )
