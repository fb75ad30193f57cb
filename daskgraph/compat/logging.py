"""``tf.logging``: TensorFlow 1's logging functions over Python's logger ``"tensorflow"``.

Its one job is that namespace, as TensorFlow's ``tf_logging`` does it: the level constants
(``DEBUG`` ... ``FATAL``), ``set_verbosity``/``get_verbosity`` on that logger, the logging
functions (records name the caller's file and line, not this module's), ``vlog``, ``log_if``
and the counted ``log_every_n``/``log_first_n``. The first use gives the logger a stderr
handler where the root logger has none, as TensorFlow does, so that
``tf.logging.set_verbosity(tf.logging.INFO)`` alone makes ``tf.logging.info`` print.

>>> set_verbosity(INFO)
>>> get_verbosity() == INFO, get_logger().name
(True, 'tensorflow')
>>> set_verbosity(WARN)
"""

from __future__ import annotations

import logging as _logging
import sys
import threading
from typing import Any

__all__ = [
    "DEBUG",
    "ERROR",
    "FATAL",
    "INFO",
    "WARN",
    "WARNING",
    "TaskLevelStatusMessage",
    "debug",
    "error",
    "fatal",
    "flush",
    "get_logger",
    "get_verbosity",
    "info",
    "log",
    "log_every_n",
    "log_first_n",
    "log_if",
    "set_verbosity",
    "vlog",
    "warn",
    "warning",
]

DEBUG = _logging.DEBUG
INFO = _logging.INFO
WARN = _logging.WARN
WARNING = _logging.WARNING
ERROR = _logging.ERROR
FATAL = _logging.FATAL

_logger: _logging.Logger | None = None
_lock = threading.Lock()
_counts: dict[tuple[str, int], int] = {}  # (file, line) of a log_every_n/log_first_n call


def get_logger() -> _logging.Logger:
    """The ``"tensorflow"`` logger (``tf.get_logger``), given a stderr handler on first use
    when the root logger has no handler (stdout and level INFO in an interactive session)."""
    global _logger
    with _lock:
        if _logger is None:
            logger = _logging.getLogger("tensorflow")
            if not _logging.getLogger().handlers:
                interactive = hasattr(sys, "ps1") or bool(sys.flags.interactive)
                if interactive:
                    logger.setLevel(INFO)
                handler = _logging.StreamHandler(sys.stdout if interactive else sys.stderr)
                handler.setFormatter(_logging.Formatter(_logging.BASIC_FORMAT, None))
                logger.addHandler(handler)
            _logger = logger
        return _logger


def _emit(level: int, msg: Any, args: tuple, kwargs: dict[str, Any], depth: int) -> None:
    """Log through the logger, the record naming the frame ``depth`` calls above this one."""
    kwargs.setdefault("stacklevel", depth + 1)
    get_logger().log(level, msg, *args, **kwargs)


def log(level: int, msg: Any, *args: Any, **kwargs: Any) -> None:
    """Log ``msg % args`` at ``level``."""
    _emit(level, msg, args, kwargs, 2)


def debug(msg: Any, *args: Any, **kwargs: Any) -> None:
    """Log ``msg % args`` at ``DEBUG``."""
    _emit(DEBUG, msg, args, kwargs, 2)


def info(msg: Any, *args: Any, **kwargs: Any) -> None:
    """Log ``msg % args`` at ``INFO``."""
    _emit(INFO, msg, args, kwargs, 2)


def warn(msg: Any, *args: Any, **kwargs: Any) -> None:
    """Log ``msg % args`` at ``WARN``."""
    _emit(WARN, msg, args, kwargs, 2)


def warning(msg: Any, *args: Any, **kwargs: Any) -> None:
    """Log ``msg % args`` at ``WARNING``."""
    _emit(WARNING, msg, args, kwargs, 2)


def error(msg: Any, *args: Any, **kwargs: Any) -> None:
    """Log ``msg % args`` at ``ERROR``."""
    _emit(ERROR, msg, args, kwargs, 2)


def fatal(msg: Any, *args: Any, **kwargs: Any) -> None:
    """Log ``msg % args`` at ``FATAL`` (it only logs: the program goes on, as TensorFlow's)."""
    _emit(FATAL, msg, args, kwargs, 2)


def vlog(level: int, msg: Any, *args: Any, **kwargs: Any) -> None:
    """Log ``msg % args`` at ``level`` (TensorFlow's verbose log is a plain log)."""
    _emit(level, msg, args, kwargs, 2)


def log_if(level: int, msg: Any, condition: Any, *args: Any) -> None:
    """Log ``msg % args`` at ``level`` only if ``condition`` holds."""
    if condition:
        _emit(level, msg, args, {}, 2)


def _next_count(depth: int = 2) -> int:
    """How many times the calling line (``depth`` frames up) counted before (0 the first)."""
    frame = sys._getframe(depth)
    key = (frame.f_code.co_filename, frame.f_lineno)
    with _lock:
        _counts[key] = _counts.get(key, -1) + 1
        return _counts[key]


def log_every_n(level: int, msg: Any, n: int, *args: Any) -> None:
    """Log ``msg % args`` at ``level`` on the 1st, (n+1)th, (2n+1)th, ... call from its line.

    >>> import logging
    >>> seen = []
    >>> handler = logging.Handler()
    >>> handler.emit = lambda record: seen.append(record.getMessage())
    >>> get_logger().addHandler(handler)
    >>> for i in range(5):
    ...     log_every_n(ERROR, "step %d", 2, i)
    >>> get_logger().removeHandler(handler)
    >>> seen
    ['step 0', 'step 2', 'step 4']
    """
    if not _next_count() % n:
        _emit(level, msg, args, {}, 2)


def log_first_n(level: int, msg: Any, n: int, *args: Any) -> None:
    """Log ``msg % args`` at ``level`` on the first ``n`` calls from its line only."""
    if _next_count() < n:
        _emit(level, msg, args, {}, 2)


def TaskLevelStatusMessage(msg: Any) -> None:
    """Log ``msg`` at ``ERROR``, as TensorFlow's ``TaskLevelStatusMessage``."""
    _emit(ERROR, msg, (), {}, 2)


def flush() -> None:
    """Not implemented, as in TensorFlow (``NotImplementedError``)."""
    raise NotImplementedError()


def get_verbosity() -> int:
    """The effective level of the ``"tensorflow"`` logger."""
    return get_logger().getEffectiveLevel()


def set_verbosity(v: int) -> None:
    """Set the level of the ``"tensorflow"`` logger: messages below ``v`` are dropped."""
    get_logger().setLevel(v)


def __getattr__(name: str) -> object:
    """A name tf.logging does not have: the AttributeError pointing to docs/compat.md."""
    from daskgraph.errors import missing_name

    raise missing_name("tf.logging", name, globals())
