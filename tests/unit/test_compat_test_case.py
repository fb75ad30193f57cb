"""tf.test under compat.v1: TF1 test cases run on tf.test.TestCase, and the test case's
sessions, evaluate, assertions, threads and temp dirs behave as TensorFlow's.

The classes ``SessionBasicsTest`` and ``VariableBasicsTest`` are test cases as a TF1 program's
authors write them (sessions, fetches, errors, variables through ``self.cached_session()``,
``eval`` and the assertions); pytest collects them as it collects any ``unittest.TestCase``.
The other tests run small test cases through ``unittest`` and look at what passed and what
failed, so each check can fail.
"""

from __future__ import annotations

import collections
import os
import subprocess
import sys
import textwrap
import unittest

import dask
import numpy as np
import pytest

import daskgraph.compat.v1 as tf


# -- TF1 test cases written on tf.test.TestCase -------------------------------------------------
# Behaviours TensorFlow's own session and variable tests also check, written as a TF1 user's
# test case would; pytest collects these unittest classes as it collects any other.
class SessionBasicsTest(tf.test.TestCase):
    def testEvalInASessionOfAGraphThatIsNotTheDefault(self):
        graph = tf.Graph()
        with graph.as_default(), tf.device("/cpu:0"):
            dot = tf.matmul(tf.constant([[1.0, 2.0]]), tf.constant([[3.0], [4.0]]))
        self.assertIsNot(tf.get_default_graph(), graph)
        with tf.Session(graph=graph) as sess:
            self.assertIs(sess.graph, graph)
            self.assertAllClose(dot.eval(), [[11.0]])  # 1 * 3 + 2 * 4

    def testASessionOpenedUnderAGraphRunsIt(self):
        with tf.Graph().as_default() as graph:
            total = tf.reduce_sum(tf.range(5)) * 3
            with tf.Session() as sess:
                self.assertIs(sess.graph, graph)
                self.assertEqual(total.eval(), 30)

    def testScalarFetchesKeepTheirNumpyType(self):
        pairs = {
            np.int32: (3, -5),
            np.int64: (2**40, 1),
            np.float32: (0.25, 1.5),
            np.float64: (1e-3, 2.0),
        }
        with self.cached_session() as sess:
            for kind, (left, right) in pairs.items():
                diff = tf.subtract(tf.constant(kind(left)), tf.constant(kind(right), shape=[]))
                alone = sess.run(diff)
                (in_a_tuple,) = sess.run((diff,))
                for got in (alone, in_a_tuple):
                    self.assertIs(type(got), kind)
                    self.assertEqual(got, kind(left) - kind(right))

    def testFetchesComeBackInTheRequestedStructure(self):
        with self.cached_session() as sess:
            rows = tf.constant([[1.0, 0.0, 2.0], [0.0, 3.0, 0.0]])
            ones = tf.ones([3, 1])
            sums = tf.matmul(rows, ones)
            for got in (sess.run(sums), sums.eval(), self.evaluate(sums)):
                self.assertAllEqual(got, [[3.0], [3.0]])
            got = sess.run({"sums": sums, "inputs": [rows, ones]})
            self.assertEqual(sorted(got), ["inputs", "sums"])
            self.assertIsInstance(got["inputs"], list)
            self.assertAllEqual(got["inputs"][0][1], [0.0, 3.0, 0.0])
            self.assertEqual(got["inputs"][1].shape, (3, 1))
            self.assertAllEqual(got["sums"].ravel(), [3.0, 3.0])

    def testTheRunErrorNamesTheUnfedPlaceholder(self):
        with self.cached_session():
            hole = tf.placeholder(tf.int32, [2], name="hole")
            doubled = hole * 2
            with self.assertRaisesOpError(lambda err: err.op == hole.op):
                doubled.eval()
            self.assertAllEqual(doubled.eval({hole: [4, 5]}), [8, 10])

    def testFetchingAMissingNameIsAValueError(self):
        with self.cached_session() as sess:
            tf.constant(3.5, name="present")
            self.assertEqual(sess.run("present:0"), 3.5)
            with self.assertRaisesRegex(ValueError, "'absent:0' refers to a Tensor which does not"):
                sess.run("absent:0")


class VariableBasicsTest(tf.test.TestCase):
    def testNamesShapesAndInitialization(self):
        with self.cached_session():
            first = tf.Variable([1.5, 2.5, 3.5])
            second = tf.Variable(np.zeros((2, 2), np.int32))
            named = tf.Variable(-4.0, name="bias")
            self.assertEqual(
                [v.name for v in (first, second, named)], ["Variable:0", "Variable_1:0", "bias:0"]
            )
            self.assertEqual(first.get_shape().as_list(), [3])
            self.assertEqual(second.shape.as_list(), [2, 2])
            for variable in (first, second, named):
                with self.assertRaisesOpError("Attempting to use uninitialized value"):
                    variable.eval()
            tf.variables_initializer([named]).run()
            self.assertEqual(named.eval(), -4.0)
            with self.assertRaisesOpError("uninitialized value Variable_1"):
                second.eval()
            tf.initialize_all_variables().run()
            self.assertAllClose(first.eval(), [1.5, 2.5, 3.5])
            self.assertAllEqual(second.eval(), [[0, 0], [0, 0]])

    def testAssignOpsReturnTheNewValue(self):
        with self.cached_session() as sess:
            counter = tf.Variable(10)
            take_three = counter.assign_sub(3)
            add_five = counter.assign_add(5)
            reset = counter.assign(1)
            sess.run(tf.global_variables_initializer())
            steps = [take_three, add_five, add_five, reset, take_three]
            seen = []
            for step in steps:
                seen.append((int(sess.run(step)), int(counter.eval())))
            self.assertEqual(seen, [(7, 7), (12, 12), (17, 17), (1, 1), (-2, -2)])

    def testVariablesServeAsTensors(self):
        with self.cached_session() as sess:
            weights = tf.Variable([[1.0, -1.0], [2.0, 0.5]])
            bias = tf.Variable([0.25, 0.75])
            out = tf.matmul(tf.constant([[2.0, 4.0]]), weights) + bias
            sess.run(tf.global_variables_initializer())
            self.assertAllClose(sess.run(out), [[10.25, 0.75]])  # [2 + 8, -2 + 2] + bias
            self.assertAllClose(sess.run(weights)[1], [2.0, 0.5])
            self.assertAllEqual(self.evaluate(tf.shape(weights)), [2, 2])

    def testStateOpsFollowTheVariablesDevice(self):
        with tf.device("/job:ps/task:1"):
            table = tf.Variable([1, 2], name="table")
        with tf.device("/job:worker/task:3"):
            overwrite = table.assign([3, 4])
            bump = table.assign_add([1, 1])
            doubled = table * 2
        for state_op in (overwrite, bump):
            self.assertDeviceEqual(state_op.device, "/job:ps/task:1")
            self.assertEqual(state_op.op.colocation_groups(), [b"loc:@table"])
        self.assertDeviceEqual(doubled.device, "/job:worker/task:3")


# -- the test case's machinery ------------------------------------------------------------------
class Recorder(unittest.TestResult):
    """A unittest result that keeps each failure's and error's exception."""

    def __init__(self) -> None:
        super().__init__()
        self.raised: dict[str, tuple[str, BaseException]] = {}

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self.raised[test.id().rsplit(".", 1)[-1]] = ("failure", err[1])

    def addError(self, test, err):
        super().addError(test, err)
        self.raised[test.id().rsplit(".", 1)[-1]] = ("error", err[1])


def run_case(case: type[unittest.TestCase], *names: str) -> Recorder:
    """Run test methods of ``case`` with unittest; the result keeps failures and errors."""
    result = Recorder()
    unittest.TestSuite([case(name) for name in names]).run(result)
    return result


def outcome(result: Recorder) -> dict[str, str]:
    """Test method -> "failure: Type: message" / "error: ..." / "skipped: reason" for those
    that did not pass."""
    found = {
        name: f"{kind}: {type(exc).__name__}: {exc}" for name, (kind, exc) in result.raised.items()
    }
    for test, reason in result.skipped:
        found[test.id().rsplit(".", 1)[-1]] = f"skipped: {reason}"
    return found


def test_each_test_gets_a_fresh_default_graph_and_tensorflows_seeds() -> None:
    seen = []

    class Case(tf.test.TestCase):
        def testOne(self):
            tf.constant(1.0, name="c")
            seen.append((tf.get_default_graph(), np.random.randint(1000)))
            self.assertEqual(tf.get_default_graph().seed, 87654321)

        def testTwo(self):
            self.assertEqual(tf.get_default_graph().get_operations(), [])
            seen.append((tf.get_default_graph(), np.random.randint(1000)))

    result = run_case(Case, "testOne", "testTwo")
    assert result.wasSuccessful(), outcome(result)
    assert seen[0][0] is not seen[1][0]
    assert seen[0][1] == seen[1][1]  # np.random seeded with 87654321 in each setUp


def test_session_sets_defaults_and_constrains_devices() -> None:
    class Case(tf.test.TestCase):
        def testDefaults(self):
            with self.session() as sess:
                self.assertIs(tf.get_default_session(), sess)
                self.assertIs(tf.get_default_graph(), sess.graph)
                self.assertTrue(sess.config.allow_soft_placement)
                self.assertEqual(tf.constant(1.0).op.device, "")
                self.assertAllEqual(self.evaluate(tf.constant([1, 2]) * 2), [2, 4])
            self.assertIsNone(tf.get_default_session())

        def testCpuOnly(self):
            with self.session(use_gpu=False):
                self.assertEqual(tf.constant(1.0).op.device, "/device:CPU:0")

        def testForceGpu(self):
            with self.session(force_gpu=True) as sess:
                self.assertEqual(tf.constant(1.0).op.device, "/device:GPU:0")
                self.assertFalse(sess.config.allow_soft_placement)

        def testGivenGraph(self):
            graph = tf.Graph()
            with self.session(graph=graph) as sess:
                self.assertIs(sess.graph, graph)
                self.assertIs(tf.get_default_graph(), graph)

    names = ("testDefaults", "testCpuOnly", "testForceGpu", "testGivenGraph")
    result = run_case(Case, *names)
    assert result.wasSuccessful(), outcome(result)


def test_force_gpu_without_a_gpu_fails_the_run_as_tensorflow() -> None:
    class Case(tf.test.TestCase):
        def testForced(self):
            with self.session(force_gpu=True):
                self.evaluate(tf.constant(1.0) + 1.0)

    with dask.config.set({"daskgraph.virtual-gpus": 0}):
        if tf.test.is_gpu_available():
            pytest.skip("this machine has a GPU")
        found = outcome(run_case(Case, "testForced"))
    assert found["testForced"].startswith("error: InvalidArgumentError: Cannot assign a device")


def test_cached_session_is_one_session_per_test() -> None:
    sessions = []

    class Case(tf.test.TestCase):
        def testCached(self):
            with self.cached_session() as first:
                pass
            with self.cached_session() as second:
                self.assertIs(first, second)
            with self.test_session() as third:
                self.assertIs(first, third)
            sessions.append(first)
            with self.assertRaisesRegex(ValueError, "The graph used to get the cached session"):
                with self.cached_session(graph=tf.Graph()):
                    pass

        def testEvaluateWithoutSession(self):
            value = self.evaluate(
                {"a": tf.constant(1.0), "b": (tf.constant([2, 3]), [tf.constant(4)])}
            )
            self.assertAllEqual(value["a"], 1.0)
            self.assertAllEqual(value["b"][0], [2, 3])
            self.assertEqual(value["b"][1], [4])
            sessions.append(self._cached_session)

    result = run_case(Case, "testCached", "testEvaluateWithoutSession")
    assert result.wasSuccessful(), outcome(result)
    assert all(s.closed for s in sessions)  # closed in tearDown
    assert sessions[0] is not sessions[1]


def test_a_method_named_test_session_skips_itself() -> None:
    assert "test_session" in unittest.TestLoader().getTestCaseNames(tf.test.TestCase)
    found = outcome(run_case(tf.test.TestCase, "test_session"))
    assert found == {"test_session": "skipped: Not a test."}


def test_evaluate_keeps_nested_structures() -> None:
    Pair = collections.namedtuple("Pair", "x y")

    class Case(tf.test.TestCase):
        def testNested(self):
            with self.cached_session():
                got = self.evaluate(
                    [Pair(tf.constant(1), tf.constant([2.0])), {"k": tf.constant(3)}]
                )
                self.assertIsInstance(got[0], Pair)
                self.assertEqual(
                    (int(got[0].x), got[0].y.tolist(), int(got[1]["k"])), (1, [2.0], 3)
                )
                self.assertAllClose(Pair(tf.constant(1.0), [1.0, 2.0]), Pair(1.0, [1.0, 2.0]))

    result = run_case(Case, "testNested")
    assert result.wasSuccessful(), outcome(result)


def test_assertions_pass_and_fail_as_tensorflows() -> None:
    class Case(tf.test.TestCase):
        def testClosePasses(self):
            self.assertAllClose(
                {"a": [1.0, 2.0], "b": (3.0,)}, {"a": [1.0, 2.0 + 1e-7], "b": (3.0,)}
            )
            self.assertAllClose(1.0, 1.05, atol=0.1)
            self.assertAllCloseAccordingToType(np.float32([1.0]), np.float32([1.0 + 5e-7]))
            self.assertAllCloseAccordingToType(np.float16([1.0]), np.float16([1.0005]))
            self.assertAllEqual([np.nan, 1.0], [np.nan, 1.0])
            self.assertAllEqual(np.array([b"a", b"b"]), ["a", "b"])  # bytes fetched, str expected
            self.assertNotAllClose([1.0], [1.1])
            self.assertNotAllEqual([1, 2], [1, 3])
            self.assertAllGreater([2, 3], 1)
            self.assertAllLess([2, 3], 4)
            self.assertAllGreaterEqual([2, 3], 2)
            self.assertAllLessEqual(tf.constant([2, 3]), 3)
            self.assertAllInRange([0.0, 1.0], 0.0, 1.0)
            self.assertAllInSet([1, 2, 1], {1, 2})
            self.assertArrayNear([1.0, 2.0], [1.001, 2.0], 0.01)
            self.assertNear(1.0, 1.001, 0.01)
            self.assertNDArrayNear(np.ones((2, 2)), np.ones((2, 2)) + 1e-4, 1e-3)
            self.assertShapeEqual(np.zeros((2, 3)), tf.placeholder(tf.float32, [2, 3]))
            self.assertDeviceEqual("/cpu:0", "/device:CPU:0")
            self.assertDeviceEqual(tf.DeviceSpec(job="ps"), "/job:ps")
            self.assertStartsWith("tensorflow", "tensor")
            self.assertLen([1, 2], 2)  # absltest's

        def testCloseDefaultTolerance(self):
            self.assertAllClose([1.0], [1.0 + 1e-5])  # rtol = atol = 1e-6 in TensorFlow

        def testCloseFloat64StaysStrict(self):
            self.assertAllCloseAccordingToType(np.float64([1.0]), np.float64([1.0 + 5e-6]))

        def testCloseKeys(self):
            self.assertAllClose({"a": 1.0}, [1.0])

        def testCloseNested(self):
            self.assertAllClose([{"k": 1.0}], [{"k": 1.001}])

        def testEqualShapes(self):
            self.assertAllEqual([1, 2], [[1, 2]])

        def testInRange(self):
            self.assertAllInRange([0.5, 2.0], 0.0, 1.0)

        def testInRangeNaN(self):
            self.assertAllInRange([0.5, np.nan], 0.0, 1.0)

        def testGreater(self):
            self.assertAllGreater(tf.constant([1, 3]), 1)

        def testDevice(self):
            self.assertDeviceEqual("/gpu:0", "/cpu:0")

        def testStartsWith(self):
            self.assertStartsWith("tensorflow", "flow")

    found = outcome(
        run_case(Case, *[n for n in dir(Case) if n.startswith("test") and n != "test_session"])
    )
    assert "testClosePasses" not in found, found.get("testClosePasses")
    for name in ("testCloseDefaultTolerance", "testCloseFloat64StaysStrict", "testEqualShapes"):
        assert found[name].startswith("failure: AssertionError"), (name, found[name])
    assert found["testCloseKeys"] == "error: ValueError: Can't compare dict to non-dict, a vs b. "
    assert "Mismatched value: a[0][k] is different from b[0][k]" in found["testCloseNested"]
    assert "1 of the 2 element(s) are outside the range [0.0, 1.0]" in found["testInRange"]
    assert "1 of the 2 element(s) are NaN" in found["testInRangeNaN"]
    assert found["testGreater"].endswith("1) not greater than 1")  # min(1, 3) is np.int32(1)
    assert "Devices /device:GPU:0 and /device:CPU:0 are not equal" in found["testDevice"]
    assert (
        found["testStartsWith"]
        == "failure: AssertionError: 'tensorflow' does not start with 'flow'"
    )


def test_raises_op_error_matches_message_or_predicate() -> None:
    class Case(tf.test.TestCase):
        def testMatches(self):
            with self.cached_session():
                x = tf.placeholder(tf.float32, name="x")
                with self.assertRaisesOpError("x"):
                    self.evaluate(x)
                with self.assertRaisesWithPredicateMatch(
                    tf.errors.InvalidArgumentError, lambda e: True
                ):
                    self.evaluate(x)

        def testWrongMessage(self):
            with self.cached_session():
                with self.assertRaisesOpError("no such words"):
                    self.evaluate(tf.placeholder(tf.float32))

        def testNotRaised(self):
            with self.assertRaisesOpError("anything"):
                pass

    found = outcome(run_case(Case, "testMatches", "testWrongMessage", "testNotRaised"))
    assert "testMatches" not in found, found.get("testMatches")
    assert found["testWrongMessage"].startswith("failure: AssertionError: Exception of type")
    assert found["testNotRaised"].startswith("failure: AssertionError: Exception of type")
    assert "OpError not raised" in found["testNotRaised"]


def test_checked_threads_report_their_errors() -> None:
    class Case(tf.test.TestCase):
        def testRaises(self):
            def boom():
                raise RuntimeError("in the thread")

            thread = self.checkedThread(boom)
            thread.start()
            thread.join()

        def testNotJoined(self):
            self.checkedThread(lambda: None).start()

        def testFine(self):
            box = []
            thread = self.checkedThread(box.append, args=(1,))
            thread.start()
            thread.join()
            self.assertEqual(box, [1])

    found = outcome(run_case(Case, "testRaises", "testNotJoined", "testFine"))
    assert found == {
        "testRaises": "failure: AssertionError: Error in checkedThread: in the thread",
        "testNotJoined": "failure: AssertionError: A checked thread was not joined.",
    }


def test_temp_dirs() -> None:
    dirs = []

    class Case(tf.test.TestCase):
        def testDir(self):
            dirs.append(self.get_temp_dir())
            self.assertEqual(self.get_temp_dir(), dirs[-1])

    assert run_case(Case, "testDir", "testDir").wasSuccessful()
    assert dirs[0] != dirs[1]
    assert all(os.path.dirname(d) == tf.test.get_temp_dir() and os.path.isdir(d) for d in dirs)


# -- GPUs, gradients, main ----------------------------------------------------------------------
def test_gpu_questions_follow_the_virtual_gpus_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    from daskgraph.compat import local_devices

    monkeypatch.setattr(local_devices, "visible_gpus", lambda: [])  # as on a machine without
    with dask.config.set({"daskgraph.virtual-gpus": 0}):
        assert (tf.test.is_gpu_available(), tf.test.gpu_device_name()) == (False, "")
    with dask.config.set({"daskgraph.virtual-gpus": 2}):
        assert (tf.test.is_gpu_available(), tf.test.gpu_device_name()) == (True, "/device:GPU:0")
        assert not tf.test.is_gpu_available(cuda_only=True)  # virtual GPUs are not CUDA ones
        assert not tf.test.is_gpu_available(min_cuda_compute_capability=(3, 0))
        assert tf.test.is_built_with_gpu_support()
    assert (tf.test.is_built_with_rocm(), tf.test.is_built_with_xla()) == (False, False)
    assert tf.test.mock is unittest.mock


def test_compute_gradient_jacobians() -> None:
    x_value = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    w_value = np.array([[1.0, -1.0], [0.5, 2.0], [0.0, 1.0]])
    with tf.Graph().as_default(), tf.Session():
        x = tf.placeholder(tf.float64, [2, 3])
        y = tf.matmul(x, tf.constant(w_value)) ** 2
        theoretical, numeric = tf.test.compute_gradient(x, [2, 3], y, [2, 2], x_init_value=x_value)
        # d y[i, j] / d x[i, k] = 2 (x w)[i, j] w[k, j]; rows: x's elements, columns: y's
        xw = x_value @ w_value
        expected = np.zeros((6, 4))
        for i in range(2):
            for k in range(3):
                for j in range(2):
                    expected[i * 3 + k, i * 2 + j] = 2 * xw[i, j] * w_value[k, j]
        np.testing.assert_allclose(theoretical, expected, rtol=1e-12)
        np.testing.assert_allclose(numeric, expected, rtol=1e-6, atol=1e-6)
        error = tf.test.compute_gradient_error(x, [2, 3], y, [2, 2], x_init_value=x_value)
        assert error < 1e-6
        a = tf.constant([1.0, 2.0], dtype=tf.float64)
        b = tf.constant([3.0], dtype=tf.float64)
        pairs = tf.test.compute_gradient([a, b], [[2], [1]], a * b, [2])
        np.testing.assert_allclose(pairs[0][0], [[3.0, 0.0], [0.0, 3.0]])
        np.testing.assert_allclose(pairs[1][0], [[1.0, 2.0]])
        with pytest.raises(ValueError, match="x_shape = \\[3\\], init_data shape = \\[2\\]"):
            tf.test.compute_gradient(a, [3], a * 2.0, [2], x_init_value=np.ones(2))
        with pytest.raises(TypeError, match="Don't support type int32 for x"):
            i = tf.constant([1, 2])
            tf.test.compute_gradient(i, [2], i * 2, [2])


def test_compute_gradient_finds_a_wrong_gradient() -> None:
    @tf.RegisterGradient("DgTestWrongSquareGrad")
    def _wrong(op, grad):
        return [grad * op.inputs[0]]  # the true gradient is 2 x grad

    with tf.Graph().as_default() as g, tf.Session():
        x = tf.placeholder(tf.float64, [3])
        with g.gradient_override_map({"Square": "DgTestWrongSquareGrad"}):
            y = tf.square(x)
        error = tf.test.compute_gradient_error(
            x, [3], y, [3], x_init_value=np.array([1.0, 2.0, 3.0])
        )
    assert abs(error - 3.0) < 1e-6  # |3 - 6| at x = 3


MAIN = textwrap.dedent(
    """
    import daskgraph.compat.v1 as tf

    class Case(tf.test.TestCase):
        def testPasses(self):
            self.assertAllEqual(tf.get_default_graph().get_operations(), [])

        def testFails(self):
            self.assertAllClose([1.0], [2.0])

    if __name__ == "__main__":
        tf.test.main()
    """
)


def test_main_runs_the_tests_of_main_and_exits_with_their_status(tmp_path) -> None:
    script = tmp_path / "some_test.py"
    script.write_text(MAIN)
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 1, done.stderr
    assert "Ran 3 tests" in done.stderr  # with the test_session that skips itself
    assert "FAILED (failures=1, skipped=1)" in done.stderr
    assert "FAIL: testFails" in done.stderr and "testPasses" not in done.stderr.split("FAIL")[0]


# last: a cluster of another shape (a virtual GPU) replaces the default one
def test_force_gpu_runs_on_a_virtual_gpu() -> None:
    class Case(tf.test.TestCase):
        def testOnGpu(self):
            with self.session(force_gpu=True) as sess:
                y = tf.constant([1.0, 2.0]) * 3.0
                self.assertAllClose(self.evaluate(y), [3.0, 6.0])
                plan = sess.placement(y)
                self.assertEqual(
                    {o.assigned for o in plan.ops}, {"/job:localhost/replica:0/task:0/device:GPU:0"}
                )

    config = {"daskgraph.virtual-gpus": 1, "daskgraph.local.processes": False}
    with dask.config.set(config):
        result = run_case(Case, "testOnGpu")
    assert result.wasSuccessful(), outcome(result)
