"""The files of ``daskgraph certs``: a CA whose key is kept private and reused, one certificate
per role, nodes added later, the old layout; the HTTPS settings of a TLS cluster's HTTP
servers; and what a plain client hears from a TLS server.

Key files are private from the moment they exist: no window in which others can read them.
"""

from __future__ import annotations

import os
import socket
import ssl
import stat
import threading
from pathlib import Path

import pytest

pytest.importorskip("cryptography")

from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from daskgraph import cli
from daskgraph.cluster import tls
from daskgraph.cluster.greeting import not_dask_error, reach
from daskgraph.cluster.local import worker_options, worker_specs
from daskgraph.errors import InvalidArgumentError
from daskgraph.testing import within

ROLES = ("scheduler", "worker", "client")
KEYS = ("ca-key.pem", "scheduler-key.pem", "worker-key.pem", "client-key.pem")


def load(path: Path) -> x509.Certificate:
    return x509.load_pem_x509_certificate(path.read_bytes())


def public(cert: x509.Certificate) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return cert.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )


def purposes(cert: x509.Certificate) -> set:
    return set(cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value)


# -- private from the first byte -----------------------------------------------------------------
def test_every_key_is_created_owner_only_whatever_the_umask(tmp_path, monkeypatch):
    """With a permissive umask and no chmod afterwards (as if the process died between the
    write and a later chmod), the keys, the CA's included, are still 0600: created that way."""
    monkeypatch.setattr(Path, "chmod", lambda *args, **kwargs: None)
    monkeypatch.setattr(os, "chmod", lambda *args, **kwargs: None)
    old = os.umask(0o022)
    try:
        paths = tls.make_certificates(tmp_path)
    finally:
        os.umask(old)
    for name in KEYS:
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == 0o600, name
    for role in ROLES:
        assert paths[f"{role}_key"] == tmp_path / f"{role}-key.pem"
        assert stat.S_IMODE(paths[role].stat().st_mode) == 0o644  # certificates are public
    assert paths["ca_key"] == tmp_path / "ca-key.pem"


def test_an_existing_world_readable_key_is_restricted_before_it_is_rewritten(tmp_path, monkeypatch):
    key = tmp_path / "worker-key.pem"
    key.write_text("old secret")
    key.chmod(0o644)
    seen = {}
    real_fchmod = os.fchmod

    def watch(fd, mode):
        seen[os.readlink(f"/proc/self/fd/{fd}")] = os.fstat(fd).st_size  # old content still there
        real_fchmod(fd, mode)

    monkeypatch.setattr(os, "fchmod", watch)
    tls.make_certificates(tmp_path)
    assert seen[str(key)] == len("old secret")
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert key.read_text().startswith("-----BEGIN PRIVATE KEY-----")


# -- one certificate per role, from a CA that is kept --------------------------------------------
def test_one_certificate_and_key_per_role_signed_by_the_kept_ca(tmp_path):
    paths = tls.make_certificates(tmp_path, hostnames=["node0.example.org", "10.1.2.3"])
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["ca.pem", *KEYS, "scheduler.pem", "worker.pem", "client.pem"]
    )
    ca = load(paths["ca"])
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    certs = {role: load(paths[role]) for role in ROLES}
    for role, cert in certs.items():
        cert.verify_directly_issued_by(ca)
        assert not cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
        unit = cert.subject.get_attributes_for_oid(NameOID.ORGANIZATIONAL_UNIT_NAME)
        assert [a.value for a in unit] == [role]
        names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        assert names.get_values_for_type(x509.DNSName) == ["node0.example.org"]
        assert [str(ip) for ip in names.get_values_for_type(x509.IPAddress)] == ["10.1.2.3"]
    assert len({public(cert) for cert in certs.values()} | {public(ca)}) == 4  # own keys
    # what each may do, checked by OpenSSL in every handshake: a client only connects
    both = {ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH}
    assert purposes(certs["scheduler"]) == purposes(certs["worker"]) == both
    assert purposes(certs["client"]) == {ExtendedKeyUsageOID.CLIENT_AUTH}


def test_a_second_run_reuses_the_ca_so_earlier_certificates_stay_valid(tmp_path):
    first = tls.make_certificates(tmp_path)
    ca_pem, ca_key = first["ca"].read_bytes(), first["ca_key"].read_bytes()
    old_worker = load(first["worker"])
    second = tls.make_certificates(tmp_path, roles=["worker"])
    assert second["ca"].read_bytes() == ca_pem and second["ca_key"].read_bytes() == ca_key
    assert set(second) == {"ca", "ca_key", "worker", "worker_key"}
    new_worker = load(second["worker"])
    assert public(new_worker) != public(old_worker)  # issued anew ...
    for cert in (old_worker, new_worker):  # ... by the same CA
        cert.verify_directly_issued_by(load(second["ca"]))


def test_a_loose_ca_key_is_made_private_when_reused(tmp_path):
    tls.make_certificates(tmp_path)
    (tmp_path / "ca-key.pem").chmod(0o644)
    tls.make_certificates(tmp_path, roles=["client"])
    assert stat.S_IMODE((tmp_path / "ca-key.pem").stat().st_mode) == 0o600


def test_a_ca_that_cannot_sign_is_refused_not_replaced(tmp_path):
    tls.make_certificates(tmp_path / "a")
    tls.make_certificates(tmp_path / "b")
    (tmp_path / "a" / "ca-key.pem").unlink()  # as in a folder of an older daskgraph
    ca_pem = (tmp_path / "a" / "ca.pem").read_bytes()
    with pytest.raises(InvalidArgumentError, match=r"ca\.pem but no ca-key\.pem") as info:
        tls.make_certificates(tmp_path / "a")
    assert "daskgraph certs NEW_DIR" in str(info.value)
    assert (tmp_path / "a" / "ca.pem").read_bytes() == ca_pem  # the nodes' trust is kept
    (tmp_path / "b" / "ca-key.pem").rename(tmp_path / "a" / "ca-key.pem")  # another CA's key
    with pytest.raises(InvalidArgumentError, match=r"is not the key of its ca\.pem"):
        tls.make_certificates(tmp_path / "a")


def test_a_node_added_later_gets_a_folder_of_its_own_from_the_same_ca(tmp_path):
    made = tls.make_certificates(tmp_path)
    paths = tls.add_node(tmp_path, "node7", hostnames=["node7.example.org"])
    folder = tmp_path / "node7"
    assert sorted(p.name for p in folder.iterdir()) == [
        "ca.pem",
        "client-key.pem",
        "client.pem",
        "worker-key.pem",
        "worker.pem",
    ]  # no CA key, no scheduler certificate
    assert paths["ca"].read_bytes() == made["ca"].read_bytes()
    for role in ("worker", "client"):
        cert = load(paths[role])
        cert.verify_directly_issued_by(load(made["ca"]))
        assert public(cert) != public(load(made[role]))
        assert stat.S_IMODE(paths[f"{role}_key"].stat().st_mode) == 0o600
    security = tls.security_from_dir(folder)
    assert security.get_tls_config_for_role("worker")["cert"] == str(folder / "worker.pem")
    assert security.get_tls_config_for_role("client")["cert"] == str(folder / "client.pem")
    assert security.tls_scheduler_cert is None


@pytest.mark.parametrize("name", ["../escape", "a/b", "", ".hidden", "x" * 200])
def test_add_node_takes_a_plain_folder_name(tmp_path, name):
    tls.make_certificates(tmp_path)
    with pytest.raises(InvalidArgumentError, match="plain folder name") as info:
        tls.add_node(tmp_path, name)
    assert len(str(info.value)) < 300  # the name is quoted shortened
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_dir()) == []


def test_add_node_needs_a_ca(tmp_path):
    with pytest.raises(InvalidArgumentError, match="holds no CA") as info:
        tls.add_node(tmp_path, "node1")
    assert f"daskgraph certs {tmp_path}" in str(info.value)


# -- security_from_dir ---------------------------------------------------------------------------
def test_security_from_dir_gives_each_role_its_own_certificate(tmp_path):
    tls.make_certificates(tmp_path)
    security = tls.security_from_dir(tmp_path)
    assert security.require_encryption
    assert security.tls_ca_file == str(tmp_path / "ca.pem")
    for role in ROLES:
        config = security.get_tls_config_for_role(role)
        assert config["cert"] == str(tmp_path / f"{role}.pem")
        assert config["key"] == str(tmp_path / f"{role}-key.pem")


def test_security_from_dir_reads_the_old_one_node_certificate_layout(tmp_path):
    """A folder made by an older ``daskgraph certs``: ca.pem, node.pem, node-key.pem."""
    tls.make_certificates(tmp_path, roles=["worker"])
    (tmp_path / "worker.pem").rename(tmp_path / "node.pem")
    (tmp_path / "worker-key.pem").rename(tmp_path / "node-key.pem")
    (tmp_path / "ca-key.pem").unlink()
    security = tls.security_from_dir(tmp_path)
    for role in ROLES:
        assert security.get_tls_config_for_role(role)["cert"] == str(tmp_path / "node.pem")


def test_security_from_dir_names_what_is_missing(tmp_path):
    tls.make_certificates(tmp_path)
    (tmp_path / "worker-key.pem").unlink()
    with pytest.raises(FileNotFoundError, match=r"worker-key\.pem") as info:
        tls.security_from_dir(tmp_path)
    assert f"daskgraph certs {tmp_path}" in str(info.value)
    for role in ROLES:
        (tmp_path / f"{role}.pem").unlink()
    with pytest.raises(FileNotFoundError, match="No TLS certificate"):
        tls.security_from_dir(tmp_path)
    (tmp_path / "ca.pem").unlink()
    with pytest.raises(FileNotFoundError, match=r"ca\.pem"):
        tls.security_from_dir(tmp_path)


def test_the_cli_offers_the_roles_of_tls():
    assert cli.ROLE_CHOICES == tls.ROLES


# -- the HTTP servers of a TLS cluster -----------------------------------------------------------
def test_https_settings_name_the_roles_certificate(tmp_path):
    tls.make_certificates(tmp_path)
    security = tls.security_from_dir(tmp_path)
    key = "distributed.scheduler.dashboard.tls"
    for role in ("scheduler", "worker"):
        assert tls.https_settings(security, role) == {
            f"{key}.cert": str(tmp_path / f"{role}.pem"),
            f"{key}.key": str(tmp_path / f"{role}-key.pem"),
            f"{key}.ca-file": str(tmp_path / "ca.pem"),
        }
    assert tls.https_settings(None, "worker") == {}


@pytest.mark.parametrize("processes", [False, True])
def test_tls_workers_serve_https_on_loopback_only(tmp_path, processes):
    tls.make_certificates(tmp_path)
    security = tls.security_from_dir(tmp_path)
    specs = worker_specs(
        virtual_gpus=1, processes=processes, host="10.1.2.3", security=security, cpu_threads=1
    )
    for spec in specs.values():
        options = worker_options(spec)
        assert options["host"] == "10.1.2.3"  # the comm listens on the task's host ...
        assert options["dashboard_address"] == "127.0.0.1:0"  # ... the HTTP server not
        if processes:  # a process of its own takes Dask's HTTPS settings from its nanny
            cert = options["config"]["distributed.scheduler.dashboard.tls.cert"]
            assert cert == str(tmp_path / "worker.pem")
    plain = worker_specs(virtual_gpus=1, processes=processes, host="10.1.2.3", cpu_threads=1)
    assert {worker_options(s)["dashboard_address"] for s in plain.values()} == {"10.1.2.3:0"}


# -- a plain client of a TLS server --------------------------------------------------------------
def self_signed(folder: Path) -> tuple[Path, Path]:
    """A certificate and key of their own (whatever ``daskgraph.cluster.tls`` makes)."""
    import datetime

    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "a TLS server")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = folder / "server.pem", folder / "server-key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


@pytest.fixture
def tls_server(tmp_path):
    """A loopback TLS server that asks for a client's certificate (as a TLS scheduler does),
    shaking hands with every connection in a thread."""
    cert, key = self_signed(tmp_path)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    context.load_verify_locations(cert)
    context.verify_mode = ssl.CERT_REQUIRED
    listener = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:  # closed: the test is over
                return
            try:
                with context.wrap_socket(conn, server_side=True):
                    pass
            except (OSError, ssl.SSLError):
                pass

    threading.Thread(target=serve, daemon=True).start()
    yield listener.getsockname()[1]
    listener.close()


def test_a_plain_probe_hears_that_a_tls_server_speaks_tls(tls_server):
    """Without waiting for the greeting a TLS server never sends: with a greeting wait of
    five minutes, the probe returns the server's TLS record within 20 s (at once, in fact)."""
    said = within(20, lambda: reach("127.0.0.1", tls_server, timeout=1000.0))["value"]
    assert said is not None and said[:2] in (b"\x15\x03", b"\x16\x03")
    error = not_dask_error("Cannot connect", "tcp://h:1", "127.0.0.1", tls_server, said)
    assert isinstance(error, InvalidArgumentError)
    assert error.wants == f"tls://127.0.0.1:{tls_server}"
    assert f"wants tls://127.0.0.1:{tls_server}" in str(error)
    assert "security_from_dir" in str(error) and "--tls-dir" in str(error)


# -- certificates that cannot serve in their role (issue 32, H2) ---------------------------------
def _with_client_certificate_as(folder: Path, role: str) -> Path:
    tls.make_certificates(folder)
    for suffix in (".pem", "-key.pem"):
        (folder / f"{role}{suffix}").write_bytes((folder / f"client{suffix}").read_bytes())
    return folder


@pytest.mark.parametrize("role", ["scheduler", "worker"])
def test_a_client_certificate_given_as_a_servers_is_refused_naming_its_file(tmp_path, role):
    security = tls.security_from_dir(_with_client_certificate_as(tmp_path, role))
    with pytest.raises(InvalidArgumentError) as refused:
        tls.check_serving_certificates(security)
    assert refused.value.file == str(tmp_path / f"{role}.pem")
    assert refused.value.role == role and refused.value.found == ["clientAuth"]
    assert str(tmp_path / f"{role}.pem") in str(refused.value)
    assert f"daskgraph certs DIR --role {role}" in str(refused.value)
    other = "worker" if role == "scheduler" else "scheduler"
    tls.check_serving_certificates(security, [other])  # (the other role's is right)


def test_the_certificates_of_certs_and_temporary_ones_serve(tmp_path):
    from distributed import Security

    tls.make_certificates(tmp_path)
    tls.check_serving_certificates(tls.security_from_dir(tmp_path))
    tls.check_serving_certificates(Security.temporary())  # (no extended key usage: any use)
