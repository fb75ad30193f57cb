"""Mutual TLS for a cluster: a CA kept on disk, one certificate per role, the ``Security``.

``daskgraph certs DIR`` (:func:`make_certificates`) makes the cluster's certificate authority,
``ca.pem`` with its key ``ca-key.pem`` (readable by its owner only, and kept, so that nodes can
be added later), or reuses the one ``DIR`` holds, and issues one certificate and key per role:
``scheduler.pem``, ``worker.pem`` and ``client.pem``, each with its own ``ROLE-key.pem`` (mode
0600). ``daskgraph certs DIR --add NAME`` (:func:`add_node`) issues certificates for one more
node from that CA into ``DIR/NAME``: a folder to copy to that node, without the CA's key.

What the roles enforce: each role has a key of its own, and its certificate names its role
(``OU``) and what it may do (extended key usage), which OpenSSL checks in every handshake. A
client certificate may only connect (``clientAuth``): nothing accepts it as a server, so a
client cannot pose as the scheduler or a worker to others. Scheduler and worker certificates
both listen and connect (Dask's scheduler connects to its workers). Dask itself checks only
that a peer's certificate comes from the cluster's CA (no host names, no roles): a worker's
certificate could serve a scheduler of its own, and any certificate of the CA, a client's
included, can register a worker with the scheduler.

:func:`security_from_dir` turns such a folder into a ``distributed.Security`` that requires
encryption and checks the peer's certificate both ways, so a plain ``tcp://`` client, a client
without a certificate and one whose certificate comes from another CA are all refused. A
folder of the old layout (one ``node.pem`` and ``node-key.pem`` for every role) still works.
:func:`https_settings` and :func:`require_client_certificates` put a node's HTTP server (the
dashboard, ``/daskgraph.json``, Dask's ``/info`` pages) under the same certificates. Needs the
``cryptography`` package (a dependency of daskgraph).

A worker process started from a JSON spec (the GPU workers, see :mod:`daskgraph.cluster.local`)
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
import re
import shutil
import ssl
import stat
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from daskgraph.errors import InvalidArgumentError, quote

__all__ = [
    "ROLES",
    "SERVING_ROLES",
    "add_node",
    "check_serving_certificates",
    "https_settings",
    "make_certificates",
    "require_client_certificates",
    "security_fields",
    "security_from_dir",
    "security_from_fields",
]

#: the roles Dask's ``Security`` has a certificate for
ROLES = ("scheduler", "worker", "client")
#: the roles whose certificates serve (listen) as well as connect
SERVING_ROLES = ("scheduler", "worker")
CA_FILE, CA_KEY_FILE = "ca.pem", "ca-key.pem"
#: the old layout's one certificate and key for every role (still read)
LEGACY_CERT_FILE, LEGACY_KEY_FILE = "node.pem", "node-key.pem"
#: days the CA is valid (at least): nodes are added with certificates from it for that long
CA_DAYS = 3650
#: roles a node added later gets by default: it runs workers, and its programs are clients
NODE_ROLES = ("worker", "client")
_NODE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}\Z")
#: Dask's settings for the HTTPS of a node's HTTP server (every node reads them, workers too)
DASHBOARD_TLS = "distributed.scheduler.dashboard.tls"


def cert_file(role: str) -> str:
    """The file name of a role's certificate.

    >>> cert_file("worker"), key_file("worker")
    ('worker.pem', 'worker-key.pem')
    """
    return f"{role}.pem"


def key_file(role: str) -> str:
    """The file name of a role's private key."""
    return f"{role}-key.pem"


def _key():
    from cryptography.hazmat.primitives.asymmetric import ec

    return ec.generate_private_key(ec.SECP256R1())


def _name(common_name: str, unit: str | None = None):
    from cryptography import x509
    from cryptography.x509.oid import NameOID

    attributes = [x509.NameAttribute(NameOID.COMMON_NAME, common_name)]
    if unit is not None:
        attributes.append(x509.NameAttribute(NameOID.ORGANIZATIONAL_UNIT_NAME, unit))
    return x509.Name(attributes)


def _validity(days: int) -> tuple[datetime.datetime, datetime.datetime]:
    now = datetime.datetime.now(datetime.timezone.utc)
    return now - datetime.timedelta(minutes=5), now + datetime.timedelta(days=days)


def _key_usage(**allowed: bool):
    """A ``KeyUsage`` extension allowing only the ``allowed`` uses."""
    from cryptography import x509

    uses = (
        "digital_signature", "content_commitment", "key_encipherment", "data_encipherment",
        "key_agreement", "key_cert_sign", "crl_sign", "encipher_only", "decipher_only",
    )  # fmt: skip
    return x509.KeyUsage(**{use: allowed.get(use, False) for use in uses})


def _new_ca(days: int):
    """A fresh CA: its key and its self-signed certificate."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes

    key = _key()
    start, until = _validity(max(days, CA_DAYS))  # it outlives the certificates it signs
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name("daskgraph cluster CA"))
        .issuer_name(_name("daskgraph cluster CA"))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(until)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_key_usage(key_cert_sign=True, crl_sign=True), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), False)
        .sign(key, hashes.SHA256())
    )
    return key, cert


def _alt_names(hostnames: Iterable[str]) -> list[Any]:
    from cryptography import x509

    names: list[Any] = []
    for host in hostnames:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    return names


def _issue(ca: tuple[Any, Any], role: str, hostnames: list[str], days: int, node: str = ""):
    """A key and a certificate for ``role`` signed by ``ca`` (its key and certificate): the
    role in the subject's ``OU`` and in the extended key usage (a client only connects)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.x509.oid import ExtendedKeyUsageOID

    ca_key, ca_cert = ca
    key = _key()
    start, until = _validity(days)
    until = min(until, ca_cert.not_valid_after_utc)
    purposes = [ExtendedKeyUsageOID.CLIENT_AUTH]
    if role != "client":  # schedulers and workers listen too
        purposes.insert(0, ExtendedKeyUsageOID.SERVER_AUTH)
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(f"daskgraph {role}" + (f" {node}" if node else ""), role))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(until)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_key_usage(digital_signature=True), critical=True)
        .add_extension(x509.ExtendedKeyUsage(purposes), critical=False)
        .add_extension(x509.SubjectAlternativeName(_alt_names(hostnames)), critical=False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), False
        )
        .sign(ca_key, hashes.SHA256())
    )
    return key, cert


def _load_or_make_ca(directory: Path, days: int) -> tuple[tuple[Any, Any], bool]:
    """The CA of ``directory`` (its key and certificate) and whether it was made now.

    Raises
    ------
    InvalidArgumentError
        ``ca.pem`` without ``ca-key.pem`` (a folder of an older daskgraph, which did not keep
        the CA's key), the key alone, or a key that is not the certificate's.
    """
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization

    cert_path, key_path = directory / CA_FILE, directory / CA_KEY_FILE
    if not cert_path.exists() and not key_path.exists():
        key, cert = _new_ca(days)
        _write_private(key_path, _private_pem(key))
        cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        return (key, cert), True
    if not key_path.exists() or not cert_path.exists():
        have, lacks = (CA_FILE, CA_KEY_FILE) if cert_path.exists() else (CA_KEY_FILE, CA_FILE)
        raise InvalidArgumentError(
            f"Cannot issue certificates from the CA in {quote(str(directory))}: it has {have} "
            f"but no {lacks} (a folder made by an older daskgraph, which did not keep the CA's "
            "key). Make a new folder with `daskgraph certs NEW_DIR` and give its files to every "
            "node, or bring back the missing file.",
            directory=str(directory),
            found=have,
        )
    if stat.S_IMODE(key_path.stat().st_mode) & 0o077:
        os.chmod(key_path, 0o600)  # others could read the CA's key: not any more
    key = serialization.load_pem_private_key(key_path.read_bytes(), password=None)
    cert = x509.load_pem_x509_certificate(cert_path.read_bytes())
    if _public_der(key.public_key()) != _public_der(cert.public_key()):
        raise InvalidArgumentError(
            f"{CA_KEY_FILE} in {quote(str(directory))} is not the key of its {CA_FILE}: "
            "restore the pair, or make a new folder with `daskgraph certs NEW_DIR`.",
            directory=str(directory),
            found="mismatched CA key",
        )
    return (key, cert), False


def _public_der(public_key: Any) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return public_key.public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )


def _private_pem(key: Any) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _check_roles(roles: Iterable[str]) -> tuple[str, ...]:
    roles = tuple(dict.fromkeys(roles))
    unknown = [r for r in roles if r not in ROLES]
    if unknown or not roles:
        raise InvalidArgumentError(
            f"Unknown certificate roles {quote(unknown)}: give some of {', '.join(ROLES)}.",
            found=unknown,
        )
    return roles


def _write_roles(
    folder: Path, ca, roles, hostnames: list[str], days: int, node: str = ""
) -> dict[str, Path]:
    from cryptography.hazmat.primitives import serialization

    paths: dict[str, Path] = {}
    for role in roles:
        key, cert = _issue(ca, role, hostnames, days, node)
        paths[role], paths[f"{role}_key"] = folder / cert_file(role), folder / key_file(role)
        _write_private(paths[f"{role}_key"], _private_pem(key))
        paths[role].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return paths


def make_certificates(
    directory: Path,
    hostnames: list[str] | None = None,
    days: int = 365,
    roles: Iterable[str] = ROLES,
) -> dict[str, Path]:
    """Make the cluster's CA in ``directory`` (or reuse the one there) and issue a
    certificate and key for each of ``roles``; return the paths.

    The CA's key ``ca-key.pem`` is written readable by its owner only and kept, so that a
    later call (or :func:`add_node`) signs with the same CA: certificates issued before stay
    valid. Role certificates name ``hostnames`` (for HTTPS clients, such as browsers; Dask
    checks no host names) and last ``days``.

    Returns
    -------
    dict
        ``ca``, ``ca_key``, then ``ROLE`` and ``ROLE_key`` for each role.

    Raises
    ------
    InvalidArgumentError
        Unknown roles, or a CA that cannot be reused (see ``_load_or_make_ca``).
    """
    directory = Path(directory)
    roles = _check_roles(roles)
    directory.mkdir(parents=True, exist_ok=True)
    ca, _ = _load_or_make_ca(directory, days)
    paths = {"ca": directory / CA_FILE, "ca_key": directory / CA_KEY_FILE}
    paths.update(_write_roles(directory, ca, roles, hostnames or ["localhost", "127.0.0.1"], days))
    return paths


def add_node(
    directory: Path,
    name: str,
    roles: Iterable[str] = NODE_ROLES,
    hostnames: list[str] | None = None,
    days: int = 365,
) -> dict[str, Path]:
    """Issue certificates for one more node from the CA in ``directory`` into
    ``directory/name``: ``ca.pem`` and each role's certificate and key (by default a worker's
    and a client's, what a ``daskgraph server`` of a task without the scheduler needs), a
    folder that :func:`security_from_dir` reads. The CA's key is not copied.

    Raises
    ------
    InvalidArgumentError
        ``name`` is no plain folder name, ``directory`` holds no CA made by
        :func:`make_certificates`, or unknown roles.
    """
    directory = Path(directory)
    roles = _check_roles(roles)
    if not _NODE_NAME.match(name):
        raise InvalidArgumentError(
            f"Cannot add a node named {quote(name)}: give a plain folder name (letters, digits, "
            "'.', '_' and '-'), such as the node's host name.",
            name=name,
        )
    if not (directory / CA_FILE).exists():
        raise InvalidArgumentError(
            f"Cannot add node {quote(name)}: {quote(str(directory))} holds no CA ({CA_FILE}); "
            f"make it first with `daskgraph certs {directory}`.",
            directory=str(directory),
            found="no CA",
        )
    ca, _ = _load_or_make_ca(directory, days)
    folder = directory / name
    folder.mkdir(exist_ok=True)
    shutil.copyfile(directory / CA_FILE, folder / CA_FILE)
    paths = {"ca": folder / CA_FILE}
    paths.update(_write_roles(folder, ca, roles, hostnames or ["localhost", name], days, name))
    return paths


def _write_private(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` readable by its owner only from the first byte on: the file
    is created with mode 0600 (an existing one is restricted before it is truncated)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "wb") as file:
        os.fchmod(fd, 0o600)
        file.truncate(0)
        file.write(data)


def _role_files(directory: Path) -> dict[str, tuple[str, str]]:
    """Each role's certificate and key in ``directory``: its own, else the old layout's
    ``node.pem`` (roles with neither are left out).

    Raises
    ------
    FileNotFoundError
        A certificate without its key, or no certificate at all.
    """
    found: dict[str, tuple[str, str]] = {}
    for cert, key in [(cert_file(r), key_file(r)) for r in ROLES] + [
        (LEGACY_CERT_FILE, LEGACY_KEY_FILE)
    ]:
        if (directory / cert).exists() and not (directory / key).exists():
            raise FileNotFoundError(
                f"TLS key {directory / key} is missing (its certificate {cert} is there); "
                f"issue both again with `daskgraph certs {directory}`"
            )
    for role in ROLES:
        for cert, key in ((cert_file(role), key_file(role)), (LEGACY_CERT_FILE, LEGACY_KEY_FILE)):
            if (directory / cert).exists():
                found[role] = (str(directory / cert), str(directory / key))
                break
    if not found:
        raise FileNotFoundError(
            f"No TLS certificate in {directory} (expected {', '.join(map(cert_file, ROLES))} "
            f"and their -key.pem files); make them with `daskgraph certs {directory}`"
        )
    return found


def security_from_dir(directory: Path):
    """A ``distributed.Security`` from a folder made by :func:`make_certificates` or
    :func:`add_node` (or of the old one-``node.pem`` layout): each role's certificate for that
    role, encryption required, and peers' certificates checked against ``ca.pem``.

    Raises
    ------
    FileNotFoundError
        Naming the missing file and how to make it.
    """
    from distributed import Security

    directory = Path(directory)
    if not (directory / CA_FILE).exists():
        raise FileNotFoundError(
            f"TLS file {directory / CA_FILE} is missing; make the folder with "
            f"`daskgraph certs {directory}`"
        )
    files = _role_files(directory)
    fields: dict[str, Any] = {"tls_ca_file": str(directory / CA_FILE)}
    for role, (cert, key) in files.items():
        fields[f"tls_{role}_cert"], fields[f"tls_{role}_key"] = cert, key
    return Security(**fields, require_encryption=True)


def check_serving_certificates(security: Any, roles: Iterable[str] = SERVING_ROLES) -> None:
    """Check that ``security``'s certificate for each of ``roles`` may serve and connect, as
    a scheduler or worker certificate must (they listen, and they connect to each other).

    A certificate whose extended key usage leaves out ``serverAuth`` or ``clientAuth`` (a
    client's certificate of :func:`make_certificates` has only ``clientAuth``) passes no
    TLS handshake as a server: a node started with it would never serve, retrying its
    handshakes without end. A certificate without that extension may do anything; one that
    cannot be read is left to Dask, which names it.

    Raises
    ------
    InvalidArgumentError
        Naming the role, the file (``file``), what its certificate allows (``found``) and
        how to make the right one.

    Examples
    --------
    >>> check_serving_certificates(None)  # (no TLS: nothing to check)
    """
    if security is None or not getattr(security, "require_encryption", False):
        return
    for role in roles:
        where = getattr(security, f"tls_{role}_cert", None)
        if not where:
            continue
        usages = _extended_key_usages(where)
        if usages is None:
            continue
        missing = [u for u in ("serverAuth", "clientAuth") if u not in usages]
        if missing:
            name = "the in-memory certificate" if "-----BEGIN" in where else where
            raise InvalidArgumentError(
                f"The {role} certificate {quote(name, limit=4096)} cannot serve as a {role}: "
                f"its extended key usage allows {', '.join(sorted(usages)) or 'nothing'}, not "
                f"{' and '.join(missing)} (is it a client's certificate?). A {role} listens "
                f"and connects: put the {role} certificate there, or issue one with "
                f"`daskgraph certs DIR --role {role}` (or `--add NAME --role {role}`).",
                role=role,
                file=name,
                found=sorted(usages),
            )


def _extended_key_usages(where: str) -> set[str] | None:
    """The extended key usages (OpenSSL's short names) of the certificate in file ``where``
    (or PEM text), or ``None`` where it has no such extension or cannot be read."""
    try:
        from cryptography import x509

        data = where.encode() if "-----BEGIN" in where else Path(where).read_bytes()
        cert = x509.load_pem_x509_certificate(data)
        usage = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    except Exception:  # no extension, no file, not PEM: Dask says what it finds
        return None
    names = {"1.3.6.1.5.5.7.3.1": "serverAuth", "1.3.6.1.5.5.7.3.2": "clientAuth"}
    return {names.get(oid.dotted_string, oid.dotted_string) for oid in usage}


def https_settings(security: Any, role: str) -> dict[str, str]:
    """Dask's settings that serve a node's HTTP server (dashboard, ``/health``, ``/info``,
    ``/daskgraph.json``) over HTTPS with ``role``'s certificate of ``security``.

    They are ``distributed.scheduler.dashboard.tls.*``, which Dask reads for every node that
    starts an HTTP server, workers included, at the moment it starts it. Empty where
    ``security`` requires no encryption or has no certificate for ``role``.

    >>> https_settings(None, "worker")
    {}
    """
    if security is None or not getattr(security, "require_encryption", False):
        return {}
    fields = security_fields(security)  # certificates held in memory become files
    cert, key = fields.get(f"tls_{role}_cert"), fields.get(f"tls_{role}_key")
    if not cert:
        return {}
    settings = {f"{DASHBOARD_TLS}.cert": cert, f"{DASHBOARD_TLS}.ca-file": fields["tls_ca_file"]}
    if key:
        settings[f"{DASHBOARD_TLS}.key"] = key
    return settings


def require_client_certificates(node: Any) -> bool:
    """Make the HTTPS server of ``node`` (a Dask scheduler or worker started under
    :func:`https_settings`) refuse every client without a certificate of the cluster's CA.

    Dask builds that server's TLS context from its settings with the CA loaded but asks
    clients for no certificate; this asks for one on the same context (``node.http_server``),
    which applies to every connection accepted afterwards: call it before the node's event
    loop runs again. Returns whether the node serves HTTPS (``False``: nothing changed).
    """
    context = getattr(getattr(node, "http_server", None), "ssl_options", None)
    if not isinstance(context, ssl.SSLContext):
        return False
    context.verify_mode = ssl.CERT_REQUIRED
    return True


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
