"""The default session: the session of the innermost ``with Session(...)`` block.

TensorFlow 1 programs run values without naming a session (``tensor.eval()``,
``op.run()``, ``variable.eval()``); those run in the *default session*. The stack of default
sessions lives here, below both the graph (whose tensors and operations run in it) and the
session (which makes itself the default on ``with``), so neither imports the other: the
session pushes itself here, the graph only looks it up.

A session is anything with TensorFlow's ``run(fetches, feed_dict=...)``; each thread and
asyncio task has its own stack, as with the other scopes (:mod:`daskgraph.framework.scopes`).

>>> class Echo:
...     def run(self, fetches, feed_dict=None):
...         return fetches
>>> with as_default(Echo()) as sess:
...     get_default_session() is sess
True
>>> get_default_session()
Traceback (most recent call last):
...
ValueError: No default session: run this inside `with Session() as sess:` or pass session=.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar, Token
from typing import Any, Protocol, TypeVar

__all__ = [
    "Runner",
    "as_default",
    "current",
    "get_default_session",
    "pop",
    "push",
    "run_in_default",
]


class Runner(Protocol):
    """What a default session must offer: TensorFlow's ``run``."""

    def run(self, fetches: Any, feed_dict: Mapping[Any, Any] | None = None) -> Any:
        """Run ``fetches`` (with ``feed_dict``) and return their values."""


R = TypeVar("R", bound=Runner)

_default_session: ContextVar[Any] = ContextVar("daskgraph_session", default=None)


def get_default_session() -> Any:
    """The session of the innermost ``with Session(...)`` (or ``as_default()``) block.

    Raises
    ------
    ValueError
        When no session is the default in this context.
    """
    session = _default_session.get()
    if session is None:
        raise ValueError(
            "No default session: run this inside `with Session() as sess:` or pass session=."
        )
    return session


def current() -> Any:
    """The default session, or None when there is none (TensorFlow's
    ``tf.compat.v1.get_default_session``)."""
    return _default_session.get()


def push(session: Runner) -> Token:
    """Make ``session`` the default; the token undoes it (:func:`pop`)."""
    return _default_session.set(session)


def pop(token: Token) -> None:
    """Restore the default session from before the :func:`push` that gave ``token``."""
    _default_session.reset(token)


@contextmanager
def as_default(session: R) -> Iterator[R]:
    """Make ``session`` the default session in a ``with`` block (without closing it)."""
    token = push(session)
    try:
        yield session
    finally:
        pop(token)


_NO_SESSION = {  # TensorFlow's words, which TF1 programs' tests match on
    "eval": "Cannot evaluate tensor using `eval()`: No default session is registered. Use "
    "`with sess.as_default()` or pass an explicit session to `eval(session=sess)`",
    "run": "Cannot execute operation using `run()`: No default session is registered. Use "
    "`with sess.as_default():` or pass an explicit session to `run(session=sess)`",
}


def run_in_default(
    fetches: Any, feed_dict: Mapping[Any, Any] | None, session: Any, method: str = "eval"
) -> Any:
    """Run ``fetches`` in ``session``, or in the default session when it is ``None``.

    The body of ``Tensor.eval``, ``Operation.run`` (``method="run"``) and ``Variable.eval``;
    without any session it raises TensorFlow's ValueError.

    >>> run_in_default("x", None, None, "run")
    Traceback (most recent call last):
    ...
    ValueError: Cannot execute operation using `run()`: No default session is registered. \
Use `with sess.as_default():` or pass an explicit session to `run(session=sess)`
    """
    if session is None:
        session = _default_session.get()
        if session is None:
            raise ValueError(_NO_SESSION[method])
    return session.run(fetches, feed_dict=feed_dict)
