"""tf.ConfigProto and its kin are strict, as protobuf's messages: a field they do not have,
set, read or passed to a constructor, raises TensorFlow's error (with the closest field), and
every field they have keeps working."""

from __future__ import annotations

import copy
import operator
import pickle

import pytest

import daskgraph as dg
import daskgraph.compat.v1 as tf


def _messages() -> dict[str, object]:
    """One message of each kind, by the path a TF1 program reaches it by."""
    config = tf.ConfigProto()
    config.session_inter_op_thread_pool.add(num_threads=2)
    config.gpu_options.experimental.virtual_devices.add(memory_limit_mb=[512])
    return {
        "ConfigProto": config,
        "GPUOptions": config.gpu_options,
        "GraphOptions": config.graph_options,
        "OptimizerOptions": config.graph_options.optimizer_options,
        "RewriterConfig": config.graph_options.rewrite_options,
        "RPCOptions": config.rpc_options,
        "ThreadPoolOptionProto": config.session_inter_op_thread_pool[0],
        "ConfigProto.Experimental": config.experimental,
        "GPUOptions.Experimental": config.gpu_options.experimental,
        "VirtualDevices": config.gpu_options.experimental.virtual_devices[0],
        "RunOptions": tf.RunOptions(),
        "RunOptions.Experimental": tf.RunOptions().experimental,
        "RunMetadata": tf.RunMetadata(),
    }


def _tensorflows_words(name: str, typo: str, field: str) -> str:
    """protobuf's message for the unknown field ``typo`` of message ``name``."""
    return f'Protocol message {name} has no "{typo}" field. Did you mean "{field}"?'


#: per message, a typo of one of its fields and the field
TYPOS = {
    "ConfigProto": ("log_device_placment", "log_device_placement"),
    "GPUOptions": ("per_processs_gpu_memory_fraction", "per_process_gpu_memory_fraction"),
    "GraphOptions": ("place_prunned_graph", "place_pruned_graph"),
    "OptimizerOptions": ("global_jit_levl", "global_jit_level"),
    "RewriterConfig": ("memory_optimisation", "memory_optimization"),
    "RPCOptions": ("compression_algoritm", "compression_algorithm"),
    "ThreadPoolOptionProto": ("num_thread", "num_threads"),
    "ConfigProto.Experimental": ("executor_typ", "executor_type"),
    "GPUOptions.Experimental": ("use_unified_memmory", "use_unified_memory"),
    "VirtualDevices": ("memory_limit_mbs", "memory_limit_mb"),
    "RunOptions": ("timeout_in_msec", "timeout_in_ms"),
    "RunOptions.Experimental": ("collective_graph_ky", "collective_graph_key"),
    "RunMetadata": ("partition_graph", "partition_graphs"),
}


@pytest.mark.parametrize("path", sorted(TYPOS))
def test_setting_a_misspelt_field_raises_tensorflows_attribute_error(path: str) -> None:
    message = _messages()[path]
    typo, field = TYPOS[path]
    name = path.rsplit(".", 1)[-1]
    with pytest.raises(AttributeError) as caught:
        setattr(message, typo, 1)
    assert str(caught.value) == _tensorflows_words(name, typo, field)
    assert (caught.value.message_type, caught.value.field) == (name, typo)
    assert caught.value.suggestion == field
    assert typo not in vars(message)


@pytest.mark.parametrize("path", sorted(TYPOS))
def test_reading_a_misspelt_field_raises_and_hasattr_says_false(path: str) -> None:
    message = _messages()[path]
    typo, field = TYPOS[path]
    with pytest.raises(AttributeError, match=f'has no "{typo}" field'):
        getattr(message, typo)
    assert not hasattr(message, typo)
    assert getattr(message, typo, "default") == "default"
    getattr(message, field)  # the real field reads


#: per message class (the path from tf), a misspelt constructor argument and the field
ARGUMENT_TYPOS = {
    "ConfigProto": ("allow_soft_placment", "allow_soft_placement"),
    "GPUOptions": ("allow_grouth", "allow_growth"),
    "GraphOptions": ("infer_shape", "infer_shapes"),
    "OptimizerOptions": ("do_constant_foldin", "do_constant_folding"),
    "RunOptions": ("trace_levl", "trace_level"),
    "GPUOptions.Experimental.VirtualDevices": TYPOS["VirtualDevices"],
    **{
        path: TYPOS[path]  # the nested messages: the same typos as when set
        for path in (
            "ConfigProto.Experimental",
            "GPUOptions.Experimental",
            "RunOptions.Experimental",
        )
    },
}


@pytest.mark.parametrize("path", sorted(ARGUMENT_TYPOS))
def test_a_constructor_given_an_unknown_field_raises_protobufs_value_error(path: str) -> None:
    cls, name = operator.attrgetter(path)(tf), path.rsplit(".", 1)[-1]
    typo, field = ARGUMENT_TYPOS[path]
    with pytest.raises(ValueError) as caught:
        cls(**{typo: 1})
    assert str(caught.value) == _tensorflows_words(name, typo, field)


def test_a_field_daskgraph_keeps_and_ignores_still_works() -> None:
    config = tf.ConfigProto(intra_op_parallelism_threads=2, isolate_session_state=True)
    config.gpu_options.allocator_type = "BFC"
    config.gpu_options.experimental.use_unified_memory = True
    config.graph_options.rewrite_options.arithmetic_optimization = type(
        config.graph_options.rewrite_options
    ).OFF
    config.graph_options.optimizer_options.opt_level = tf.OptimizerOptions.L0
    config.experimental.collective_group_leader = "/job:worker/replica:0/task:0"
    options = tf.RunOptions(output_partition_graphs=True)
    options.experimental.collective_graph_key = 7
    assert config.intra_op_parallelism_threads == 2
    assert config.gpu_options.experimental.use_unified_memory
    assert config.graph_options.rewrite_options.arithmetic_optimization == 2
    assert options.HasField("experimental") and options.experimental.collective_graph_key == 7
    assert copy.deepcopy(config) == config == pickle.loads(pickle.dumps(config))
    config.global_jit = True  # the native config's own field, set as an attribute
    assert config.jit_compiles_graph() and config.validate().intra_op_parallelism_threads == 2
    assert tf.GPUOptions(allow_growth=True) == dg.GPUOptions(allow_growth=True)


def test_the_seeds_memory_fraction_typo_raises_as_in_tensorflow() -> None:
    """notes_allow_growth.py (from a seed) keeps the typo in a comment: uncommented, it
    raises TensorFlow's AttributeError before a session starts."""
    config = tf.ConfigProto()
    config.gpu_options.allow_growth = True
    with pytest.raises(AttributeError, match=r"^Protocol message GPUOptions has no "):
        config.gpu_options.per_processs_gpu_memory_fraction = 0.4
