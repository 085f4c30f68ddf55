"""Mutual TLS for the P4Runtime server, and which addresses may go without it.

Why: a switch on another machine is reached over a network other users share, and
whoever reaches its P4Runtime port can rewrite its tables. So off loopback the server
speaks TLS and accepts only clients whose certificate the given CA signed (mutual
TLS); plaintext is for loopback, or for someone who says so (``--insecure``).

The files are read and checked here, before anything listens: a key that does not
belong to its certificate, or a file that is not PEM, is one error naming the option
and the file, not a failure deep inside gRPC.
"""

from __future__ import annotations

import ipaddress
import socket
import ssl
from dataclasses import dataclass
from pathlib import Path

import grpc

from p4target.errors import P4Error
from p4target.p4runtime.tls_front import TLSFront, server_context

# (option, field) of the three files, in the order an error names them
OPTIONS = (("--tls-cert", "cert"), ("--tls-key", "key"), ("--tls-ca", "ca"))


@dataclass(frozen=True)
class ServerTLS:
    """The server's certificate chain and key, and the CA its clients' certificates
    must be signed by (PEM bytes, read by ``load``)."""

    cert: bytes
    key: bytes
    ca: bytes

    def credentials(self) -> grpc.ServerCredentials:
        """gRPC server credentials that require a client certificate signed by the CA."""
        return grpc.ssl_server_credentials([(self.key, self.cert)], root_certificates=self.ca,
                                           require_client_auth=True)

    def context(self) -> ssl.SSLContext:
        """The same, for the h2 transport's TLS front (``tls_front.TLSFront``)."""
        return server_context(self.cert, self.key, self.ca)


def missing_options(cert: object, key: object, ca: object) -> list[str]:
    """The ``--tls-*`` options not given when some are (empty: all or none given)."""
    given = {"cert": cert, "key": key, "ca": ca}
    if all(v is None for v in given.values()):
        return []
    return [opt for opt, name in OPTIONS if given[name] is None]


def _read(option: str, path: Path) -> bytes:
    try:
        data = path.read_bytes()
    except OSError as e:
        raise P4Error(f"{option} {path}: cannot read it ({e.strerror}); give the file "
                      "`mrcctl certs` wrote") from None
    if b"-----BEGIN " not in data:
        raise P4Error(f"{option} {path}: not a PEM file; give the file `mrcctl certs` wrote")
    return data


def load(cert: Path, key: Path, ca: Path) -> ServerTLS:
    """Read and check the three files; P4Error naming the option and the file."""
    tls = ServerTLS(cert=_read("--tls-cert", cert), key=_read("--tls-key", key), ca=_read("--tls-ca", ca))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        context.load_cert_chain(cert, key)
    except ssl.SSLError as e:
        raise P4Error(f"--tls-key {key} does not go with --tls-cert {cert} ({e.reason or e}); "
                      "give the key written beside that certificate") from None
    try:
        context.load_verify_locations(cafile=str(ca))
    except ssl.SSLError as e:
        raise P4Error(f"--tls-ca {ca}: no CA certificate in it ({e.reason or e}); give the "
                      "ca.pem `mrcctl certs` wrote") from None
    return tls


def is_loopback(addr: str) -> bool:
    """Does ``HOST:PORT`` listen on loopback only? A name counts when every address it
    resolves to is loopback; an empty host, 0.0.0.0 and [::] are every address."""
    host = addr.rpartition(":")[0].strip("[]")
    if not host:
        return False
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        pass
    try:
        found = {str(info[4][0]) for info in socket.getaddrinfo(host, None)}
    except (OSError, UnicodeError):
        return False
    return bool(found) and all(ipaddress.ip_address(a.split("%")[0]).is_loopback for a in found)


def plaintext_refusal(addr: str) -> str | None:
    """Why plaintext P4Runtime may not listen on ``addr`` without ``--insecure``, or None."""
    if is_loopback(addr):
        return None
    return (f"{addr} is not a loopback address, and P4Runtime there without TLS lets anyone who "
            "reaches it rewrite the switch: give --tls-cert, --tls-key and --tls-ca (make them "
            "with `mrcctl certs`), or --insecure to serve plaintext anyway")


def add_port(server: grpc.Server | TLSFront, addr: str, tls: ServerTLS | None) -> int:
    """Listen on ``addr``, with TLS when given (a ``TLSFront`` ends it itself); the port
    bound, 0 when it cannot be."""
    try:
        if isinstance(server, TLSFront):
            assert tls is not None  # make_transport gives a TLSFront for a secure server only
            return server.add_tls_port(addr, tls.context())
        if tls is None:
            return server.add_insecure_port(addr)
        return server.add_secure_port(addr, tls.credentials())
    except RuntimeError:  # grpcio raises for a port it cannot bind
        return 0
