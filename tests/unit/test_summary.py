"""tf.summary: summary ops against TensorFlow 2.21's protos, and event files read back.

The expected summaries were printed by ``tensorflow.compat.v1`` (graph mode) for the same
graphs; event files are read back record by record (TensorFlow's record format, checked with
tensorboardX's CRC) and parsed with tensorboardX's ``Event`` proto.
"""

from __future__ import annotations

import io
import os
import struct

import numpy as np
import pytest
from PIL import Image
from tensorboardX.proto.event_pb2 import Event, SessionLog
from tensorboardX.proto.graph_pb2 import GraphDef
from tensorboardX.proto.summary_pb2 import Summary
from tensorboardX.record_writer import masked_crc32c

import daskgraph as dg
import daskgraph.compat.v1 as tf
from daskgraph import summary
from daskgraph.errors import InvalidArgumentError

VALUES = np.array([[-3.5, 0.0, 1e-13, 2.0], [2.0, 7.25, 100.0, -0.001]], np.float32)


def read_events(logdir: str) -> list[Event]:
    """Every event of the one event file in ``logdir``, its records' CRCs checked."""
    (name,) = [n for n in os.listdir(logdir) if "tfevents" in n]
    data = open(os.path.join(logdir, name), "rb").read()
    events, at = [], 0
    while at < len(data):
        header = data[at : at + 8]
        (length,) = struct.unpack("<Q", header)
        assert struct.unpack("<I", data[at + 8 : at + 12])[0] == masked_crc32c(header)
        body = data[at + 12 : at + 12 + length]
        assert struct.unpack("<I", data[at + 12 + length : at + 16 + length])[0] == masked_crc32c(
            body
        )
        events.append(Event.FromString(body))
        at += 16 + length
    return events


def _run(fetches, feed_dict=None):
    with dg.Session() as sess:
        return sess.run(fetches, feed_dict)


# -- the ops ------------------------------------------------------------------------------------
def test_scalar_tags_follow_name_scopes_and_families_as_in_tensorflow() -> None:
    with dg.Graph().as_default():
        x = dg.constant(VALUES)
        with dg.name_scope("layer"):
            mean = summary.scalar("loss", dg.reduce_mean(x))
            largest = summary.scalar("loss", dg.reduce_max(x), family="fam")
        again = summary.scalar("loss (train)", dg.constant(1))
        got = [Summary.FromString(v).value[0] for v in _run([mean, largest, again])]
        collected = [t.name for t in tf.get_collection(tf.GraphKeys.SUMMARIES)]
    assert [(v.tag, v.simple_value) for v in got] == [
        ("layer/loss", pytest.approx(13.468625)),
        ("fam/layer/fam/loss", 100.0),
        ("loss__train_", 1.0),
    ]
    assert collected == ["layer/loss:0", "layer/fam/loss:0", "loss__train_:0"]
    assert mean.dtype == dg.string and mean.shape == ()


def test_histogram_matches_tensorflow() -> None:
    with dg.Graph().as_default():
        histo = Summary.FromString(_run(summary.histogram("weights", VALUES))).value[0]
    assert histo.tag == "weights"
    h = histo.histo
    assert (h.min, h.max, h.num) == (-3.5, 100.0, 8.0)
    assert h.sum == pytest.approx(107.7489999999526, rel=1e-12)
    assert h.sum_squares == pytest.approx(10072.812501, rel=1e-12)
    np.testing.assert_allclose(
        h.bucket_limit,
        [-3.8315657995195243, -3.48324163592684, -0.001055857634516068, -0.0009598705768327891,
         0.0, 1e-12, 1.9661990955585713, 2.1628190051144287, 6.7878525393626115,
         7.466637793298873, 97.88757810018231, 107.67633591020055, 1.7976931348623157e308],
        rtol=1e-15,
    )  # fmt: skip
    assert list(h.bucket) == [0, 1, 0, 1, 0, 2, 0, 2, 0, 1, 0, 1, 0]


def test_image_matches_tensorflow() -> None:
    images = np.linspace(-1, 2, 2 * 3 * 4 * 3).reshape(2, 3, 4, 3).astype(np.float32)
    images[0, 0, 0, 1] = np.nan  # the pixel gets the bad colour (red)
    with dg.Graph().as_default():
        got = Summary.FromString(_run(summary.image("pics", images, max_outputs=2))).value
        one = Summary.FromString(_run(summary.image("one", images[:1], max_outputs=1))).value
    assert [v.tag for v in got] == ["pics/image/0", "pics/image/1"]
    assert [v.tag for v in one] == ["one/image"]
    assert (got[0].image.height, got[0].image.width, got[0].image.colorspace) == (3, 4, 3)
    pixels = [np.array(Image.open(io.BytesIO(v.image.encoded_image_string))) for v in got]
    assert pixels[0].tolist() == [
        [[255, 0, 0], [0, 7, 13], [19, 25, 31], [37, 44, 50]],
        [[56, 62, 68], [74, 80, 87], [93, 99, 105], [111, 117, 123]],
        [[130, 136, 142], [148, 154, 160], [166, 173, 179], [185, 191, 197]],
    ]
    assert pixels[1].tolist() == [
        [[66, 71, 77], [82, 87, 93], [98, 104, 109], [114, 120, 125]],
        [[131, 136, 141], [147, 152, 158], [163, 168, 174], [179, 184, 190]],
        [[195, 201, 206], [211, 217, 222], [228, 233, 238], [244, 249, 255]],
    ]


def test_text_is_a_string_tensor_for_the_text_plugin() -> None:
    with dg.Graph().as_default():
        value = Summary.FromString(_run(summary.text("note", dg.constant(["hello", "wörld"]))))
    (note,) = value.value
    assert note.tag == "note" and note.metadata.plugin_data.plugin_name == "text"
    assert list(note.tensor.string_val) == [b"hello", "wörld".encode()]
    assert [d.size for d in note.tensor.tensor_shape.dim] == [2]
    with dg.Graph().as_default(), pytest.raises(ValueError, match="to have dtype string"):
        summary.text("bad", dg.constant(1.0))


def test_merge_and_merge_all() -> None:
    with dg.Graph().as_default():
        assert summary.merge_all() is None
        a = summary.scalar("a", dg.constant(1.0))
        b = summary.scalar("b", dg.constant(2.0), collections=["mine"])
        merged = summary.merge_all()
        mine = summary.merge_all("mine")
        both = summary.merge([a, b], name="both")
        duplicate = summary.merge([a, a])
        values = _run([merged, mine, both])
        with pytest.raises(InvalidArgumentError, match="Duplicate tag a found in summary inputs"):
            _run(duplicate)
    tags = [[v.tag for v in Summary.FromString(s).value] for s in values]
    assert tags == [["a"], ["b"], ["a", "b"]]
    assert (merged.op.name, both.op.name) == ("Merge/MergeSummary", "both/both")


def test_run_time_errors_in_tensorflows_words() -> None:
    with dg.Graph().as_default():
        x = dg.placeholder(dg.float32, [None])
        histo = summary.histogram("h", x)
        scalar = summary.scalar("s", x)
        with dg.Session() as sess:
            with pytest.raises(InvalidArgumentError, match="Nan in summary histogram for: h"):
                sess.run(histo, {x: [1.0, np.nan]})
            with pytest.raises(InvalidArgumentError, match="Infinity in summary histogram for: h"):
                sess.run(histo, {x: [np.inf]})
            with pytest.raises(InvalidArgumentError, match=r"not the same shape: \[\] != \[2\]"):
                sess.run(scalar, {x: [1.0, 2.0]})
        with pytest.raises(TypeError, match=r"tf\.summary\.scalar"):
            summary.scalar("s", dg.constant("text"))


@pytest.mark.virtual_gpus(1)
def test_summaries_run_on_the_cpu_of_values_computed_on_a_gpu(dg_session) -> None:
    with dg.device("/gpu:0"):
        x = dg.constant([1.0, 2.0]) * 3.0
    merged = summary.merge([summary.scalar("total", dg.reduce_sum(x)), summary.histogram("x", x)])
    placed = {op.name: op.assigned for op in dg_session.placement(merged).ops}
    assert placed["total"].endswith("CPU:0") and placed[x.op.name].endswith("GPU:0")
    values = Summary.FromString(dg_session.run(merged)).value
    assert values[0].simple_value == 9.0 and values[1].histo.num == 2


# -- the writer ---------------------------------------------------------------------------------
def test_file_writer_writes_the_graph_summaries_and_session_logs(tmp_path) -> None:
    logdir = str(tmp_path / "logs")
    with dg.Graph().as_default() as graph:
        with dg.device("/cpu:0"):
            a = dg.Variable([1.0, 2.0], name="a")
        total = dg.reduce_sum(a * 2.0, name="total")
        loss = summary.scalar("loss", total)
        writer = summary.FileWriter(logdir, graph)
        with dg.Session() as sess:
            sess.run(dg.global_variables_initializer())
            for step in range(3):
                writer.add_summary(sess.run(loss), global_step=step)
        writer.add_summary(summary.Summary(value=[Summary.Value(tag="acc", simple_value=0.5)]), 9)
        writer.add_session_log(summary.SessionLog(status=SessionLog.STOP), 10)
        writer.flush()
        events = read_events(logdir)  # flushed: all there before close
        writer.close()
    assert events[0].file_version == "brain.Event:2"
    nodes = {n.name: n for n in GraphDef.FromString(events[1].graph_def).node}
    assert nodes["a"].op == "VariableV2" and nodes["a"].device == "/device:CPU:0"
    assert list(nodes["total"].input) == ["mul"] and nodes["mul"].device == ""
    assert list(nodes["mul"].input) == ["a/read", "Const"]
    shape = nodes["mul"].attr["_output_shapes"].list.shape[0]
    assert [d.size for d in shape.dim] == [2]
    steps = [(e.step, e.summary.value[0].tag, e.summary.value[0].simple_value) for e in events[2:5]]
    assert steps == [(0, "loss", 6.0), (1, "loss", 6.0), (2, "loss", 6.0)]
    assert (events[5].step, events[5].summary.value[0].tag) == (9, "acc")
    assert (events[6].step, events[6].session_log.status) == (10, SessionLog.STOP)
    assert len(events) == 7


def test_plugin_metadata_is_written_with_a_tags_first_value_only(tmp_path) -> None:
    with dg.Graph().as_default():
        note = summary.text("note", dg.constant("hi"))
        with summary.FileWriter(str(tmp_path)) as writer, dg.Session() as sess:
            for step in range(2):
                writer.add_summary(sess.run(note), step)
    first, second = [e.summary.value[0] for e in read_events(str(tmp_path))[1:]]
    assert first.metadata.plugin_data.plugin_name == "text"
    assert not second.HasField("metadata")


def test_writers_of_one_directory_write_separate_files(tmp_path) -> None:
    with summary.FileWriter(str(tmp_path)), summary.FileWriter(str(tmp_path)):
        pass
    assert len(os.listdir(tmp_path)) == 2


def test_file_writer_cache_shares_one_writer_per_directory(tmp_path) -> None:
    first = summary.FileWriterCache.get(str(tmp_path / "a"))
    assert summary.FileWriterCache.get(str(tmp_path / "a")) is first
    assert summary.FileWriterCache.get(str(tmp_path / "b")) is not first
    assert first.get_logdir() == str(tmp_path / "a")
    summary.FileWriterCache.clear()
    assert summary.FileWriterCache.get(str(tmp_path / "a")) is not first
    summary.FileWriterCache.clear()


def test_compat_v1_has_the_summary_namespace() -> None:
    assert tf.summary.scalar is summary.scalar and tf.summary.FileWriter is summary.FileWriter
    assert tf.summary.Summary is Summary and tf.summary.Event is Event
    assert tf.Summary is Summary and tf.Event is Event and tf.SessionLog is SessionLog
    assert tf.HistogramProto().num == 0 and not hasattr(tf, "NoSuchProto")
