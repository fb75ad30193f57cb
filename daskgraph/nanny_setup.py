"""The nanny of a device's worker process: it sets the worker spec's process-wide variables
before the worker process starts.

A Dask nanny applies its ``env`` inside the worker process once that process runs, which is
too late for variables read when a process or a library starts: glibc's allocator reads
``MALLOC_*`` before ``main``, and BLAS libraries read their thread counts when NumPy is first
imported. Dask's answer is ``distributed.nanny.pre-spawn-environ``, applied by the nanny just
before it spawns the worker; but that is a setting of the nanny's whole process, and the
embedded cluster's nannies run in fresh interpreters (``SubprocessWorker``) that get no
configuration but their spec. :class:`DeviceNanny` adds the spec's own values for those
variables to its pre-spawn environment.

>>> pre_spawn_values({"OMP_NUM_THREADS": "2", "CUDA_VISIBLE_DEVICES": "0"})
{'OMP_NUM_THREADS': '2'}
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from distributed import Nanny

__all__ = ["PRE_SPAWN", "DeviceNanny", "pre_spawn_values"]

#: variables that take effect only when set before the worker process starts
PRE_SPAWN = (
    "MALLOC_MMAP_THRESHOLD_",
    "MALLOC_TRIM_THRESHOLD_",
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
)


def pre_spawn_values(env: Mapping[str, str]) -> dict[str, str]:
    """The entries of a worker's ``env`` that must be set before its process starts."""
    return {k: str(env[k]) for k in PRE_SPAWN if k in env}


class DeviceNanny(Nanny):
    """A ``distributed.Nanny`` whose worker's own values for :data:`PRE_SPAWN` variables win
    over Dask's pre-spawn defaults (one BLAS thread, ``MALLOC_TRIM_THRESHOLD_=65536``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.pre_spawn_env.update(pre_spawn_values(self.env))
