"""Unit tests for daskgraph.framework.device: parsing, printing, merging and matching device
specs."""

from __future__ import annotations

import dataclasses
import pickle
import re

import pytest

from daskgraph.errors import DeviceSpecError
from daskgraph.framework.device import CPU, GPU, DeviceSpec, _parse_fields, parse

# (input, (job, replica, task, device_type, device_index), canonical string)
VALID = [
    ("", (None, None, None, None, None), ""),
    ("/", (None, None, None, None, None), ""),
    # TensorFlow skips empty components and those with nothing before their colon
    ("//", (None, None, None, None, None), ""),
    ("/job:worker//task:1", ("worker", None, 1, None, None), "/job:worker/task:1"),
    ("cpu/:0", (None, None, None, "CPU", None), "/device:CPU:*"),
    ("/cpu:0/", (None, None, None, "CPU", 0), "/device:CPU:0"),
    ("/cpu:0", (None, None, None, "CPU", 0), "/device:CPU:0"),
    ("/gpu:1", (None, None, None, "GPU", 1), "/device:GPU:1"),
    ("/GPU:1", (None, None, None, "GPU", 1), "/device:GPU:1"),
    ("/Gpu:1", (None, None, None, "GPU", 1), "/device:GPU:1"),
    ("/device:GPU:1", (None, None, None, "GPU", 1), "/device:GPU:1"),
    ("/device:gpu:1", (None, None, None, "GPU", 1), "/device:GPU:1"),
    ("/gpu:*", (None, None, None, "GPU", None), "/device:GPU:*"),
    ("/cpu", (None, None, None, "CPU", None), "/device:CPU:*"),
    ("/device:CPU:*", (None, None, None, "CPU", None), "/device:CPU:*"),
    ("/device:GPU", (None, None, None, "GPU", None), "/device:GPU:*"),
    ("/job:worker", ("worker", None, None, None, None), "/job:worker"),
    (
        "/job:worker/replica:0/task:1/device:GPU:0",
        ("worker", 0, 1, "GPU", 0),
        "/job:worker/replica:0/task:1/device:GPU:0",
    ),
    ("/replica:1/task:0/cpu:0", (None, 1, 0, "CPU", 0), "/replica:1/task:0/device:CPU:0"),
    ("/job:worker/task:1", ("worker", None, 1, None, None), "/job:worker/task:1"),
    ("/job:local/task:1/gpu:0", ("local", None, 1, "GPU", 0), "/job:local/task:1/device:GPU:0"),
    ("/device:TPU:2", (None, None, None, "TPU", 2), "/device:TPU:2"),
    ("/device:XLA_GPU:0", (None, None, None, "XLA_GPU", 0), "/device:XLA_GPU:0"),
    ("/device:my_accel:3", (None, None, None, "my_accel", 3), "/device:my_accel:3"),
    ("cpu:0", (None, None, None, "CPU", 0), "/device:CPU:0"),
    ("gpu:1", (None, None, None, "GPU", 1), "/device:GPU:1"),
    ("/job:worker/", ("worker", None, None, None, None), "/job:worker"),
    ("/cpu:0/", (None, None, None, "CPU", 0), "/device:CPU:0"),
    (
        "/device:GPU:3/task:2/replica:1/job:ps",
        ("ps", 1, 2, "GPU", 3),
        "/job:ps/replica:1/task:2/device:GPU:3",
    ),
    ("/task:007", (None, None, 7, None, None), "/task:7"),
    ("/job:my-job_2", ("my-job_2", None, None, None, None), "/job:my-job_2"),
]
VALID_IDS = [case[0] or "<empty>" for case in VALID]

# TensorFlow's own words, which TF programs and tests match on: (input, message start)
TF_WORDED = [
    (
        "/gpu:0/cpu:0",
        "Cannot specify multiple device types: '/gpu:0/cpu:0'. Multiple device types are not "
        "allowed while parsing the device spec: it names 'GPU' and 'CPU'",
    ),
    (
        "/device:GPU:0/device:CPU:1",
        "Cannot specify multiple device types: '/device:GPU:0/device:CPU:1'. Multiple device "
        "types are not allowed while parsing the device spec: it names 'GPU' and 'CPU'",
    ),
    ("/gpu:0/device:GPU:1", "Cannot specify multiple device types: '/gpu:0/device:GPU:1'."),
    ("/foo:1", "Unknown attribute: 'foo' in '/foo:1'"),
    ("/machine:2", "Unknown attribute: 'machine' in '/machine:2'"),
    ("/worker", "Unknown attribute: 'worker' in '/worker'"),
    ("/JOB:worker", "Unknown attribute: 'JOB' in '/JOB:worker'"),
    (" /cpu:0", "Unknown attribute: ' ' in ' /cpu:0'"),
]

MALFORMED = [
    ("/job:a/job:b", "field 'job' given twice"),
    ("/task:0/task:1", "field 'task' given twice"),
    ("/replica:0/replica:0", "field 'replica' given twice"),
    ("/gpu:x", "device index must be"),
    ("/task:one", "task must be a non-negative integer below 2**63, got 'one' (invalid literal"),
    ("/replica:foo", "(invalid literal for int() with base 10: 'foo')"),
    ("/replica:-1", "replica must be a non-negative integer"),
    ("/gpu:1.5", "device index must be"),
    ("/gpu:-1", "device index must be"),
    ("/task:*", "task must be a non-negative integer"),
    ("/job:", "'job' needs exactly one value"),
    ("/job", "'job' needs exactly one value"),
    ("/job:a:b", "'job' needs exactly one value"),
    ("/job:1abc", "invalid job name"),
    ("/job:a b", "invalid job name"),
    ("/gpu:", "device index must be"),
    ("/gpu:0:1", "takes the form"),
    ("/device:", "invalid device type"),
    ("/device", "'device' takes the form"),
    ("/device:GPU:0:1", "'device' takes the form"),
    ("/device:GPU:", "device index must be"),
    ("/device:*:0", "invalid device type"),
    ("/job:o'brien", "invalid job name"),
]


@pytest.mark.parametrize(("text", "fields", "canonical"), VALID, ids=VALID_IDS)
def test_from_string_accepts(text: str, fields: tuple, canonical: str) -> None:
    spec = DeviceSpec.from_string(text)
    assert (spec.job, spec.replica, spec.task, spec.device_type, spec.device_index) == fields
    assert spec.to_string() == canonical
    assert str(spec) == canonical
    assert repr(spec) == f"DeviceSpec({canonical!r})"


@pytest.mark.parametrize(("text", "fields", "canonical"), VALID, ids=VALID_IDS)
def test_round_trip(text: str, fields: tuple, canonical: str) -> None:
    spec = DeviceSpec.from_string(text)
    again = DeviceSpec.from_string(spec.to_string())
    assert again == spec
    assert again.to_string() == canonical
    assert DeviceSpec(*fields) == spec


@pytest.mark.parametrize(("text", "reason"), MALFORMED, ids=[case[0] for case in MALFORMED])
def test_from_string_rejects(text: str, reason: str) -> None:
    with pytest.raises(ValueError, match=re.escape(repr(text))) as info:
        DeviceSpec.from_string(text)
    message = str(info.value)
    assert message.startswith(f"Malformed device specification {text!r}: ")
    assert reason in message
    assert message.endswith("Expected a string like '/job:worker/replica:0/task:1/device:GPU:0'")


@pytest.mark.parametrize(("text", "start"), TF_WORDED, ids=[case[0] for case in TF_WORDED])
def test_from_string_rejects_in_tensorflows_words(text: str, start: str) -> None:
    with pytest.raises(DeviceSpecError) as info:
        DeviceSpec.from_string(text)
    assert str(info.value).startswith(start)
    assert str(info.value).endswith("as in '/job:worker/replica:0/task:1/device:GPU:0'")
    assert info.value.spec == text
    assert isinstance(info.value, ValueError)


def test_parse_errors_carry_fields() -> None:
    with pytest.raises(DeviceSpecError) as info:
        DeviceSpec.from_string("/job:w/gpu:0/cpu:1")
    assert (info.value.spec, info.value.attribute, info.value.reason) == (
        "/job:w/gpu:0/cpu:1",
        "CPU",
        "multiple device types",
    )
    with pytest.raises(DeviceSpecError) as info:
        DeviceSpec.from_string("/job:w/task:x")
    assert (info.value.attribute, info.value.reason) == (
        "task",
        "task must be a non-negative integer below 2**63, got 'x' (invalid literal for int() "
        "with base 10: 'x')",
    )
    assert pickle.loads(pickle.dumps(info.value)).attribute == "task"


def test_a_negative_index_is_not_called_an_invalid_literal() -> None:
    with pytest.raises(DeviceSpecError) as info:  # int() reads it; daskgraph refuses the sign
        DeviceSpec.from_string("/replica:-1")
    assert "invalid literal" not in str(info.value)


def test_errors_are_raised_again_after_caching() -> None:
    for _ in range(2):
        with pytest.raises(ValueError, match="Unknown attribute: 'foo'"):
            DeviceSpec.from_string("/foo:1")


def test_parser_is_lru_cached() -> None:
    info = _parse_fields.cache_info()
    assert info.maxsize == 4096
    DeviceSpec.from_string("/job:cache-probe/gpu:5")
    before = _parse_fields.cache_info().hits
    DeviceSpec.from_string("/job:cache-probe/gpu:5")
    assert _parse_fields.cache_info().hits == before + 1


@pytest.mark.parametrize(
    "value", [0, 1.5, None, b"/cpu:0", ["/cpu:0"]], ids=["int", "float", "none", "bytes", "list"]
)
def test_from_string_rejects_non_strings(value: object) -> None:
    with pytest.raises(TypeError, match=type(value).__name__):
        DeviceSpec.from_string(value)  # type: ignore[arg-type]


def test_constants() -> None:
    assert (CPU, GPU) == ("CPU", "GPU")
    assert DeviceSpec.from_string("/cpu:0").device_type == CPU
    assert DeviceSpec.from_string("/device:gpu:0").device_type == GPU


@pytest.mark.parametrize(
    ("kwargs", "canonical"),
    [
        ({}, ""),
        ({"device_type": "gpu", "device_index": 2}, "/device:GPU:2"),
        ({"device_type": "Cpu"}, "/device:CPU:*"),
        ({"device_type": "tpu", "device_index": 0}, "/device:tpu:0"),
        ({"job": "ps", "replica": 0, "task": 3}, "/job:ps/replica:0/task:3"),
    ],
    ids=["empty", "gpu-lower", "cpu-mixed", "custom-keeps-case", "no-device"],
)
def test_constructor_normalises(kwargs: dict, canonical: str) -> None:
    assert DeviceSpec(**kwargs).to_string() == canonical


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"task": -1}, ValueError),
        ({"replica": -2}, ValueError),
        ({"device_type": "GPU", "device_index": -1}, ValueError),
        ({"device_index": -1}, ValueError),
        ({"job": "bad job"}, ValueError),
        ({"job": 3}, ValueError),
        ({"device_type": "G:PU"}, ValueError),
        ({"device_type": ""}, ValueError),
        ({"task": "1"}, TypeError),
        ({"task": True}, TypeError),
        ({"device_type": "GPU", "device_index": 1.0}, TypeError),
    ],
    ids=[
        "neg-task",
        "neg-replica",
        "neg-index",
        "neg-index-without-type",
        "bad-job",
        "job-int",
        "bad-type",
        "empty-type",
        "task-str",
        "task-bool",
        "index-float",
    ],
)
def test_constructor_validates(kwargs: dict, error: type[Exception]) -> None:
    with pytest.raises(error):
        DeviceSpec(**kwargs)


@pytest.mark.parametrize(
    ("outer", "inner", "merged"),
    [
        ("/job:worker/task:1", "/gpu:0", "/job:worker/task:1/device:GPU:0"),
        ("/job:worker/task:1/gpu:0", "/job:ps", "/job:ps/task:1/device:GPU:0"),
        ("/job:worker/task:1/gpu:0", "/task:2", "/job:worker/task:2/device:GPU:0"),
        ("/job:worker/replica:0", "/replica:3/cpu:1", "/job:worker/replica:3/device:CPU:1"),
        ("/job:worker/gpu:0", "/cpu:1", "/job:worker/device:CPU:1"),
        ("/job:worker/gpu:3", "/device:GPU:*", "/job:worker/device:GPU:*"),
        ("/job:worker/gpu:3", "/device:CPU:*", "/job:worker/device:CPU:*"),
        ("/job:worker/gpu:3", "", "/job:worker/device:GPU:3"),
        ("", "/job:a/replica:1/task:2/gpu:3", "/job:a/replica:1/task:2/device:GPU:3"),
        ("", "", ""),
    ],
    ids=[
        "outer-job-inner-device",
        "inner-job-wins",
        "inner-task-wins",
        "inner-replica-and-device",
        "inner-device-wins",
        "type-and-index-unit-same-type",
        "type-and-index-unit-other-type",
        "empty-inner",
        "empty-outer",
        "both-empty",
    ],
)
def test_make_merged_spec(outer: str, inner: str, merged: str) -> None:
    outer_spec = DeviceSpec.from_string(outer)
    result = outer_spec.make_merged_spec(DeviceSpec.from_string(inner))
    assert result.to_string() == merged
    assert outer_spec.to_string() == DeviceSpec.from_string(outer).to_string()  # unchanged


def test_make_merged_spec_rejects_strings() -> None:
    with pytest.raises(TypeError, match="str"):
        DeviceSpec().make_merged_spec("/gpu:0")  # type: ignore[arg-type]


def test_replace() -> None:
    spec = DeviceSpec.from_string("/job:worker/task:1/cpu:0")
    assert spec.replace(task=2).to_string() == "/job:worker/task:2/device:CPU:0"
    assert spec.replace(device_type="gpu").to_string() == "/job:worker/task:1/device:GPU:0"
    assert spec.replace(job=None, task=None).to_string() == "/device:CPU:0"
    assert spec.replace(device_type=None, device_index=None).to_string() == "/job:worker/task:1"
    assert spec.replace() == spec
    assert spec.to_string() == "/job:worker/task:1/device:CPU:0"


def test_replace_unknown_field() -> None:
    with pytest.raises(TypeError, match="'device'"):
        DeviceSpec().replace(device="GPU")


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        ({"task": -1}, ValueError),
        ({"device_index": -3}, ValueError),
        ({"replica": "0"}, TypeError),
        ({"job": "no/slash"}, ValueError),
    ],
    ids=["neg-task", "neg-index", "replica-str", "job-slash"],
)
def test_replace_validates(fields: dict, error: type[Exception]) -> None:
    with pytest.raises(error):
        DeviceSpec.from_string("/gpu:0").replace(**fields)


def test_properties() -> None:
    assert DeviceSpec().is_empty
    assert DeviceSpec.from_string("").is_empty
    assert not DeviceSpec.from_string("/task:0").is_empty
    assert not DeviceSpec().is_fully_specified
    full = DeviceSpec.from_string("/job:w/replica:0/task:0/cpu:0")
    assert full.is_fully_specified
    assert not full.replace(device_index=None).is_fully_specified


FULL_GPU3 = "/job:worker/replica:0/task:1/device:GPU:3"


@pytest.mark.parametrize(
    ("pattern", "target", "expected"),
    [
        ("/job:worker/device:GPU:*", FULL_GPU3, True),
        ("/job:worker/device:GPU:*", "/job:worker/replica:0/task:1/device:CPU:0", False),
        ("", FULL_GPU3, True),
        ("", "", True),
        ("/gpu:3", FULL_GPU3, True),
        ("/gpu:2", FULL_GPU3, False),
        ("/job:ps", FULL_GPU3, False),
        ("/task:1", FULL_GPU3, True),
        ("/device:gpu:*", "/gpu:0", True),
        ("/device:XLA_GPU:*", "/gpu:0", False),
        (FULL_GPU3, "/job:worker/device:GPU:3", False),
        ("/job:worker", "", False),
    ],
    ids=[
        "partial-gpu-match",
        "partial-gpu-vs-cpu",
        "empty-matches-full",
        "empty-matches-empty",
        "index-match",
        "index-mismatch",
        "job-mismatch",
        "task-only",
        "case-normalised",
        "custom-type-is-distinct",
        "full-vs-partial",
        "job-vs-empty",
    ],
)
def test_matches(pattern: str, target: str, expected: bool) -> None:
    assert DeviceSpec.from_string(pattern).matches(DeviceSpec.from_string(target)) is expected


def test_equality_and_hash() -> None:
    a = DeviceSpec.from_string("/gpu:1")
    b = DeviceSpec.from_string("/device:GPU:1")
    c = DeviceSpec(device_type="gpu", device_index=1)
    assert a == b == c
    assert hash(a) == hash(b) == hash(c)
    assert a != DeviceSpec.from_string("/gpu:2")
    assert a != "/device:GPU:1"
    table = {a: "first"}
    table[b] = "second"
    assert table == {c: "second"}
    assert len({DeviceSpec.from_string(s) for s in ["/cpu:0", "cpu:0", "/device:CPU:0/"]}) == 1


def test_immutable() -> None:
    spec = DeviceSpec.from_string("/job:worker/gpu:0")
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.job = "ps"  # type: ignore[misc]
    with pytest.raises((AttributeError, TypeError)):
        spec.extra = 1  # type: ignore[attr-defined]
    assert spec.to_string() == "/job:worker/device:GPU:0"


def test_pickle_round_trip() -> None:
    spec = DeviceSpec.from_string("/job:worker/replica:0/task:1/device:XLA_GPU:0")
    assert pickle.loads(pickle.dumps(spec)) == spec


@pytest.mark.parametrize(
    ("value", "canonical"),
    [
        (None, ""),
        ("", ""),
        ("/gpu:0", "/device:GPU:0"),
        (DeviceSpec(job="w"), "/job:w"),
    ],
    ids=["none", "empty-string", "string", "spec"],
)
def test_parse(value: str | DeviceSpec | None, canonical: str) -> None:
    assert parse(value).to_string() == canonical


def test_parse_returns_same_spec() -> None:
    spec = DeviceSpec.from_string("/cpu:0")
    assert parse(spec) is spec


@pytest.mark.parametrize("value", [0, b"/cpu:0", object()], ids=["int", "bytes", "object"])
def test_parse_rejects(value: object) -> None:
    with pytest.raises(TypeError, match=type(value).__name__):
        parse(value)  # type: ignore[arg-type]


def test_parse_rejects_malformed() -> None:
    with pytest.raises(ValueError, match=re.escape("'/foo:1'")):
        parse("/foo:1")


@pytest.mark.parametrize(
    "text",
    [
        "/device:GPU:0/device:" + "Y" * 4_000_000 + ":0",
        "/gpu:0/device:" + "X" * 4_000_000,
        "/" + "k" * 4_000_000 + ":1",
        "/task:" + "9" * 4_000_000,
    ],
    ids=["second-device-type", "second-device-type-no-index", "unknown-field", "huge-index"],
)
def test_a_4mb_malformed_string_is_quoted_shortened(text: str) -> None:
    with pytest.raises(DeviceSpecError) as info:
        DeviceSpec.from_string(text)
    message = str(info.value)
    assert len(message) < 1_000
    assert f"... ({len(text)} characters)" in message


def test_an_index_without_a_type_is_kept_but_written_only_with_one() -> None:
    """As TensorFlow's specs (``DeviceSpecV1``'s fields are set in any order)."""
    spec = DeviceSpec(job="foo", device_index=2)
    assert spec.device_index == 2 and spec.to_string() == "/job:foo"
    assert spec.replace(device_type="gpu").to_string() == "/job:foo/device:GPU:2"
    merged = DeviceSpec.from_string("/job:w/device:CPU:0").make_merged_spec(spec)
    assert merged.to_string() == "/job:foo/device:CPU:2"


def test_the_mutable_spec_takes_its_fields_in_any_order() -> None:
    """TensorFlow's own ``device_spec_test`` (``test_device_spec_v1_mutability``)."""
    import daskgraph.compat.v1 as tf

    d = tf.DeviceSpec()
    d.job = "foo"
    assert d.to_string() == "/job:foo"
    d.task = 3
    assert d.to_string() == "/job:foo/task:3"
    d.device_type = "CPU"
    d.device_index = 0
    assert d.to_string() == "/job:foo/task:3/device:CPU:0"
    d.task = None
    d.replica = 12
    assert d.to_string() == "/job:foo/replica:12/device:CPU:0"
    d.device_type = "GPU"
    d.device_index = 2
    assert d.to_string() == "/job:foo/replica:12/device:GPU:2"
    d.device_type = None  # the type first, the index after
    d.device_index = None
    assert d.to_string() == "/job:foo/replica:12"
    e = tf.DeviceSpec()
    e.device_index = 1  # the index first
    e.device_type = "gpu"
    assert e.to_string() == "/device:GPU:1"
