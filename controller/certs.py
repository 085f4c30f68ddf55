"""``mrcctl certs``: a private CA, a certificate per switch server, one for the clients.

Why a command of our own and not openssl steps: mutual TLS needs four things right at
once (the CA flags, each server's subjectAltName matching the address clients dial,
the client certificate's purpose, private keys nobody else can read), and a mistake
in any shows up later as a bare handshake failure. The layout is the one
``--tls-dir`` reads (``controller/tls.py``) and ``p4target run --tls-*`` takes:
``ca.pem``/``ca.key``, ``server-NAME.pem``/``.key``, ``client.pem``/``.key``.

Keys are ECDSA P-256 (every gRPC TLS stack takes them; small and fast to make).
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import re
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

CA_DAYS = 3650
LEAF_DAYS = 825
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
_DNS = re.compile(r"(?=.{1,253}$)([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*")


class CertError(Exception):
    """A mistake in what ``mrcctl certs`` was asked for; nothing was written."""


@dataclass(frozen=True)
class ServerName:
    """``NAME=ADDR`` of ``--server``: the files' name and the address clients dial."""

    name: str
    addr: str

    def san(self) -> x509.GeneralName:
        try:
            return x509.IPAddress(ipaddress.ip_address(self.addr))
        except ValueError:
            return x509.DNSName(self.addr)


def parse_server(text: str) -> ServerName:
    """``NAME=ADDR`` -> ServerName, or CertError saying what is wrong."""
    name, sep, addr = text.partition("=")
    if not sep or not _NAME.fullmatch(name):
        raise CertError(f"--server {text!r}: give NAME=ADDR, NAME of letters, digits, '.', '_' or '-' "
                        "(for example --server s1=10.0.0.2)")
    try:
        ipaddress.ip_address(addr)
    except ValueError:
        if not _DNS.fullmatch(addr):
            raise CertError(f"--server {text!r}: {addr!r} is neither an IP address nor a DNS name; give the "
                            "address clients connect to, without a port") from None
    return ServerName(name, addr)


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _subject(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "mrc-p4"),
                      x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _builder(subject: x509.Name, issuer: x509.Name, public_key: ec.EllipticCurvePublicKey,
             days: int) -> x509.CertificateBuilder:
    now = datetime.datetime.now(datetime.timezone.utc)
    return (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer).public_key(public_key)
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))  # clocks a little apart still agree
            .not_valid_after(now + datetime.timedelta(days=days)))


def _leaf(ca_cert: x509.Certificate, ca_key: ec.EllipticCurvePrivateKey, common_name: str,
          usage: x509.ObjectIdentifier, sans: list[x509.GeneralName]) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = _key()
    b = (_builder(_subject(common_name), ca_cert.subject, key.public_key(), LEAF_DAYS)
         .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
         .add_extension(x509.KeyUsage(digital_signature=True, key_encipherment=False, content_commitment=False,
                                      data_encipherment=False, key_agreement=True, key_cert_sign=False,
                                      crl_sign=False, encipher_only=False, decipher_only=False), critical=True)
         .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
         .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False))
    if sans:
        b = b.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    return b.sign(ca_key, hashes.SHA256()), key


def _make_ca() -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = _key()
    name = _subject("mrc-p4 P4Runtime CA")
    cert = (_builder(name, name, key.public_key(), CA_DAYS)
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_encipherment=False, content_commitment=False,
                                         data_encipherment=False, key_agreement=False, key_cert_sign=True,
                                         crl_sign=True, encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .sign(key, hashes.SHA256()))
    return cert, key


def _pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _write_all(directory: Path, files: list[tuple[str, bytes, int]]) -> list[Path]:
    """Write every file with its mode from the start (a key is never readable by
    others, not even for a moment): all to temporary names first, then each renamed
    into place, so a failure leaves the directory as it was."""
    temps: list[tuple[Path, Path]] = []
    try:
        for name, data, mode in files:
            tmp = directory / f".{name}.{os.getpid()}"
            temps.append((tmp, directory / name))
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
            try:
                os.write(fd, data)
                os.fchmod(fd, mode)  # O_CREAT's mode is masked by the umask
            finally:
                os.close(fd)
    except OSError as e:
        for tmp, _ in temps:
            tmp.unlink(missing_ok=True)
        raise CertError(f"{directory}: cannot write {temps[-1][1].name} ({e.strerror}); nothing written") from None
    for tmp, path in temps:
        os.replace(tmp, path)
    return [path for _, path in temps]


def make_certs(directory: Path, servers: list[ServerName], *, force: bool = False) -> list[Path]:
    """Write a new CA, a certificate and key per server, and the client's, into
    ``directory``; the files written. CertError (nothing written) when the CA is
    there already and not ``force``, or the servers' names repeat."""
    if not servers:
        raise CertError("give at least one --server NAME=ADDR (the address clients connect to)")
    names = [s.name for s in servers]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise CertError(f"--server {dup[0]}=... is given twice; give each server once")
    if (directory / "ca.pem").exists() and not force:
        raise CertError(f"{directory / 'ca.pem'} exists: a new CA would lock out every certificate it signed; "
                        "give --force to replace it, or another directory")
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise CertError(f"{directory}: cannot make the directory ({e.strerror})") from None
    ca_cert, ca_key = _make_ca()
    files: list[tuple[str, bytes, int]] = [("ca.pem", _pem(ca_cert), 0o644), ("ca.key", _key_pem(ca_key), 0o600)]
    for s in servers:
        cert, key = _leaf(ca_cert, ca_key, s.addr, ExtendedKeyUsageOID.SERVER_AUTH, [s.san()])
        files += [(f"server-{s.name}.pem", _pem(cert), 0o644), (f"server-{s.name}.key", _key_pem(key), 0o600)]
    cert, key = _leaf(ca_cert, ca_key, "mrcctl", ExtendedKeyUsageOID.CLIENT_AUTH, [])
    files += [("client.pem", _pem(cert), 0o644), ("client.key", _key_pem(key), 0o600)]
    return _write_all(directory, files)
