"""TF 1's mutable ``tf.DeviceSpec`` and its module's helpers, behaviour by behaviour: a plain
object that keeps attributes it does not know, integer fields read as ``int()`` reads them, and
parse errors in TensorFlow's words (which TF 1 programs and tests match on) with daskgraph's
fields. Expected values are TensorFlow 1's, as literals."""

from __future__ import annotations

import pytest

import daskgraph.compat.v1 as tf
from daskgraph.compat.device_spec import DeviceSpec, canonical_name, check_valid
from daskgraph.errors import DeviceSpecError


def test_an_attribute_that_is_not_a_field_is_kept_and_changes_nothing() -> None:
    spec = DeviceSpec(job="foo", replica=12)
    before = (spec.to_string(), hash(spec))
    spec.cpu = None
    spec.gpu = 3
    assert (spec.to_string(), hash(spec)) == before
    assert spec == DeviceSpec.from_string("/job:foo/replica:12")
    assert (spec.cpu, spec.gpu) == (None, 3)
    spec.device_type = "GPU"  # the fields stay fields
    assert spec.to_string() == "/job:foo/replica:12/device:GPU:*"


def test_fields_change_one_at_a_time_in_any_order_among_other_attributes() -> None:
    spec = DeviceSpec()
    spec.device_index = 1  # an index before its type: kept, written once a type comes
    assert spec.to_string() == ""
    spec.device_type = "cpu"
    assert spec.to_string() == "/device:CPU:1"
    spec.task, spec.job = 4, "ps"
    assert spec.to_string() == "/job:ps/task:4/device:CPU:1"
    spec.task = None
    spec.device_index = None
    spec.gpu = None  # as TF 1's own test does between two checks
    assert spec.to_string() == "/job:ps/device:CPU:*"


def test_integer_fields_take_what_int_reads() -> None:
    spec = DeviceSpec(replica="2", task="0")
    spec.device_type, spec.device_index = "GPU", "7"
    assert spec.to_string() == "/replica:2/task:0/device:GPU:7"
    assert (spec.replica, spec.task, spec.device_index) == (2, 0, 7)
    with pytest.raises(ValueError, match="invalid literal for int"):
        spec.task = "zero"
    assert spec.task == 0


@pytest.mark.parametrize(
    ("text", "words", "attribute"),
    [
        ("/job:muu/device:GPU:2/cpu:0", "Cannot specify multiple device types: ", "CPU"),
        ("/cpu:0/device:GPU:2", "Cannot specify multiple device types: ", "GPU"),
        ("/bar:muu/baz:2", "Unknown attribute: 'bar' in '/bar:muu/baz:2'", "bar"),
        ("/job:j/replica:foo", "invalid literal for int() with base 10: 'foo'", "replica"),
        ("/job:j/task:bar", "invalid literal for int() with base 10: 'bar'", "task"),
    ],
)
def test_parse_errors_use_tensorflows_words_and_keep_fields(text, words, attribute) -> None:
    for parse in (DeviceSpec.from_string, DeviceSpec().parse_from_string, check_valid):
        with pytest.raises(ValueError) as info:
            parse(text)
        assert words in str(info.value)
        assert isinstance(info.value, DeviceSpecError)
        assert (info.value.spec, info.value.attribute) == (text, attribute)


def test_parse_and_merge_change_the_spec_in_place_and_a_refused_parse_does_not() -> None:
    spec = DeviceSpec()
    assert spec.parse_from_string("/replica:1/task:0/cpu:0") is spec
    spec.merge_from(DeviceSpec.from_string("/job:boo/device:GPU:0"))
    assert spec.to_string() == "/job:boo/replica:1/task:0/device:GPU:0"
    spec.merge_from(DeviceSpec.from_string("/job:muu/device:Accel:2"))
    assert spec.to_string() == "/job:muu/replica:1/task:0/device:Accel:2"
    with pytest.raises(ValueError, match="Cannot specify multiple device types"):
        spec.parse_from_string("/gpu:0/cpu:0")
    assert spec.to_string() == "/job:muu/replica:1/task:0/device:Accel:2"


def test_canonical_name_orders_the_fields() -> None:
    assert tf.DeviceSpec is DeviceSpec
    assert canonical_name("/device:GPU:0/task:0/replica:0/job:foo") == (
        "/job:foo/replica:0/task:0/device:GPU:0"
    )
    assert canonical_name("/replica:0/job:foo") == "/job:foo/replica:0"
    assert canonical_name(DeviceSpec(job="a", device_type="cpu")) == "/job:a/device:CPU:*"
    assert canonical_name(None) == ""
    assert check_valid("/job:foo/replica:0") is None
