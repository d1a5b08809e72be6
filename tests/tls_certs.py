"""Temporary TLS certificates for tests: a CA and one certificate it signs, as PEM files.

``distributed.security.Security.temporary()`` keeps its certificates in memory, but a command
line (``soak run --tls-ca-file ...``) needs files, so tests make their own with ``cryptography``.

Examples
--------
>>> files = make_tls_files(tmp_path)                          # doctest: +SKIP
>>> cluster = LocalCluster(protocol="tls", host="127.0.0.1",  # doctest: +SKIP
...                        security=cluster_security(files), n_workers=1)
"""

from __future__ import annotations

import datetime as dt
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from distributed.security import Security

_VALID_DAYS = 2


@dataclass(frozen=True)
class TLSFiles:
    """PEM files: the CA certificate, and a certificate and key the CA signed."""

    ca_file: Path
    cert: Path
    key: Path


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _builder(subject: str, issuer: str, public_key: ec.EllipticCurvePublicKey) -> x509.Builder:
    now = dt.datetime.now(dt.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(_name(subject))
        .issuer_name(_name(issuer))
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=_VALID_DAYS))
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(public_key), critical=False)
    )


def make_tls_files(directory: str | Path, host: str = "127.0.0.1") -> TLSFiles:
    """Write ``ca.pem``, ``cert.pem`` and ``key.pem`` into ``directory``.

    The certificate is valid for ``host``, ``localhost`` and 127.0.0.1, for both server and
    client authentication, so one certificate serves the scheduler, the workers and the client.

    Parameters
    ----------
    directory : path
        Where to write the files (created if missing).
    host : str
        IP address or DNS name the certificate is issued for.

    Returns
    -------
    TLSFiles
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_cert = (
        _builder("soak-test-ca", "soak-test-ca", ca_key.public_key())
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    names: list[x509.GeneralName] = [x509.DNSName("localhost")]
    for address in {host, "127.0.0.1"}:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(address)))
        except ValueError:  # a DNS name, not an IP address
            names.append(x509.DNSName(address))
    cert = (
        _builder(host, "soak-test-ca", key.public_key())
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(
            x509.ExtendedKeyUsage(
                [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
            ),
            critical=False,
        )
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    files = TLSFiles(directory / "ca.pem", directory / "cert.pem", directory / "key.pem")
    files.ca_file.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    files.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    files.key.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return files


def cluster_security(files: TLSFiles) -> Security:
    """A ``Security`` for a TLS LocalCluster whose scheduler, workers and client share ``files``."""
    return Security(
        tls_ca_file=str(files.ca_file),
        tls_scheduler_cert=str(files.cert),
        tls_scheduler_key=str(files.key),
        tls_worker_cert=str(files.cert),
        tls_worker_key=str(files.key),
        tls_client_cert=str(files.cert),
        tls_client_key=str(files.key),
        require_encryption=True,
    )
