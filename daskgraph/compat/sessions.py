"""TensorFlow 1's session-side names whose behaviour differs from the native ones.

``tf.ConfigProto``, ``tf.GPUOptions``, ``tf.GraphOptions``, ``tf.OptimizerOptions``,
``tf.RunOptions`` and ``tf.RunMetadata`` accept every field of TensorFlow 1's protocol buffers
(an unknown one is a ValueError in protobuf's words). What has a meaning here is honoured by
the native :class:`~daskgraph.config.SessionConfig` / :class:`~daskgraph.config.GPUOptions` /
:class:`~daskgraph.runtime.client.session.RunOptions` they extend (placement logging, soft
placement, device
counts, GPU memory, deadlines, tracing); the rest is kept, so programs that set and read it
run. ``tf.InteractiveSession`` installs itself as the default session until closed, and
``tf.get_default_session()`` is None when there is none.

>>> cfg = ConfigProto(allow_soft_placement=True, intra_op_parallelism_threads=2)
>>> cfg.gpu_options.allocator_type = "BFC"
>>> cfg.intra_op_parallelism_threads, cfg.validate().allow_soft_placement
(2, True)
>>> ConfigProto(foo=1)
Traceback (most recent call last):
...
ValueError: Protocol message ConfigProto has no "foo" field.
>>> get_default_session() is None
True
"""

from __future__ import annotations

import copy
import dataclasses
import warnings
from typing import Any, ClassVar

from daskgraph import config
from daskgraph.config import default_session_config
from daskgraph.framework import default_session
from daskgraph.runtime.client import session

__all__ = [
    "ConfigProto",
    "GPUOptions",
    "GraphOptions",
    "InteractiveSession",
    "OptimizerOptions",
    "RPCOptions",
    "RunMetadata",
    "RunOptions",
    "get_default_session",
]


def _set_fields(message: Any, given: dict[str, Any], native: tuple[str, ...]) -> dict[str, Any]:
    """Set ``message``'s TF1-only fields from ``given`` (their defaults otherwise); return the
    native ones. An unknown name is protobuf's ValueError."""
    name = type(message).__name__
    extra = type(message)._TF1_FIELDS
    for key in given:
        if key not in extra and key not in native:
            raise ValueError(f'Protocol message {name} has no "{key}" field.')
    for key, default in extra.items():
        value = given.get(key, default)
        object.__setattr__(message, key, copy.deepcopy(value) if value is default else value)
    return {k: v for k, v in given.items() if k in native}


class _Message:
    """A TF1 protocol buffer message kept as attributes: every field has a default."""

    _TF1_FIELDS: ClassVar[dict[str, Any]] = {}

    def __init__(self, **fields: Any) -> None:
        _set_fields(self, fields, ())

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, k) == getattr(other, k) for k in self._TF1_FIELDS)

    __hash__ = None  # type: ignore[assignment]  # mutable, as protocol buffers

    def __repr__(self) -> str:
        changed = [
            f"{k}={getattr(self, k)!r}"
            for k, default in self._TF1_FIELDS.items()
            if getattr(self, k) != default
        ]
        return f"{type(self).__name__}({', '.join(changed)})"


class OptimizerOptions(_Message):
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


class GraphOptions(_Message):
    """``tf.GraphOptions`` (kept): ``optimizer_options`` and TensorFlow's other fields."""

    _TF1_FIELDS: ClassVar[dict[str, Any]] = {
        "enable_recv_scheduling": False,
        "optimizer_options": None,
        "build_cost_model": 0,
        "build_cost_model_after": 0,
        "infer_shapes": False,
        "place_pruned_graph": False,
        "enable_bfloat16_sendrecv": False,
        "timeline_step": 0,
        "rewrite_options": None,
    }

    def __init__(self, **fields: Any) -> None:
        super().__init__(**fields)
        if self.optimizer_options is None:
            self.optimizer_options = OptimizerOptions()


class RPCOptions(_Message):
    """``ConfigProto.rpc_options`` (kept: Dask's comms carry the messages here)."""

    _TF1_FIELDS: ClassVar[dict[str, Any]] = {
        "use_rpc_for_inprocess_master": False,
        "compression_algorithm": "",
        "compression_level": 0,
        "cache_rpc_response": False,
        "disable_session_connection_sharing": False,
        "num_channels_per_target": 0,
    }


_GPU_NATIVE = tuple(f.name for f in dataclasses.fields(config.GPUOptions))
#: ConfigProto's fields that are the native config's (``place_pruned_graph`` and the JIT
#: level are in its ``graph_options``, as TensorFlow's)
_CONFIG_NATIVE = tuple(
    f.name
    for f in dataclasses.fields(config.SessionConfig)
    if f.name not in ("place_pruned_graph", "global_jit")
)


class GPUOptions(config.GPUOptions):
    """``tf.GPUOptions``: the native :class:`~daskgraph.config.GPUOptions` (``allow_growth``,
    ``per_process_gpu_memory_fraction``, ``visible_device_list``, ``virtual_devices``) plus
    TensorFlow's other fields, kept. Equal to a native one with the same native fields."""

    _TF1_FIELDS: ClassVar[dict[str, Any]] = {
        "allocator_type": "",
        "deferred_deletion_bytes": 0,
        "polling_active_delay_usecs": 0,
        "polling_inactive_delay_msecs": 0,
        "force_gpu_compatible": False,
        "experimental": None,
    }

    def __init__(self, **fields: Any) -> None:
        super().__init__(**_set_fields(self, fields, _GPU_NATIVE))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, config.GPUOptions):
            return NotImplemented
        names = (*_GPU_NATIVE, *self._TF1_FIELDS)
        defaults = {**self._TF1_FIELDS}
        return all(
            getattr(self, n) == getattr(other, n, defaults.get(n)) for n in names
        )  # a native GPUOptions has the TF1-only fields' defaults

    __hash__ = None  # type: ignore[assignment]


class ConfigProto(config.SessionConfig):
    """``tf.ConfigProto``: a :class:`~daskgraph.config.SessionConfig` (what it honours:
    ``log_device_placement``, ``allow_soft_placement``, ``device_count``, ``gpu_options``,
    ``operation_timeout_in_ms``) that also takes and keeps TensorFlow 1's other fields
    (thread pools, ``graph_options``, ``isolate_session_state``, ...)."""

    _TF1_FIELDS: ClassVar[dict[str, Any]] = {
        "intra_op_parallelism_threads": 0,
        "inter_op_parallelism_threads": 0,
        "use_per_session_threads": False,
        "session_inter_op_thread_pool": [],
        "placement_period": 0,
        "device_filters": [],
        "pluggable_device_options": None,
        "graph_options": None,
        "rpc_options": None,
        "cluster_def": None,
        "isolate_session_state": False,
        "share_cluster_devices_in_session": False,
        "experimental": None,
    }

    def __init__(self, **fields: Any) -> None:
        native = _set_fields(self, fields, _CONFIG_NATIVE)
        gpu = native.get("gpu_options", GPUOptions())
        native["gpu_options"] = GPUOptions(**gpu) if isinstance(gpu, dict) else gpu
        native["device_count"] = dict(native.get("device_count", {}))
        super().__init__(**native)
        if self.graph_options is None:
            self.graph_options = GraphOptions()
        if self.rpc_options is None:
            self.rpc_options = RPCOptions()

    def places_pruned_graph(self) -> bool:
        """``graph_options.place_pruned_graph`` (or the native field)."""
        return self.place_pruned_graph or bool(self.graph_options.place_pruned_graph)

    def jit_compiles_graph(self) -> bool:
        """``graph_options.optimizer_options.global_jit_level`` ``ON_1`` or ``ON_2`` (or the
        native field)."""
        level = self.graph_options.optimizer_options.global_jit_level
        return self.global_jit or (isinstance(level, int) and level > 0)

    def validate(self) -> ConfigProto:
        """Check the native fields (see :meth:`SessionConfig.validate`) and the thread counts."""
        super().validate()
        for name in ("intra_op_parallelism_threads", "inter_op_parallelism_threads"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"{name} must be an int (0: the default); got {value!r}")
        return self


class RunOptions(session.RunOptions):
    """``tf.RunOptions``: ``trace_level`` and ``timeout_in_ms`` (honoured), and TensorFlow's
    other fields (kept)."""

    _TF1_FIELDS: ClassVar[dict[str, Any]] = {
        "inter_op_thread_pool": 0,
        "output_partition_graphs": False,
        "debug_options": None,
        "report_tensor_allocations_upon_oom": False,
        "experimental": None,
    }

    def __init__(self, **fields: Any) -> None:
        super().__init__(**_set_fields(self, fields, ("trace_level", "timeout_in_ms")))

    def HasField(self, name: str) -> bool:
        """Whether the field ``name`` differs from its default (protocol buffer style)."""
        defaults = {"trace_level": 0, "timeout_in_ms": 0, **self._TF1_FIELDS}
        if name not in defaults:
            raise ValueError(f'Protocol message RunOptions has no non-repeated field "{name}"')
        return getattr(self, name) != defaults[name]


class RunMetadata(session.RunMetadata):
    """``tf.RunMetadata``: ``step_stats`` (filled by a traced run), and TensorFlow's other
    fields, empty."""

    def __init__(self) -> None:
        super().__init__()
        self.cost_graph = None
        self.partition_graphs: list[Any] = []
        self.function_graphs: list[Any] = []
        self.session_metadata = None

    def HasField(self, name: str) -> bool:
        """Whether a traced run filled the field ``name`` (``step_stats`` once traced)."""
        if name == "step_stats":
            return bool(self.step_stats.dev_stats)
        if name in ("cost_graph", "session_metadata"):
            return getattr(self, name) is not None
        raise ValueError(f'Protocol message RunMetadata has no non-repeated field "{name}"')


class InteractiveSession(session.Session):
    """``tf.InteractiveSession``: a session that makes itself the default session as it is
    created (so ``tensor.eval()`` and ``op.run()`` need no ``with`` block), until
    :meth:`close`."""

    _active_session_count = 0  # open interactive sessions, as TensorFlow counts them

    def __init__(self, target: Any = None, graph: Any = None, config: Any = None) -> None:
        config = config if config is not None else default_session_config()
        if isinstance(config, ConfigProto):  # interactive sessions place pruned graphs (as TF)
            config.graph_options.place_pruned_graph = True
        else:
            config = dataclasses.replace(config, place_pruned_graph=True)
        super().__init__(target, graph, config)
        if InteractiveSession._active_session_count > 0:
            warnings.warn(
                "An interactive session is already active. This can cause out-of-memory "
                "errors in some cases. You must explicitly call `InteractiveSession.close()` "
                "to release resources held by the other session(s).",
                stacklevel=2,
            )
        InteractiveSession._active_session_count += 1
        self._default_token: Any = default_session.push(self)

    def close(self) -> None:
        """Stop being the default session, and close (see :meth:`Session.close`)."""
        token, self._default_token = self._default_token, None
        if token is not None:
            InteractiveSession._active_session_count -= 1
            try:
                default_session.pop(token)
            except ValueError:  # closed in another thread or context: it was not the default
                pass
        super().close()


def get_default_session() -> Any:
    """The default session (innermost ``with sess:``/``as_default()``, or an open
    ``InteractiveSession``), or None when there is none, as ``tf.get_default_session``."""
    return default_session.current()
