"""A TF1 name daskgraph does not provide, at the top level or in a namespace, raises an
AttributeError that names it and points to docs/compat.md; introspection (hasattr, getattr
with a default, doctest collection) still sees a plain missing attribute."""

from __future__ import annotations

import doctest
import operator
import pathlib
import re
import types

import pytest

import daskgraph.compat.v1 as tf

ROOT = pathlib.Path(__file__).resolve().parents[2]

#: a missing name, the docs/compat.md section its error points to, and a name it suggests
MISSING = [
    ("image", "tf.image", None),
    ("Sesion", "tf", "Session"),
    ("train.shuffle_batch", "tf.train", None),
    ("nn.rnn_cell", "tf.nn", None),
    ("layers.conv3d", "tf.layers", "conv2d"),
    ("losses.huber_los", "tf.losses", "huber_loss"),
    ("metrics.mean_iou_", "tf.metrics", "mean_iou"),
    ("math.reduce_summ", "tf.math", "reduce_sum"),
    ("random.gamma_", "tf.random", "gamma"),
    ("data.TFRecordDataset", "tf.data", None),
    ("contrib.slim.nets", "tf.contrib", None),
    ("contrib.layers.conv3d", "tf.contrib", "conv2d"),
    ("sparse.cross", "tf", None),
]


@pytest.mark.parametrize(("path", "section", "suggestion"), MISSING)
def test_a_missing_name_points_to_docs_compat(path: str, section: str, suggestion: str) -> None:
    namespace, _, name = path.rpartition(".")
    module = f"tf.{namespace}" if namespace else "tf"
    with pytest.raises(AttributeError) as caught:
        operator.attrgetter(path)(tf)
    message = str(caught.value)
    assert message.startswith(f"module {module!r} has no attribute {name!r}: "), message
    assert f"docs/compat.md, section {section!r}" in message, message
    assert (caught.value.module, caught.value.missing) == (module, name)
    assert caught.value.suggestion == suggestion
    if suggestion is not None:
        assert message.endswith(f"Did you mean {suggestion!r}?"), message


def test_contrib_says_it_is_provided_in_part() -> None:
    with pytest.raises(AttributeError, match=r"only tf\.contrib's common subset") as caught:
        tf.contrib.framework.nest_map  # noqa: B018
    assert "docs/compat.md, section 'tf.contrib'" in str(caught.value)


def test_introspection_sees_a_plain_missing_attribute() -> None:
    assert not hasattr(tf, "image") and not hasattr(tf.train, "shuffle_batch")
    assert getattr(tf, "image", None) is None and getattr(tf.nn, "rnn_cell", 1) == 1
    assert not hasattr(tf, "__wrapped__") and not hasattr(tf.train, "__path__")
    with pytest.raises(AttributeError, match=r"^module 'tf' has no attribute '__wrapped__'$"):
        tf.__wrapped__  # noqa: B018
    finder = doctest.DocTestFinder()
    assert finder.find(tf.train) is not None and finder.find(tf) is not None
    assert tf.Summary.__name__ == "Summary"  # the lazily loaded protos still load
    with pytest.raises(ImportError, match="shuffle_batch"):
        from daskgraph.compat.train import shuffle_batch  # noqa: F401


NAMESPACES = sorted(
    {"", *(n for n in tf.__all__ if isinstance(getattr(tf, n), types.ModuleType))}
    - {"errors", "nest", "summary"}  # daskgraph's own modules, plain AttributeError
)


@pytest.mark.parametrize("namespace", NAMESPACES)
def test_every_namespace_points_to_a_section_docs_compat_has(namespace: str) -> None:
    module = getattr(tf, namespace) if namespace else tf
    with pytest.raises(AttributeError) as caught:
        module.no_such_name_here  # noqa: B018
    section = re.search(r"docs/compat\.md, section '([^']+)'", str(caught.value))
    assert section is not None, str(caught.value)
    headings = (ROOT / "docs" / "compat.md").read_text(encoding="utf-8").splitlines()
    assert f"## `{section.group(1)}`" in headings
