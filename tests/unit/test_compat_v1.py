"""daskgraph.compat.v1 only maps TensorFlow 1's names onto daskgraph's own objects."""

from __future__ import annotations

import inspect

import pytest

import daskgraph as dg
import daskgraph.compat.v1 as tf
from daskgraph import errors, ops
from daskgraph.framework import dtypes, graph, scopes
from daskgraph.runtime.client import session

# TensorFlow 1 name -> the native object it must be (the very same object, not a copy)
ALIASES = {
    # tensors and ops
    "constant": ops.constant,
    "placeholder": ops.placeholder,
    "add": ops.add,
    "subtract": ops.subtract,
    "multiply": ops.multiply,
    "divide": ops.divide,
    "add_n": ops.add_n,
    "cast": ops.cast,
    "group": ops.group,
    "no_op": ops.no_op,
    # variables
    "global_variables_initializer": ops.global_variables_initializer,
    "variables_initializer": ops.variables_initializer,
    # dtypes
    "float16": dtypes.float16,
    "float32": dtypes.float32,
    "float64": dtypes.float64,
    "int8": dtypes.int8,
    "int16": dtypes.int16,
    "int32": dtypes.int32,
    "int64": dtypes.int64,
    "uint8": dtypes.uint8,
    "bool": dtypes.bool_,
    "string": dtypes.string,
    "as_dtype": dtypes.as_dtype,
    # scopes and graphs
    "device": scopes.device,
    "name_scope": graph.name_scope,
    "colocate_with": scopes.colocate_with,
    "control_dependencies": scopes.control_dependencies,
    "Graph": graph.Graph,
    "get_default_graph": graph.get_default_graph,
    "reset_default_graph": graph.reset_default_graph,
    # sessions and configuration
    "Session": session.Session,
    "errors": errors,
}

# TF1 names whose call signature differs from the native one: thin argument adapters
ADAPTED = [
    "Variable",
    "assign",
    "assign_add",
    "assign_sub",
    "global_variables",
    "reduce_sum",
    "reduce_mean",
    "reduce_any",
    "reduce_logsumexp",
    "matmul",  # adjoint_a/adjoint_b and TF1's other keywords
    "transpose",  # a=, name="transpose", conjugate=
    "reshape",  # tensor=
    "identity",  # input=
    "GraphKeys",  # LOCAL_VARIABLES, UPDATE_OPS, ... besides the native keys
]


@pytest.mark.parametrize("name", ADAPTED, ids=ADAPTED)
def test_adapted_names_come_from_the_signature_adapters(name: str) -> None:
    from daskgraph.compat import _signatures

    assert getattr(tf, name) is getattr(_signatures, name)


def test_tf1_signatures_are_accepted() -> None:
    with tf.Graph().as_default():
        x = tf.constant([[1.0, 2.0], [3.0, 4.0]])
        assert tf.reduce_sum(x, reduction_indices=[0], keep_dims=True).shape == (1, 2)
        assert tf.reduce_mean(x, 1).shape == (2,)
        v = tf.Variable(0.0, True, None, True, None, "w")  # TF1's positional order
        with tf.name_scope("other"):
            tf.Variable(1.0, name="u")
        assert v.op.name == "w"
        assert isinstance(v, dg.Variable)
        assert tf.assign_add(v, 1.0, False, "inc").op.name == "inc"
        assert tf.assign(v, 2.0, True, False, "set").op.name == "set"
        assert [u.op.name for u in tf.global_variables("other")] == ["other/u"]
        with pytest.raises(ValueError, match="both 'axis' and 'reduction_indices'"):
            tf.reduce_sum(x, axis=0, reduction_indices=0)


ERRORS = [
    "InvalidArgumentError",
    "FailedPreconditionError",
    "NotFoundError",
    "ResourceExhaustedError",
    "UnavailableError",
    "CancelledError",
    "InternalError",
    "OpError",
]


@pytest.mark.parametrize(("name", "native"), list(ALIASES.items()), ids=list(ALIASES))
def test_alias_is_the_native_object(name: str, native: object) -> None:
    assert getattr(tf, name) is native


@pytest.mark.parametrize("name", sorted(set(ALIASES) - {"bool", "ConfigProto"}))
def test_alias_is_also_the_top_level_name(name: str) -> None:
    """Where daskgraph and TensorFlow share a name, the alias is what ``dg.NAME`` is."""
    assert getattr(tf, name) is getattr(dg, name)


def test_every_exported_name_exists() -> None:
    assert sorted(tf.__all__) == sorted(set(tf.__all__))
    for name in tf.__all__:
        assert hasattr(tf, name), name
    assert set(ALIASES) <= set(tf.__all__)


def test_module_only_maps_names() -> None:
    """Nothing is defined in the compat module itself: every public object comes from elsewhere."""
    for name in tf.__all__:
        value = getattr(tf, name)
        assert getattr(value, "__module__", "daskgraph") != tf.__name__, name
    assert inspect.getdoc(tf)


@pytest.mark.parametrize("name", ERRORS)
def test_errors_namespace(name: str) -> None:
    assert getattr(tf.errors, name) is getattr(errors, name)
    assert issubclass(getattr(tf.errors, name), tf.errors.OpError)


def test_invalid_argument_error_is_native() -> None:
    assert tf.errors.InvalidArgumentError is dg.errors.InvalidArgumentError


def test_config_proto_returns_a_session_config() -> None:
    cfg = tf.ConfigProto(
        log_device_placement=True,
        allow_soft_placement=True,
        gpu_options=tf.GPUOptions(allow_growth=True),
        device_count={"GPU": 1},
    )
    assert isinstance(cfg, dg.SessionConfig)
    assert cfg.log_device_placement is True
    assert cfg.allow_soft_placement is True
    assert cfg.gpu_options.allow_growth is True
    assert cfg.device_count == {"GPU": 1}
    assert cfg.validate() is cfg


def test_config_proto_gpu_options_are_settable_afterwards() -> None:
    cfg = tf.ConfigProto()
    cfg.gpu_options.allow_growth = True
    cfg.gpu_options.per_process_gpu_memory_fraction = 0.4
    cfg.log_device_placement = True
    cfg.validate()
    assert cfg.gpu_options == dg.GPUOptions(allow_growth=True, per_process_gpu_memory_fraction=0.4)
    # each ConfigProto has its own GPUOptions
    assert tf.ConfigProto().gpu_options.allow_growth is False


def test_config_proto_is_validated_with_field_names() -> None:
    cfg = tf.ConfigProto()
    cfg.gpu_options.per_process_gpu_memory_fraction = 1.5
    with pytest.raises(ValueError, match="per_process_gpu_memory_fraction"):
        cfg.validate()


def test_session_takes_target_graph_config_positionally() -> None:
    params = list(inspect.signature(tf.Session).parameters)
    assert params[:3] == ["target", "graph", "config"]


def test_tf1_graph_building_uses_native_ops() -> None:
    with tf.Graph().as_default() as g:
        with tf.device("/cpu:0"):
            a = tf.constant([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], shape=[2, 3], name="a")
            b = tf.constant([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], shape=[3, 2], name="b")
        c = tf.matmul(a, b)
        p = tf.placeholder(tf.float32, [None, 2])
        v = tf.Variable(0, name="counter")
        init = tf.global_variables_initializer()
    assert tf.get_default_graph() is not g
    assert isinstance(c, dg.Tensor)
    assert a.device == "/device:CPU:0"
    assert c.device == ""
    assert c.shape == (2, 2)
    assert p.dtype is tf.float32
    assert v.dtype is tf.int32
    assert tf.global_variables() == []  # g is no longer the default graph
    assert dg.global_variables(g) == [v]
    assert [op.name for op in init.control_inputs] == ["counter/Assign"]
