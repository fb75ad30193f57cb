"""``tf.test``: TensorFlow 1's testing namespace.

Its one job is to gather that namespace: ``TestCase`` (:mod:`daskgraph.compat.testcase`),
``main`` (absl's test runner, as TensorFlow's), ``get_temp_dir``, ``is_gpu_available``,
``gpu_device_name`` and ``is_built_with_*`` (:mod:`daskgraph.compat.local_devices`),
``compute_gradient`` and ``compute_gradient_error``
(:mod:`daskgraph.compat.gradient_checker`), and ``mock`` (:mod:`unittest.mock`).

>>> mock is __import__("unittest.mock").mock and callable(TestCase.assertAllClose)
True
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from unittest import mock

from absl import app as _absl_app
from absl.testing import absltest as _absltest

from daskgraph.compat.gradient_checker import compute_gradient, compute_gradient_error
from daskgraph.compat.local_devices import (
    gpu_device_name,
    is_built_with_cuda,
    is_built_with_gpu_support,
    is_built_with_rocm,
    is_built_with_xla,
    is_gpu_available,
)
from daskgraph.compat.testcase import TestCase, get_temp_dir

__all__ = [
    "TestCase",
    "compute_gradient",
    "compute_gradient_error",
    "get_temp_dir",
    "gpu_device_name",
    "is_built_with_cuda",
    "is_built_with_gpu_support",
    "is_built_with_rocm",
    "is_built_with_xla",
    "is_gpu_available",
    "main",
    "mock",
]


def main(argv: Sequence[str] | None = None) -> None:
    """Run the test cases of ``__main__`` as TensorFlow's ``tf.test.main``: absl parses the
    flags of ``argv`` (default ``sys.argv``), then absltest runs the tests and exits."""
    args = list(sys.argv if argv is None else argv)
    _absl_app.run(main=lambda remaining: _absltest.main(argv=remaining), argv=args)


def __getattr__(name: str) -> object:
    """A name tf.test does not have: the AttributeError pointing to docs/compat.md."""
    from daskgraph.errors import missing_name

    raise missing_name("tf.test", name, globals())
