"""``dg.visualize``: the picture of a real session's placement plan, drawn without running."""

from __future__ import annotations

import re
import shutil

import numpy as np
import pytest

import daskgraph as dg


def _graph():
    """x fed; y on GPU:0 with the variable v; w on GPU:1; total on CPU:0."""
    x = dg.placeholder(dg.float32, [16, 16], name="x")
    with dg.device("/gpu:0"):
        y = dg.matmul(x, x, name="y")
        v = dg.Variable(np.zeros((16, 16), np.float32), name="v")
    with dg.colocate_with(v):
        z = dg.add(y, v, name="z")
    with dg.device("/gpu:1"):
        w = dg.matmul(z, z, name="w")
    with dg.device("/cpu:0"):
        total = dg.reduce_sum(w, name="total")
    return x, v, total


@pytest.mark.virtual_gpus(2)
def test_visualize_draws_the_plan_without_running_it(dg_session, tmp_path):
    if shutil.which("dot") is None:
        pytest.skip("rendering an SVG needs Graphviz's dot program (apt-get install graphviz)")
    x, v, total = _graph()
    dg_session.run(v.initializer)
    runs = dg_session._runs
    store = v.assign(np.ones((16, 16), np.float32), name="store")
    feeds = {x: np.ones((16, 16), np.float32)}
    dot = dg.visualize([total, store], tmp_path / "p.svg", session=dg_session, feed_dict=feeds)
    svg = (tmp_path / "p.svg").read_text()
    texts = set(re.findall(r">([^<>]+)</text>", svg))
    assert {"x", "y", "z", "w", "total", "store", "v"} <= texts
    assert {"CPU:0", "GPU:0", "GPU:1"} <= texts
    assert "1.0 KiB" in texts  # z:0 and w:0, 16 x 16 float32, cross devices
    assert "Placeholder (fed)" in texts and "MatMul" in texts
    assert "reason: colocated" in svg  # z's tooltip
    assert svg.count('stroke="#d62728"') >= 2  # the transfers, drawn red
    assert "cluster_" in dot.source
    assert dg_session._runs == runs  # nothing ran: store did not assign ones
    np.testing.assert_array_equal(dg_session.run(v), np.zeros((16, 16), np.float32))


@pytest.mark.virtual_gpus(2)
def test_the_default_session_plans_and_filename_none_writes_nothing(
    dg_session, tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    x, _, total = _graph()
    with dg_session.as_default():
        dot = dg.visualize(total, None, feed_dict={x: np.ones((16, 16), np.float32)})
    assert list(tmp_path.iterdir()) == []
    assert dg_session._runs == 0
    labels = re.findall(r'label="([^"]*)"', dot.source)
    assert {"CPU:0", "GPU:0", "GPU:1", "w\\nMatMul", "total\\nSum"} <= set(labels)
    with pytest.raises(ValueError, match="pass session="):
        dg.visualize(total, None)  # no default session out here
