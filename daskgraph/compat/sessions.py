"""TensorFlow 1's session-side names whose behaviour differs from the native ones.

``tf.ConfigProto``, ``tf.GPUOptions``, ``tf.RunOptions`` and ``tf.RunMetadata`` (with the
messages under them, :mod:`daskgraph.compat.messages`) have every field of TensorFlow 1's
protocol buffers, and only those, as protobuf's messages: setting or reading another is
TensorFlow's ``AttributeError``, passing one to the constructor its ``ValueError``, so a typo
is caught. What has a meaning here is honoured by the native
:class:`~daskgraph.config.SessionConfig` / :class:`~daskgraph.config.GPUOptions` /
:class:`~daskgraph.runtime.client.session.RunOptions` they extend (placement logging, soft
placement, device counts, GPU memory, deadlines, tracing); the rest is kept, so programs that
set and read it run. ``tf.InteractiveSession`` installs itself as the default session until
closed, and ``tf.get_default_session()`` is None when there is none.

>>> cfg = ConfigProto(allow_soft_placement=True, intra_op_parallelism_threads=2)
>>> cfg.gpu_options.allocator_type = "BFC"
>>> cfg.intra_op_parallelism_threads, cfg.validate().allow_soft_placement
(2, True)
>>> ConfigProto(foo=1)
Traceback (most recent call last):
...
ValueError: Protocol message ConfigProto has no "foo" field.
>>> cfg.gpu_options.per_processs_gpu_memory_fraction = 0.4
Traceback (most recent call last):
...
AttributeError: Protocol message GPUOptions has no "per_processs_gpu_memory_fraction" field. \
Did you mean "per_process_gpu_memory_fraction"?
>>> get_default_session() is None
True
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import Any, ClassVar

from daskgraph import config
from daskgraph.compat.messages import (
    ConfigExperimental,
    GPUExperimental,
    GraphOptions,
    RPCOptions,
    RunExperimental,
    Strict,
    ThreadPoolOptionProto,
    default_value,
    repeated,
    set_fields,
)
from daskgraph.config import default_session_config
from daskgraph.errors import unknown_field
from daskgraph.framework import default_session
from daskgraph.runtime.client import session

__all__ = [
    "ConfigProto",
    "GPUOptions",
    "InteractiveSession",
    "RunMetadata",
    "RunOptions",
    "get_default_session",
]


_GPU_NATIVE = tuple(f.name for f in dataclasses.fields(config.GPUOptions))
#: ConfigProto's fields that are the native config's and TensorFlow's (``place_pruned_graph``
#: and the JIT level are in its ``graph_options``, as TensorFlow's)
_CONFIG_NATIVE = tuple(
    f.name
    for f in dataclasses.fields(config.SessionConfig)
    if f.name not in ("place_pruned_graph", "global_jit")
)


class GPUOptions(Strict, config.GPUOptions):
    """``tf.GPUOptions``: the native :class:`~daskgraph.config.GPUOptions` (``allow_growth``,
    ``per_process_gpu_memory_fraction``, ``visible_device_list``, ``virtual_devices``) plus
    TensorFlow's other fields, kept. Equal to a native one with the same native fields."""

    Experimental = GPUExperimental
    _NATIVE_FIELDS = _GPU_NATIVE
    _TF1_FIELDS: ClassVar[dict[str, Any]] = {
        "allocator_type": "",
        "deferred_deletion_bytes": 0,
        "polling_active_delay_usecs": 0,
        "polling_inactive_delay_msecs": 0,
        "force_gpu_compatible": False,
        "experimental": GPUExperimental,
    }

    def __init__(self, **fields: Any) -> None:
        super().__init__(**set_fields(self, fields))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, config.GPUOptions):
            return NotImplemented
        if not isinstance(other, GPUOptions):  # a native one: the TF1-only fields' defaults
            other = GPUOptions(**{n: getattr(other, n) for n in _GPU_NATIVE})
        return all(getattr(self, n) == getattr(other, n) for n in self.field_names())

    __hash__ = None  # type: ignore[assignment]


class ConfigProto(Strict, config.SessionConfig):
    """``tf.ConfigProto``: a :class:`~daskgraph.config.SessionConfig` (what it honours:
    ``log_device_placement``, ``allow_soft_placement``, ``device_count``, ``gpu_options``,
    ``operation_timeout_in_ms``) that also takes and keeps TensorFlow 1's other fields
    (thread pools, ``graph_options``, ``isolate_session_state``, ...)."""

    Experimental = ConfigExperimental
    #: constructor arguments: TensorFlow's; attributes: also the native config's own
    _NATIVE_FIELDS = tuple(f.name for f in dataclasses.fields(config.SessionConfig))
    _TF1_FIELDS: ClassVar[dict[str, Any]] = {
        "intra_op_parallelism_threads": 0,
        "inter_op_parallelism_threads": 0,
        "use_per_session_threads": False,
        "session_inter_op_thread_pool": repeated(ThreadPoolOptionProto),
        "placement_period": 0,
        "device_filters": [],
        "pluggable_device_options": None,
        "graph_options": GraphOptions,
        "rpc_options": RPCOptions,
        "cluster_def": None,
        "isolate_session_state": False,
        "share_cluster_devices_in_session": False,
        "experimental": ConfigExperimental,
    }

    def __init__(self, **fields: Any) -> None:
        for key in ("place_pruned_graph", "global_jit"):  # native only: not TensorFlow's
            if key in fields:
                raise unknown_field(ValueError, "ConfigProto", key, self.field_names())
        native = set_fields(self, fields)
        gpu = native.get("gpu_options", GPUOptions())
        native["gpu_options"] = GPUOptions(**gpu) if isinstance(gpu, dict) else gpu
        native["device_count"] = dict(native.get("device_count", {}))
        super().__init__(**native)

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


class RunOptions(Strict, session.RunOptions):
    """``tf.RunOptions``: ``trace_level`` and ``timeout_in_ms`` (honoured), and TensorFlow's
    other fields (kept)."""

    Experimental = RunExperimental
    _NATIVE_FIELDS = ("trace_level", "timeout_in_ms")
    _TF1_FIELDS: ClassVar[dict[str, Any]] = {
        "inter_op_thread_pool": 0,
        "output_partition_graphs": False,
        "debug_options": None,
        "report_tensor_allocations_upon_oom": False,
        "experimental": RunExperimental,
    }

    def __init__(self, **fields: Any) -> None:
        super().__init__(**set_fields(self, fields))

    def HasField(self, name: str) -> bool:
        """Whether the field ``name`` differs from its default (protocol buffer style)."""
        defaults = {"trace_level": 0, "timeout_in_ms": 0, **self._TF1_FIELDS}
        if name not in defaults:
            raise ValueError(f'Protocol message RunOptions has no non-repeated field "{name}"')
        return getattr(self, name) != default_value(defaults[name])


class RunMetadata(Strict, session.RunMetadata):
    """``tf.RunMetadata``: ``step_stats`` (filled by a traced run), and TensorFlow's other
    fields, empty."""

    _NATIVE_FIELDS = ("step_stats",)
    _TF1_FIELDS: ClassVar[dict[str, Any]] = {
        "cost_graph": None,
        "partition_graphs": [],
        "function_graphs": [],
        "session_metadata": None,
    }

    def __init__(self) -> None:
        super().__init__()
        set_fields(self, {})

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
