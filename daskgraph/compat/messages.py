"""TensorFlow 1's protocol buffer messages as Python objects that know their fields.

Its one job is to make the messages under ``tf.ConfigProto`` and ``tf.RunOptions`` (graph and
optimizer options, RPC options, the ``Experimental`` messages, thread pools, GPU virtual
devices, the graph rewriter's config) and to make every such message strict, as protobuf's
are: setting or reading a field the message does not have raises ``AttributeError``, and
passing one to its constructor ``ValueError``, in TensorFlow's words, with the closest field
named, so that a typo (``per_processs_gpu_memory_fraction``) is not silently kept. The fields
are TensorFlow 1's (``tensorflow/core/protobuf/config.proto``, ``rewriter_config.proto``);
those daskgraph has no use for are kept, not honoured.

>>> options = GPUExperimental()
>>> options.virtual_devices.add(memory_limit_mb=[1024, 1024]).memory_limit_mb
[1024, 1024]
>>> options.use_unified_memry = True
Traceback (most recent call last):
...
AttributeError: Protocol message Experimental has no "use_unified_memry" field. Did you mean \
"use_unified_memory"?
"""

from __future__ import annotations

import copy
import functools
from typing import Any, ClassVar

from daskgraph.errors import unknown_field

__all__ = [
    "ConfigExperimental",
    "GPUExperimental",
    "GraphOptions",
    "Message",
    "OptimizerOptions",
    "RPCOptions",
    "Repeated",
    "RewriterConfig",
    "RunExperimental",
    "Strict",
    "ThreadPoolOptionProto",
    "VirtualDevices",
    "default_value",
    "repeated",
    "set_fields",
]


class Strict:
    """Mixin of a message: only its fields (``_NATIVE_FIELDS``, those a daskgraph class it
    extends has, and ``_TF1_FIELDS``, TensorFlow's others with their defaults) can be set or
    read; any other (non-underscore) name raises TensorFlow's ``AttributeError``."""

    _TF1_FIELDS: ClassVar[dict[str, Any]] = {}
    _NATIVE_FIELDS: ClassVar[tuple[str, ...]] = ()
    _MESSAGE_NAME: ClassVar[str] = ""  # protobuf's name (``Experimental``); the class's if ""

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        """The names of the message's fields."""
        return (*cls._NATIVE_FIELDS, *cls._TF1_FIELDS)

    @classmethod
    def message_name(cls) -> str:
        """The message's name as protobuf words it in errors (``GPUOptions``)."""
        return cls._MESSAGE_NAME or cls.__name__

    def __setattr__(self, name: str, value: Any) -> None:
        if not name.startswith("_") and name not in self.field_names():
            raise unknown_field(AttributeError, self.message_name(), name, self.field_names())
        super().__setattr__(name, value)

    def __getattr__(self, name: str) -> Any:  # only called for a name that is not there
        if name.startswith("_"):
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        raise unknown_field(AttributeError, self.message_name(), name, self.field_names())


def set_fields(message: Strict, given: dict[str, Any]) -> dict[str, Any]:
    """Set ``message``'s TF1-only fields from ``given`` (their defaults otherwise: a callable
    default, a message class, is called for a new value); return the native ones. A name that is
    neither is protobuf's ``ValueError``.

    >>> pool = ThreadPoolOptionProto.__new__(ThreadPoolOptionProto)
    >>> set_fields(pool, {"num_threads": 4}), pool.num_threads, pool.global_name
    ({}, 4, '')
    """
    known = type(message).field_names()
    for key in given:
        if key not in known:
            raise unknown_field(ValueError, type(message).message_name(), key, known)
    for key, default in type(message)._TF1_FIELDS.items():
        value = given[key] if key in given else default_value(default)
        object.__setattr__(message, key, value)
    return {k: v for k, v in given.items() if k in type(message)._NATIVE_FIELDS}


def default_value(default: Any) -> Any:
    """A new value of a field whose default (in ``_TF1_FIELDS``) is ``default``: a callable
    default (a message class, :func:`repeated`'s) is called, any other is copied.

    >>> default_value(VirtualDevices) == VirtualDevices(), default_value([]) == []
    (True, True)
    """
    return default() if callable(default) else copy.deepcopy(default)


class Message(Strict):
    """A TF1 protocol buffer message kept as attributes: every field has a default."""

    def __init__(self, **fields: Any) -> None:
        set_fields(self, fields)

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, k) == getattr(other, k) for k in self._TF1_FIELDS)

    __hash__ = None  # type: ignore[assignment]  # mutable, as protocol buffers

    def __repr__(self) -> str:
        changed = [
            f"{k}={getattr(self, k)!r}"
            for k, default in self._TF1_FIELDS.items()
            if not callable(default) and getattr(self, k) != default
        ]
        return f"{type(self).__name__}({', '.join(changed)})"


class Repeated(list):
    """A repeated message field: a list, with protobuf's ``add(**fields)`` that appends a new
    message of the field's type and returns it."""

    def __init__(self, kind: type[Message], items: Any = ()) -> None:
        super().__init__(items)
        self.kind = kind

    def add(self, **fields: Any) -> Message:
        """Append a new message made of ``fields``; return it."""
        item = self.kind(**fields)
        self.append(item)
        return item

    def __deepcopy__(self, memo: dict) -> Repeated:
        return Repeated(self.kind, copy.deepcopy(list(self), memo))


def repeated(kind: type[Message]) -> Any:
    """The default of a repeated field of ``kind`` messages: a function making an empty
    :class:`Repeated` (:func:`set_fields` calls a callable default).

    >>> devices = repeated(VirtualDevices)()
    >>> devices.add(memory_limit_mb=[256]).memory_limit_mb, len(devices)
    ([256], 1)
    """
    return functools.partial(Repeated, kind)


class ThreadPoolOptionProto(Message):
    """``ConfigProto.session_inter_op_thread_pool``'s entries (kept)."""

    _TF1_FIELDS: ClassVar[dict[str, Any]] = {"num_threads": 0, "global_name": ""}


class VirtualDevices(Message):
    """``GPUOptions.Experimental.VirtualDevices``: one physical GPU's logical GPUs (kept; the
    GPUs' split is ``gpu_options.virtual_devices`` or ``tf.config``'s logical devices)."""

    _TF1_FIELDS: ClassVar[dict[str, Any]] = {
        "memory_limit_mb": [],
        "priority": [],
        "device_ordinal": [],
    }


class GPUExperimental(Message):
    """``GPUOptions.Experimental`` (kept)."""

    _MESSAGE_NAME = "Experimental"
    VirtualDevices = VirtualDevices
    _TF1_FIELDS: ClassVar[dict[str, Any]] = {
        "virtual_devices": repeated(VirtualDevices),
        "use_unified_memory": False,
        "num_dev_to_dev_copy_streams": 0,
        "collective_ring_order": "",
        "timestamped_allocator": False,
        "kernel_tracker_max_interval": 0,
        "kernel_tracker_max_bytes": 0,
        "kernel_tracker_max_pending": 0,
        "internal_fragmentation_fraction": 0.0,
        "use_cuda_malloc_async": False,
        "disallow_retry_on_allocation_failure": False,
        "gpu_host_mem_limit_in_mb": 0.0,
        "gpu_host_mem_disallow_growth": False,
        "gpu_system_memory_size_in_mb": 0,
    }


class ConfigExperimental(Message):
    """``ConfigProto.Experimental`` (kept)."""

    _MESSAGE_NAME = "Experimental"
    _TF1_FIELDS: ClassVar[dict[str, Any]] = {
        "collective_group_leader": "",
        "executor_type": "",
        "recv_buf_max_chunk": 0,
        "use_numa_affinity": False,
        "collective_deterministic_sequential_execution": False,
        "collective_nccl": False,
        "share_session_state_in_clusterspec_propagation": False,
        "disable_thread_spinning": False,
        "share_cluster_devices_in_session": False,
        "session_metadata": None,
        "optimize_for_static_graph": False,
        "enable_mlir_bridge": False,
        "mlir_bridge_rollout": 0,
        "enable_mlir_graph_optimization": False,
        "disable_output_partition_graphs": False,
        "xla_fusion_autotuner_thresh": 0,
        "use_tfrt": False,
        "disable_functional_ops_lowering": False,
        "xla_prefer_single_graph_cluster": False,
        "coordination_config": None,
    }


class RunExperimental(Message):
    """``RunOptions.Experimental`` (kept)."""

    _MESSAGE_NAME = "Experimental"
    _TF1_FIELDS: ClassVar[dict[str, Any]] = {
        "collective_graph_key": 0,
        "use_run_handler_pool": False,
        "run_handler_pool_options": None,
    }


class OptimizerOptions(Message):
    """``tf.OptimizerOptions``: graph optimisation levels (kept; daskgraph runs the graph as
    built), with TensorFlow's level constants."""

    L1, L0 = 0, -1  # Level
    DEFAULT, OFF, ON_1, ON_2 = 0, -1, 1, 2  # GlobalJitLevel
    _TF1_FIELDS: ClassVar[dict[str, Any]] = {
        "do_common_subexpression_elimination": False,
        "do_constant_folding": False,
        "max_folded_constant_in_bytes": 0,
        "do_function_inlining": False,
        "opt_level": 0,
        "global_jit_level": 0,
        "cpu_global_jit": False,
    }


class RewriterConfig(Message):
    """``GraphOptions.rewrite_options``: Grappler's passes (kept: daskgraph runs the graph as
    built, fusing elementwise chains), with TensorFlow's enum constants."""

    DEFAULT, ON, OFF, AGGRESSIVE = 0, 1, 2, 3  # Toggle
    NO_MEM_OPT, MANUAL, HEURISTICS = 1, 2, 3  # MemOptType (DEFAULT_MEM_OPT is 0)
    DEFAULT_MEM_OPT, SWAPPING_HEURISTICS, RECOMPUTATION_HEURISTICS = 0, 4, 5
    SCHEDULING_HEURISTICS = 6
    DEFAULT_NUM_ITERS, ONE, TWO = 0, 1, 2  # NumIterationsType
    _TOGGLES = (
        "layout_optimizer constant_folding shape_optimization remapping "
        "common_subgraph_elimination arithmetic_optimization dependency_optimization "
        "loop_optimization function_optimization debug_stripper scoped_allocator_optimization "
        "pin_to_host_optimization implementation_selector auto_mixed_precision "
        "auto_mixed_precision_mkl auto_mixed_precision_onednn_bfloat16 auto_mixed_precision_cpu "
        "use_plugin_optimizers experimental_conditional_code_motion auto_parallel"
    ).split()
    _TF1_FIELDS: ClassVar[dict[str, Any]] = {
        **dict.fromkeys(_TOGGLES, 0),
        "cpu_layout_conversion": 0,
        "disable_model_pruning": False,
        "disable_meta_optimizer": False,
        "disable_tfg_optimizer": False,
        "experimental_disable_compressed_tensor_optimization": False,
        "experimental_disable_folding_quantization_emulation": False,
        "fail_on_optimizer_errors": False,
        "meta_optimizer_iterations": 0,
        "min_graph_nodes": 0,
        "memory_optimization": 0,
        "memory_optimizer_target_node_name_scope": "",
        "meta_optimizer_timeout_ms": 0,
        "scoped_allocator_opts": None,
        "optimizers": [],
        "custom_optimizers": [],
        "inter_optimizer_verifier_config": None,
        "post_optimization_verifier_config": None,
    }


class GraphOptions(Message):
    """``tf.GraphOptions`` (kept): ``optimizer_options`` and TensorFlow's other fields;
    ``place_pruned_graph`` is honoured (see :class:`~daskgraph.config.SessionConfig`)."""

    _TF1_FIELDS: ClassVar[dict[str, Any]] = {
        "enable_recv_scheduling": False,
        "optimizer_options": OptimizerOptions,
        "build_cost_model": 0,
        "build_cost_model_after": 0,
        "infer_shapes": False,
        "place_pruned_graph": False,
        "enable_bfloat16_sendrecv": False,
        "timeline_step": 0,
        "rewrite_options": RewriterConfig,
    }


class RPCOptions(Message):
    """``ConfigProto.rpc_options`` (kept: Dask's comms carry the messages here)."""

    _TF1_FIELDS: ClassVar[dict[str, Any]] = {
        "use_rpc_for_inprocess_master": False,
        "compression_algorithm": "",
        "compression_level": 0,
        "cache_rpc_response": False,
        "disable_session_connection_sharing": False,
        "num_channels_per_target": 0,
    }
