"""The session's worker plugin: its state on every worker, and the handlers of compiled steps.

A :class:`~daskgraph.runtime.client.session.Session` registers a :class:`SessionPlugin` named
after it. Dask runs the plugin's ``setup`` on every worker of the cluster, now and whenever a
worker joins or is restarted by its nanny, and its ``teardown`` on every worker when the
session unregisters it on close: setup makes the session's state there
(:mod:`~daskgraph.runtime.worker.worker_state`) and installs the handlers of compiled steps
(:mod:`~daskgraph.runtime.worker.step_service`); teardown frees both.

Dask logs every plugin's start and removal at INFO and keeps the last
``distributed.admin.log-length`` (10,000) records on every worker for its dashboard: two per
session, so that a program opening a session per step would fill that log with daskgraph's
bookkeeping (about 15 MB per worker). The plugin drops those two records
(:class:`QuietSessionPlugins`, a ``logging.Filter`` on ``distributed.worker``), nothing else.
"""

from __future__ import annotations

import logging
from typing import Any

from distributed import WorkerPlugin

from daskgraph.runtime.worker.step_service import EXTENSION as STEPS
from daskgraph.runtime.worker.step_service import StepService
from daskgraph.runtime.worker.worker_state import state_of

__all__ = ["QuietSessionPlugins", "SessionPlugin", "quiet_session_plugins"]


class QuietSessionPlugins(logging.Filter):
    """Drops Dask's INFO records of session plugins starting and being removed.

    >>> record = logging.LogRecord("distributed.worker", logging.INFO, "", 0,
    ...                            "Starting Worker plugin %s", ("daskgraph-session-1",), None)
    >>> QuietSessionPlugins().filter(record)
    False
    >>> record.args = ("my-plugin",)
    >>> QuietSessionPlugins().filter(record)
    True
    """

    def filter(self, record: logging.LogRecord) -> bool:
        """False for the start/removal record of a daskgraph session plugin."""
        if record.levelno != logging.INFO or "Worker plugin" not in str(record.msg):
            return True
        return "Worker plugin daskgraph-session-" not in record.getMessage()


def quiet_session_plugins(logger: logging.Logger | None = None) -> None:
    """Install :class:`QuietSessionPlugins` on ``distributed.worker`` once per process."""
    logger = logger or logging.getLogger("distributed.worker")
    if not any(isinstance(f, QuietSessionPlugins) for f in logger.filters):
        logger.addFilter(QuietSessionPlugins())


class SessionPlugin(WorkerPlugin):
    """Holds a session's state on every worker, from registration until the session closes.

    >>> SessionPlugin("abc").name
    'daskgraph-session-abc'
    """

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self.name = f"daskgraph-session-{session_id}"

    def setup(self, worker: Any) -> None:
        """Create the session's state on ``worker`` (a ``WorkerPlugin`` hook)."""
        quiet_session_plugins()
        state_of(worker).session(self.session_id)
        StepService.install(worker)  # the handlers of compiled steps

    def teardown(self, worker: Any) -> None:
        """Free everything of the session on ``worker`` (a ``WorkerPlugin`` hook)."""
        state_of(worker).close_session(self.session_id)
        service = worker.extensions.get(STEPS)
        if service is not None:
            service.close_session(self.session_id)
