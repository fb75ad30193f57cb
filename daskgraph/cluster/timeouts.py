"""How long reaching a cluster and waiting for its tasks may take, read from Dask config.

Its one job is to read and check three durations (Dask config, durations such as ``"10s"``):
``daskgraph.connect-timeout`` (:func:`connect_timeout`, reaching a scheduler),
``daskgraph.cluster.wait-timeout`` (:func:`cluster_wait_timeout`, waiting until every task of
a cluster has joined) and ``daskgraph.cluster.wait-log-interval``
(:func:`cluster_wait_log_interval`, how often that wait reports the missing tasks). A value
that is not a duration >= 0 raises ``ValueError`` naming the key and the value.
"""

from __future__ import annotations

import dask.config
from dask.utils import parse_timedelta

__all__ = ["cluster_wait_log_interval", "cluster_wait_timeout", "connect_timeout"]


def _seconds(key: str) -> float | None:
    value = dask.config.get(key)
    if value is None:
        return None
    try:
        seconds = parse_timedelta(value, default="seconds")
    except (TypeError, ValueError, KeyError) as exc:
        raise ValueError(f"{key} must be a duration such as '10s' or null; got {value!r}") from exc
    if seconds is None or seconds < 0:
        raise ValueError(f"{key} must be a duration >= 0 such as '10s'; got {value!r}")
    return float(seconds)


def connect_timeout() -> float:
    """``daskgraph.connect-timeout`` in seconds: how long reaching a scheduler may take.

    >>> with dask.config.set({"daskgraph.connect-timeout": "2s"}):
    ...     connect_timeout()
    2.0
    """
    return _seconds("daskgraph.connect-timeout") or 10.0


def cluster_wait_timeout() -> float | None:
    """``daskgraph.cluster.wait-timeout`` in seconds; ``None`` (null or 0) waits without limit.

    >>> with dask.config.set({"daskgraph.cluster.wait-timeout": "1 minute"}):
    ...     cluster_wait_timeout()
    60.0
    """
    return _seconds("daskgraph.cluster.wait-timeout") or None


def cluster_wait_log_interval() -> float:
    """``daskgraph.cluster.wait-log-interval`` in seconds (TensorFlow's is 10 s).

    >>> cluster_wait_log_interval()
    10.0
    """
    return _seconds("daskgraph.cluster.wait-log-interval") or 10.0
