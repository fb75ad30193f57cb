"""The names TF1 programs reach for exist in ``daskgraph.compat.v1`` with TF1's signatures and
compute what TensorFlow computes.

Expected values are TensorFlow 2.21's results in graph mode (``tf.compat.v1``), written down
as literals; signatures are those ``inspect.signature`` gives for ``tf.compat.v1.<name>``.
"""

from __future__ import annotations

import contextlib
import inspect
import io

import numpy as np
import pytest

import daskgraph as dg
import daskgraph.compat.v1 as tf
from daskgraph.compat.gradient_check import check_gradients

NAMES = """zeros ones zeros_like ones_like fill range random_normal random_uniform truncated_normal
set_random_seed concat split stack unstack squeeze expand_dims tile gather pad reduce_min
reduce_max reduce_prod reduce_any reduce_all reduce_sum reduce_mean reduce_logsumexp argmax argmin
maximum minimum abs sign pow sqrt square exp log equal not_equal less less_equal greater
greater_equal logical_and logical_or logical_not logical_xor where cond Print assign assign_add
assign_sub initialize_all_variables local_variables_initializer local_variables
variables_initializer global_variables_initializer trainable_variables global_variables
report_uninitialized_variables is_variable_initialized get_variable variable_scope
get_variable_scope errors add subtract multiply divide truediv mod negative rsqrt floor ceil round
clip_by_value matmul identity no_op group tuple control_dependencies name_scope colocate_with
constant_initializer zeros_initializer ones_initializer float32 int32 int64 bool string float16
float64 uint8 as_dtype cast to_float to_int32 to_int64 to_double size rank shape reshape transpose
one_hot nn log1p sin cos squared_difference div realdiv floordiv add_n sigmoid tanh
stop_gradient gradients""".split()

#: tf.compat.v1's signatures: (parameter, default) pairs, "REQ" for required ones
SIGNATURES = {
    "range": [("start", "REQ"), ("limit", None), ("delta", 1), ("dtype", None), ("name", "range")],
    "pad": [
        ("tensor", "REQ"),
        ("paddings", "REQ"),
        ("mode", "CONSTANT"),
        ("name", None),
        ("constant_values", 0),
    ],
    "reduce_any": "reduce",
    "reduce_all": "reduce",
    "reduce_logsumexp": "reduce",
    "reduce_min": "reduce",
    "reduce_max": "reduce",
    "reduce_prod": "reduce",
    "cond": [
        ("pred", "REQ"),
        ("true_fn", None),
        ("false_fn", None),
        ("strict", False),
        ("name", None),
        ("fn1", None),
        ("fn2", None),
    ],
    "Print": [
        ("input_", "REQ"),
        ("data", "REQ"),
        ("message", None),
        ("first_n", None),
        ("summarize", None),
        ("name", None),
    ],
    "assign_sub": [("ref", "REQ"), ("value", "REQ"), ("use_locking", None), ("name", None)],
    "initialize_all_variables": [],
    "local_variables_initializer": [],
    "local_variables": [("scope", None)],
    "report_uninitialized_variables": [
        ("var_list", None),
        ("name", "report_uninitialized_variables"),
    ],
    "is_variable_initialized": [("variable", "REQ")],
    "clip_by_value": [
        ("t", "REQ"),
        ("clip_value_min", "REQ"),
        ("clip_value_max", "REQ"),
        ("name", None),
    ],
    "matmul": [
        ("a", "REQ"),
        ("b", "REQ"),
        ("transpose_a", False),
        ("transpose_b", False),
        ("adjoint_a", False),
        ("adjoint_b", False),
        ("a_is_sparse", False),
        ("b_is_sparse", False),
        ("output_type", None),
        ("grad_a", False),
        ("grad_b", False),
        ("name", None),
    ],
    "tuple": [("tensors", "REQ"), ("name", None), ("control_inputs", None)],
    "to_float": [("x", "REQ"), ("name", "ToFloat")],
    "to_int32": [("x", "REQ"), ("name", "ToInt32")],
    "to_int64": [("x", "REQ"), ("name", "ToInt64")],
    "to_double": [("x", "REQ"), ("name", "ToDouble")],
    "rank": [("input", "REQ"), ("name", None)],
    "reshape": [("tensor", "REQ"), ("shape", "REQ"), ("name", None)],
    "transpose": [("a", "REQ"), ("perm", None), ("name", "transpose"), ("conjugate", False)],
    "identity": [("input", "REQ"), ("name", None)],
    "concat": [("values", "REQ"), ("axis", "REQ"), ("name", "concat")],
    "split": [
        ("value", "REQ"),
        ("num_or_size_splits", "REQ"),
        ("axis", 0),
        ("num", None),
        ("name", "split"),
    ],
    "squeeze": [("input", "REQ"), ("axis", None), ("name", None), ("squeeze_dims", None)],
    "expand_dims": [("input", "REQ"), ("axis", None), ("name", None), ("dim", None)],
    "argmax": [
        ("input", "REQ"),
        ("axis", None),
        ("name", None),
        ("dimension", None),
        ("output_type", tf.int64),
    ],
    "random_uniform": [
        ("shape", "REQ"),
        ("minval", 0),
        ("maxval", None),
        ("dtype", tf.float32),
        ("seed", None),
        ("name", None),
    ],
    "zeros_like": [("tensor", "REQ"), ("dtype", None), ("name", None), ("optimize", True)],
}
for _unary in "rsqrt floor ceil round log1p sin cos abs sign sqrt square exp log negative".split():
    SIGNATURES[_unary] = [("x", "REQ"), ("name", None)]
for _binary in "truediv realdiv div squared_difference maximum minimum pow mod add".split():
    SIGNATURES[_binary] = [("x", "REQ"), ("y", "REQ"), ("name", None)]
_REDUCE = [
    ("input_tensor", "REQ"),
    ("axis", None),
    ("keepdims", None),
    ("name", None),
    ("reduction_indices", None),
    ("keep_dims", None),
]


def _signature(function: object) -> list[tuple[str, object]]:
    parameters = inspect.signature(function).parameters.values()
    return [
        (p.name, "REQ" if p.default is inspect.Parameter.empty else p.default) for p in parameters
    ]


@pytest.mark.parametrize("name", NAMES)
def test_name_exists(name: str) -> None:
    assert hasattr(tf, name), name


@pytest.mark.parametrize("name", sorted(SIGNATURES))
def test_tf1_signature(name: str) -> None:
    expected = SIGNATURES[name]
    assert _signature(getattr(tf, name)) == (_REDUCE if expected == "reduce" else expected)


def test_new_ops_are_native_names_too() -> None:
    for name in "range rank pad cond Print tuple rsqrt floor ceil round clip_by_value".split():
        assert getattr(dg, name) is getattr(dg.ops, name)
    for name in "reduce_any reduce_all reduce_logsumexp assign_sub is_variable_initialized".split():
        assert hasattr(dg, name)


# -- values against TensorFlow's ----------------------------------------------------------------
F = [[0.5, 1.5, 2.5], [-0.5, -1.5, 2.6]]
X = [[1, 2, 3], [4, 5, 6]]
EXPECTED = {
    "range5": ([0, 1, 2, 3, 4], np.int32),
    "range_3_18_3": ([3, 6, 9, 12, 15], np.int32),
    "range_f": ([1.5, 2.0, 2.5], np.float32),
    "range_neg": ([3.0, 2.5, 2.0, 1.5], np.float64),
    "range_i64": ([2, 3, 4, 5, 6], np.int64),
    "range_mixed": ([0.0, 1.0, 2.0], np.float32),
    "pad_c": (
        [[7, 7, 7, 7, 7, 7], [7, 7, 1, 2, 3, 7], [7, 7, 4, 5, 6, 7]],
        np.int32,
    ),
    "pad_r": (
        [
            [6, 5, 4, 5, 6, 5, 4],
            [3, 2, 1, 2, 3, 2, 1],
            [6, 5, 4, 5, 6, 5, 4],
            [3, 2, 1, 2, 3, 2, 1],
        ],
        np.int32,
    ),
    "pad_s": (
        [[2, 1, 1, 2, 3, 3, 2, 1]] * 2 + [[5, 4, 4, 5, 6, 6, 5, 4]] * 2,
        np.int32,
    ),
    "round": ([[0.0, 2.0, 2.0], [-0.0, -2.0, 3.0]], np.float32),
    "floor": ([[0.0, 1.0, 2.0], [-1.0, -2.0, 2.0]], np.float32),
    "ceil": ([[1.0, 2.0, 3.0], [-0.0, -1.0, 3.0]], np.float32),
    "lse": ([2.907606, 2.6597977], np.float32),
    "lse_all_kd": ([[3.4845057]], np.float32),
    "clip": ([[0.5, 1.5, 2.0], [-0.5, -1.0, 2.0]], np.float32),
    "div_i": (-4, np.int32),
    "div_f": (-3.5, np.float32),
    "truediv_i": (3.5, np.float64),
    "any": ([[True], [False]], np.bool_),
    "all": ([True, False], np.bool_),
    "sqdiff": ([[0.25, 0.25, 2.25], [2.25, 6.25, 2.5599997]], np.float32),
    "rsqrt": ([0.5, 2.0], np.float32),
    "rank": (2, np.int32),
    "to_float": ([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], np.float32),
}


def _build() -> dict[str, dg.Tensor]:
    f, x = tf.constant(F), tf.constant(X)
    return {
        "range5": tf.range(5),
        "range_3_18_3": tf.range(3, 18, 3),
        "range_f": tf.range(1.5, 3.0, 0.5),
        "range_neg": tf.range(3, 1, -0.5, dtype=tf.float64),
        "range_i64": tf.range(tf.constant(2, tf.int64), 7),
        "range_mixed": tf.range(0, 2.5),
        "pad_c": tf.pad(x, [[1, 0], [2, 1]], constant_values=7),
        "pad_r": tf.pad(x, [[1, 1], [2, 2]], "REFLECT"),
        "pad_s": tf.pad(x, [[1, 1], [2, 3]], mode="symmetric"),
        "round": tf.round(f),
        "floor": tf.floor(f),
        "ceil": tf.ceil(f),
        "lse": tf.reduce_logsumexp(f, axis=1),
        "lse_all_kd": tf.reduce_logsumexp(f, keep_dims=True),
        "clip": tf.clip_by_value(f, -1.0, 2.0),
        "div_i": tf.div(7, -2),
        "div_f": tf.div(7.0, -2.0),
        "truediv_i": tf.truediv(7, 2),
        "any": tf.reduce_any(
            tf.constant([[True, False], [False, False]]), reduction_indices=1, keep_dims=True
        ),
        "all": tf.reduce_all(tf.constant([[True, False], [True, True]]), axis=0),
        "sqdiff": tf.squared_difference(f, 1.0),
        "rsqrt": tf.rsqrt(tf.constant([4.0, 0.25])),
        "rank": tf.rank(x),
        "to_float": tf.to_float(x),
    }


def test_values_match_tensorflow() -> None:
    with tf.Graph().as_default():
        fetches = _build()
        static = {k: t.shape for k, t in fetches.items()}
        with tf.Session() as sess:
            results = sess.run(fetches)
    for key, (value, dtype) in EXPECTED.items():
        got = results[key]
        assert got.dtype == dtype, key
        np.testing.assert_allclose(got, value, rtol=1e-6, err_msg=key)
        assert np.signbit(got).tolist() == np.signbit(np.asarray(value)).tolist(), key
        assert static[key] == np.shape(value), key


def test_range_refuses_what_tensorflow_refuses() -> None:
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="start <= limit when delta > 0"):
            tf.range(5, 1)
        with pytest.raises(ValueError, match="delta must not be 0"):
            tf.range(0, 5, 0)
        limit = tf.placeholder(tf.int32, [])
        r = tf.range(2, limit)
        assert r.shape == (None,)
        with tf.Session() as sess:
            assert sess.run(r, {limit: 5}).tolist() == [2, 3, 4]
            with pytest.raises(tf.errors.InvalidArgumentError, match="start <= limit"):
                sess.run(r, {limit: 0})


def test_pad_refuses_bad_paddings() -> None:
    with tf.Graph().as_default():
        x = tf.constant([[1.0, 2.0]])
        with pytest.raises(ValueError, match="at most 0 in mode REFLECT"):
            tf.pad(x, [[1, 0], [0, 0]], "REFLECT")
        with pytest.raises(ValueError, match="paddings has 1 rows"):
            tf.pad(x, [[1, 1]])
        with pytest.raises(ValueError, match="mode must be"):
            tf.pad(x, [[1, 1], [1, 1]], "WRAP")
        with pytest.raises(TypeError, match="reduce_any: expects a bool tensor"):
            tf.reduce_any(x)


# -- gradients ----------------------------------------------------------------------------------
RNG = np.random.default_rng(7)


@pytest.mark.parametrize("mode", ["CONSTANT", "REFLECT", "SYMMETRIC"])
def test_pad_gradients(mode: str) -> None:
    check_gradients(
        lambda x: dg.pad(x, [[1, 2], [2, 1], [0, 1]], mode=mode), [RNG.normal(size=(3, 4, 2))]
    )


@pytest.mark.parametrize(
    "fn",
    [
        lambda x: dg.rsqrt(x * x + 1.0),
        lambda x: dg.log1p(x * x),
        lambda x: dg.sin(x) * dg.cos(x),
        lambda x: dg.squared_difference(x, x * x),
        lambda x: dg.clip_by_value(x, -0.5, 0.7),
        lambda x: dg.reduce_logsumexp(x, axis=1),
        lambda x: dg.reduce_logsumexp(x + 1000.0, keepdims=True),
        lambda x: dg.cond(dg.constant(True), lambda: x * 2.0, lambda: x * x),
        lambda x: dg.cond(dg.constant(False), lambda: x * 2.0, lambda: x * x),
        lambda x: dg.Print(x, [x], "debug", first_n=0) * 3.0,
    ],
    ids=[
        "rsqrt",
        "log1p",
        "sin_cos",
        "squared_difference",
        "clip",
        "lse",
        "lse_large",
        "cond_t",
        "cond_f",
        "print",
    ],
)
def test_gradients_of_new_ops(fn) -> None:
    x = RNG.uniform(-1.0, 1.0, (3, 4))
    x[np.abs(np.abs(x) - 0.6) < 0.15] = 0.3  # keep clip's kinks away from the finite steps
    check_gradients(fn, [x])


def test_squared_difference_gradient_broadcasts() -> None:
    check_gradients(
        lambda x, y: dg.squared_difference(x, y), [RNG.normal(size=(2, 3)), RNG.normal(size=(3,))]
    )


# -- cond, Print, tuple ---------------------------------------------------------------------------
def test_cond_selects_the_branch_at_run_time() -> None:
    with tf.Graph().as_default():
        p = tf.placeholder(tf.bool, [])
        x = tf.constant([1.0, 2.0])
        single = tf.cond(p, lambda: x * 2.0, lambda: x - 1.0)
        pair = tf.cond(p, lambda: (x, x + 1.0), lambda: (x * 0.0, x), name="pair")
        nested = tf.cond(p, true_fn=lambda: {"a": [x]}, false_fn=lambda: {"a": [-x]})
        old = tf.cond(p, fn1=lambda: [x], fn2=lambda: [x + 5.0])  # singleton list unpacked
        strict = tf.cond(p, lambda: [x], lambda: [x], strict=True)
        with tf.Session() as sess:
            for flag in (True, False):
                got = sess.run([single, pair, nested, old], {p: flag})
                a, b = (x_ := np.array([1.0, 2.0])), x_
                assert got[0].tolist() == (a * 2 if flag else a - 1).tolist()
                assert [v.tolist() for v in got[1]] == (
                    [a.tolist(), (b + 1).tolist()] if flag else [[0.0, 0.0], b.tolist()]
                )
                assert got[2]["a"][0].tolist() == (a if flag else -a).tolist()
                assert got[3].tolist() == (a if flag else a + 5).tolist()
        assert isinstance(pair, tuple) and isinstance(strict, list)
        assert single.op.name == "cond/Merge"


def test_cond_refuses_variable_updates_and_python_bools() -> None:
    with tf.Graph().as_default():
        v = tf.Variable(0.0, name="counter")
        p = tf.placeholder(tf.bool, [])
        with pytest.raises(tf.errors.UnimplementedError, match="runs both branches"):
            tf.cond(p, lambda: tf.assign_add(v, 1.0), lambda: v.value())
        with pytest.raises(TypeError, match="must not be a Python bool"):
            tf.cond(True, lambda: v.value(), lambda: v.value())
        with pytest.raises(ValueError, match="return 1 and 2 values"):
            tf.cond(p, lambda: [v.value()], lambda: [v.value(), v.value()])


def test_print_prints_tensorflows_format_first_n_times() -> None:
    with tf.Graph().as_default():
        x = tf.constant([[1, 2], [3, 4]])
        v = tf.constant([1.5, 2.0, 0.1, 1e10, 5.0])
        s = tf.constant(7)
        b = tf.constant([True, False])
        y = tf.Print(s, [x, v, s, b, tf.zeros([2, 2, 2])], "msg: ")
        z = tf.Print(s, [v], summarize=10)
        w = tf.Print(s, [v], first_n=2, message="w")
        err = io.StringIO()
        with tf.Session() as sess, contextlib.redirect_stderr(err):
            assert sess.run(y) == 7
            sess.run(z)
            for _ in range(4):
                sess.run(w)
    assert err.getvalue().splitlines() == [  # TensorFlow 2.21's own output
        "msg: [[1 2][3...]...][1.5 2 0.1...][7][1 0][[[0 0][0...]]...]",
        "[1.5 2 0.1 1e+10 5]",
        "w[1.5 2 0.1...]",
        "w[1.5 2 0.1...]",
    ]


def test_tuple_gates_every_tensor_on_all() -> None:
    with tf.Graph().as_default():
        a, b = tf.constant(1.0), tf.constant(2.0)
        extra = tf.no_op(name="extra")
        ta, none, tb = tf.tuple([a, None, b], control_inputs=[extra])
        assert none is None
        gate = ta.op.control_inputs[0]
        assert gate is tb.op.control_inputs[0]
        assert {op.name for op in gate.control_inputs} == {a.op.name, b.op.name, "extra"}
        with tf.Session() as sess:
            assert sess.run([ta, tb]) == [1.0, 2.0]


# -- variables ------------------------------------------------------------------------------------
def test_assign_sub_and_report_uninitialized_variables() -> None:
    with tf.Graph().as_default():
        v = tf.Variable(10.0, name="v")
        w = tf.Variable([1, 2], name="w")
        local = tf.Variable(0, name="local", collections=[tf.GraphKeys.LOCAL_VARIABLES])
        report = tf.report_uninitialized_variables()
        mine = tf.report_uninitialized_variables([w], name="mine")
        sub = tf.assign_sub(v, 2.5)
        down = v.assign_sub(1.0, False, "down")
        assert report.dtype == tf.string and report.shape == (None,)
        assert tf.local_variables() == [local] and tf.global_variables() == [v, w]
        with tf.Session() as sess:
            assert sess.run(report).tolist() == [b"v", b"w", b"local"]  # bytes, as TF
            sess.run(v.initializer)
            assert sess.run(report).tolist() == [b"w", b"local"]
            assert sess.run(tf.is_variable_initialized(v)) and not sess.run(
                tf.is_variable_initialized(w)
            )
            assert sess.run(sub) == 7.5 and sess.run(sub) == 5.0 and sess.run(down) == 4.0
            sess.run(tf.local_variables_initializer())
            assert sess.run(report).tolist() == [b"w"] and sess.run(mine).tolist() == [b"w"]
            sess.run(tf.initialize_all_variables())
            assert sess.run(report).tolist() == [] and sess.run(mine).shape == (0,)
        assert down.op.name == "down" and down.op.type == "AssignSub"
    with tf.Graph().as_default():
        empty = tf.report_uninitialized_variables()
        assert empty.shape == (0,) and empty.dtype == tf.string


@pytest.mark.virtual_gpus(1)
def test_variable_status_on_a_gpu(dg_session) -> None:
    with dg.device("/gpu:0"):
        v = dg.Variable(1.0, name="g")
    ok = dg.is_variable_initialized(v)
    report = dg.report_uninitialized_variables()
    assert dg_session.run(report).tolist() == [b"g"]
    dg_session.run(v.initializer)
    assert dg_session.run(ok) and dg_session.run(report).tolist() == []


# -- errors ---------------------------------------------------------------------------------------
ERROR_CODES = {
    "CancelledError": 1,
    "UnknownError": 2,
    "InvalidArgumentError": 3,
    "DeadlineExceededError": 4,
    "NotFoundError": 5,
    "AlreadyExistsError": 6,
    "PermissionDeniedError": 7,
    "ResourceExhaustedError": 8,
    "FailedPreconditionError": 9,
    "AbortedError": 10,
    "OutOfRangeError": 11,
    "UnimplementedError": 12,
    "InternalError": 13,
    "UnavailableError": 14,
    "DataLossError": 15,
    "UnauthenticatedError": 16,
}
CODE_NAMES = """OK CANCELLED UNKNOWN INVALID_ARGUMENT DEADLINE_EXCEEDED NOT_FOUND ALREADY_EXISTS
PERMISSION_DENIED RESOURCE_EXHAUSTED FAILED_PRECONDITION ABORTED OUT_OF_RANGE UNIMPLEMENTED
INTERNAL UNAVAILABLE DATA_LOSS UNAUTHENTICATED""".split()


@pytest.mark.parametrize(("name", "code"), list(ERROR_CODES.items()))
def test_error_classes_and_codes(name: str, code: int) -> None:
    cls = getattr(tf.errors, name)
    assert issubclass(cls, tf.errors.OpError) and cls.error_code == code
    err = cls(None, None, "went wrong")  # TensorFlow's (node_def, op, message)
    assert (str(err), err.message, err.error_code, err.op) == (
        "went wrong",
        "went wrong",
        code,
        None,
    )
    assert tf.errors.exception_type_from_error_code(code) is cls
    native = cls("went wrong", op="MatMul")
    assert native.op == "MatMul" and str(native) == "went wrong"


def test_error_code_constants() -> None:
    assert [getattr(tf.errors, n) for n in CODE_NAMES] == list(range(17))
    assert tf.errors.OpError(None, None, "m", tf.errors.ABORTED).error_code == 10
    with pytest.raises(tf.errors.OpError):
        raise tf.errors.OutOfRangeError(None, None, "End of sequence")


# -- replica_device_setter ------------------------------------------------------------------------
CLUSTER = {"ps": ["ps0:2222", "ps1:2222", "ps2:2222"], "worker": ["w0:2222", "w1:2222"]}


@pytest.mark.parametrize("as_spec", [True, False], ids=["ClusterSpec", "dict"])
def test_replica_device_setter_round_robin_over_3_ps_tasks(as_spec: bool) -> None:
    """TensorFlow's testPS2TasksWithClusterSpecClass with three ps tasks, plus inner scopes;
    the devices are TensorFlow 2.21's for the same program."""
    cluster = tf.train.ClusterSpec(CLUSTER) if as_spec else CLUSTER
    with tf.Graph().as_default():
        with tf.device(tf.train.replica_device_setter(cluster=cluster)):
            vs = [tf.Variable(float(i)) for i in range(5)]
            a = vs[0] + vs[1]
            with tf.device("/job:ps"):
                u = tf.Variable(1.0)
            with tf.device("/job:worker/task:1"):
                q = tf.Variable(1.0)
                b = a * 2.0
            with tf.device("/cpu:0"):
                c = tf.Variable(1.0)
                d = a + 1.0
    assert [v.device for v in vs] == [f"/job:ps/task:{i}" for i in (0, 1, 2, 0, 1)]
    assert vs[0].initializer.device == "/job:ps/task:0" and vs[2].value().device == "/job:ps/task:2"
    assert a.device == "/job:worker"
    assert (u.device, q.device, b.device) == (
        "/job:ps/task:2",
        "/job:worker/task:1",
        "/job:worker/task:1",
    )
    assert (c.device, d.device) == ("/job:ps/task:0/device:CPU:0", "/job:worker/device:CPU:0")


def test_replica_device_setter_options() -> None:
    with tf.Graph().as_default():
        setter = tf.train.replica_device_setter(
            ps_tasks=2, ps_device="/job:ps/cpu:0", worker_device="/job:worker/task:0/gpu:0"
        )
        with tf.device(setter):
            e, f = tf.Variable(1.0), tf.Variable(2.0)
            g = e + f
        assert (e.device, f.device, g.device) == (
            "/job:ps/task:0/device:CPU:0",
            "/job:ps/task:1/device:CPU:0",
            "/job:worker/task:0/device:GPU:0",
        )
        with tf.device(tf.train.replica_device_setter(ps_tasks=2, merge_devices=False)):
            with tf.device("/job:foo/task:3"):
                h = tf.Variable(1.0)
                hh = h + 1.0
            k = tf.Variable(1.0)
        assert (h.device, hh.device, k.device) == (
            "/job:foo/task:3",
            "/job:foo/task:3",
            "/job:ps/task:0",
        )
        with tf.device(tf.train.replica_device_setter(ps_tasks=3, ps_strategy=lambda op: 2)):
            assert tf.Variable(0.0).device == "/job:ps/task:2"
    assert tf.train.replica_device_setter() is None
    assert tf.train.replica_device_setter(cluster={"worker": ["a:1"]}) is None
    with pytest.raises(TypeError, match="ps_strategy must be callable"):
        tf.train.replica_device_setter(ps_tasks=1, ps_strategy=3)
    assert _signature(tf.train.replica_device_setter) == [
        ("ps_tasks", 0),
        ("ps_device", "/job:ps"),
        ("worker_device", "/job:worker"),
        ("merge_devices", True),
        ("cluster", None),
        ("ps_ops", None),
        ("ps_strategy", None),
    ]


def test_replicate_keeps_its_one_device_setter() -> None:
    from daskgraph.training.replicate import replica_device_setter

    assert dg.train.replica_device_setter is replica_device_setter
    with tf.Graph().as_default():
        with tf.device(replica_device_setter("/cpu:0", "/gpu:1")):
            v = tf.Variable(1.0)
        assert v.device == "/device:CPU:0"


# -- Tensor operators ------------------------------------------------------------------------------
def test_tensor_operators() -> None:
    with tf.Graph().as_default():
        x = tf.constant([[-1.0, 2.0], [3.0, -4.0]])
        t, f = tf.constant([True, False]), tf.constant([True, True])
        ops = {
            "item": x[1],
            "pow": x**2.0,
            "rpow": 2.0**x,
            "lt": x < 0.0,
            "gt": x > 0.0,
            "le": x <= 2.0,
            "ge": x >= 2.0,
            "and": t & f,
            "or": t | f,
            "xor": t ^ f,
            "invert": ~t,
            "abs": abs(x),
            "neg": -x,
        }
        assert ops["abs"].op.type == "Abs"
        with tf.Session() as sess:
            got = sess.run(ops)
    xv = np.array([[-1.0, 2.0], [3.0, -4.0]])
    tv, fv = np.array([True, False]), np.array([True, True])
    expected = {
        "item": xv[1],
        "pow": xv**2,
        "rpow": 2.0**xv,
        "lt": xv < 0,
        "gt": xv > 0,
        "le": xv <= 2,
        "ge": xv >= 2,
        "and": tv & fv,
        "or": tv | fv,
        "xor": tv ^ fv,
        "invert": ~tv,
        "abs": np.abs(xv),
        "neg": -xv,
    }
    for key, value in expected.items():
        np.testing.assert_allclose(got[key], value, err_msg=key)


def test_matmul_adjoint_and_casts() -> None:
    with tf.Graph().as_default():
        a = tf.constant([[1.0, 2.0], [3.0, 4.0]])
        m = tf.matmul(a, a, adjoint_a=True)
        i = tf.to_int64(tf.constant([1.7, -2.2]))
        d = tf.to_double(tf.constant([1, 2]))
        with tf.Session() as sess:
            mv, iv, dv = sess.run([m, i, d])
    an = np.array([[1.0, 2.0], [3.0, 4.0]])
    assert mv.tolist() == (an.T @ an).tolist()
    assert iv.dtype == np.int64 and iv.tolist() == [1, -2]
    assert dv.dtype == np.float64 and i.op.name == "ToInt64"
