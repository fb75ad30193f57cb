"""The nanny of a device's worker process: it turns the plain data of a JSON worker spec into
what the nanny and its worker need, in the nanny's own process.

The embedded cluster's nannies run in fresh interpreters (``SubprocessWorker``) that get no
configuration but their spec, as JSON. :class:`DeviceNanny` takes three things from it:

* the spec's own values for the process-wide variables read when a process or a library
  starts (glibc's allocator reads ``MALLOC_*`` before ``main``, BLAS libraries their thread
  counts when NumPy is first imported, Numba its pool's when it is imported). A Dask nanny
  applies its ``env`` inside the worker process once that process runs, which is too late
  for them; Dask's answer is ``distributed.nanny.pre-spawn-environ``, a setting of the
  nanny's whole process, to which :class:`DeviceNanny` adds the spec's values;
* ``security`` as plain data (:func:`daskgraph.cluster.tls.security_fields`), for a TLS cluster;
* the transport's settings in its ``config`` (``distributed-ucxx.*``, on a UCX cluster:
  :func:`daskgraph.cluster.protocols.transport_settings`), which the nanny's own process
  needs too, before it listens: the worker gets ``config``, the nanny's process nothing;
* ``template``, the modules of the warm template the nanny forks its worker processes from
  (:func:`start_template`, ``daskgraph.local.multiprocessing-method``), or None to spawn them;
* ``cuda_worker``, a GPU worker's dask-cuda options (:meth:`CudaWorker.to_fields
  <daskgraph.cluster.cuda_specs.CudaWorker.to_fields>`), from which it builds dask-cuda's worker
  plugins (RMM pool, CPU affinity: :func:`daskgraph.cluster.cuda_specs.dask_cuda_plugins`), objects
  a
  JSON spec cannot carry.

A nanny killed outright (``SIGKILL``) leaves the semaphores of its worker's queues to its
resource tracker (multiprocessing's process), which removes them and warns about them on the
user's stderr: nothing leaked, yet a warning. :class:`DeviceNanny` has that warning ignored
(:data:`TRACKER_WARNINGS`; the tracker's interpreter takes the nanny's ``-W`` options).

>>> pre_spawn_values({"OMP_NUM_THREADS": "2", "CUDA_VISIBLE_DEVICES": "0"})
{'OMP_NUM_THREADS': '2'}
>>> transport_values({"distributed-ucxx.environment.tls": "tcp", "daskgraph.x": 1})
{'distributed-ucxx.environment.tls': 'tcp'}
"""

from __future__ import annotations

import multiprocessing.forkserver
import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import dask.config
from distributed import Nanny

from daskgraph.cluster.cuda_specs import CudaWorker, dask_cuda_plugins
from daskgraph.cluster.shutdown import quiet_process
from daskgraph.cluster.tls import security_from_fields

__all__ = [
    "PRE_SPAWN",
    "TRACKER_WARNINGS",
    "DeviceNanny",
    "pre_spawn_values",
    "start_template",
    "transport_values",
]

#: the ``-W`` option that silences the resource tracker's "leaked semaphore" warnings (it
#: cleans them up: what a killed nanny left is not leaked)
TRACKER_WARNINGS = "ignore:resource_tracker:UserWarning"

#: variables that take effect only when set before the worker process starts
PRE_SPAWN = (
    "MALLOC_MMAP_THRESHOLD_",
    "MALLOC_TRIM_THRESHOLD_",
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "NUMBA_NUM_THREADS",
)


def pre_spawn_values(env: Mapping[str, str]) -> dict[str, str]:
    """The entries of a worker's ``env`` that must be set before its process starts."""
    return {k: str(env[k]) for k in PRE_SPAWN if k in env}


def transport_values(config: Mapping[str, Any]) -> dict[str, Any]:
    """The entries of a worker's ``config`` that set up its transport (UCX's)."""
    return {k: v for k, v in config.items() if str(k).startswith("distributed-ucxx.")}


def start_template(modules: Sequence[str], env: Mapping[str, str]) -> None:
    """Have this process's worker processes forked from a template process that imported
    ``modules`` once (multiprocessing's forkserver, through Dask's
    ``distributed.worker.multiprocessing-method``), and start the template now, with ``env``
    set: the variables read when a process or a library starts (:data:`PRE_SPAWN`) are the
    template's, hence every forked worker's. It imports while the nanny connects, so that the
    worker process, and a restarted one, starts with them imported.

    A forked worker still runs its spec's ``env`` and ``config`` (Dask's nanny applies them in
    the worker process), and its preloads.
    """
    dask.config.set({"distributed.worker.multiprocessing-method": "forkserver"})
    # (Dask's own list, set at its first process, comes after the template has started)
    multiprocessing.get_context("forkserver").set_forkserver_preload(list(modules))
    os.environ.update(env)
    multiprocessing.forkserver.ensure_running()


class DeviceNanny(Nanny):
    """A ``distributed.Nanny`` started from a JSON spec.

    Its worker's own values for :data:`PRE_SPAWN` variables win over Dask's pre-spawn defaults
    (one BLAS thread, ``MALLOC_TRIM_THRESHOLD_=65536``).

    Parameters
    ----------
    *args, **kwargs
        ``distributed.Nanny``'s.
    security
        A ``distributed.Security``, or its :func:`daskgraph.cluster.tls.security_fields`.
    template
        The modules of the template process to fork the worker processes from
        (:func:`start_template`); None: spawn them as Dask does by default.
    cuda_worker
        For a GPU worker of dask-cuda: the fields of its
        :class:`~daskgraph.cluster.cuda_specs.CudaWorker`. The worker then gets dask-cuda's plugins,
        after any given in ``plugins``.

    Raises
    ------
    ImportError
        With ``cuda_worker`` where dask-cuda is not installed (naming the extras).
    """

    def __init__(
        self,
        *args: Any,
        security: Any = None,
        cuda_worker: Mapping[str, Any] | None = None,
        template: Sequence[str] | None = None,
        **kwargs: Any,
    ) -> None:
        if isinstance(security, Mapping):
            security = security_from_fields(security)
        if cuda_worker is not None:
            plugins = dask_cuda_plugins(CudaWorker.from_fields(cuda_worker))
            kwargs["plugins"] = [*(kwargs.get("plugins") or ()), *plugins]
        # (this process is the nanny's alone: it listens with the worker's transport)
        dask.config.set(transport_values(kwargs.get("config") or {}))
        super().__init__(*args, security=security, **kwargs)
        self.pre_spawn_env.update(pre_spawn_values(self.env))
        if TRACKER_WARNINGS not in sys.warnoptions:  # before the tracker starts, with the worker
            sys.warnoptions.append(TRACKER_WARNINGS)
        if template is not None:  # (its resource tracker, too, takes the warnings' option)
            start_template(template, self.pre_spawn_env)

    async def close(self, *args: Any, **kwargs: Any) -> Any:
        """``Nanny.close``, printing nothing: this process ends with its nanny, and its stderr
        is the user's (:func:`daskgraph.cluster.shutdown.quiet_process`)."""
        quiet_process()
        return await super().close(*args, **kwargs)
