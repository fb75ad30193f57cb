"""What ``tf.contrib`` raises for a name daskgraph does not provide.

Its one job is that message: ``tf.contrib`` is only partly provided (the common subset of
``layers``, ``slim`` and ``framework``), and ``docs/compat.md`` lists what is there.

>>> error = missing_name("tf.contrib", "rnn")
>>> "'rnn'" in str(error) and "docs/compat.md" in str(error)
True
"""

from __future__ import annotations

__all__ = ["missing_name"]


def missing_name(module: str, name: str) -> AttributeError:
    """The ``AttributeError`` for ``module.name`` (raise it)."""
    return AttributeError(
        f"module {module!r} has no attribute {name!r}: daskgraph provides only tf.contrib's "
        "common subset (tf.contrib.layers, tf.contrib.slim, tf.contrib.framework); "
        "docs/compat.md, section 'tf.contrib', lists its names"
    )
