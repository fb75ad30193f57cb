"""tf.train's smaller names, against TensorFlow 2.21: assert_global_step's checks and words,
warm_start (which variables, renames, TF's errors) and ProfilerHook (timeline files at TF's
steps, in the Chrome Trace Format, with the ops of the run and flows between devices)."""

from __future__ import annotations

import json
import os

import pytest

import daskgraph as dg
import daskgraph.compat.v1 as tf
from daskgraph.training.checkpoint_utils import warm_start
from daskgraph.training.global_step import assert_global_step
from daskgraph.training.profiler_hook import ProfilerHook


def test_assert_global_step_is_tensorflows():
    with dg.Graph().as_default():
        assert_global_step(dg.Variable(0, name="a"))
        assert_global_step(dg.placeholder(dg.int64, [None]))  # not fully known: accepted
        assert_global_step(dg.placeholder(dg.int32))
        with pytest.raises(TypeError, match='Existing "global_step" does not have integer type'):
            assert_global_step(dg.Variable(0.0))
        with pytest.raises(TypeError, match=r'Existing "global_step" is not scalar: \(2,\)'):
            assert_global_step(dg.Variable([1, 2]))
        with pytest.raises(TypeError, match=r"must be a Variable or Tensor: 3\."):
            assert_global_step(3)
    assert tf.train.assert_global_step is assert_global_step


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    directory = str(tmp_path_factory.mktemp("warm"))
    with dg.Graph().as_default():
        w = dg.get_variable("w", initializer=[1.0, 2.0])
        b = dg.get_variable("b", initializer=3.0)
        c = dg.get_variable("c", initializer=4.0, trainable=False)
        with dg.Session() as sess:
            sess.run([w.initializer, b.initializer, c.initializer])
            dg.train.Saver().save(sess, os.path.join(directory, "m"))
    return directory


def _new():
    shapes = [("w", [2], True), ("b", [], True), ("c", [], False), ("new_w", [2], True)]
    return [
        dg.get_variable(n, shape=s, initializer=dg.zeros_initializer(), trainable=t)
        for n, s, t in shapes
    ]


# TensorFlow 2.21's values of w, b, c, new_w after global_variables_initializer
WARM_STARTS = [
    ({"vars_to_warm_start": "w"}, [[1.0, 2.0], 0.0, 0.0, [0.0, 0.0]]),
    (
        {"vars_to_warm_start": ".*", "var_name_to_prev_var_name": {"new_w": "w"}},
        [[1.0, 2.0], 3.0, 0.0, [1.0, 2.0]],
    ),
    ({"vars_to_warm_start": ["c", "b"]}, [[0.0, 0.0], 3.0, 4.0, [0.0, 0.0]]),
    ({"vars_to_warm_start": "[wb]"}, [[1.0, 2.0], 3.0, 0.0, [0.0, 0.0]]),
    ({"vars_to_warm_start": None}, [[0.0, 0.0], 0.0, 0.0, [0.0, 0.0]]),
]


@pytest.mark.parametrize("arguments,values", WARM_STARTS)
def test_warm_start_picks_tensorflows_variables(checkpoint, arguments, values):
    with dg.Graph().as_default():
        variables = _new()
        warm_start(checkpoint, **arguments)
        with dg.Session() as sess:
            sess.run(dg.global_variables_initializer())
            assert [v.tolist() for v in sess.run(variables)] == values


def test_warm_start_takes_variables_and_reports_tensorflows_errors(checkpoint):
    with dg.Graph().as_default():
        variables = _new()
        warm_start(checkpoint, [variables[1]])
        with dg.Session() as sess:
            sess.run(dg.global_variables_initializer())
            assert sess.run(variables[1]) == 3.0 and sess.run(variables[0]).tolist() == [0, 0]
        with pytest.raises(ValueError, match=r"not used: \{'nope'\}.  Perhaps you misspelled"):
            warm_start(checkpoint, "w", var_name_to_prev_var_name={"nope": "w"})
        with pytest.raises(ValueError, match=r"Tensor new_w is not found in .* checkpoint"):
            warm_start(checkpoint, ".*")
        with pytest.raises(ValueError, match="it must be all `Variable` or all `str`"):
            warm_start(checkpoint, ["w", variables[0]])
        with pytest.raises(ValueError, match="remapping vocabularies"):
            warm_start(checkpoint, "w", var_name_to_vocab_info={"w": object()})
    assert tf.train.warm_start is warm_start


def _profile(tmp_path, device=None, master="", variable_device=None, **kwargs):
    with dg.Graph().as_default() as graph:
        gs = dg.train.get_or_create_global_step()
        with dg.device(variable_device):
            w = dg.Variable(1.0, name="w")
        with dg.device(device):
            loss = w * w
        train = dg.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=gs)
        hook = ProfilerHook(output_dir=str(tmp_path), **kwargs)
        creator = dg.train.ChiefSessionCreator(master=master)
        with dg.train.MonitoredSession(creator, hooks=[hook]) as sess:
            for _ in range(6):
                sess.run(train)
        return graph


def test_profiler_hook_writes_tensorflows_timelines(tmp_path):
    graph = _profile(tmp_path, save_steps=2)
    assert sorted(os.listdir(tmp_path)) == ["timeline-2.json", "timeline-4.json", "timeline-6.json"]
    trace = json.loads((tmp_path / "timeline-4.json").read_text())
    assert list(trace) == ["traceEvents"]
    events = trace["traceEvents"]
    allocators = {"name": "process_name", "ph": "M", "pid": 0, "args": {"name": "Allocators"}}
    assert events[0] == allocators
    assert events[1]["args"]["name"].endswith("device:CPU:0 Compute") and events[1]["pid"] == 1
    ops = [e for e in events if e["ph"] == "X"]
    names = {e["args"]["name"] for e in ops}
    assert {graph.get_operation_by_name(n).type for n in names} >= {"ApplyGradientDescent"}
    for event in ops:
        assert event["cat"] == "Op" and event["dur"] >= 0 and event["ts"] > 1e15
        assert event["name"] == graph.get_operation_by_name(event["args"]["name"]).type


@pytest.mark.virtual_gpus(1)
def test_profiler_hook_draws_flows_between_devices(tmp_path, dg_cluster):
    # w on the CPU, its square on the GPU: w's value goes to the GPU, its gradient back
    _profile(tmp_path, "/gpu:0", dg_cluster, variable_device="/cpu:0", save_steps=1)
    trace = json.loads((tmp_path / "timeline-6.json").read_text())["traceEvents"]
    processes = [e["args"]["name"] for e in trace if e["ph"] == "M"]
    assert any(p.endswith("GPU:0 Compute") for p in processes)
    flows = [e for e in trace if e["ph"] in ("s", "t")]
    assert flows and {e["ph"] for e in flows} == {"s", "t"}
    names = {e["pid"]: e["args"]["name"] for e in trace if e["ph"] == "M"}
    ends = {flow_id: [] for flow_id in {e["id"] for e in flows}}
    for e in flows:
        ends[e["id"]].append(names[e["pid"]].rsplit(" ", 1)[0][-5:])
    assert ("CPU:0", "GPU:0") in {tuple(sorted(pair)) for pair in ends.values()}


def test_profiler_hook_arguments():
    with pytest.raises(ValueError, match="show_memory is not supported"):
        ProfilerHook(save_steps=1, show_memory=True)
    with pytest.raises(ValueError, match="Either every_secs or every_steps should be provided"):
        ProfilerHook()
    with dg.Graph().as_default():
        with pytest.raises(RuntimeError, match="Global step should be created to use Profiler"):
            ProfilerHook(save_steps=1).begin()
    assert tf.train.ProfilerHook is ProfilerHook
