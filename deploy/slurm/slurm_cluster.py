"""daskgraph on a SLURM cluster with dask-jobqueue: one SLURM job per task, one worker per device.

``dask_jobqueue.SLURMCluster`` runs the Dask scheduler in this process (on the login node) and
submits batch jobs that start Dask workers. Its job script starts one worker per job, named
after the job; daskgraph needs one worker per *device*, named by it and carrying its resource.
:class:`DaskgraphSLURMJob` rewrites the job script's command accordingly: each SLURM job is one
task (``T``) of a daskgraph job (``worker`` by default) and starts, in the background,

* ``/job:worker/replica:0/task:T/device:CPU:0`` with ``--resources CPU=1`` (the job's cores
  less one per GPU), and
* per GPU ``i`` of the allocation (``--gres=gpu:N``), ``/job:worker/replica:0/task:T/device:GPU:i``
  with ``--resources GPU=1``, one thread, the ``daskgraph.cluster.gpu_worker`` preload (its memory
  pool) and ``CUDA_VISIBLE_DEVICES`` rotated so that it sees its GPU first (as dask-cuda does),

then waits for them. ``T`` is the number dask-jobqueue gives the job (``<cluster>-T``: 0, 1,
...), or ``$DASKGRAPH_TASK_INDEX`` where set. Everything else of dask-jobqueue's command is
kept (scheduler address, ``--memory-limit`` split between the workers, ``--death-timeout``,
``--interface``, ``--protocol``, the ``--tls-*`` files, ``worker_extra_args``).

Usage, on the login node::

    from slurm_cluster import slurm_cluster
    import daskgraph as dg

    cluster = slurm_cluster(jobs=2, gpus_per_job=4, cores=16, memory="128GB",
                            queue="gpu", walltime="02:00:00")
    with dg.Session(cluster.scheduler_address) as sess:     # 2 tasks x (CPU:0 + GPU:0..3)
        ...
    cluster.close()

    print(render_job_script(gpus=2, cores=8, memory="32GB"))   # what sbatch gets

Scale with ``cluster.scale(jobs=N)``; ``cluster.adapt()`` does not work with device-named
workers (dask-jobqueue matches workers to jobs by name).
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import dask.config
from dask.utils import format_bytes
from dask_jobqueue import SLURMCluster
from dask_jobqueue.slurm import SLURMJob

__all__ = ["DaskgraphSLURMCluster", "DaskgraphSLURMJob", "render_job_script", "slurm_cluster"]

_JOB_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]*\Z")
_LAUNCHER = """\
# daskgraph: one Dask worker per device of this job, each named by its device
TASK="${{DASKGRAPH_TASK_INDEX:-{task}}}"
IFS=, read -ra GPU_IDS <<<"${{CUDA_VISIBLE_DEVICES:-{default_gpus}}}"
rotate() {{  # the allocation's GPUs, starting at GPU $1
    local out=() k
    for ((k = 0; k < ${{#GPU_IDS[@]}}; k++)); do
        out+=("${{GPU_IDS[($1 + k) % ${{#GPU_IDS[@]}}]}}")
    done
    (IFS=,; echo "${{out[*]}}")
}}
trap 'kill $(jobs -p) 2>/dev/null; wait; exit 143' INT TERM
{workers}
wait
"""


class DaskgraphSLURMJob(SLURMJob):
    """A SLURM job that is one task of a daskgraph job: a CPU worker plus one worker per GPU.

    Parameters
    ----------
    gpus
        GPUs per job; adds ``--gres=gpu:N`` unless a ``--gres`` directive is given.
    daskgraph_job
        The daskgraph job the tasks belong to (``/job:NAME``).
    task_index
        This job's task index; by default the number at the end of the job's name.
    **kwargs
        ``dask_jobqueue.SLURMCluster``'s job options (``cores``, ``memory``, ``queue``, ...).
    """

    def __init__(
        self,
        scheduler: str | None = None,
        name: str | None = None,
        *,
        gpus: int = 0,
        daskgraph_job: str = "worker",
        task_index: int | None = None,
        **kwargs: Any,
    ) -> None:
        if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 0:
            raise ValueError(f"gpus must be an int >= 0; got {gpus!r}")
        if not _JOB_NAME.match(daskgraph_job):
            raise ValueError(f"daskgraph_job {daskgraph_job!r} must match {_JOB_NAME.pattern}")
        directives = kwargs.pop("job_extra_directives", None)
        if directives is None:
            directives = dask.config.get("jobqueue.slurm.job-extra-directives", [])
        directives = list(directives)
        if gpus and not any(d.startswith("--gres") for d in directives):
            directives.append(f"--gres=gpu:{gpus}")
        if kwargs.get("processes", 1) != 1:
            raise ValueError("daskgraph starts its own workers per device: processes must be 1")
        kwargs["processes"] = 1
        kwargs.setdefault("job_name", "daskgraph")
        super().__init__(scheduler=scheduler, name=name, job_extra_directives=directives, **kwargs)
        if task_index is None:
            found = re.search(r"(\d+)$", str(name or ""))
            task_index = int(found.group(1)) if found else 0
        self.gpus = gpus
        self.daskgraph_job = daskgraph_job
        self.task_index = task_index
        self._command_template = self._device_workers()

    def _device_workers(self) -> str:
        """The job's command: dask-jobqueue's worker command, once per device."""
        base = shlex.split(self._command_template)
        total = self.worker_memory
        memory = format_bytes(total // (self.gpus + 1)).replace(" ", "") if total else None
        lines = []
        devices = [("CPU", 0, max(1, int(self.worker_cores) - self.gpus))]
        devices += [("GPU", i, 1) for i in range(self.gpus)]
        for kind, index, threads in devices:
            args = _replace(base, "--name", None)
            args = _replace(args, "--nthreads", str(threads))
            if memory:
                args = _replace(args, "--memory-limit", memory)
            args += ["--resources", f"{kind}=1"]
            if kind == "GPU":
                args += ["--preload", "daskgraph.cluster.gpu_worker"]
            name = f'"/job:{self.daskgraph_job}/replica:0/task:${{TASK}}/device:{kind}:{index}"'
            command = f"{shlex.join(args[:4])} --name {name} {shlex.join(args[4:])}"
            env = f'CUDA_VISIBLE_DEVICES="$(rotate {index})" ' if kind == "GPU" else ""
            lines.append(f"{env}{command} &")
        default_gpus = ",".join(str(i) for i in range(self.gpus))
        return _LAUNCHER.format(
            task=self.task_index, default_gpus=default_gpus, workers="\n".join(lines)
        )


def _replace(args: list[str], flag: str, value: str | None) -> list[str]:
    """``args`` with ``flag``'s value set to ``value``, or the flag dropped (``None``)."""
    out, skip = [], False
    for i, arg in enumerate(args):
        if skip:
            skip = False
            continue
        if arg == flag and i + 1 < len(args):
            skip = True
            if value is not None:
                out += [flag, value]
            continue
        out.append(arg)
    return out


class DaskgraphSLURMCluster(SLURMCluster):
    """``SLURMCluster`` whose jobs start daskgraph's device-named workers."""

    job_cls = DaskgraphSLURMJob


def _security(tls_dir: str | Path | None):
    if tls_dir is None:
        return None
    from daskgraph.cluster.tls import security_from_dir

    return security_from_dir(Path(tls_dir))


def slurm_cluster(
    *,
    jobs: int = 0,
    gpus_per_job: int = 0,
    daskgraph_job: str = "worker",
    tls_dir: str | Path | None = None,
    **kwargs: Any,
) -> DaskgraphSLURMCluster:
    """Start the scheduler here and submit ``jobs`` SLURM jobs (one daskgraph task each).

    ``tls_dir`` (from ``daskgraph certs``, on a file system the compute nodes share) turns on
    mutual TLS; the remaining keywords go to ``dask_jobqueue.SLURMCluster`` (``cores``,
    ``memory``, ``queue``, ``account``, ``walltime``, ``python``, ``job_script_prologue`` to
    activate the environment, ``scheduler_options``, ...).
    """
    security = _security(tls_dir)
    if security is not None:
        kwargs.setdefault("protocol", "tls")
    cluster = DaskgraphSLURMCluster(
        gpus=gpus_per_job, daskgraph_job=daskgraph_job, security=security, **kwargs
    )
    if jobs:
        cluster.scale(jobs=jobs)
    return cluster


def render_job_script(
    scheduler_address: str = "tcp://scheduler:8786",
    *,
    task_index: int = 0,
    gpus: int = 0,
    cores: int = 4,
    memory: str = "16GB",
    daskgraph_job: str = "worker",
    tls_dir: str | Path | None = None,
    **kwargs: Any,
) -> str:
    """The batch script one task's SLURM job runs, without starting anything."""
    security = _security(tls_dir)
    if security is not None:
        kwargs.setdefault("protocol", "tls")
        scheduler_address = "tls://" + scheduler_address.split("://", 1)[-1]
    job = DaskgraphSLURMJob(
        scheduler_address,
        name=f"daskgraph-{task_index}",
        gpus=gpus,
        daskgraph_job=daskgraph_job,
        task_index=task_index,
        cores=cores,
        memory=memory,
        security=security,
        **kwargs,
    )
    return job.job_script()


if __name__ == "__main__":  # print a job script: python slurm_cluster.py [GPUS]
    import sys

    print(render_job_script(gpus=int(sys.argv[1]) if len(sys.argv) > 1 else 2), end="")
