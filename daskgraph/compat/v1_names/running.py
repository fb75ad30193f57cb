"""TensorFlow 1's top-level names for running graphs: sessions, options, versions, switches.

Its one job is to name ``tf.Session``, ``tf.ConfigProto`` and its kin, ``tf.DeviceSpec``,
``tf.get_logger`` and TensorFlow's version and behaviour switches (``tf.disable_v2_behavior``).
"""

from daskgraph.compat.behaviour import (
    COMPILER_VERSION,
    GIT_VERSION,
    VERSION,
    control_flow_v2_enabled,
    disable_control_flow_v2,
    disable_eager_execution,
    disable_resource_variables,
    disable_tensor_equality,
    disable_v2_behavior,
    disable_v2_tensorshape,
    enable_eager_execution,
    enable_v2_behavior,
    executing_eagerly,
    executing_eagerly_outside_functions,
    resource_variables_enabled,
)
from daskgraph.compat.device_spec import (
    DeviceSpec,
)
from daskgraph.compat.logging import (
    get_logger,
)
from daskgraph.compat.messages import (
    GraphOptions,
    OptimizerOptions,
)
from daskgraph.compat.sessions import (
    ConfigProto,
    GPUOptions,
    InteractiveSession,
    RunMetadata,
    RunOptions,
    get_default_session,
)
from daskgraph.runtime.client.session import (
    Session,
)

__all__ = [
    "COMPILER_VERSION",
    "GIT_VERSION",
    "VERSION",
    "ConfigProto",
    "DeviceSpec",
    "GPUOptions",
    "GraphOptions",
    "InteractiveSession",
    "OptimizerOptions",
    "RunMetadata",
    "RunOptions",
    "Session",
    "control_flow_v2_enabled",
    "disable_control_flow_v2",
    "disable_eager_execution",
    "disable_resource_variables",
    "disable_tensor_equality",
    "disable_v2_behavior",
    "disable_v2_tensorshape",
    "enable_eager_execution",
    "enable_v2_behavior",
    "executing_eagerly",
    "executing_eagerly_outside_functions",
    "get_default_session",
    "get_logger",
    "resource_variables_enabled",
]
