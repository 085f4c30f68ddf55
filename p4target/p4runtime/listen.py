"""Listening sockets for a ``host:port`` the way gRPC binds one: every address the host
resolves to, one port for all (port 0: the first free one, then the same for the rest)."""

from __future__ import annotations

import socket


def bind(address: str, reuse_port: bool, backlog: int = 128) -> list[socket.socket]:
    """Bound, listening, non-blocking sockets for ``address``; RuntimeError naming the
    address when none could be bound."""
    host_text, _, port_text = address.rpartition(":")
    host = host_text.strip("[]") or None
    try:
        infos = socket.getaddrinfo(host, int(port_text), type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (OSError, ValueError) as e:
        raise RuntimeError(f"cannot bind {address}: {e}") from None
    port, first_error, out = int(port_text), None, []
    for family, kind, proto, _, sockaddr in infos:
        sock = socket.socket(family, kind, proto)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if reuse_port:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            sock.bind((sockaddr[0], port, *sockaddr[2:]))
            sock.listen(backlog)
            sock.setblocking(False)
        except OSError as e:
            sock.close()
            first_error = first_error or e
            continue
        port = sock.getsockname()[1]
        out.append(sock)
    if not out:
        raise RuntimeError(f"cannot bind {address}: {first_error}")
    return out
