"""The controller's side of mutual TLS: the client certificate from a ``--tls-dir``.

Why a directory and not three options: ``mrcctl certs DIR`` writes the CA and the
client's certificate and key there under fixed names, so every client (``mrcctl``,
the network runner's readiness probe, the experiments through the state file's
``tls_dir``) is pointed at one place. The files are read and checked before any
connection, so a missing or mismatched file is one line naming it, not a TLS
handshake that silently never completes.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from pathlib import Path

import grpc
from finsy.grpcutil import GRPCCredentialsTLS

from controller.errors import SwitchError

ENV = "MRCCTL_TLS_DIR"
CA, CERT, KEY = "ca.pem", "client.pem", "client.key"


class TLSError(SwitchError):
    """The TLS directory cannot be used; ``str()`` names the file and the fix."""


@dataclass(frozen=True)
class ClientTLS:
    """The CA that signed the switches' certificates, and the client's certificate and key (PEM)."""

    directory: Path
    ca: bytes
    cert: bytes
    key: bytes

    def finsy_credentials(self) -> GRPCCredentialsTLS:
        """For finsy's ``P4Client``."""
        return GRPCCredentialsTLS(cacert=self.ca, cert=self.cert, private_key=self.key)

    def channel_credentials(self) -> grpc.ChannelCredentials:
        """For a plain ``grpc.secure_channel``."""
        return grpc.ssl_channel_credentials(root_certificates=self.ca, private_key=self.key,
                                            certificate_chain=self.cert)


def _read(path: Path) -> bytes:
    hint = f"make the certificates with `mrcctl certs {path.parent} --server NAME=ADDR`"
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise TLSError(f"--tls-dir {path.parent}: no {path.name} there; {hint}") from None
    except OSError as e:
        raise TLSError(f"--tls-dir {path.parent}: cannot read {path.name} ({e.strerror})") from None
    if b"-----BEGIN " not in data:
        raise TLSError(f"--tls-dir {path.parent}: {path.name} is not a PEM file; {hint}")
    return data


def load_client_tls(directory: str | Path) -> ClientTLS:
    """The credentials in ``directory`` (``ca.pem``, ``client.pem``, ``client.key``),
    checked: TLSError naming the file when one is missing, not PEM, or the key is
    not the certificate's."""
    d = Path(directory)
    if not d.is_dir():
        raise TLSError(f"--tls-dir {d}: no such directory; give the one `mrcctl certs` wrote")
    tls = ClientTLS(d, ca=_read(d / CA), cert=_read(d / CERT), key=_read(d / KEY))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    try:
        context.load_cert_chain(d / CERT, d / KEY)
    except ssl.SSLError as e:
        raise TLSError(f"--tls-dir {d}: {KEY} is not the key of {CERT} ({e.reason or e}); make them again "
                       "with `mrcctl certs`") from None
    try:
        context.load_verify_locations(cafile=str(d / CA))
    except ssl.SSLError as e:
        raise TLSError(f"--tls-dir {d}: no CA certificate in {CA} ({e.reason or e})") from None
    return tls
