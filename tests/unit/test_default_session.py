"""The default session, as the graph side sees it: ``Tensor.eval``, ``Operation.run`` and
``Variable.eval`` run in it, without the graph importing the session module."""

from __future__ import annotations

import threading

import pytest

import daskgraph as dg
from daskgraph.compat import v1
from daskgraph.framework import default_session, graph, nodes, scopes
from daskgraph.runtime.client import session


class Recorder:
    """A stand-in session: records what it is asked to run."""

    def __init__(self) -> None:
        self.calls: list[tuple[object, object]] = []

    def run(self, fetches, feed_dict=None):
        """Record the call; answer 42."""
        self.calls.append((fetches, feed_dict))
        return 42


def test_the_public_names_stay_where_they_were() -> None:
    assert dg.get_default_session is session.get_default_session
    assert session.get_default_session is default_session.get_default_session
    assert graph.as_operation is nodes.as_operation
    assert (graph.Operation, graph.Tensor, graph.Shape) == (
        nodes.Operation,
        nodes.Tensor,
        nodes.Shape,
    )
    assert dg.Tensor is nodes.Tensor and v1.Operation is nodes.Operation


def test_eval_and_run_use_the_default_session() -> None:
    with dg.Graph().as_default():
        x = dg.placeholder(dg.float32, shape=())
        y = x * 2.0
        v = dg.Variable(1.0, name="v")
    sess = Recorder()
    with default_session.as_default(sess) as entered:
        assert entered is sess
        assert y.eval({x: 1.0}) == 42
        assert y.op.run(feed_dict={x: 3.0}) is None
        assert v.eval() == 42
    assert sess.calls == [(y, {x: 1.0}), (y.op, {x: 3.0}), (v, None)]


def test_an_explicit_session_wins() -> None:
    with dg.Graph().as_default():
        c = dg.constant(1.0)
    outer, explicit = Recorder(), Recorder()
    with default_session.as_default(outer):
        c.eval(session=explicit)
        c.op.run(session=explicit)
    assert outer.calls == [] and len(explicit.calls) == 2


def test_without_a_default_session_eval_says_so() -> None:
    with dg.Graph().as_default():
        c = dg.constant(1.0)
    with pytest.raises(ValueError, match="No default session"):
        c.eval()
    with pytest.raises(ValueError, match="No default session"):
        dg.get_default_session()


def test_push_and_pop_nest() -> None:
    first, second = Recorder(), Recorder()
    token1 = default_session.push(first)
    token2 = default_session.push(second)
    assert default_session.get_default_session() is second
    default_session.pop(token2)
    assert default_session.get_default_session() is first
    default_session.pop(token1)
    with pytest.raises(ValueError):
        default_session.get_default_session()


def test_each_thread_has_its_own_default() -> None:
    seen = []
    with default_session.as_default(Recorder()):
        thread = threading.Thread(target=lambda: seen.append(_default_or_none()))
        thread.start()
        thread.join()
    assert seen == [None]


def _default_or_none():
    try:
        return default_session.get_default_session()
    except ValueError:
        return None


def test_scopes_take_tensors_and_variables_without_the_graph_module() -> None:
    with dg.Graph().as_default() as g:
        v = dg.Variable(1.0, name="v")
        with scopes.colocate_with(v), scopes.control_dependencies([v.initializer]):
            c = dg.constant(2.0, name="c")
    assert c.op.colocation == "v" and c.op.control_inputs == [v.initializer]
    assert g.get_operation_by_name("c") is c.op
    with pytest.raises(TypeError, match="colocate_with expects an Operation"):
        scopes.colocate_with(1.0).__enter__()
