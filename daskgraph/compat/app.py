"""``tf.app``: TensorFlow 1's program entry point, ``tf.app.run``, and ``tf.app.flags``.

Its one job is ``run``, which is TensorFlow's: absl's ``app.run`` with a flags parser that
keeps the arguments no flag knows (``known_only``) instead of failing on them, and ``main``
defaulting to the ``main`` function of the ``__main__`` module. ``flags`` is
:mod:`daskgraph.compat.flags` (``tf.app.flags.FLAGS`` is ``tf.flags.FLAGS``).

>>> flags.FLAGS is __import__("daskgraph.compat.flags").compat.flags.FLAGS
True
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any

from absl import app as _absl_app

from daskgraph.compat import flags

__all__ = ["flags", "run"]


def _parse_flags_tolerate_undef(argv: Sequence[str] | None) -> list[str]:
    """Parse the flags of ``argv`` (``sys.argv`` when None); return the other arguments."""
    return flags.FLAGS(sys.argv if argv is None else argv, known_only=True)


def run(main: Callable[[list[str]], Any] | None = None, argv: Sequence[str] | None = None):
    """Parse the flags of ``argv`` (default ``sys.argv``) and call ``main(remaining argv)``,
    exiting with its result, as ``tf.app.run`` (``main`` defaults to ``__main__.main``).

    Raises
    ------
    SystemExit
        Always, as absl's ``app.run``: with ``main``'s return value (0 for None).
    """
    main = main or sys.modules["__main__"].main
    _absl_app.run(main=main, argv=argv, flags_parser=_parse_flags_tolerate_undef)


def __getattr__(name: str) -> object:
    """A name tf.app does not have: the AttributeError pointing to docs/compat.md."""
    from daskgraph.errors import missing_name

    raise missing_name("tf.app", name, globals())
