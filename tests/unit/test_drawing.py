"""``daskgraph.diagnostics.drawing``: placement plans drawn with Graphviz, on plans built by
hand."""

from __future__ import annotations

import json
import pathlib
import re
import shutil
import sys

import graphviz
import pytest

import daskgraph as dg
from daskgraph.diagnostics import drawing
from daskgraph.diagnostics.inspection import OpPlacement, PartitionPlan, PlacementPlan, Transfer
from daskgraph.framework import default_session

LOCAL = "/job:localhost/replica:0/task:0/device:"
CPU, GPU0, GPU1 = LOCAL + "CPU:0", LOCAL + "GPU:0", LOCAL + "GPU:1"
NODE = re.compile(r'^\s*(n\d+) \[label="([^"]*)"(.*)\]$', re.MULTILINE)
EDGE = re.compile(r"^\s*(n\d+) -> (n\d+)(?: \[(.*)\])?$", re.MULTILINE)
needs_dot = pytest.mark.skipif(
    shutil.which("dot") is None, reason="Graphviz's dot program is not installed"
)


def _plan() -> PlacementPlan:
    """x (fed) and a on GPU:0, b on GPU:1 (colocated), c soft-placed on CPU:0, total on CPU:0."""
    ops = (
        OpPlacement("x", "Placeholder", "", GPU0, "automatic"),
        OpPlacement("a", "MatMul", "/device:GPU:0", GPU0, "explicit", inputs=("x", "elsewhere")),
        OpPlacement("b", "MatMul", "/device:GPU:1", GPU1, "colocated", inputs=("a",)),
        OpPlacement(
            "c", "Sum", "/device:GPU:7", CPU, "soft", "no GPU:7; fell back to CPU:0", ("a",)
        ),
        OpPlacement("total", "AddN", "/device:CPU:0", CPU, "explicit", inputs=("b", "c")),
    )
    partitions = (
        PartitionPlan(0, GPU0, GPU0, ("a",)),
        PartitionPlan(1, GPU1, GPU1, ("b",)),
        PartitionPlan(2, CPU, CPU, ("c", "total")),
    )
    transfers = (
        Transfer("a:0", 0, 1, GPU0, GPU1, 4096),
        Transfer("a:0", 0, 2, GPU0, CPU, None),
        Transfer("b:0", 1, 2, GPU1, CPU, 3 * 1024 * 1024),
    )
    return PlacementPlan(ops, partitions, transfers)


def _nodes(dot: graphviz.Digraph) -> dict[str, tuple[str, str]]:
    """op name -> (node id, the rest of its attributes)."""
    return {label.split("\\n")[0]: (node, rest) for node, label, rest in NODE.findall(dot.source)}


def _labels(dot: graphviz.Digraph) -> dict[str, str]:
    """op name -> its node's label."""
    return {label.split("\\n")[0]: label for _, label, _ in NODE.findall(dot.source)}


def _edges(dot: graphviz.Digraph) -> dict[tuple[str, str], str]:
    """(source op, target op) -> the edge's attributes."""
    names = {node: name for name, (node, _) in _nodes(dot).items()}
    return {(names[a], names[b]): attrs for a, b, attrs in EDGE.findall(dot.source)}


def _attr(attrs: str, key: str) -> str | None:
    found = re.search(rf'\b{key}=("[^"]*"|\S+)', attrs)
    return None if found is None else found.group(1).strip('"')


# -- the picture --------------------------------------------------------------------------------
def test_one_node_per_op_labelled_and_filled_per_device() -> None:
    dot = drawing.to_graphviz(_plan())
    nodes = _nodes(dot)
    assert sorted(nodes) == ["a", "b", "c", "total", "x"]
    labels = _labels(dot)
    assert labels["a"] == "a\\nMatMul"
    assert labels["x"] == "x\\nPlaceholder (fed)"  # in no partition: fed
    fill = {name: _attr(rest, "fillcolor") for name, (_, rest) in nodes.items()}
    assert fill["x"] == fill["a"] and fill["c"] == fill["total"]
    assert len({fill["a"], fill["b"], fill["total"]}) == 3
    assert fill["total"] in drawing.CPU_COLOURS
    assert fill["a"] == drawing.DEVICE_COLOURS[0] and fill["b"] == drawing.DEVICE_COLOURS[1]


def test_one_cluster_per_device_labelled_with_its_short_name() -> None:
    source = drawing.to_graphviz(_plan()).source
    clusters = re.findall(r'subgraph (cluster_\d+) \{\s*label="([^"]*)"', source)
    assert [label for _, label in clusters] == ["CPU:0", "GPU:0", "GPU:1"]
    body = source.split("subgraph cluster_1")[1].split("}")[0]  # GPU:0's frame
    assert set(re.findall(r'label="(\w+)\\n', body)) == {"a", "x"}


def test_edges_join_ops_of_the_plan_and_transfers_are_bold_red_with_sizes() -> None:
    edges = _edges(drawing.to_graphviz(_plan()))
    assert set(edges) == {("x", "a"), ("a", "b"), ("a", "c"), ("b", "total"), ("c", "total")}
    assert edges[("x", "a")] == ""  # same device: a plain arrow ("elsewhere" is not drawn)
    assert edges[("c", "total")] == ""
    assert _attr(edges[("a", "b")], "label") == "4.0 KiB"
    assert _attr(edges[("a", "b")], "color") == drawing.TRANSFER_COLOUR
    assert _attr(edges[("a", "b")], "style") == "bold"
    assert _attr(edges[("b", "total")], "label") == "3.0 MiB"
    assert _attr(edges[("a", "c")], "color") == drawing.TRANSFER_COLOUR
    assert _attr(edges[("a", "c")], "label") is None  # size unknown


def test_colocated_and_soft_placed_ops_are_outlined_with_a_tooltip() -> None:
    dot = drawing.to_graphviz(_plan())
    nodes = _nodes(dot)
    soft, colocated, explicit = nodes["c"][1], nodes["b"][1], nodes["a"][1]
    assert "dashed" in _attr(soft, "style") and _attr(soft, "color") == drawing.TRANSFER_COLOUR
    assert "dashed" in _attr(colocated, "style")
    assert _attr(explicit, "style") is None  # the default, solid outline
    tooltip = _attr(soft, "tooltip")
    assert f"/device:GPU:7 → {CPU}" in tooltip and "reason: soft: no GPU:7" in tooltip
    assert _labels(dot)["c"] == "c\\nSum\\nrequested GPU:7"
    assert "reason: colocated" in _attr(colocated, "tooltip")


def test_the_key_names_only_the_markings_used() -> None:
    full = drawing.to_graphviz(_plan()).source
    assert "transfer between devices" in full and "soft placement" in full and "(fed)" in full
    plain = PlacementPlan((OpPlacement("k", "Const", "", CPU, "automatic"),), (), ())
    assert 'label=""' in drawing.to_graphviz(plain).source
    assert 'label=""' in drawing.to_graphviz(_plan(), label="").source  # graph_attr wins


def test_graph_attributes_and_rankdir_are_passed_on() -> None:
    source = drawing.to_graphviz(_plan(), rankdir="LR", size=8).source
    assert "rankdir=LR" in source and "size=8" in source


def test_colours_are_stable_across_plans_and_devices_of_several_tasks_are_told_apart() -> None:
    only_gpu1 = PlacementPlan((OpPlacement("b", "Const", "", GPU1, "automatic"),), (), ())
    fill = _attr(_nodes(drawing.to_graphviz(only_gpu1))["b"][1], "fillcolor")
    assert fill == drawing.DEVICE_COLOURS[1]  # GPU:1's colour, with or without a GPU:0
    first, second = "/job:w/replica:0/task:0/device:GPU:0", "/job:w/replica:0/task:1/device:GPU:0"
    plan = PlacementPlan(
        (
            OpPlacement("p", "Const", "", first, "automatic"),
            OpPlacement("q", "Neg", "", second, "automatic", inputs=("p",)),
        ),
        (),
        (),
    )
    dot = drawing.to_graphviz(plan)
    assert re.findall(r'subgraph cluster_\d+ \{\s*label="([^"]*)"', dot.source) == [
        "w/task:0 GPU:0",
        "w/task:1 GPU:0",
    ]
    nodes = _nodes(dot)
    assert _attr(nodes["p"][1], "fillcolor") != _attr(nodes["q"][1], "fillcolor")


def test_a_plan_dict_or_json_draws_the_same_picture() -> None:
    plan = _plan()
    again = json.loads(plan.to_json())  # tuples come back as lists
    assert drawing.to_graphviz(again).source == drawing.to_graphviz(plan).source
    assert drawing.visualize(plan.to_dict(), None).source == drawing.to_graphviz(plan).source


@pytest.mark.parametrize(
    ("nbytes", "text"), [(0, "0 B"), (1023, "1023 B"), (1024, "1.0 KiB"), (5 * 2**30, "5.0 GiB")]
)
def test_sizes_are_written_in_binary_units(nbytes: int, text: str) -> None:
    assert drawing._size(nbytes) == text


# -- visualize ----------------------------------------------------------------------------------
class _Planner:
    """A duck-typed session: it plans, and records what it was asked."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def placement(self, fetches, feed_dict=None):
        self.calls.append((fetches, feed_dict))
        return _plan()


def test_fetches_are_planned_by_the_session_given_or_the_default_one(tmp_path) -> None:
    planner = _Planner()
    dot = dg.visualize(["y"], None, session=planner, feed_dict={"x": 1})
    assert planner.calls == [(["y"], {"x": 1})]
    assert "total" in _nodes(dot)
    with default_session.as_default(planner):
        dg.visualize("z", tmp_path / "p.dot")
    assert planner.calls[-1] == ("z", None)
    assert (tmp_path / "p.dot").read_text().startswith("digraph placement {")


def test_without_a_session_the_error_says_how_to_give_one() -> None:
    with pytest.raises(ValueError, match=r"pass session=.*as_default"):
        dg.visualize("y", None)
    with pytest.raises(TypeError, match="session must be a daskgraph Session"):
        dg.visualize("y", None, session=object())


def test_filename_none_writes_nothing(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert isinstance(dg.visualize(_plan(), None), graphviz.Digraph)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"filename": 3}, TypeError, "filename must be a str"),
        ({"filename": "plan.xyz"}, ValueError, r"filename='plan.xyz': 'xyz' is not a Graphviz"),
        ({"filename": "plan.svg", "format": "nope"}, ValueError, "format='nope' is not"),
        ({"filename": None, "format": "svg"}, TypeError, "format= needs a filename"),
        ({"filename": None, "feed_dict": {}}, TypeError, "not to a plan already made"),
        ({"filename": None, "rankdir": "XY"}, ValueError, "rankdir must be one of"),
    ],
)
def test_bad_arguments_are_named(kwargs, error, match, tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(error, match=match):
        dg.visualize(_plan(), **kwargs)
    assert list(tmp_path.iterdir()) == []


def test_not_a_plan_is_refused() -> None:
    with pytest.raises(
        TypeError, match=r"must be a daskgraph\.diagnostics\.inspection\.PlacementPlan"
    ):
        drawing.to_graphviz(["not", "a", "plan"])
    with pytest.raises(ValueError, match="not a placement plan's dict"):
        drawing.to_graphviz({"ops": [{"name": "x"}], "partitions": [], "transfers": []})


def test_dot_and_gv_write_the_source_without_graphviz_programs(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("PATH", "")
    dg.visualize(_plan(), tmp_path / "a.gv")
    dg.visualize(_plan(), str(tmp_path / "b"), format="dot")  # the extension is added
    source = drawing.to_graphviz(_plan()).source
    assert (tmp_path / "a.gv").read_text() == source
    assert (tmp_path / "b.dot").read_text() == source


def test_a_missing_dot_program_says_how_to_install_graphviz(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("PATH", "")
    with pytest.raises(RuntimeError, match="apt-get install graphviz") as caught:
        dg.visualize(_plan(), tmp_path / "p.svg")
    assert isinstance(caught.value.__cause__, graphviz.ExecutableNotFound)
    assert not (tmp_path / "p.svg").exists()


def test_a_missing_graphviz_package_names_the_extra(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "graphviz", None)  # import graphviz now fails
    with pytest.raises(ImportError, match=r"pip install graphviz .*pip install -e '\.\[viz\]'"):
        dg.visualize(_plan(), None)


@needs_dot
@pytest.mark.parametrize("suffix", [".svg", ".png", ".pdf", ""])
def test_the_format_follows_the_extension(suffix: str, tmp_path: pathlib.Path) -> None:
    dg.visualize(_plan(), tmp_path / f"p{suffix}")
    path = tmp_path / f"p{suffix or '.svg'}"
    head = path.read_bytes()[:8]
    expected = {".png": b"\x89PNG", ".pdf": b"%PDF"}.get(suffix)
    if expected is None:
        text = path.read_text()
        assert text.lstrip().startswith("<?xml") and ">GPU:1</text>" in text
    else:
        assert head.startswith(expected)


def test_frames_go_in_device_order_cpus_first_and_indices_as_numbers() -> None:
    devices = [LOCAL + "GPU:10", LOCAL + "GPU:2", LOCAL + "CPU:0", "an odd name"]
    plan = PlacementPlan(
        tuple(OpPlacement(f"op{i}", "Const", "", d, "automatic") for i, d in enumerate(devices)),
        (),
        (),
    )
    source = drawing.to_graphviz(plan).source
    assert re.findall(r'subgraph cluster_\d+ \{\s*label="([^"]*)"', source) == [
        "CPU:0",
        "GPU:2",
        "GPU:10",
        "an odd name",
    ]
