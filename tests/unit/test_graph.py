"""Unit tests for graph construction: names, scopes, operators, shapes, dtypes and Variables.

Every test builds its own graph under ``with dg.Graph().as_default():`` so tests are
independent of each other and of the global default graph.
"""

from __future__ import annotations

import numpy as np
import pytest

import daskgraph as dg
from daskgraph.errors import GraphMismatchError, OpError
from daskgraph.framework.device import DeviceSpec
from daskgraph.framework.graph import get_default_graph, new_tensor


def names(graph: dg.Graph) -> list[str]:
    return [op.name for op in graph.get_operations()]


# -- names ------------------------------------------------------------------------------------
def test_default_names_are_the_op_type_made_unique() -> None:
    with dg.Graph().as_default() as g:
        dg.constant(1.0)
        dg.constant(2.0)
        dg.constant(3.0)
    assert names(g) == ["Const", "Const_1", "Const_2"]


def test_user_names_are_kept_and_made_unique() -> None:
    with dg.Graph().as_default() as g:
        a = dg.constant(1.0, name="a")
        a1 = dg.constant(2.0, name="a")
        b = dg.placeholder(dg.float32, name="b")
    assert (a.name, a1.name, b.name) == ("a:0", "a_1:0", "b:0")
    assert names(g) == ["a", "a_1", "b"]


def test_unique_name_skips_names_taken_by_hand() -> None:
    with dg.Graph().as_default() as g:
        dg.constant(1.0, name="x_1")
        dg.constant(1.0, name="x")
        third = dg.constant(1.0, name="x")
    assert third.op.name == "x_2"
    assert names(g) == ["x_1", "x", "x_2"]


def test_name_scope_prefixes_and_nests() -> None:
    with dg.Graph().as_default():
        with dg.name_scope("outer") as outer:
            a = dg.constant(1.0)
            with dg.name_scope("inner") as inner:
                b = dg.constant(1.0, name="b")
        c = dg.constant(1.0)
    assert outer == "outer/"
    assert inner == "outer/inner/"
    assert a.op.name == "outer/Const"
    assert b.op.name == "outer/inner/b"
    assert c.op.name == "Const"


def test_name_scope_reuse_gives_a_unique_scope() -> None:
    with dg.Graph().as_default():
        with dg.name_scope("scope"):
            a = dg.constant(1.0)
        with dg.name_scope("scope") as second:
            b = dg.constant(1.0)
        with dg.name_scope("scope") as third:
            pass
    assert a.op.name == "scope/Const"
    assert second == "scope_1/"
    assert b.op.name == "scope_1/Const"
    assert third == "scope_2/"


def test_name_scope_with_trailing_slash_reenters() -> None:
    with dg.Graph().as_default():
        with dg.name_scope("scope"):
            a = dg.constant(1.0)
        with dg.name_scope("scope/"):
            b = dg.constant(1.0)
    assert a.op.name == "scope/Const"
    assert b.op.name == "scope/Const_1"


def test_op_named_like_an_existing_scope_is_made_unique() -> None:
    with dg.Graph().as_default():
        with dg.name_scope("layer"):
            dg.constant(1.0)
        op = dg.constant(1.0, name="layer")
    assert op.op.name == "layer_1"


@pytest.mark.parametrize("empty", [None, ""], ids=["none", "empty-string"])
def test_empty_name_scope_resets_to_the_root(empty: str | None) -> None:
    with dg.Graph().as_default():
        with dg.name_scope("outer"):
            with dg.name_scope(empty) as scope:
                a = dg.constant(1.0)
    assert scope == ""
    assert a.op.name == "Const"


def test_name_scope_of_another_graph_does_not_prefix() -> None:
    g1, g2 = dg.Graph(), dg.Graph()
    with g1.as_default(), g1.name_scope("only_g1"):
        with g2.as_default():
            b = dg.constant(1.0)
        a = dg.constant(1.0)
    assert a.op.name == "only_g1/Const"
    assert b.op.name == "Const"


# -- default graph ----------------------------------------------------------------------------
def test_as_default_nests_and_restores() -> None:
    outer_default = get_default_graph()
    g1, g2 = dg.Graph(), dg.Graph()
    with g1.as_default() as entered:
        assert entered is g1
        assert get_default_graph() is g1
        with g2.as_default():
            assert get_default_graph() is g2
            c2 = dg.constant(1.0)
        assert get_default_graph() is g1
        c1 = dg.constant(1.0)
    assert get_default_graph() is outer_default
    assert c1.graph is g1 and c2.graph is g2
    assert len(g1) == len(g2) == 1


def test_as_default_restores_after_an_exception() -> None:
    before = get_default_graph()
    g = dg.Graph()
    with pytest.raises(RuntimeError, match="boom"), g.as_default():
        raise RuntimeError("boom")
    assert get_default_graph() is before


def test_reset_default_graph_inside_as_default_is_refused() -> None:
    with dg.Graph().as_default(), pytest.raises(RuntimeError, match="reset_default_graph"):
        dg.reset_default_graph()


def test_finalized_graph_refuses_new_ops() -> None:
    with dg.Graph().as_default() as g:
        dg.constant(1.0)
        g.finalize()
        assert g.finalized
        with pytest.raises(RuntimeError, match="finalized"):
            dg.constant(2.0)
    assert len(g) == 1


# -- lookups ----------------------------------------------------------------------------------
def test_get_operation_and_tensor_by_name() -> None:
    with dg.Graph().as_default() as g:
        with dg.name_scope("s"):
            a = dg.constant(1.0, name="a")
    assert g.get_operation_by_name("s/a") is a.op
    assert g.get_tensor_by_name("s/a:0") is a


@pytest.mark.parametrize(
    ("lookup", "name", "error", "message"),
    [
        ("op", "missing", KeyError, "no operation named 'missing'"),
        ("tensor", "missing:0", KeyError, "no operation named 'missing'"),
        ("tensor", "a:1", KeyError, "has 1 output"),
        ("tensor", "a", ValueError, "not of the form"),
        ("tensor", "a:x", ValueError, "not of the form"),
        ("tensor", ":0", ValueError, "not of the form"),
    ],
    ids=["op-missing", "tensor-op-missing", "tensor-bad-index", "no-colon", "bad-index", "no-op"],
)
def test_lookup_errors(lookup: str, name: str, error: type, message: str) -> None:
    with dg.Graph().as_default() as g:
        dg.constant(1.0, name="a")
    getter = g.get_operation_by_name if lookup == "op" else g.get_tensor_by_name
    with pytest.raises(error, match=message):
        getter(name)


def test_op_without_outputs_has_no_tensor() -> None:
    with dg.Graph().as_default() as g:
        dg.no_op(name="n")
    with pytest.raises(KeyError, match="has 0 output"):
        g.get_tensor_by_name("n:0")


@pytest.mark.parametrize(
    "build",
    [
        lambda t: dg.identity(t),
        lambda t: t + 1.0,
        lambda t: dg.matmul(t, t),
        lambda t: dg.add_n([t, t]),
    ],
    ids=["identity", "operator", "matmul", "add_n"],
)
def test_tensor_of_another_graph_is_rejected(build) -> None:
    with dg.Graph().as_default():
        foreign = dg.constant([[1.0]])
    with dg.Graph().as_default() as g2:
        with pytest.raises(ValueError, match="must be from the same graph as") as info:
            build(foreign)
    # TensorFlow's class: a ValueError at build time, not an OpError that `except
    # tf.errors.OpError` around a run would catch
    assert not isinstance(info.value, OpError)
    assert isinstance(info.value, GraphMismatchError)
    assert info.value.tensor == "Const:0"
    assert "as_default" in str(info.value)
    assert all(op.type == "Const" for op in g2.get_operations())


def test_tensors_of_two_graphs_in_one_op_name_both() -> None:
    with dg.Graph().as_default():
        foreign = dg.constant(1.0, name="foreign")
    with dg.Graph().as_default():
        mine = dg.constant(2.0, name="mine")
        with pytest.raises(
            ValueError, match=r"'foreign:0'.* must be from the same graph as .*'mine:0'"
        ):
            dg.add(mine, foreign)


@pytest.mark.parametrize(
    "scope", [dg.control_dependencies, dg.colocate_with], ids=["control", "colocate"]
)
def test_an_op_of_another_graph_in_a_scope_is_rejected(scope) -> None:
    with dg.Graph().as_default():
        foreign = dg.constant(1.0)
    with dg.Graph().as_default(), pytest.raises(GraphMismatchError, match="same graph") as info:
        with scope([foreign] if scope is dg.control_dependencies else foreign):
            dg.constant(2.0)
    assert info.value.operation == "Const"
    assert not isinstance(info.value, OpError)


# -- operators --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("build", "op_type"),
    [
        (lambda a, b: a + b, "Add"),
        (lambda a, b: a - b, "Sub"),
        (lambda a, b: a * b, "Mul"),
        (lambda a, b: a / b, "RealDiv"),
        (lambda a, b: a @ b, "MatMul"),
    ],
    ids=["add", "sub", "mul", "div", "matmul"],
)
def test_binary_operators_build_ops(build, op_type: str) -> None:
    with dg.Graph().as_default():
        a = dg.constant([[1.0, 2.0], [3.0, 4.0]], name="a")
        b = dg.constant([[5.0, 6.0], [7.0, 8.0]], name="b")
        out = build(a, b)
    assert out.op.type == op_type
    assert out.op.inputs == (a, b)
    assert out.dtype == dg.float32
    assert out.shape == (2, 2)


@pytest.mark.parametrize(
    ("build", "op_type"),
    [(lambda a: -a, "Neg"), (lambda a: abs(a), "Abs")],
    ids=["neg", "abs"],
)
def test_unary_operators_build_ops(build, op_type: str) -> None:
    with dg.Graph().as_default():
        a = dg.constant([1.0, -2.0])
        out = build(a)
    assert out.op.type == op_type
    assert out.op.inputs == (a,)
    assert out.shape == (2,)


@pytest.mark.parametrize(
    ("build", "op_type", "tensor_position"),
    [
        (lambda t: 2.0 + t, "Add", 1),
        (lambda t: 2.0 - t, "Sub", 1),
        (lambda t: 2 * t, "Mul", 1),
        (lambda t: 1.0 / t, "RealDiv", 1),
        (lambda t: t - 2.0, "Sub", 0),
        (lambda t: t / 2, "RealDiv", 0),
        (lambda t: np.ones((2, 2), np.float32) + t, "Add", 1),
        (lambda t: np.ones((2, 2)) - t, "Sub", 1),
        (lambda t: np.ones((2, 2)) @ t, "MatMul", 1),
        (lambda t: t @ np.eye(2), "MatMul", 0),
        (lambda t: np.float64(3.0) * t, "Mul", 1),
    ],
    ids=[
        "float+t",
        "float-t",
        "int*t",
        "float/t",
        "t-float",
        "t/int",
        "ndarray+t",
        "ndarray-t",
        "ndarray@t",
        "t@ndarray",
        "npscalar*t",
    ],
)
def test_operators_with_python_and_numpy_operands(build, op_type: str, tensor_position) -> None:
    with dg.Graph().as_default():
        t = dg.constant([[1.0, 2.0], [3.0, 4.0]], name="t")
        out = build(t)
    assert isinstance(out, dg.Tensor)
    assert out.op.type == op_type
    assert out.op.inputs[tensor_position] is t
    other = out.op.inputs[1 - tensor_position]
    assert other.op.type == "Const"
    assert other.dtype == dg.float32  # the Python/NumPy operand takes the tensor's dtype
    assert out.dtype == dg.float32
    assert out.shape == (2, 2)


def test_reflected_operand_value_is_kept() -> None:
    with dg.Graph().as_default():
        t = dg.constant([1.0, 2.0])
        out = 10.0 - t
    np.testing.assert_array_equal(out.op.inputs[0].op.attrs["value"], np.float32(10.0))


def test_mismatched_dtypes_raise_type_error() -> None:
    with dg.Graph().as_default():
        f = dg.constant([1.0])
        i = dg.constant([1])
        with pytest.raises(TypeError, match=r"same dtype.*float32.*int32"):
            f + i


def test_float_python_operand_with_int_tensor_is_rejected() -> None:
    with dg.Graph().as_default():
        i = dg.constant([1, 2])
        with pytest.raises(TypeError):
            i + 1.5


def test_integer_division_casts_to_float64() -> None:
    with dg.Graph().as_default():
        i = dg.constant([1, 2])
        out = i / 2
    assert out.op.type == "RealDiv"
    assert out.dtype == dg.float64
    assert [t.op.type for t in out.op.inputs] == ["Cast", "Cast"]


def test_variable_has_operators_of_its_value() -> None:
    with dg.Graph().as_default():
        v = dg.Variable([1.0, 2.0], name="v")
        out = v + 1.0
        neg = -v
        radd = 1.0 + v
    assert out.op.type == "Add"
    assert out.op.inputs[0] is v.value()
    assert neg.op.inputs == (v.value(),)
    assert radd.op.inputs[1] is v.value()


# -- shape inference --------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("shape_a", "shape_b", "transpose_a", "transpose_b", "expected"),
    [
        ((2, 3), (3, 4), False, False, (2, 4)),
        ((3, 2), (3, 4), True, False, (2, 4)),
        ((2, 3), (4, 3), False, True, (2, 4)),
        ((3, 2), (4, 3), True, True, (2, 4)),
        ((None, 3), (3, 5), False, False, (None, 5)),
        ((2, None), (None, 5), False, False, (2, 5)),
        ((3, None), (3, 4), True, False, (None, 4)),
    ],
    ids=["plain", "transpose_a", "transpose_b", "both", "unknown-rows", "unknown-inner", "ta-unk"],
)
def test_matmul_shape(shape_a, shape_b, transpose_a, transpose_b, expected) -> None:
    with dg.Graph().as_default():
        a = dg.placeholder(dg.float32, shape_a)
        b = dg.placeholder(dg.float32, shape_b)
        out = dg.matmul(a, b, transpose_a=transpose_a, transpose_b=transpose_b)
    assert out.shape == expected
    assert out.op.attrs == {"transpose_a": transpose_a, "transpose_b": transpose_b}


@pytest.mark.parametrize(
    ("shape_a", "shape_b", "transpose_a", "transpose_b", "message"),
    [
        ((2, 3), (4, 3), False, False, "inner dimensions differ"),
        ((2, 3), (3, 4), True, False, "inner dimensions differ"),
        ((2, 3), (3, 4), False, True, "inner dimensions differ"),
        ((2, 3, 4), (3, 4, 2), False, False, "cannot be broadcast"),  # batch dims 2 and 3
        ((3,), (3, 2), False, False, "must have rank >= 2"),
    ],
    ids=["plain", "transpose_a", "transpose_b", "batch", "rank1"],
)
def test_matmul_shape_errors(shape_a, shape_b, transpose_a, transpose_b, message) -> None:
    with dg.Graph().as_default() as g:
        a = dg.placeholder(dg.float32, shape_a, name="a")
        b = dg.placeholder(dg.float32, shape_b, name="b")
        with pytest.raises(ValueError, match=message):
            dg.matmul(a, b, transpose_a=transpose_a, transpose_b=transpose_b)
    assert names(g) == ["a", "b"]


def test_matmul_error_names_both_tensors() -> None:
    with dg.Graph().as_default():
        a = dg.constant(1.0, shape=[2, 3], name="a")
        b = dg.constant(1.0, shape=[4, 3], name="b")
        with pytest.raises(ValueError, match=r"'a:0' is \(2, 3\) and 'b:0' is \(4, 3\)"):
            dg.matmul(a, b)


@pytest.mark.parametrize(
    ("shape_a", "shape_b", "expected"),
    [
        ((2, 1), (3,), (2, 3)),
        ((2, 3), (2, 3), (2, 3)),
        ((), (2, 2), (2, 2)),
        ((None, 3), (3,), (None, 3)),
        ((None, 1), (1, 4), (None, 4)),
        ((None,), (1,), (None,)),
        (None, (2,), None),
        ((4, 1, 2), (3, 1), (4, 3, 2)),
    ],
    ids=[
        "column-row",
        "same",
        "scalar",
        "unknown-dim",
        "unknown-vs-1",
        "unk-1",
        "unknown-rank",
        "3d",
    ],
)
def test_broadcast_shape(shape_a, shape_b, expected) -> None:
    with dg.Graph().as_default():
        a = dg.placeholder(dg.float32, shape_a)
        b = dg.placeholder(dg.float32, shape_b)
        assert (a + b).shape == expected
        assert (b * a).shape == expected


def test_broadcast_mismatch_raises() -> None:
    with dg.Graph().as_default():
        a = dg.placeholder(dg.float32, (2, 3))
        b = dg.placeholder(dg.float32, (4,))
        with pytest.raises(
            ValueError, match=r"add: shapes \(2, 3\) and \(4,\) cannot be broadcast"
        ):
            a + b


@pytest.mark.parametrize(
    ("reduce", "axis", "keepdims", "expected"),
    [
        (dg.reduce_sum, None, False, ()),
        (dg.reduce_sum, None, True, (1, 1, 1)),
        (dg.reduce_sum, 1, False, (2, 4)),
        (dg.reduce_sum, 1, True, (2, 1, 4)),
        (dg.reduce_mean, -1, False, (2, 3)),
        (dg.reduce_mean, (0, 2), False, (3,)),
        (dg.reduce_max, [2, 0], True, (1, 3, 1)),
        (dg.reduce_max, 0, False, (3, 4)),
    ],
    ids=["all", "all-keep", "axis1", "axis1-keep", "neg-axis", "tuple", "list-keep", "max0"],
)
def test_reduction_shapes(reduce, axis, keepdims, expected) -> None:
    with dg.Graph().as_default():
        x = dg.placeholder(dg.float32, (2, 3, 4))
        out = reduce(x, axis=axis, keepdims=keepdims)
    assert out.shape == expected
    assert out.dtype == dg.float32


@pytest.mark.parametrize("axis", [3, -4, (0, 5)], ids=["3", "-4", "tuple-5"])
def test_reduction_axis_out_of_range(axis) -> None:
    with dg.Graph().as_default():
        x = dg.placeholder(dg.float32, (2, 3, 4), name="x")
        with pytest.raises(ValueError, match="out of range for 'x:0' of rank 3"):
            dg.reduce_sum(x, axis=axis)


def test_reduction_of_unknown_rank_is_unknown() -> None:
    with dg.Graph().as_default():
        x = dg.placeholder(dg.float32)
        assert dg.reduce_sum(x, axis=0).shape is None


def test_reduction_accepts_numpy_integer_axis() -> None:
    with dg.Graph().as_default():
        x = dg.placeholder(dg.float32, (2, 3))
        assert dg.reduce_sum(x, axis=np.int64(0)).shape == (3,)


@pytest.mark.parametrize(
    ("in_shape", "target", "expected"),
    [
        pytest.param((2, 3), [6], (6,), id="flatten"),
        pytest.param((2, 3), [-1], (6,), id="minus-one"),
        pytest.param((2, 3), [3, -1], (3, 2), id="3,-1"),
        pytest.param((2, 3, 4), [-1, 4], (6, 4), id="-1,4"),
        pytest.param((None, 3), [-1], (None,), id="unknown-input"),
    ],
)
def test_reshape_shape(in_shape, target, expected) -> None:
    with dg.Graph().as_default():
        x = dg.placeholder(dg.float32, in_shape)
        out = dg.reshape(x, target)
    assert out.op.type == "Reshape"
    assert out.shape == expected
    assert out.op.attrs["shape"] == tuple(target)


@pytest.mark.parametrize(
    "target", [[4], [4, -1], [0, -1]], ids=["wrong-size", "not-divisible", "zero-known"]
)
def test_reshape_size_mismatch_raises(target) -> None:
    with dg.Graph().as_default():
        x = dg.placeholder(dg.float32, (2, 3), name="x")
        with pytest.raises(ValueError, match=r"cannot reshape 'x:0' of shape \(2, 3\)"):
            dg.reshape(x, target)


@pytest.mark.parametrize(
    ("perm", "expected"),
    [(None, (4, 3, 2)), ((2, 0, 1), (4, 2, 3)), ([0, 2, 1], (2, 4, 3))],
    ids=["default-reverses", "perm-tuple", "perm-list"],
)
def test_transpose_shape(perm, expected) -> None:
    with dg.Graph().as_default():
        x = dg.placeholder(dg.float32, (2, 3, 4))
        out = dg.transpose(x, perm)
    assert out.shape == expected
    assert out.op.attrs["perm"] == (tuple(perm) if perm is not None else (2, 1, 0))


@pytest.mark.parametrize("perm", [(0, 1), (0, 1, 1), (0, 1, 3)], ids=["short", "dup", "range"])
def test_transpose_bad_perm(perm) -> None:
    with dg.Graph().as_default():
        x = dg.placeholder(dg.float32, (2, 3, 4))
        with pytest.raises(ValueError, match="not a permutation"):
            dg.transpose(x, perm)


def test_transpose_needs_known_rank() -> None:
    with dg.Graph().as_default():
        x = dg.placeholder(dg.float32, name="x")
        with pytest.raises(ValueError, match="rank of 'x:0' must be known"):
            dg.transpose(x)


@pytest.mark.parametrize(
    ("value", "shape", "expected"),
    [(0.0, [2, 2], (2, 2)), ([1.0, 2.0, 3.0, 4.0], [2, 2], (2, 2)), ([[1, 2]], None, (1, 2))],
    ids=["scalar-broadcast", "reshape", "nested-list"],
)
def test_constant_shape(value, shape, expected) -> None:
    with dg.Graph().as_default():
        c = dg.constant(value, shape=shape)
    assert c.shape == expected
    assert c.op.attrs["value"].shape == expected


def test_constant_bad_shape_raises() -> None:
    with dg.Graph().as_default(), pytest.raises(ValueError, match="3 elements the shape"):
        dg.constant([1.0, 2.0, 3.0], shape=[2, 2])


def test_constant_value_is_read_only() -> None:
    with dg.Graph().as_default():
        c = dg.constant([1.0, 2.0])
    with pytest.raises(ValueError):
        c.op.attrs["value"][0] = 5.0


def test_tensors_of_one_shape_share_one_shape_object() -> None:
    # a graph of a million ops keeps a handful of shapes, not one per tensor (issue 32, B1)
    with dg.Graph().as_default():
        x = dg.placeholder(dg.float32, shape=(4, 4))
        chain = [x]
        for i in range(200):
            chain.append(chain[-1] + 1.0 if i % 2 else chain[-1] * 2.0)
        other = new_tensor("Placeholder", [], dg.float32, [4, 4])
        # sizes equal to a shared shape's but refused stay refused: True == 1, 4.0 == 4
        with pytest.raises(TypeError):
            new_tensor("Placeholder", [], dg.float32, (4, 4.0))
        with pytest.raises(TypeError):
            new_tensor("Placeholder", [], dg.float32, (True, 4))
    assert len({id(t.shape) for t in [*chain, other]}) == 1
    assert x.shape == (4, 4) and isinstance(x.shape[0], int) and x.shape[0].value == 4


def test_ops_without_control_inputs_or_attrs_cannot_change_each_others() -> None:
    with dg.Graph().as_default():
        a, b = dg.constant(1.0) + 1.0, dg.constant(2.0) + 2.0
    with pytest.raises(TypeError, match="cannot be changed"):
        a.op.control_inputs.append(b.op)
    with pytest.raises(TypeError, match="cannot be changed"):
        a.op.attrs["x"] = 1
    assert b.op.control_inputs == [] and b.op.attrs == {} and b.op.outputs == [b]


# -- dtypes -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (1.5, dg.float32),
        ([[1.0, 2.0]], dg.float32),
        (3, dg.int32),
        ([1, 2, 3], dg.int32),
        ("hello", dg.string),
        (b"bytes", dg.string),
        (True, dg.bool_),
        (np.zeros(2, np.float64), dg.float64),
        (np.zeros(2, np.int64), dg.int64),
        (np.float16(1.0), dg.float16),
    ],
    ids=[
        "float",
        "float-list",
        "int",
        "int-list",
        "str",
        "bytes",
        "bool",
        "f64-array",
        "i64-array",
        "np-f16",
    ],
)
def test_constant_dtype_inference(value, expected) -> None:
    with dg.Graph().as_default():
        c = dg.constant(value)
    assert c.dtype == expected


def test_explicit_dtype_converts_the_value() -> None:
    with dg.Graph().as_default():
        c = dg.constant([1, 2], dtype="float64")
    assert c.dtype == dg.float64
    assert c.op.attrs["value"].dtype == np.float64


def test_placeholder_shape_and_dtype() -> None:
    with dg.Graph().as_default():
        p = dg.placeholder("int64", [None, 3], name="p")
    assert (p.dtype, p.shape, p.op.type) == (dg.int64, (None, 3), "Placeholder")


# -- Tensor protocol --------------------------------------------------------------------------
def test_tensor_in_if_raises_type_error() -> None:
    with dg.Graph().as_default():
        t = dg.constant(True, name="flag")
    with pytest.raises(TypeError, match="'flag:0' as a Python bool"):
        if t:
            pass


def test_tensor_is_not_iterable() -> None:
    with dg.Graph().as_default():
        t = dg.constant([1.0, 2.0], name="vec")
    with pytest.raises(TypeError, match="'vec:0' is not iterable"):
        list(t)


def test_tensors_hash_by_identity() -> None:
    with dg.Graph().as_default():
        a = dg.constant(1.0)
        b = dg.constant(1.0)
    assert a != b
    assert {a: 1, b: 2}[a] == 1


# -- control dependencies ---------------------------------------------------------------------
def test_control_dependencies_apply_to_new_ops_only() -> None:
    with dg.Graph().as_default():
        a = dg.constant(1.0, name="a")
        b = dg.constant(2.0, name="b")
        with dg.control_dependencies([a]):
            c = dg.constant(3.0, name="c")
            d = dg.identity(b, name="d")
            dominated = c + 1.0  # c (made in the block) already runs after a, as in TF
        e = dg.constant(4.0, name="e")
    assert c.op.control_inputs == [a.op]
    assert d.op.control_inputs == [a.op]
    assert dominated.op.control_inputs == []
    assert b.op.control_inputs == []
    assert e.op.control_inputs == []


def test_control_dependencies_nest_accumulate_and_reset() -> None:
    with dg.Graph().as_default():
        a = dg.constant(1.0)
        b = dg.no_op(name="b")
        v = dg.Variable(1.0, name="v")
        with dg.control_dependencies([a]):
            with dg.control_dependencies([b, a, v]):
                inner = dg.constant(1.0)
            with dg.control_dependencies(None):
                cleared = dg.constant(1.0)
    assert inner.op.control_inputs == [a.op, b, v.op]
    assert cleared.op.control_inputs == []


def test_control_dependencies_reject_non_ops() -> None:
    with dg.Graph().as_default(), pytest.raises(TypeError, match="control_dependencies expects"):
        with dg.control_dependencies([1.0]):
            pass


def test_group_runs_after_its_inputs() -> None:
    with dg.Graph().as_default():
        a = dg.constant(1.0)
        n = dg.no_op()
        grouped = dg.group(a, n, name="all")
    assert grouped.name == "all"
    assert grouped.type == "NoOp"
    assert grouped.control_inputs == [a.op, n]
    assert grouped.outputs == []


# -- colocation -------------------------------------------------------------------------------
def test_colocate_with_records_colocation_and_takes_the_target_device() -> None:
    with dg.Graph().as_default():
        with dg.device("/cpu:0"):
            a = dg.constant(1.0, name="a")
        with dg.device("/gpu:1"), dg.colocate_with(a):
            b = dg.identity(a, name="b")
        c = dg.identity(a, name="c")
    assert b.op.colocation == "a"
    assert b.device == "/device:CPU:0"
    assert c.op.colocation is None
    assert c.device == ""


def test_colocation_chains_to_the_root() -> None:
    with dg.Graph().as_default():
        a = dg.constant(1.0, name="a")
        with dg.colocate_with(a):
            b = dg.identity(a, name="b")
        with dg.colocate_with(b.op):
            c = dg.identity(b, name="c")
    assert c.op.colocation == "a"


def test_device_scope_inside_colocate_with_applies_when_the_target_has_no_device() -> None:
    with dg.Graph().as_default():
        a = dg.constant(1.0, name="a")
        with dg.colocate_with(a), dg.device("/gpu:0"):
            b = dg.identity(a)
    assert b.device == "/device:GPU:0"
    assert b.op.colocation == "a"


def test_device_scope_enclosing_colocate_with_is_ignored() -> None:
    with dg.Graph().as_default():
        a = dg.constant(1.0, name="a")
        with dg.device("/gpu:0"), dg.colocate_with(a):
            b = dg.identity(a)
    assert b.device == ""


def test_colocate_with_a_variable() -> None:
    with dg.Graph().as_default():
        with dg.device("/job:ps/task:0/cpu:0"):
            v = dg.Variable(1.0, name="v")
        with dg.colocate_with(v):
            x = v + 1.0
    assert x.op.colocation == "v"
    assert x.device == "/job:ps/task:0/device:CPU:0"


def test_colocate_with_rejects_non_ops() -> None:
    with dg.Graph().as_default(), pytest.raises(TypeError, match="colocate_with expects"):
        with dg.colocate_with("a"):
            pass


# -- device scopes ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("scopes", "expected"),
    [
        ([], ""),
        (["/cpu:0"], "/device:CPU:0"),
        (["/job:worker/task:1", "/gpu:0"], "/job:worker/task:1/device:GPU:0"),
        (["/job:worker/task:1/gpu:0", "/task:2"], "/job:worker/task:2/device:GPU:0"),
        (["/gpu:0", "/cpu:0"], "/device:CPU:0"),
        (["/gpu:0", "/device:CPU:*"], "/device:CPU:*"),
        (["/job:worker/device:GPU:*"], "/job:worker/device:GPU:*"),
        (["/job:worker", "/replica:0", "/task:3"], "/job:worker/replica:0/task:3"),
        (["/gpu:0", None], ""),
        (["/job:a/gpu:0", None, "/task:1"], "/task:1"),
        ([DeviceSpec(job="ps", task=0)], "/job:ps/task:0"),
    ],
    ids=[
        "none",
        "cpu",
        "merge",
        "inner-task-wins",
        "inner-type-wins",
        "type-with-star-index",
        "partial",
        "three-levels",
        "reset",
        "reset-then-set",
        "devicespec",
    ],
)
def test_device_scopes_merge(scopes: list, expected: str) -> None:
    with dg.Graph().as_default():
        from contextlib import ExitStack

        with ExitStack() as stack:
            for s in scopes:
                stack.enter_context(dg.device(s))
            c = dg.constant(1.0)
    assert c.device == expected
    assert c.op.device == expected


def test_device_scope_is_restored_after_exit_and_exception() -> None:
    with dg.Graph().as_default():
        with dg.device("/cpu:0"):
            with pytest.raises(RuntimeError), dg.device("/gpu:0"):
                raise RuntimeError
            inside = dg.constant(1.0)
        outside = dg.constant(1.0)
    assert inside.device == "/device:CPU:0"
    assert outside.device == ""


def test_graph_device_method_is_the_same_scope() -> None:
    with dg.Graph().as_default() as g, g.device("/gpu:1"):
        c = dg.constant(1.0)
    assert c.device == "/device:GPU:1"


def test_malformed_device_scope_raises() -> None:
    with (
        dg.Graph().as_default(),
        pytest.raises(ValueError, match="Cannot specify multiple device types"),
    ):
        with dg.device("/gpu:0/cpu:0"):
            pass


def test_device_function_sees_the_op() -> None:
    seen = []

    def by_type(op: dg.Operation) -> str:
        seen.append((op.name, op.type))
        return "/gpu:0" if op.type == "MatMul" else "/cpu:0"

    with dg.Graph().as_default():
        with dg.device(by_type):
            a = dg.constant([[1.0]], name="a")
            m = dg.matmul(a, a, name="m")
    assert a.device == "/device:CPU:0"
    assert m.device == "/device:GPU:0"
    assert seen == [("a", "Const"), ("m", "MatMul")]


def test_device_function_returning_none_or_spec() -> None:
    with dg.Graph().as_default():
        with dg.device(lambda op: None):
            a = dg.constant(1.0)
        with dg.device(lambda op: DeviceSpec(device_type="GPU", device_index=1)):
            b = dg.constant(1.0)
    assert a.device == ""
    assert b.device == "/device:GPU:1"


def test_outer_device_function_sees_and_may_replace_the_inner_request() -> None:
    # TensorFlow applies device functions innermost first; an outer function's result replaces
    # the device so far, and a well-behaved function reads op.device to merge with it.
    def merging(op):
        return dg.DeviceSpec.from_string("/job:worker/task:0/cpu:0").make_merged_spec(
            dg.DeviceSpec.from_string(op.device)
        )

    with dg.Graph().as_default():
        with dg.device(merging):
            with dg.device("/task:1"):
                a = dg.constant(1.0)
            b = dg.constant(1.0)
        with dg.device(lambda op: "/job:worker/task:0/cpu:0"), dg.device("/task:1"):
            c = dg.constant(1.0)
    assert a.device == "/job:worker/task:1/device:CPU:0"
    assert b.device == "/job:worker/task:0/device:CPU:0"
    assert c.device == "/job:worker/task:0/device:CPU:0"


def test_outer_device_function_ignoring_op_device_wins_as_in_tensorflow() -> None:
    seen = []

    def outer(op):
        seen.append(op.device)
        return "/cpu:0"

    with dg.Graph().as_default():
        with dg.device(outer), dg.device(lambda op: "/gpu:3"):
            a = dg.constant(1.0)
    assert seen == ["/device:GPU:3"]
    assert a.device == "/device:CPU:0"


def test_device_function_inside_static_scope_keeps_the_outer_fields() -> None:
    with dg.Graph().as_default():
        with dg.device("/job:worker"), dg.device(lambda op: "/gpu:0"):
            a = dg.constant(1.0)
    assert a.device == "/job:worker/device:GPU:0"


# -- Variables --------------------------------------------------------------------------------
def test_variable_builds_tf1_ops() -> None:
    with dg.Graph().as_default() as g:
        v = dg.Variable([1.0, 2.0], name="v")
    ops = {op.name: op for op in g.get_operations()}
    assert sorted(ops) == ["v", "v/Assign", "v/initial_value", "v/read"]
    assert ops["v"].type == "VariableV2"
    assert ops["v/initial_value"].type == "Const"
    assert ops["v/Assign"].type == "Assign"
    assert ops["v/read"].type == "Identity"
    assert ops["v/Assign"].inputs == (ops["v"].outputs[0], ops["v/initial_value"].outputs[0])
    assert ops["v/read"].inputs == (ops["v"].outputs[0],)
    assert ops["v/Assign"].colocation == "v"
    assert ops["v/read"].colocation == "v"
    assert v.op is ops["v"]
    assert v.name == "v:0"
    assert v.initializer is ops["v/Assign"]
    assert v.value() is ops["v/read"].outputs[0]
    again = v.read_value()  # a new read each call, as TF1's (control dependencies apply)
    assert again is not v.value() and again.op.type == "Identity" and again.op.inputs == (v._ref(),)
    assert v.initial_value is ops["v/initial_value"].outputs[0]
    assert (v.dtype, v.shape) == (dg.float32, (2,))
    assert dg.global_variables(g) == [v]


def test_variable_default_and_repeated_names() -> None:
    with dg.Graph().as_default() as g:
        a = dg.Variable(1.0)
        b = dg.Variable(1.0)
        c = dg.Variable(1.0, name="w")
        d = dg.Variable(1.0, name="w")
    assert [v.op.name for v in (a, b, c, d)] == ["Variable", "Variable_1", "w", "w_1"]
    assert "w_1/read" in names(g)
    assert "w_1/initial_value" in names(g)


def test_variable_in_name_scope() -> None:
    with dg.Graph().as_default() as g:
        with dg.name_scope("layer"):
            v = dg.Variable(1.0, name="w")
    assert v.op.name == "layer/w"
    assert sorted(names(g)) == [
        "layer/w",
        "layer/w/Assign",
        "layer/w/initial_value",
        "layer/w/read",
    ]


def test_variable_dtype_and_device() -> None:
    with dg.Graph().as_default() as g:
        with dg.device("/job:ps/task:0/cpu:0"):
            v = dg.Variable([1, 2], dtype="float64", name="v")
    assert v.dtype == dg.float64
    assert v.device == "/job:ps/task:0/device:CPU:0"
    assert {op.device for op in g.get_operations()} == {"/job:ps/task:0/device:CPU:0"}


def test_global_variables_initializer() -> None:
    with dg.Graph().as_default() as g:
        v = dg.Variable(1.0, name="v")
        w = dg.Variable(2, name="w")
        init = dg.global_variables_initializer()
        init_again = dg.global_variables_initializer()
        only_w = dg.variables_initializer([w], name="init_w")
    assert init.name == "init"
    assert init.type == "NoOp"
    assert init.control_inputs == [v.initializer, w.initializer]
    assert init_again.name == "init_1"
    assert only_w.control_inputs == [w.initializer]
    assert dg.global_variables(g) == [v, w]


def test_global_variables_initializer_without_variables() -> None:
    with dg.Graph().as_default():
        init = dg.global_variables_initializer()
    assert init.name == "init"
    assert init.control_inputs == []


def test_variables_initializer_rejects_non_variables() -> None:
    with dg.Graph().as_default():
        c = dg.constant(1.0)
        with pytest.raises(TypeError, match="expects a Variable"):
            dg.variables_initializer([c])


@pytest.mark.parametrize(
    ("update", "op_type", "name"),
    [
        (lambda v: v.assign([5.0, 6.0]), "Assign", "Assign"),
        (lambda v: dg.assign(v, [5.0, 6.0], name="set"), "Assign", "set"),
        (lambda v: v.assign_add(1.0), "AssignAdd", "AssignAdd"),
        (lambda v: dg.assign_add(v, [1.0, 1.0], name="inc"), "AssignAdd", "inc"),
    ],
    ids=["assign-method", "assign-fn", "assign_add-method", "assign_add-fn"],
)
def test_variable_updates(update, op_type: str, name: str) -> None:
    with dg.Graph().as_default():
        with dg.device("/cpu:0"):
            v = dg.Variable([1.0, 2.0], name="v")
        with dg.device("/gpu:0"):
            out = update(v)
    assert out.op.type == op_type
    assert out.op.name == name
    assert out.op.inputs[0] is v.op.outputs[0]
    assert out.op.inputs[1].dtype == dg.float32
    assert out.op.colocation == "v"
    assert out.device == "/device:CPU:0"
    assert (out.dtype, out.shape) == (dg.float32, (2,))


def test_assign_rejects_wrong_dtype_tensor_and_non_variables() -> None:
    with dg.Graph().as_default():
        v = dg.Variable([1.0, 2.0], name="v")
        i = dg.constant([1, 2])
        with pytest.raises(TypeError, match="int32"):
            v.assign(i)
        with pytest.raises(TypeError, match="expects a Variable"):
            dg.assign(i, [1, 2])
