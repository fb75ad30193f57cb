"""TensorFlow's cluster protocol buffers: ``tf.train.ClusterDef``, ``JobDef`` and ``ServerDef``.

Real protocol buffer messages (google.protobuf), built at import time from descriptors with
TensorFlow's package (``tensorflow``), message names and field numbers
(``tensorflow/core/protobuf/cluster.proto``, ``tensorflow_server.proto``), so that the text
format, serialization and equality are protobuf's own (a map entry's key 0, a default, is
not printed). ``ServerDef.default_session_config`` is a ``tensorflow.ConfigProto`` holding
the fields of TensorFlow's ``ConfigProto`` (and its ``GPUOptions``) that a daskgraph session
honours, with their numbers in ``config.proto``; :func:`config_to_proto` and
:func:`config_from_proto` convert it to and from :class:`~daskgraph.compat.sessions.ConfigProto`.
The messages live in a descriptor pool of their own, so they do not clash with TensorFlow's
when both are imported.

>>> from google.protobuf import text_format
>>> job = JobDef(name="worker", tasks={0: "w0:2222", 1: "w1:2222"})
>>> print(text_format.MessageToString(ClusterDef(job=[job])), end="")
job {
  name: "worker"
  tasks {
    value: "w0:2222"
  }
  tasks {
    key: 1
    value: "w1:2222"
  }
}
>>> ServerDef.FromString(ServerDef(job_name="worker", task_index=1).SerializeToString())
job_name: "worker"
task_index: 1
<BLANKLINE>
"""

from __future__ import annotations

from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from daskgraph.compat.sessions import ConfigProto as _SessionConfigProto

__all__ = [
    "ClusterDef",
    "ConfigProto",
    "GPUOptions",
    "JobDef",
    "ServerDef",
    "config_from_proto",
    "config_to_proto",
    "is_message",
]

_F = descriptor_pb2.FieldDescriptorProto
_PROTO_DIR = "tensorflow/core/protobuf/"

#: message -> its fields (name, number, type, repeated, message type or None), as TensorFlow's
_CLUSTER = {
    "JobDef": [("name", 1, _F.TYPE_STRING, False, None), ("tasks", 2, "map", True, None)],
    "ClusterDef": [("job", 1, _F.TYPE_MESSAGE, True, "JobDef")],
}
_CONFIG = {
    "GPUOptions": [
        ("per_process_gpu_memory_fraction", 1, _F.TYPE_DOUBLE, False, None),
        ("allow_growth", 4, _F.TYPE_BOOL, False, None),
        ("visible_device_list", 5, _F.TYPE_STRING, False, None),
    ],
    "ConfigProto": [
        ("device_count", 1, "map", True, None),
        ("gpu_options", 6, _F.TYPE_MESSAGE, False, "GPUOptions"),
        ("allow_soft_placement", 7, _F.TYPE_BOOL, False, None),
        ("log_device_placement", 8, _F.TYPE_BOOL, False, None),
        ("operation_timeout_in_ms", 11, _F.TYPE_INT64, False, None),
    ],
}
_SERVER = {
    "ServerDef": [
        ("cluster", 1, _F.TYPE_MESSAGE, False, "ClusterDef"),
        ("job_name", 2, _F.TYPE_STRING, False, None),
        ("task_index", 3, _F.TYPE_INT32, False, None),
        ("default_session_config", 4, _F.TYPE_MESSAGE, False, "ConfigProto"),
        ("protocol", 5, _F.TYPE_STRING, False, None),
        ("port", 6, _F.TYPE_INT32, False, None),
    ],
}
#: the map fields' key and value types
_MAPS = {
    ("JobDef", "tasks"): (_F.TYPE_INT32, _F.TYPE_STRING),
    ("ConfigProto", "device_count"): (_F.TYPE_STRING, _F.TYPE_INT32),
}


def _field(message: Any, name: str, number: int, kind: int, repeated: bool, type_name: Any):
    """Add one field to the DescriptorProto ``message``."""
    field = message.field.add(name=name, number=number, type=kind)
    field.label = _F.LABEL_REPEATED if repeated else _F.LABEL_OPTIONAL
    if type_name is not None:
        field.type_name = f".tensorflow.{type_name}"
    return field


def _file(name: str, messages: dict[str, list], deps: tuple[str, ...] = ()) -> Any:
    """The proto3 FileDescriptorProto of ``messages`` in package ``tensorflow``; a map field
    gets its ``<Name>Entry`` nested message, as protoc makes it."""
    proto = descriptor_pb2.FileDescriptorProto(
        name=_PROTO_DIR + name, package="tensorflow", syntax="proto3", dependency=list(deps)
    )
    for message_name, fields in messages.items():
        message = proto.message_type.add(name=message_name)
        for fname, number, kind, repeated, type_name in fields:
            if kind != "map":
                _field(message, fname, number, kind, repeated, type_name)
                continue
            entry_name = "".join(part.title() for part in fname.split("_")) + "Entry"
            entry = message.nested_type.add(name=entry_name)
            entry.options.map_entry = True
            key, value = _MAPS[(message_name, fname)]
            _field(entry, "key", 1, key, False, None)
            _field(entry, "value", 2, value, False, None)
            _field(message, fname, number, _F.TYPE_MESSAGE, True, f"{message_name}.{entry_name}")
    return proto


_POOL = descriptor_pool.DescriptorPool()
_POOL.AddSerializedFile(_file("cluster.proto", _CLUSTER).SerializeToString())
_POOL.AddSerializedFile(_file("config.proto", _CONFIG).SerializeToString())
_DEPS = (_PROTO_DIR + "cluster.proto", _PROTO_DIR + "config.proto")
_POOL.AddSerializedFile(_file("tensorflow_server.proto", _SERVER, _DEPS).SerializeToString())


def _message_class(name: str) -> type:
    return message_factory.GetMessageClass(_POOL.FindMessageTypeByName(f"tensorflow.{name}"))


JobDef = _message_class("JobDef")
ClusterDef = _message_class("ClusterDef")
GPUOptions = _message_class("GPUOptions")
ConfigProto = _message_class("ConfigProto")
ServerDef = _message_class("ServerDef")


def is_message(value: Any, name: str) -> bool:
    """Whether ``value`` is a ``tensorflow.<name>`` protocol buffer message (these classes',
    or TensorFlow's own when it is imported too).

    >>> is_message(ClusterDef(), "ClusterDef"), is_message({}, "ClusterDef")
    (True, False)
    """
    descriptor = getattr(value, "DESCRIPTOR", None)
    return getattr(descriptor, "full_name", None) == f"tensorflow.{name}"


def config_to_proto(config: Any) -> Any:
    """The ``tensorflow.ConfigProto`` message of a ``tf.ConfigProto`` (or a native
    :class:`~daskgraph.config.SessionConfig`): the fields it has here.

    >>> config_to_proto(_SessionConfigProto(allow_soft_placement=True)).allow_soft_placement
    True
    """
    gpu = config.gpu_options
    return ConfigProto(
        device_count=dict(config.device_count),
        gpu_options=GPUOptions(
            per_process_gpu_memory_fraction=gpu.per_process_gpu_memory_fraction,
            allow_growth=gpu.allow_growth,
            visible_device_list=gpu.visible_device_list,
        ),
        allow_soft_placement=config.allow_soft_placement,
        log_device_placement=config.log_device_placement,
        operation_timeout_in_ms=config.operation_timeout_in_ms,
    )


def config_from_proto(message: Any) -> _SessionConfigProto:
    """The ``tf.ConfigProto`` of a ``tensorflow.ConfigProto`` message (its fields here).

    >>> config_from_proto(ConfigProto(device_count={"GPU": 0})).device_count
    {'GPU': 0}
    """
    gpu = message.gpu_options
    return _SessionConfigProto(
        device_count=dict(message.device_count),
        gpu_options={
            "per_process_gpu_memory_fraction": gpu.per_process_gpu_memory_fraction,
            "allow_growth": gpu.allow_growth,
            "visible_device_list": gpu.visible_device_list,
        },
        allow_soft_placement=message.allow_soft_placement,
        log_device_placement=message.log_device_placement,
        operation_timeout_in_ms=message.operation_timeout_in_ms,
    )
