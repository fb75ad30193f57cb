"""Mutual TLS for everything a cluster serves (``daskgraph certs``, ``security_from_dir``), and
local servers listening on loopback only.

``daskgraph certs`` keeps the cluster's CA (its key 0600) and issues one certificate per role;
a node added later with ``--add`` is accepted by the running cluster, and a client's
certificate cannot serve as the scheduler. A TLS cluster accepts only peers with a certificate
of its own CA: plain ``tcp://`` clients (a session is told at once that the cluster wants
``tls://``), TLS clients without a certificate and clients (or workers) with another CA's
certificate are refused, each within seconds (never a hang: every attempt runs under
:func:`daskgraph.testing.within`). Its HTTP servers speak HTTPS only: the scheduler's
dashboard to holders of a certificate of the CA, the workers' on loopback.
"""

from __future__ import annotations

import asyncio
import gc
import ipaddress
import os
import pathlib
import socket
import ssl
import stat
import subprocess
import sys
import urllib.request
from collections.abc import Iterator

import dask.config
import numpy as np
import psutil
import pytest
from cryptography import x509
from distributed import Client, Scheduler, Security, Worker

import daskgraph as dg
from daskgraph.cluster.local import worker_specs
from daskgraph.cluster.server import Server, free_ports
from daskgraph.cluster.tls import make_certificates, security_from_dir
from daskgraph.errors import InvalidArgumentError
from daskgraph.runtime.client.session import RunMetadata, RunOptions
from daskgraph.testing import within

DASKGRAPH = str(pathlib.Path(sys.executable).with_name("daskgraph"))
TASK0, TASK1 = "/job:local/replica:0/task:0/device:", "/job:local/replica:0/task:1/device:"
NO_GPUS = dg.SessionConfig(device_count={"GPU": 0})
CONNECT_S = 3  # a refused client must give up within this (distributed.Client timeout)
LIMIT_S = 20  # ... and the attempt must be over within this


def value(box: dict):
    if "error" in box:
        raise box["error"]
    return box["value"]


def cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "TF_CONFIG"}
    env["DASK_DASKGRAPH__VIRTUAL_GPUS"] = "0"
    return subprocess.run(
        [DASKGRAPH, *args], capture_output=True, text=True, timeout=timeout, env=env
    )


def make_certs(folder: pathlib.Path) -> pathlib.Path:
    done = cli("certs", str(folder))
    assert done.returncode == 0, done.stderr
    return folder


def https_context(folder: pathlib.Path, role: str | None = "client") -> ssl.SSLContext:
    """An HTTPS client trusting the CA of ``folder``, with ``role``'s certificate (or none)."""
    context = ssl.create_default_context(cafile=str(folder / "ca.pem"))
    if role is not None:
        context.load_cert_chain(folder / f"{role}.pem", folder / f"{role}-key.pem")
    return context


def fetch(url: str, context: ssl.SSLContext | None = None) -> str:
    """The body of a GET of ``url``, or ``'ERROR <type>: <message>'``; over within LIMIT_S."""
    handlers = [urllib.request.ProxyHandler({})]  # straight to the address, whatever the env
    if context is not None:
        handlers.append(urllib.request.HTTPSHandler(context=context))
    opener = urllib.request.build_opener(*handlers)

    def get() -> str:
        try:
            with opener.open(url, timeout=10) as reply:
                return reply.read().decode()
        except Exception as exc:
            return f"ERROR {type(exc).__name__}: {exc}"

    return value(within(LIMIT_S, get))


# -- daskgraph certs -----------------------------------------------------------------------------
ROLE_FILES = [
    f"{role}{end}.pem" for role in ("scheduler", "worker", "client") for end in ("", "-key")
]


def test_certs_makes_a_kept_ca_and_a_certificate_per_role(tmp_path):
    folder = tmp_path / "certs"
    done = cli("certs", str(folder))
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in folder.iterdir()) == sorted(["ca.pem", "ca-key.pem", *ROLE_FILES])
    for name in ("ca.pem", "ca-key.pem", *ROLE_FILES):
        assert str(folder / name) in done.stdout
    for name in ("ca-key.pem", "scheduler-key.pem", "worker-key.pem", "client-key.pem"):
        assert stat.S_IMODE((folder / name).stat().st_mode) == 0o600, name
    ca = x509.load_pem_x509_certificate((folder / "ca.pem").read_bytes())
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    for role in ("scheduler", "worker", "client"):
        cert = x509.load_pem_x509_certificate((folder / f"{role}.pem").read_bytes())
        assert not cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
        cert.verify_directly_issued_by(ca)
        names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        assert "localhost" in names.get_values_for_type(x509.DNSName)
        assert [str(ip) for ip in names.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]


def test_certs_hostnames_a_ca_per_folder_and_the_same_ca_on_a_rerun(tmp_path):
    done = cli(
        "certs", str(tmp_path / "a"), "--hostname", "node0.example.org", "--hostname", "10.1.2.3"
    )
    assert done.returncode == 0, done.stderr
    node = x509.load_pem_x509_certificate((tmp_path / "a" / "scheduler.pem").read_bytes())
    names = node.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.DNSName) == ["node0.example.org"]
    assert [str(ip) for ip in names.get_values_for_type(x509.IPAddress)] == ["10.1.2.3"]
    make_certificates(tmp_path / "b")
    ca_a = (tmp_path / "a" / "ca.pem").read_bytes()
    assert ca_a != (tmp_path / "b" / "ca.pem").read_bytes()
    again = cli("certs", str(tmp_path / "a"), "--role", "worker")
    assert again.returncode == 0, again.stderr
    assert (tmp_path / "a" / "ca.pem").read_bytes() == ca_a
    worker = x509.load_pem_x509_certificate((tmp_path / "a" / "worker.pem").read_bytes())
    worker.verify_directly_issued_by(x509.load_pem_x509_certificate(ca_a))


def test_certs_refuses_what_it_cannot_do(tmp_path):
    no_ca = cli("certs", str(tmp_path / "empty"), "--add", "node1")
    assert no_ca.returncode != 0 and "holds no CA" in no_ca.stderr
    make_certs(tmp_path / "certs")
    bad = cli("certs", str(tmp_path / "certs"), "--add", "../outside")
    assert bad.returncode != 0 and "plain folder name" in bad.stderr
    assert not (tmp_path / "outside").exists()
    (tmp_path / "certs" / "ca-key.pem").unlink()
    lost = cli("certs", str(tmp_path / "certs"))
    assert lost.returncode != 0 and "no ca-key.pem" in lost.stderr
    assert "Traceback" not in no_ca.stderr + bad.stderr + lost.stderr


def test_security_from_dir_gives_each_role_its_certificate(tmp_path):
    folder = make_certs(tmp_path / "certs")
    security = security_from_dir(folder)
    assert security.require_encryption
    assert security.tls_ca_file == str(folder / "ca.pem")
    for role in ("client", "scheduler", "worker"):
        assert security.get_tls_config_for_role(role)["cert"] == str(folder / f"{role}.pem")
    (folder / "worker-key.pem").unlink()
    with pytest.raises(FileNotFoundError, match=r"worker-key\.pem") as info:
        security_from_dir(folder)
    assert f"daskgraph certs {folder}" in str(info.value)


# -- a TLS cluster -------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def certs(tmp_path_factory) -> pathlib.Path:
    return make_certs(tmp_path_factory.mktemp("tls") / "certs")


@pytest.fixture(scope="module")
def other_ca(tmp_path_factory) -> pathlib.Path:
    return make_certs(tmp_path_factory.mktemp("tls-other") / "certs")


@pytest.fixture(scope="module")
def tls_pair(certs) -> Iterator[tuple[Server, Server]]:
    """Two tasks of one TLS cluster in this process."""
    security = security_from_dir(certs)
    spec = {"local": [f"localhost:{p}" for p in free_ports(2)]}

    def start(task: int) -> Server:
        return Server(spec, "local", task, config=NO_GPUS, security=security, virtual_gpus=0)

    s0 = value(within(30, lambda: start(0)))
    try:
        s1 = value(within(30, lambda: start(1)))
    except BaseException:
        s0.stop()
        raise
    try:
        value(within(60, lambda: s0.wait_for_cluster(timeout=30)))
        yield s0, s1
    finally:
        value(within(30, s1.stop))
        value(within(30, s0.stop))


def test_server_listens_on_tls(tls_pair):
    s0, s1 = tls_pair
    assert s0.target.startswith("tls://localhost:")
    assert s1.scheduler_address == s0.target  # s1.target: its own address
    with Client(s0.target, security=s0.security, timeout=10, set_as_default=False) as client:
        info = client.scheduler_info(n_workers=-1)
    assert info["address"].startswith("tls://")
    assert sorted(w["name"] for w in info["workers"].values()) == [TASK0 + "CPU:0", TASK1 + "CPU:0"]
    assert all(address.startswith("tls://") for address in info["workers"])


def test_a_session_with_the_certificates_runs_a_graph(tls_pair, certs):
    with dg.Graph().as_default() as graph:
        with dg.device("/job:local/task:1/cpu:0"):
            a = dg.constant(np.arange(4, dtype=np.float32).reshape(2, 2), name="a")
        with dg.device("/job:local/task:0/cpu:0"):
            b = dg.matmul(a, a, name="b")
        sess = value(
            within(
                30,
                lambda: dg.Session(
                    tls_pair[0].target, graph=graph, security=security_from_dir(certs)
                ),
            )
        )
        try:
            assert [d.name for d in sess.list_devices()] == [TASK0 + "CPU:0", TASK1 + "CPU:0"]
            assert all(d.worker.startswith("tls://") for d in sess.list_devices())
            md = RunMetadata()
            trace = RunOptions(trace_level=RunOptions.FULL_TRACE)
            result = value(within(30, lambda: sess.run(b, options=trace, run_metadata=md)))
            want = np.arange(4, dtype=np.float32).reshape(2, 2)
            np.testing.assert_allclose(result, want @ want)
            workers = {d.name: d.worker for d in sess.list_devices()}
            assert md.step_stats.worker_of("a") == workers[TASK1 + "CPU:0"]
            assert md.step_stats.worker_of("b") == workers[TASK0 + "CPU:0"]
        finally:
            sess.close()


def attempt(target: str, security) -> str:
    """Connect a client: 'connected', or the error. It must be over within LIMIT_S."""

    def connect() -> str:
        try:
            with Client(target, security=security, timeout=CONNECT_S, set_as_default=False) as c:
                c.scheduler_info()
            outcome = "connected"
        except Exception as exc:
            outcome = f"{type(exc).__name__}: {exc}"
        # collect the Client that failed to connect here and now: left to a later collection,
        # its __del__ may run inside another Client's LoopRunner.start (in distributed, a
        # class-wide lock) and deadlock this process
        gc.collect()
        return outcome

    return value(within(LIMIT_S, connect))


def test_a_client_with_the_certificates_connects(tls_pair, certs):
    assert attempt(tls_pair[0].target, security_from_dir(certs)) == "connected"


def test_a_plain_tcp_client_is_refused(tls_pair):
    plain = "tcp://" + tls_pair[0].target.removeprefix("tls://")
    assert attempt(plain, None) != "connected"


def test_a_tls_client_without_a_certificate_is_refused(tls_pair, certs):
    only_ca = Security(tls_ca_file=str(certs / "ca.pem"), require_encryption=True)
    assert attempt(tls_pair[0].target, only_ca) != "connected"


class _NoCertificate(Security):
    """A client that trusts the cluster's CA and offers no certificate of its own: what the
    *server* does with it (distributed itself will not start a TLS client without one)."""

    def get_connection_args(self, role):
        args = super().get_connection_args(role)
        args["ssl_context"] = ssl.create_default_context(cafile=self.tls_ca_file)
        args["ssl_context"].check_hostname = False
        return args


def test_the_server_refuses_a_tls_peer_without_a_certificate(tls_pair, certs):
    security = _NoCertificate(tls_ca_file=str(certs / "ca.pem"), require_encryption=True)
    outcome = attempt(tls_pair[0].target, security)
    assert outcome != "connected"


def test_a_client_of_another_ca_is_refused(tls_pair, other_ca):
    outcome = attempt(tls_pair[0].target, security_from_dir(other_ca))
    assert outcome != "connected"


def test_a_worker_of_another_ca_cannot_join(tls_pair, other_ca):
    s0 = tls_pair[0]

    async def join() -> str:
        worker = Worker(
            s0.target,
            security=security_from_dir(other_ca),
            name="/job:evil/replica:0/task:0/device:CPU:0",
            nthreads=1,
            death_timeout=CONNECT_S,
        )
        try:
            await worker
            return "joined"
        except Exception as exc:
            return f"{type(exc).__name__}: {exc}"
        finally:
            await worker.close()

    assert value(within(LIMIT_S, lambda: asyncio.run(join()))) != "joined"
    with Client(s0.target, security=s0.security, timeout=10, set_as_default=False) as client:
        names = [w["name"] for w in client.scheduler_info(n_workers=-1)["workers"].values()]
    assert not any(str(n).startswith("/job:evil") for n in names)


def test_a_node_added_later_is_accepted_by_the_running_cluster(tls_pair, certs):
    """`daskgraph certs DIR --add NAME` signs with the CA the cluster already trusts."""
    done = cli("certs", str(certs), "--add", "node9")
    assert done.returncode == 0, done.stderr
    node = certs / "node9"
    assert sorted(p.name for p in node.iterdir()) == [
        "ca.pem",
        "client-key.pem",
        "client.pem",
        "worker-key.pem",
        "worker.pem",
    ]
    target = tls_pair[0].target
    assert attempt(target, security_from_dir(node)) == "connected"
    name = "/job:added/replica:0/task:0/device:CPU:0"

    async def join() -> list[str]:
        worker = Worker(
            target, security=security_from_dir(node), name=name, nthreads=1, death_timeout=10
        )
        try:
            await worker
            identity = await worker.scheduler.identity(n_workers=-1)
            return [str(w["name"]) for w in identity["workers"].values()]
        finally:
            await worker.close()

    assert name in value(within(LIMIT_S, lambda: asyncio.run(join())))


def _client_of_a_scheduler_with_the_certificate_of(certs: pathlib.Path, role: str) -> str:
    """Start a scheduler whose certificate is ``role``'s; connect a client of the cluster."""
    posing = Security(
        tls_ca_file=str(certs / "ca.pem"),
        tls_scheduler_cert=str(certs / f"{role}.pem"),
        tls_scheduler_key=str(certs / f"{role}-key.pem"),
        require_encryption=True,
    )

    async def run() -> str:
        async with Scheduler(
            protocol="tls", host="127.0.0.1", port=0, security=posing, dashboard=False
        ) as scheduler:
            try:
                async with Client(
                    scheduler.address,
                    security=security_from_dir(certs),
                    asynchronous=True,
                    timeout=CONNECT_S,
                ):
                    return "connected"
            except Exception as exc:
                return f"{type(exc).__name__}: {exc}"

    return value(within(LIMIT_S, lambda: asyncio.run(run())))


def test_a_client_certificate_cannot_serve_as_the_scheduler(certs):
    """Roles are not interchangeable where TLS checks them: a client's certificate is for
    connecting only (extended key usage), so nobody accepts it from a server."""
    assert _client_of_a_scheduler_with_the_certificate_of(certs, "scheduler") == "connected"
    refused = _client_of_a_scheduler_with_the_certificate_of(certs, "client")
    assert refused != "connected" and "certificate" in refused.lower(), refused


def test_a_plain_tcp_session_is_told_at_once_that_the_cluster_wants_tls(tls_pair):
    """Not after a wait for a greeting a TLS scheduler never sends: with a connect timeout
    of ten minutes (a greeting wait of three), the session fails within LIMIT_S saying that
    the cluster wants tls:// and how to pass the certificates."""
    host_port = tls_pair[0].target.removeprefix("tls://")

    def connect() -> BaseException | None:
        with dask.config.set({"daskgraph.connect-timeout": "600s"}):
            with dg.Graph().as_default() as graph:
                try:
                    dg.Session(f"tcp://{host_port}", graph=graph).close()
                except Exception as exc:
                    return exc
        return None

    error = value(within(LIMIT_S, connect))
    assert isinstance(error, InvalidArgumentError), error
    assert error.wants == f"tls://{host_port}"
    assert f"this cluster wants tls://{host_port}" in str(error)
    assert "security=daskgraph.cluster.tls.security_from_dir(DIR)" in str(error)
    assert "--tls-dir" in str(error)


def test_the_dashboards_of_a_tls_cluster_speak_https_only(tls_pair, certs, other_ca):
    """The scheduler's dashboard (at the task's host) answers HTTPS to holders of a
    certificate of the cluster's CA only; each worker's HTTP server answers HTTPS only."""
    security = security_from_dir(certs)
    with Client(tls_pair[0].target, security=security, timeout=10, set_as_default=False) as c:
        info = c.scheduler_info(n_workers=-1)
    dashboard = f"localhost:{info['services']['dashboard']}"
    pair = {a: w for a, w in info["workers"].items() if str(w["name"]).startswith("/job:local/")}
    workers = [f"{w['host']}:{w['services']['dashboard']}" for w in pair.values()]
    assert len(workers) == 2
    for http in [dashboard, *workers]:  # no plain HTTP anywhere
        assert fetch(f"http://{http}/health").startswith("ERROR"), http
    assert fetch(f"https://{dashboard}/health", https_context(certs)) == "ok"
    workers_page = fetch(f"https://{dashboard}/info/main/workers.html", https_context(certs))
    assert all(address in workers_page for address in pair), workers_page[:200]
    refused = {
        "no certificate": fetch(f"https://{dashboard}/health", https_context(certs, None)),
        "another CA": fetch(f"https://{dashboard}/health", https_context(other_ca)),
    }
    assert all(body.startswith("ERROR") for body in refused.values()), refused
    for http in workers:
        assert fetch(f"https://{http}/health", https_context(certs, None)) == "ok"


def test_a_worker_process_serves_https_on_loopback(tls_pair, certs):
    """A worker in a process of its own (a GPU worker's kind) gets the HTTPS settings and the
    loopback address from its spec, through its nanny."""
    (spec,) = worker_specs(
        processes=True, job="proc", cpu_threads=1, security=security_from_dir(certs)
    ).values()
    target, name = tls_pair[0].target, spec["options"]["name"]

    async def run() -> list[str]:
        worker = spec["cls"](target, **spec["options"])
        try:
            await worker
            async with Client(
                target, security=security_from_dir(certs), asynchronous=True, timeout=10
            ) as client:
                found: list[dict] = []
                while not found:  # until it has registered (within() bounds the wait)
                    identity = await client.scheduler.identity(n_workers=-1)
                    found = [w for w in identity["workers"].values() if w["name"] == name]
                    await asyncio.sleep(0 if found else 0.1)
            (info,) = found
            http = f"{info['host']}:{info['services']['dashboard']}"
            return [
                await asyncio.to_thread(fetch, f"http://{http}/health"),
                await asyncio.to_thread(
                    fetch, f"https://{http}/health", https_context(certs, None)
                ),
            ]
        finally:
            await worker.close()

    plain, https = value(within(60, lambda: asyncio.run(run())))
    assert plain.startswith("ERROR") and https == "ok", (plain, https)


def test_a_session_without_the_certificates_fails_fast(tls_pair):
    def connect() -> str:
        with dg.Graph().as_default() as graph:
            try:
                dg.Session(tls_pair[0].target, graph=graph).close()
                outcome = "connected"
            except Exception as exc:
                outcome = f"{type(exc).__name__}: {exc}"
        gc.collect()  # see attempt()
        return outcome

    assert value(within(LIMIT_S, connect)) != "connected"


def test_cli_devices_with_tls_dir(tls_pair, certs, other_ca):
    target = tls_pair[0].target
    listing = cli("devices", "--tls-dir", str(certs), "--timeout", "5", target, timeout=30)
    assert listing.returncode == 0, listing.stderr
    assert f"{TASK0}CPU:0 -> " in listing.stdout and f"{TASK1}CPU:0 -> " in listing.stdout
    assert "address: tls://" in listing.stdout
    # host:port alone means tls:// when certificates are given
    bare = cli("devices", "--tls-dir", str(certs), "--timeout", "5", target.removeprefix("tls://"))
    assert bare.returncode == 0, bare.stderr
    refused = cli("devices", "--tls-dir", str(other_ca), "--timeout", str(CONNECT_S), target)
    assert refused.returncode != 0 and TASK0 not in refused.stdout


def test_cli_server_with_tls_dir(tmp_path, certs):
    (port,) = free_ports(1)
    spec = tmp_path / "spec.json"
    spec.write_text(f'{{"local": ["localhost:{port}"]}}')
    log = tmp_path / "server.log"
    env = {k: v for k, v in os.environ.items() if k != "TF_CONFIG"}
    env["DASK_DASKGRAPH__VIRTUAL_GPUS"] = "0"
    server = [DASKGRAPH, "server", "--cluster-spec", str(spec), "--job-name", "local"]
    with log.open("w") as out:
        proc = subprocess.Popen(
            [*server, "--task-index", "0", "--tls-dir", str(certs)],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
        )
    try:
        listing = None
        for _ in range(60):
            listing = cli(
                "devices", "--tls-dir", str(certs), "--timeout", "2", f"tls://localhost:{port}"
            )
            if listing.returncode == 0 and TASK0 in listing.stdout:
                break
        assert listing is not None and TASK0 + "CPU:0" in listing.stdout, log.read_text()
        assert f"serving tls://localhost:{port}" in log.read_text()
        assert attempt(f"tcp://localhost:{port}", None) != "connected"
        security = security_from_dir(certs)
        with Client(f"tls://localhost:{port}", security=security, set_as_default=False) as c:
            dashboard = f"localhost:{c.scheduler_info()['services']['dashboard']}"
        assert fetch(f"http://{dashboard}/health").startswith("ERROR")
        assert fetch(f"https://{dashboard}/health", https_context(certs)) == "ok"
        proc.terminate()
        assert proc.wait(20) == 0, log.read_text()
        assert "stopped" in log.read_text().splitlines()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)


@pytest.mark.parametrize("role", ["scheduler", "worker"])
def test_cli_server_given_a_client_certificate_exits_naming_the_file(tmp_path, role):
    """Issue 32, H2: a client's certificate copied over the scheduler's (or a worker's) can
    never serve; the server says so and exits, before it starts, instead of retrying its
    handshakes forever."""
    certs = make_certs(tmp_path / "certs")
    for suffix in (".pem", "-key.pem"):
        (certs / f"{role}{suffix}").write_bytes((certs / f"client{suffix}").read_bytes())
    (port,) = free_ports(1)
    spec = tmp_path / "spec.json"
    spec.write_text(f'{{"local": ["localhost:{port}"]}}')
    task = ["--job-name", "local", "--task-index", "0", "--tls-dir", str(certs)]
    done = cli("server", "--cluster-spec", str(spec), *task, timeout=LIMIT_S * 3)
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert str(certs / f"{role}.pem") in done.stderr, done.stderr
    assert "client's certificate" in done.stderr and "Traceback" not in done.stderr
    assert "serving" not in done.stdout


# -- loopback only -------------------------------------------------------------------------------
def _listening() -> set[tuple[str, int]]:
    """(ip, port) of the TCP sockets this process listens on."""
    return {
        (c.laddr.ip, c.laddr.port)
        for c in psutil.Process().net_connections(kind="inet")
        if c.status == psutil.CONN_LISTEN
    }


def test_create_local_server_listens_on_loopback_only():
    before = _listening()
    server = value(within(30, lambda: Server.create_local_server(config=NO_GPUS)))
    try:
        opened = _listening() - before
        port = int(server.target.rsplit(":", 1)[1])
        assert ("127.0.0.1", port) in opened  # the scheduler, at the task's address
        assert len(opened) >= 3, opened  # scheduler, its HTTP server, the CPU worker, ...
        assert {ip for ip, _ in opened} == {"127.0.0.1"}, opened
        with Client(server.target, timeout=10, set_as_default=False) as client:
            workers = client.scheduler_info(n_workers=-1)["workers"]
        assert workers and all(a.startswith("tcp://127.0.0.1:") for a in workers), workers
    finally:
        value(within(30, server.stop))
    assert not (_listening() - before), "the server left sockets listening after stop()"


def _host_address() -> str | None:
    """An IPv4 address of this machine other than loopback, if it has one."""
    for addresses in psutil.net_if_addrs().values():
        for address in addresses:
            if address.family == socket.AF_INET:
                if not ipaddress.ip_address(address.address).is_loopback:
                    return address.address
    return None


def test_a_tls_task_at_a_host_address_keeps_its_workers_http_on_loopback(tmp_path):
    """Comm ports and the scheduler's dashboard (HTTPS, client certificates) listen at the
    task's address; the workers' HTTP servers on 127.0.0.1 only."""
    ip = _host_address()
    if ip is None:
        pytest.skip("this machine has no IPv4 address but loopback")
    folder = tmp_path / "certs"
    done = cli("certs", str(folder), "--hostname", ip)
    assert done.returncode == 0, done.stderr
    security = security_from_dir(folder)
    (port,) = free_ports(1, host=ip)
    before = _listening()
    server = value(
        within(
            30,
            lambda: Server(
                {"local": [f"{ip}:{port}"]},
                "local",
                0,
                config=NO_GPUS,
                security=security,
                virtual_gpus=1,
            ),
        )
    )
    try:
        opened = _listening() - before
        with Client(server.target, security=security, timeout=10, set_as_default=False) as c:
            info = c.scheduler_info(n_workers=-1)
        dashboard = info["services"]["dashboard"]
        assert {(ip, port), (ip, dashboard)} <= opened, opened
        assert len(info["workers"]) == 2 and all(
            address.startswith(f"tls://{ip}:") for address in info["workers"]
        )
        for worker in info["workers"].values():
            http = worker["services"]["dashboard"]
            assert ("127.0.0.1", http) in opened and (ip, http) not in opened, opened
        assert fetch(f"https://{ip}:{dashboard}/health", https_context(folder)) == "ok"
        assert fetch(f"http://{ip}:{dashboard}/health").startswith("ERROR")
    finally:
        value(within(30, server.stop))
