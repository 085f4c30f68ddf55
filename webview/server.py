"""``mrcctl web``: serve the live view and ``/metrics`` with uvicorn.

Why bind the socket here: the address is checked (one line, before anything runs)
and port 0 takes a free port, so the URL printed is the one that answers. The page
has no login: by default it listens on the loopback only, and any other address is
taken with a warning.
"""

from __future__ import annotations

import ipaddress
import socket
import sys
from pathlib import Path
from typing import TextIO

import uvicorn

from fabric.topology import Topology
from webview.app import make_app
from webview.events import EventLog
from webview.model import Drawing
from webview.poller import Poller

DEFAULT_BIND = "127.0.0.1"
DEFAULT_PORT = 8790
EVENTS_NAME = "events.jsonl"


class BindError(Exception):
    """The address to listen on cannot be used (one line)."""


def is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def open_socket(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host``:``port`` (0: any free port); BindError naming
    the address and the fix."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise BindError(f"--bind {host}: not an address of this machine ({exc.strerror}); give an IP address "
                        "such as 127.0.0.1 or ::1") from None
    family, kind, proto, _, addr = infos[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(addr)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise BindError(f"cannot listen on {host} port {port}: {exc.strerror}; give another --port (0: any free "
                        "one) or --bind") from None
    sock.set_inheritable(True)
    return sock


def url_of(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}/" if ":" in host else f"http://{host}:{port}/"


def serve(topo: Topology, state: Path | None, events: Path, *, bind: str = DEFAULT_BIND, port: int = DEFAULT_PORT,
          interval: float = 1.0, election_id: int = 1, tls_dir: Path | None = None, say: TextIO = sys.stdout) -> None:
    """Serve the view of ``topo`` until interrupted. ``state``: the running network's
    state file (None: the drawing only, no counters); ``events``: the EV events file;
    ``tls_dir``: reach every switch over mutual TLS with these credentials (mrcctl's
    ``--tls-dir``; None: as the state file says)."""
    sock = open_socket(bind, port)
    if not is_loopback(bind):
        print(f"web: warning: listening on {bind}: the page and /metrics have no login; anyone who can reach "
              "this address sees the fabric", file=sys.stderr, flush=True)
    poller = Poller(Drawing(topo), state, EventLog(events), interval=interval, election_id=election_id,
                    tls_dir=tls_dir)
    what = f"state file {state}" if state else "no running network: the drawing only"
    print(f"web: {url_of(sock)} (metrics at {url_of(sock)}metrics; {what}; events {events})", file=say, flush=True)
    config = uvicorn.Config(make_app(poller), log_level="warning", timeout_graceful_shutdown=1, lifespan="on")
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        sock.close()
