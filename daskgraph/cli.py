"""The ``daskgraph`` command: start a cluster's task, list a cluster's devices, make certificates.

::

    daskgraph server --cluster-spec spec.json --job-name worker --task-index 1
    TF_CONFIG='{"cluster": {...}, "task": {"type": "worker", "index": 1}}' daskgraph server
    daskgraph devices tcp://host0:2222      # any task's address, as a session's target
    daskgraph certs ./certs
    daskgraph certs ./certs --add host2 --hostname host2.example.org
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import click

__all__ = ["main"]

#: the roles of `daskgraph certs --role` (as daskgraph.cluster.tls.ROLES, without importing it)
ROLE_CHOICES = ("scheduler", "worker", "client")


@click.group()
@click.version_option(package_name="daskgraph")
def main() -> None:
    """daskgraph: TensorFlow-1 style device-placed graphs on Dask clusters."""


def _cluster_from_tf_config() -> tuple[dict[str, Any], str, int] | None:
    raw = os.environ.get("TF_CONFIG")
    if not raw:
        return None
    try:
        config = json.loads(raw)
        return config["cluster"], config["task"]["type"], int(config["task"]["index"])
    except (ValueError, KeyError, TypeError) as exc:
        raise click.BadParameter(
            'TF_CONFIG must be JSON like {"cluster": {"worker": ["host:port"]}, "task": '
            f'{{"type": "worker", "index": 0}}}}; got {raw!r} ({exc})',
            param_hint="TF_CONFIG",
        ) from None


@main.command()
@click.option("--cluster-spec", type=click.Path(exists=True, dir_okay=False), help="JSON file.")
@click.option("--job-name", help="This task's job (default: from TF_CONFIG).")
@click.option("--task-index", type=int, help="This task's index (default: from TF_CONFIG).")
@click.option("--scheduler-address", help="Run the scheduler here, not at the first task.")
@click.option("--virtual-gpus", type=int, default=None, help="Virtual GPU workers of this task.")
@click.option("--tls-dir", type=click.Path(file_okay=False), help="Certificates from `certs`.")
def server(
    cluster_spec: str | None,
    job_name: str | None,
    task_index: int | None,
    scheduler_address: str | None,
    virtual_gpus: int | None,
    tls_dir: str | None,
) -> None:
    """Start one task of a cluster and serve until interrupted."""
    from daskgraph.cluster.server import Server

    from_env = _cluster_from_tf_config()
    if cluster_spec is not None:
        spec = json.loads(Path(cluster_spec).read_text())
        spec = spec.get("cluster", spec)
    elif from_env is not None:
        spec = from_env[0]
    else:
        raise click.UsageError("Give --cluster-spec FILE or set TF_CONFIG.")
    if job_name is None or task_index is None:
        if from_env is None:
            raise click.UsageError("Give --job-name and --task-index (or set TF_CONFIG).")
        job_name = job_name if job_name is not None else from_env[1]
        task_index = task_index if task_index is not None else from_env[2]
    from daskgraph.errors import InvalidArgumentError

    security = _security(tls_dir) if tls_dir else None
    try:  # (a certificate that cannot serve in its role is refused before anything starts)
        srv = Server(
            spec,
            job_name,
            task_index,
            scheduler_address=scheduler_address,
            virtual_gpus=virtual_gpus,
            security=security,
        )
    except InvalidArgumentError as exc:
        raise click.ClickException(str(exc)) from None

    def serving() -> None:  # once SIGTERM stops the server cleanly
        click.echo(f"daskgraph server /job:{job_name}/task:{task_index} serving {srv.target}")
        sys.stdout.flush()

    srv.join(ready=serving)
    click.echo("stopped")


@main.command()
@click.argument("address")
@click.option("--tls-dir", type=click.Path(file_okay=False), help="Certificates from `certs`.")
@click.option(
    "--timeout", type=float, default=10.0, show_default=True, help="Seconds to reach the cluster."
)
def devices(address: str, tls_dir: str | None, timeout: float) -> None:
    """List the devices of the cluster at ADDRESS: any task's address, or its scheduler's
    (as a session target: host:port, grpc://, tcp:// or tls://)."""
    from daskgraph.cluster import master
    from daskgraph.cluster.liveness import cluster_workers
    from daskgraph.cluster.topology import devices_from_workers, format_device_mapping
    from daskgraph.errors import DaskgraphError
    from daskgraph.runtime.client.connection import cuda_probes

    security = _security(tls_dir) if tls_dir else None
    try:  # as a Session connects: a closed port, or no Dask there, fails at once and says so
        client, _ = master.open_target(address, security, timeout)
    except DaskgraphError as exc:
        raise click.ClickException(str(exc)) from None
    with client:
        workers = cluster_workers(client)
        probes = cuda_probes(client, workers)
        click.echo(format_device_mapping(devices_from_workers(workers, probes)))


@main.command()
@click.argument("directory", type=click.Path(file_okay=False))
@click.option(
    "--hostname",
    multiple=True,
    help="A host name or IP address the certificates name (repeat it; for HTTPS clients such "
    "as browsers, Dask checks none). Default: localhost and 127.0.0.1; with --add, localhost "
    "and NAME.",
)
@click.option(
    "--role",
    "roles",
    multiple=True,
    type=click.Choice(ROLE_CHOICES),
    help="Issue certificates for these roles only (repeat it). Default: all three; with "
    "--add, worker and client.",
)
@click.option(
    "--add",
    "node",
    metavar="NAME",
    help="Issue certificates for one more node from DIRECTORY's CA into DIRECTORY/NAME, a "
    "folder to copy to that node (--tls-dir), without the CA's key.",
)
@click.option("--days", type=click.IntRange(min=1), default=365, show_default=True)
def certs(
    directory: str, hostname: tuple[str, ...], roles: tuple[str, ...], node: str | None, days: int
) -> None:
    """Make the cluster's CA in DIRECTORY (or reuse the one there) and a certificate per role.

    DIRECTORY gets ca.pem, the CA's key ca-key.pem (mode 0600: keep it there, it signs the
    certificates of nodes added later) and scheduler.pem, worker.pem, client.pem with their
    -key.pem files (mode 0600). Run it again to issue certificates anew from the same CA.
    """
    from daskgraph.cluster.tls import NODE_ROLES, ROLES, add_node, make_certificates
    from daskgraph.errors import InvalidArgumentError

    hostnames = list(hostname) or None
    try:
        if node is None:
            paths = make_certificates(Path(directory), hostnames, days, roles or ROLES)
        else:
            paths = add_node(Path(directory), node, roles or NODE_ROLES, hostnames, days)
    except InvalidArgumentError as exc:
        raise click.ClickException(str(exc)) from None
    for name, path in paths.items():
        click.echo(f"{name}: {path}")


def _security(tls_dir: str):
    from daskgraph.cluster.tls import security_from_dir

    return security_from_dir(Path(tls_dir))


if __name__ == "__main__":  # `python -m daskgraph.cli ...`, as the console script
    main()
