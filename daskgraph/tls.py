"""Mutual TLS for a cluster: make a CA and node certificates, and the ``distributed.Security``.

``daskgraph certs DIR`` (or :func:`make_certificates`) writes ``ca.pem`` (the cluster's own
certificate authority), ``node.pem`` and ``node-key.pem`` (a certificate signed by it, for the
scheduler, the workers and the clients). :func:`security_from_dir` turns that folder into a
``distributed.Security`` that requires encryption and checks the peer's certificate both ways,
so a plain ``tcp://`` client, a client without a certificate and a client whose certificate
comes from another CA are all refused. Needs the ``cryptography`` package (extra ``tls``).
"""

from __future__ import annotations

import datetime
import ipaddress
from pathlib import Path

__all__ = ["make_certificates", "security_from_dir"]

CA_FILE, CERT_FILE, KEY_FILE = "ca.pem", "node.pem", "node-key.pem"


def _key():
    from cryptography.hazmat.primitives.asymmetric import ec

    return ec.generate_private_key(ec.SECP256R1())


def _name(common_name: str):
    from cryptography import x509
    from cryptography.x509.oid import NameOID

    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def make_certificates(
    directory: Path, hostnames: list[str] | None = None, days: int = 365
) -> dict[str, Path]:
    """Write a CA and a node certificate signed by it into ``directory``; return the paths."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    hostnames = hostnames or ["localhost", "127.0.0.1"]
    now = datetime.datetime.now(datetime.timezone.utc)
    until = now + datetime.timedelta(days=days)

    ca_key = _key()
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(_name("daskgraph cluster CA"))
        .issuer_name(_name("daskgraph cluster CA"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(until)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    alt_names: list[x509.GeneralName] = []
    for host in hostnames:
        try:
            alt_names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            alt_names.append(x509.DNSName(host))
    node_key = _key()
    node_cert = (
        x509.CertificateBuilder()
        .subject_name(_name("daskgraph node"))
        .issuer_name(ca_cert.subject)
        .public_key(node_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(until)
        .add_extension(x509.SubjectAlternativeName(alt_names), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    paths = {"ca": directory / CA_FILE, "cert": directory / CERT_FILE, "key": directory / KEY_FILE}
    paths["ca"].write_bytes(ca_cert.public_bytes(pem))
    paths["cert"].write_bytes(node_cert.public_bytes(pem))
    paths["key"].write_bytes(
        node_key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    paths["key"].chmod(0o600)
    return paths


def security_from_dir(directory: Path):
    """A ``distributed.Security`` for every role from a folder made by :func:`make_certificates`.

    Raises
    ------
    FileNotFoundError
        Naming the missing file and how to make it.
    """
    from distributed import Security

    directory = Path(directory)
    files = {name: directory / name for name in (CA_FILE, CERT_FILE, KEY_FILE)}
    for path in files.values():
        if not path.exists():
            raise FileNotFoundError(
                f"TLS file {path} is missing; make the folder with `daskgraph certs {directory}`"
            )
    ca, cert, key = (str(files[n]) for n in (CA_FILE, CERT_FILE, KEY_FILE))
    return Security(
        tls_ca_file=ca,
        tls_client_cert=cert,
        tls_client_key=key,
        tls_scheduler_cert=cert,
        tls_scheduler_key=key,
        tls_worker_cert=cert,
        tls_worker_key=key,
        require_encryption=True,
    )
