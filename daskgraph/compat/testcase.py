"""``tf.test.TestCase``: TensorFlow 1's test case, so TensorFlow's own test methods run here.

Its one job is the test case's life cycle and sessions, as TensorFlow's ``test_util`` has
them (the array assertions are :class:`~daskgraph.compat.assertions.ArrayAssertions`):

* it is an ``absltest.TestCase`` (so a ``unittest.TestCase``: ``assertLen``,
  ``assertEmpty``, ... are there), and ``setUp`` gives every test a fresh default graph,
  with the graph seed and NumPy's and Python's seeds set to TensorFlow's 87654321;
* ``self.session(graph=None, config=None, use_gpu=True, force_gpu=False)`` is a new
  :class:`~daskgraph.Session` (soft placement on unless ``force_gpu``) made the default
  session, with its graph the default graph; ``force_gpu`` puts the ops built inside under
  ``/device:GPU:0``, ``use_gpu=False`` under ``/device:CPU:0``;
  ``self.cached_session(...)`` is one session kept for the whole test (closed in
  ``tearDown``), ``self.test_session(...)`` TF1's older name of it;
* ``self.evaluate(tensors)`` runs a nested structure of tensors in the default session
  (the cached session when there is none); ``self.get_temp_dir()`` is a folder per test;
  ``self.checkedThread(target)`` is a thread whose exception fails the test at ``join``;
* ``self.assertProtoEquals(expected, message)`` compares protocol buffers as TensorFlow's
  does: ``expected`` a message or its text format (parsed into ``message``'s type).

A method named ``test_session`` is collected by unittest (and pytest) as a test; it skips
itself, as in TensorFlow.
"""

from __future__ import annotations

import contextlib
import copy
import random
import tempfile
import threading
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
from absl.testing import absltest
from google.protobuf import text_format

from daskgraph.compat.assertions import ArrayAssertions
from daskgraph.compat.local_devices import gpu_device_name
from daskgraph.compat.sessions import ConfigProto
from daskgraph.framework import default_session
from daskgraph.framework.graph import Graph, reset_default_graph
from daskgraph.ops.random import DEFAULT_GRAPH_SEED, set_random_seed
from daskgraph.runtime.client.session import Session

__all__ = ["TestCase", "get_temp_dir"]

_temp_dir: list[tempfile.TemporaryDirectory] = []  # the process's folder for tests, made once


def get_temp_dir() -> str:
    """A temporary folder for this process's tests (``tf.test.get_temp_dir``), made on the
    first call and removed when the process exits."""
    if not _temp_dir:
        _temp_dir.append(tempfile.TemporaryDirectory(prefix="daskgraph_test_"))
    return _temp_dir[0].name


def _session_config(config: Any, force_gpu: bool) -> Any:
    """TensorFlow's test config: soft placement unless ``force_gpu`` (a copy when changed)."""
    if config is None:
        return ConfigProto(allow_soft_placement=not force_gpu)
    if force_gpu and config.allow_soft_placement:
        config = copy.deepcopy(config)
        config.allow_soft_placement = False
    return config


class _CheckedThread:
    """A thread whose exception fails its test at :meth:`join` (``self.checkedThread``)."""

    def __init__(self, testcase: TestCase, target: Callable[..., Any], args=None, kwargs=None):
        self._testcase = testcase
        self._target = target
        self._args = () if args is None else args
        self._kwargs = {} if kwargs is None else kwargs
        self._thread = threading.Thread(target=self._protected_run)
        self._exception: Exception | None = None
        self._is_thread_joined = False

    def _protected_run(self) -> None:
        try:
            self._target(*self._args, **self._kwargs)
        except Exception as e:
            self._exception = e

    def start(self) -> None:
        """Start the thread (at most once)."""
        self._thread.start()

    def join(self) -> None:
        """Wait for the thread; fail the test if its target raised."""
        self._is_thread_joined = True
        self._thread.join()
        if self._exception is not None:
            self._testcase.fail(f"Error in checkedThread: {self._exception}")

    def is_alive(self) -> bool:
        """Whether the thread is running."""
        return self._thread.is_alive()

    def check_termination(self) -> None:
        """Fail the test if the thread was never joined (``tearDown`` calls this)."""
        if not self._is_thread_joined:
            self._testcase.fail("A checked thread was not joined.")
        if self.is_alive():
            raise RuntimeError(
                "Thread was not joined with main thread, and is still running when the test "
                "finished."
            )


class TestCase(ArrayAssertions, absltest.TestCase):
    """TensorFlow 1's ``tf.test.TestCase`` over daskgraph sessions (see the module)."""

    def __init__(self, methodName: str = "runTest") -> None:
        super().__init__(methodName)
        self._threads: list[_CheckedThread] = []
        self._tempdir: str | None = None
        self._cached_session: Session | None = None
        self._cached_args: tuple[Any, Any, bool] = (None, None, False)

    def setUp(self) -> None:
        """A fresh default graph and TensorFlow's seeds for every test."""
        super().setUp()
        self._clear_cached_session()
        random.seed(DEFAULT_GRAPH_SEED)
        np.random.seed(DEFAULT_GRAPH_SEED)
        reset_default_graph()
        set_random_seed(DEFAULT_GRAPH_SEED)
        if self.id().endswith(".test_session"):
            self.skipTest("Not a test.")

    def tearDown(self) -> None:
        """Check the checked threads were joined; close the cached session."""
        for thread in self._threads:
            thread.check_termination()
        self._clear_cached_session()
        super().tearDown()

    def _clear_cached_session(self) -> None:
        if self._cached_session is not None:
            self._cached_session.close()
            self._cached_session = None

    def get_temp_dir(self) -> str:
        """A temporary folder of this test (the same one for every call in the test)."""
        if not self._tempdir:
            self._tempdir = tempfile.mkdtemp(dir=get_temp_dir())
        return self._tempdir

    # -- sessions -------------------------------------------------------------------------------
    @contextlib.contextmanager
    def _constrain_devices_and_set_default(
        self, sess: Session, use_gpu: bool, force_gpu: bool
    ) -> Iterator[Session]:
        with sess.graph.as_default(), sess.as_default():
            if force_gpu:
                with sess.graph.device(gpu_device_name() or "/device:GPU:0"):
                    yield sess
            elif use_gpu:
                yield sess
            else:
                with sess.graph.device("/device:CPU:0"):
                    yield sess

    @contextlib.contextmanager
    def session(
        self,
        graph: Graph | None = None,
        config: Any = None,
        use_gpu: bool = True,
        force_gpu: bool = False,
    ) -> Iterator[Session]:
        """A new session (closed at the end of the block), the default session, on ``graph``
        (the default graph), made the default graph; ``force_gpu`` puts the ops built in the
        block on ``/device:GPU:0`` (no soft placement), ``use_gpu=False`` on the CPU."""
        with Session(graph=graph, config=_session_config(config, force_gpu)) as sess:
            with self._constrain_devices_and_set_default(sess, use_gpu, force_gpu):
                yield sess

    def _get_cached_session(
        self, graph: Graph | None, config: Any, force_gpu: bool, check: bool
    ) -> Session:
        if self._cached_session is None:
            self._cached_session = Session(graph=graph, config=_session_config(config, force_gpu))
            self._cached_args = (graph, config, force_gpu)
            return self._cached_session
        if check:
            for what, given, cached in zip(
                ("graph", "config", "force_gpu"), (graph, config, force_gpu), self._cached_args,
                strict=True,
            ):  # fmt: skip
                if given is not cached:
                    raise ValueError(
                        f"The {what} used to get the cached session is different than the "
                        "one that was used to create the session. Maybe create a new session "
                        "with self.session()"
                    )
        return self._cached_session

    @contextlib.contextmanager
    def cached_session(
        self,
        graph: Graph | None = None,
        config: Any = None,
        use_gpu: bool = True,
        force_gpu: bool = False,
    ) -> Iterator[Session]:
        """As :meth:`session`, but one session for the whole test, closed in ``tearDown``
        (``ValueError`` when asked with another graph, config or ``force_gpu``)."""
        sess = self._get_cached_session(graph, config, force_gpu, check=True)
        with self._constrain_devices_and_set_default(sess, use_gpu, force_gpu) as cached:
            yield cached

    @contextlib.contextmanager
    def test_session(
        self,
        graph: Graph | None = None,
        config: Any = None,
        use_gpu: bool = True,
        force_gpu: bool = False,
    ) -> Iterator[Session]:
        """TF1's older :meth:`cached_session` (a new session when ``graph`` is given)."""
        if self.id().endswith(".test_session"):
            self.skipTest(
                'Tests that have the name "test_session" are automatically skipped by '
                "TensorFlow test fixture, as the name is reserved for creating sessions within "
                "tests. Please rename your test if you have a test with this name."
            )
        if graph is None:
            sess = self._get_cached_session(graph, config, force_gpu, check=False)
            with self._constrain_devices_and_set_default(sess, use_gpu, force_gpu) as cached:
                yield cached
        else:
            with self.session(graph, config, use_gpu, force_gpu) as sess:
                yield sess

    def evaluate(self, tensors: Any) -> Any:
        """The values of a tensor or a nested list/tuple/dict of tensors (NumPy), run in the
        default session, or in the cached session when there is none."""
        if tensors is None:
            return None
        sess = default_session.current()
        if sess is None:
            with self.test_session() as cached:
                return cached.run(tensors)
        return sess.run(tensors)

    # -- protocol buffers -----------------------------------------------------------------------
    def assertProtoEquals(self, expected_message_maybe_ascii: Any, message: Any, msg=None) -> None:
        """Fail unless ``message`` equals ``expected_message_maybe_ascii``: a message of its
        type, or text (``str`` or ``bytes``) parsed into one with protobuf's ``text_format``;
        the failure shows both messages' text formats."""
        expected = expected_message_maybe_ascii
        if isinstance(expected, (str, bytes)):
            expected = text_format.Merge(expected, type(message)())
        elif not isinstance(expected, type(message)):
            raise AssertionError(
                f"Can't compare protos of type {type(expected)} and {type(message)}."
            )
        if expected != message:
            self.assertMultiLineEqual(
                text_format.MessageToString(expected), text_format.MessageToString(message), msg
            )

    # -- threads --------------------------------------------------------------------------------
    def checkedThread(
        self, target: Callable[..., Any], args: tuple | None = None, kwargs: dict | None = None
    ) -> _CheckedThread:
        """A thread running ``target(*args, **kwargs)``; call ``start()`` then ``join()``,
        which fails the test if ``target`` raised."""
        thread = _CheckedThread(self, target, args, kwargs)
        self._threads.append(thread)
        return thread
