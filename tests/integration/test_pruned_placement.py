"""Placing pruned graphs (issue 26), as TensorFlow does: a plain ``Session`` places the whole
graph, so an op on a device there is not fails every run; an ``InteractiveSession``, or a
config with ``graph_options.place_pruned_graph``, places only what each run needs."""

from __future__ import annotations

import pytest

import daskgraph as dg
import daskgraph.compat.v1 as tf

MISSING = "device specification '/device:GPU:5'"


def _graph() -> tuple[tf.Graph, tf.Tensor, tf.Tensor]:
    graph = tf.Graph()
    with graph.as_default():
        a = tf.constant(1.0, name="a")
        b = tf.add(a, 1.0, name="b")
        with tf.device("/gpu:5"):  # no such device
            c = tf.multiply(a, 7.0, name="c")
    return graph, b, c


def _pruned() -> tf.ConfigProto:
    return tf.ConfigProto(graph_options=tf.GraphOptions(place_pruned_graph=True))


def test_a_plain_session_places_the_whole_graph_and_fails_on_the_unused_op() -> None:
    graph, b, _ = _graph()
    with tf.Session(graph=graph) as session:
        with pytest.raises(tf.errors.InvalidArgumentError, match=MISSING):
            session.run(b)


@pytest.mark.parametrize("how", ["interactive", "config", "native"])
def test_a_pruned_graph_places_only_what_the_run_needs(how: str) -> None:
    graph, b, c = _graph()
    if how == "interactive":
        session = tf.InteractiveSession(graph=graph)
    elif how == "config":
        session = tf.Session(graph=graph, config=_pruned())
    else:
        session = dg.Session(graph=graph, config=dg.SessionConfig(place_pruned_graph=True))
    try:
        assert session.run(b) == 2.0
        if how == "interactive":
            assert b.eval() == 2.0  # (the default session)
        with pytest.raises(tf.errors.InvalidArgumentError, match=MISSING):
            session.run(c)  # the run that needs it fails, as in TensorFlow
        assert session.run(b) == 2.0  # and the session stays usable
        plan = session.placement(b)
        assert {op.name for op in plan.ops} == {"a", "b", b.op.inputs[1].op.name}
    finally:
        session.close()


def test_an_interactive_session_turns_pruned_placement_on_in_the_config_it_is_given() -> None:
    graph, b, _ = _graph()
    config = tf.ConfigProto()
    session = tf.InteractiveSession(graph=graph, config=config)
    try:
        assert config.graph_options.place_pruned_graph  # as TensorFlow sets it
        assert session.run(b) == 2.0
    finally:
        session.close()


def test_pruned_placement_logs_each_runs_ops_only(capfd) -> None:
    graph, b, _ = _graph()
    with graph.as_default():
        d = tf.subtract(b, 0.5, name="d")
    config = _pruned()
    config.log_device_placement = True
    with tf.Session(graph=graph, config=config) as session:
        assert session.run(b) == 2.0
        first = capfd.readouterr().err
        assert session.run(d) == 1.5
        second = capfd.readouterr().err
    assert "b: (Add)" in first and "c: (Mul)" not in first and "d: (Sub)" not in first
    assert "d: (Sub)" in second and "c: (Mul)" not in second
