"""docs/compat.md is what ``python -m daskgraph.compat.table`` writes now, and it tells the truth.

The page is generated from the snapshot of TensorFlow 1's names (daskgraph/compat/tf1_api.json)
and from daskgraph.compat.v1 itself; no TensorFlow is needed here.
"""

from __future__ import annotations

import pathlib
import re

import pytest

import daskgraph.compat.v1 as tf
from daskgraph.compat import table

ROOT = pathlib.Path(__file__).resolve().parents[2]
STALE = "docs/compat.md is stale: run `python -m daskgraph.compat.table > docs/compat.md`"


@pytest.fixture(scope="module")
def data() -> dict:
    return table.snapshot()


@pytest.fixture(scope="module")
def entries(data) -> list[table.Entry]:
    return table.entries(data["namespaces"])


def test_docs_compat_md_is_current(data, entries) -> None:
    page = table.render(entries, table.suite_programs(), data["source"])
    written = (ROOT / "docs" / "compat.md").read_text(encoding="utf-8")
    assert written == page, STALE


def test_every_supported_or_partial_name_resolves(entries) -> None:
    for entry in entries:
        if entry.status == "missing":
            continue
        owner = tf
        for part in [*entry.namespace.split("."), entry.name] if entry.namespace else [entry.name]:
            assert hasattr(owner, part), f"{entry.qualified} is marked {entry.status}"
            owner = getattr(owner, part)


def test_missing_names_are_absent(entries) -> None:
    for entry in (e for e in entries if e.status == "missing"):
        namespace = getattr(tf, entry.namespace, None) if entry.namespace else tf
        assert namespace is None or not hasattr(namespace, entry.name), entry.qualified


def test_known_differences_name_real_tf1_names(data) -> None:
    listed = {
        f"{ns}.{name}" if ns else name for ns, names in data["namespaces"].items() for name in names
    }
    assert set(table.DIFFERENCES) <= listed, set(table.DIFFERENCES) - listed


def test_statuses() -> None:
    assert table.status("", "matmul")[0] == "partial"  # no adjoint_a/adjoint_b
    assert table.status("nn", "relu") == ("supported", "")
    assert table.status("", "sparse_mask") == ("missing", "")
    state, note = table.status("", "nn", {"nn": {"relu": "function", "no_such_op": "function"}})
    assert (state, note) == ("partial", "1 of 2 names (see `tf.nn`)")


def test_snapshot_covers_tf1_namespaces(data) -> None:
    namespaces = data["namespaces"]
    assert {"", "nn", "train", "errors", "layers", "losses", "data"} <= set(namespaces)
    assert namespaces[""]["Session"] == "class" and namespaces["train"]["Server"] == "class"
    assert len(namespaces[""]) > 500


def test_suite_programs_read_their_headers(tmp_path) -> None:
    (tmp_path / "prog.py").write_text(
        "# Source: a book\n#   page 3\n# Virtual GPUs: 2\n# Needs: tf.cond\nimport os\n"
    )
    (program,) = table.suite_programs(tmp_path)
    assert (program.name, program.virtual_gpus, program.needs) == ("prog", 2, "tf.cond")
    assert program.fields["Source"] == "a book page 3" and not program.run_with


def test_what_a_session_is_said_to_lack_it_lacks() -> None:
    """The Session row's "no `name`" list names no method the Session has (it once listed
    ``make_callable``, which works)."""
    clause = table.DIFFERENCES["Session"].split(";")[0]
    lacking = re.findall(r"`(\w+)`", clause.removeprefix("no "))
    assert lacking
    assert [name for name in lacking if hasattr(tf.Session, name)] == []
