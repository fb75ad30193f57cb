"""Mutual TLS for a cluster: make a CA and node certificates, and the ``distributed.Security``.

``daskgraph certs DIR`` (or :func:`make_certificates`) writes ``ca.pem`` (the cluster's own
certificate authority), ``node.pem`` and ``node-key.pem`` (a certificate signed by it, for the
scheduler, the workers and the clients). :func:`security_from_dir` turns that folder into a
``distributed.Security`` that requires encryption and checks the peer's certificate both ways,
so a plain ``tcp://`` client, a client without a certificate and a client whose certificate
comes from another CA are all refused. Needs the ``cryptography`` package (extra ``tls``).

A worker process started from a JSON spec (the GPU workers, see :mod:`daskgraph.cluster`)
cannot be handed a ``Security`` object: :func:`security_fields` turns one into plain data and
:func:`security_from_fields` turns that back in the worker's nanny.
"""

from __future__ import annotations

import atexit
import datetime
import hashlib
import ipaddress
import json
import os
import shutil
import ssl
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from daskgraph.errors import InvalidArgumentError

__all__ = ["make_certificates", "security_fields", "security_from_dir", "security_from_fields"]

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
    pkcs8, clear = serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    _write_private(paths["key"], node_key.private_bytes(pem, pkcs8, clear))
    return paths


def _write_private(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` readable by its owner only from the first byte on: the file
    is created with mode 0600 (an existing one is restricted before it is truncated)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "wb") as file:
        os.fchmod(fd, 0o600)
        file.truncate(0)
        file.write(data)


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


#: the ``Security`` fields that name a certificate or key (a file, or PEM text held in memory)
_PEM_FIELDS = (
    "tls_ca_file",
    "tls_client_key",
    "tls_client_cert",
    "tls_scheduler_key",
    "tls_scheduler_cert",
    "tls_worker_key",
    "tls_worker_cert",
)
_VERSION_FIELDS = ("tls_min_version", "tls_max_version")
_pem_dir: Path | None = None


def security_fields(security: Any) -> dict[str, Any]:
    """A ``distributed.Security`` as JSON-able constructor arguments, for a worker process
    whose spec travels as JSON (``distributed.deploy.subprocess.SubprocessWorker``).

    Certificates and keys named by path are passed as paths. Those held in memory
    (``Security.temporary()``) are written to files only this user may read, in a private
    folder removed when this process exits, so that no key shows on a command line. TLS
    versions become their numbers.

    Raises
    ------
    InvalidArgumentError
        When ``extra_conn_args`` is no JSON (field ``field``).

    Examples
    --------
    >>> from distributed import Security
    >>> fields = security_fields(Security(tls_ca_file="ca.pem", require_encryption=True))
    >>> fields["tls_ca_file"], fields["require_encryption"], fields["tls_min_version"]
    ('ca.pem', True, 771)
    >>> security_from_fields(fields).tls_min_version
    <TLSVersion.TLSv1_2: 771>
    """
    fields = {name: getattr(security, name) for name in type(security).__slots__}
    for name in _PEM_FIELDS:
        value = fields.get(name)
        if isinstance(value, str) and "-----BEGIN" in value:
            fields[name] = str(_pem_file(value))
    for name in _VERSION_FIELDS:
        if fields.get(name) is not None:
            fields[name] = int(fields[name])
    try:
        json.dumps(fields["extra_conn_args"])
    except (TypeError, ValueError):
        raise InvalidArgumentError(
            "A worker process started from a JSON spec cannot take this Security's "
            f"extra_conn_args ({fields['extra_conn_args']!r}): give plain values only",
            field="extra_conn_args",
        ) from None
    return fields


def security_from_fields(fields: Mapping[str, Any]) -> Any:
    """The ``distributed.Security`` that :func:`security_fields` describes."""
    from distributed import Security

    fields = dict(fields)
    for name in _VERSION_FIELDS:
        if fields.get(name) is not None:
            fields[name] = ssl.TLSVersion(fields[name])
    return Security(**fields)


def _pem_file(text: str) -> Path:
    """A file holding ``text``, readable by this user only (one per distinct text)."""
    global _pem_dir
    if _pem_dir is None:
        _pem_dir = Path(tempfile.mkdtemp(prefix="daskgraph-tls-"))  # mode 0700
        atexit.register(shutil.rmtree, _pem_dir, True)
    path = _pem_dir / (hashlib.sha256(text.encode()).hexdigest()[:32] + ".pem")
    if not path.exists():
        _write_private(path, text.encode())
    return path
