"""Mutual TLS in front of the h2 transport: TLS ends here, the HTTP/2 goes on in plaintext
to the ``H2Server`` over a Unix socket only this process can reach.

Why: the server that faces other machines must hold against a hostile client as the
loopback one does, and ``grpc.server`` (the only server grpcio offers TLS on) does not
(docs/performance.md, "Hostile clients over mutual TLS"); the h2 transport speaks
plaintext only. So one thread ("p4rt-tls") accepts the TLS connections, runs their
handshakes without blocking, and once a client's certificate has been checked against
the CA, copies bytes both ways between it and a connection of its own to the h2
loop. A client without a valid certificate never reaches HTTP/2.

What it bounds (``limits.ServerLimits``): ``max_connections`` connections at once
(more are closed at once), ``max_handshakes`` handshakes under way (a new connection
past it drops the oldest unfinished one: a legitimate handshake takes a few round
trips, so a flood of slow ones cannot keep a client out), ``handshake_seconds`` for a
handshake to finish, and ``BUFFER_BYTES`` of bytes waiting per direction per
connection: past it the side that sends is not read until the other side has taken
some, so a client that reads nothing stalls its HTTP/2 connection (whose flow control
and stall limit then apply) instead of filling memory. TLS 1.2 or 1.3, no
renegotiation, ALPN ``h2`` (what gRPC clients require).
"""

from __future__ import annotations

import collections
import logging
import os
import selectors
import socket
import ssl
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Iterable

from p4target.p4runtime.limits import ServerLimits
from p4target.p4runtime.listen import bind

log = logging.getLogger(__name__)

BUFFER_BYTES = 64 * 1024  # bytes waiting for one side of one connection before the other is not read
RECORD = 16384            # bytes per TLS write (a TLS record's most)
R, W = selectors.EVENT_READ, selectors.EVENT_WRITE


def server_context(cert: bytes, key: bytes, ca: bytes) -> ssl.SSLContext:
    """A server context that requires a client certificate the CA signed. The chain and
    key go through a private temporary directory (``ssl`` loads them from files only),
    removed before this returns."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.verify_mode = ssl.CERT_REQUIRED
    context.options |= ssl.OP_NO_RENEGOTIATION
    context.load_verify_locations(cadata=ca.decode("ascii", errors="replace"))
    context.set_alpn_protocols(["h2"])
    with tempfile.TemporaryDirectory(prefix="p4rt-tls-") as d:
        cert_path, key_path = Path(d) / "cert.pem", Path(d) / "key.pem"
        for path, data in ((cert_path, cert), (key_path, key)):
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
        context.load_cert_chain(cert_path, key_path)
    return context


class _Link:
    """One client: its TLS socket, once its handshake is done its plaintext connection
    to the h2 loop, and what waits to go each way."""

    __slots__ = ("tls", "plain", "to_plain", "to_tls", "record", "since", "tls_eof", "plain_eof", "closed")

    def __init__(self, tls: ssl.SSLSocket) -> None:
        self.tls = tls
        self.plain: socket.socket | None = None  # None: handshake under way
        self.to_plain = bytearray()
        self.to_tls = bytearray()
        self.record = 0  # length of the TLS write to repeat after a want-write (0: none)
        self.since = time.monotonic()
        self.tls_eof = self.plain_eof = self.closed = False


class TLSFront:
    """The part of ``grpc.Server`` the P4Runtime server uses, over ``inner`` (an
    ``H2Server``): handlers go to it, ``add_tls_port`` listens with TLS."""

    def __init__(self, inner: Any, limits: ServerLimits, reuse_port: bool = False) -> None:
        self.inner = inner
        self.limits = limits
        self._reuse_port = reuse_port
        self._context: ssl.SSLContext | None = None
        self._listeners: list[socket.socket] = []
        self._dir = tempfile.mkdtemp(prefix="p4rt-h2-")  # 0700: the Unix socket is this process's
        self._path = os.path.join(self._dir, "h2.sock")
        self._sel = selectors.DefaultSelector()
        self._links: set[_Link] = set()
        self._handshakes: collections.OrderedDict[_Link, None] = collections.OrderedDict()  # oldest first
        self._wake_r, self._wake_w = socket.socketpair()
        self._stopping = False
        self._inner_stopped: threading.Event | None = None
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None
        self.refused = 0   # connections closed at once: over max_connections
        self.dropped = 0   # handshakes that failed, timed out or were pushed out

    # ---- grpc.Server's interface ------------------------------------------------------
    def add_generic_rpc_handlers(self, handlers: Iterable[Any]) -> None:
        self.inner.add_generic_rpc_handlers(handlers)

    def add_registered_method_handlers(self, service: str, handlers: dict[str, Any]) -> None:
        self.inner.add_registered_method_handlers(service, handlers)

    def add_tls_port(self, address: str, context: ssl.SSLContext) -> int:
        """Listen on ``host:port`` with TLS (``context``); the port. RuntimeError when
        nothing could be bound."""
        self._context = context
        if not os.path.exists(self._path):
            unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            unix.bind(self._path)
            unix.listen(1024)
            self.inner.add_socket(unix)
        socks = bind(address, self._reuse_port)
        self._listeners.extend(socks)
        return int(socks[0].getsockname()[1])

    def start(self) -> None:
        self.inner.start()
        self._sel.register(self._wake_r, R, None)
        for sock in self._listeners:
            self._sel.register(sock, R, None)
        self._thread = threading.Thread(target=self._serve, name="p4rt-tls", daemon=True)
        self._thread.start()

    def stop(self, grace: float | None) -> threading.Event:
        """Stop accepting, stop the h2 server (``grace`` as it takes it), and close every
        connection once it has stopped; the event is set when all is over."""
        self._inner_stopped = self.inner.stop(grace)
        self._stopping = True
        if self._thread is None:
            self._cleanup()
        else:
            self._wake_w.send(b"x")
        return self._stopped

    # ---- the thread ---------------------------------------------------------------------
    def _serve(self) -> None:
        try:
            while not (self._stopping and self._inner_stopped is not None and self._inner_stopped.is_set()):
                if self._stopping and self._listeners:
                    for sock in self._listeners:
                        self._sel.unregister(sock)
                        sock.close()
                    self._listeners.clear()
                for key, events in self._sel.select(self._timeout()):
                    self._event(key, events)
                self._expire()
        except Exception:  # logged; the clients see their connections closed
            log.exception("the TLS front failed")
        finally:
            self._cleanup()

    def _timeout(self) -> float | None:
        if self._stopping:
            return 0.05
        if not self._handshakes:
            return None
        oldest = next(iter(self._handshakes))
        return max(0.0, oldest.since + self.limits.handshake_seconds - time.monotonic())

    def _expire(self) -> None:
        now = time.monotonic()
        while self._handshakes:
            oldest = next(iter(self._handshakes))
            if oldest.since + self.limits.handshake_seconds > now:
                break
            self.dropped += 1
            self._close(oldest)

    def _event(self, key: selectors.SelectorKey, events: int) -> None:
        if key.data is None:
            if key.fileobj is self._wake_r:
                self._wake_r.recv(64)
            else:
                self._accept(key.fileobj)  # type: ignore[arg-type]  # a listening socket
            return
        link, side = key.data
        if link.closed:
            return
        if link.plain is None:
            self._handshake(link)
        elif side == "tls":
            if events & W:
                self._flush_tls(link)
            if events & R:
                self._from_tls(link)
        else:
            if events & W:
                self._flush_plain(link)
            if events & R:
                self._from_plain(link)
        self._settle(link)

    def _accept(self, listener: socket.socket) -> None:
        assert self._context is not None
        while True:
            try:
                sock, _ = listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as e:  # out of descriptors: the backlog waits for a close
                log.warning("cannot accept a TLS connection (%s)", e.strerror)
                return
            if len(self._links) >= self.limits.max_connections:
                sock.close()
                self.refused += 1
                if self.refused == 1 or self.refused % 1000 == 0:
                    log.warning("%d TLS connection(s) refused: %d open already (the limit)", self.refused,
                                len(self._links))
                continue
            if len(self._handshakes) >= self.limits.max_handshakes:
                self.dropped += 1
                self._close(next(iter(self._handshakes)))
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            link = _Link(self._context.wrap_socket(sock, server_side=True, do_handshake_on_connect=False))
            self._links.add(link)
            self._handshakes[link] = None
            self._sel.register(link.tls, R, (link, "tls"))

    def _handshake(self, link: _Link) -> None:
        try:
            link.tls.do_handshake()
        except ssl.SSLWantReadError:
            self._sel.modify(link.tls, R, (link, "tls"))
            return
        except ssl.SSLWantWriteError:
            self._sel.modify(link.tls, W, (link, "tls"))
            return
        except (ssl.SSLError, OSError) as e:
            self.dropped += 1
            if self.dropped == 1 or self.dropped % 1000 == 0:
                log.warning("%d TLS handshake(s) failed or dropped (the last: %s)", self.dropped,
                            getattr(e, "reason", None) or e)
            self._close(link)
            return
        del self._handshakes[link]
        plain = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            plain.connect(self._path)
        except OSError as e:
            plain.close()
            log.warning("cannot reach the h2 loop (%s): a TLS client is closed", e.strerror)
            self._close(link)
            return
        plain.setblocking(False)
        link.plain = plain
        self._sel.register(plain, R, (link, "plain"))
        self._from_tls(link)  # what came with the handshake's last flight

    # ---- copying ---------------------------------------------------------------------
    def _from_tls(self, link: _Link) -> None:
        while len(link.to_plain) < BUFFER_BYTES and not link.tls_eof:
            try:
                data = link.tls.recv(RECORD)
            except (ssl.SSLWantReadError, ssl.SSLWantWriteError):
                break
            except (ssl.SSLError, OSError):
                link.tls_eof = True
                break
            if not data:
                link.tls_eof = True
                break
            link.to_plain += data
        self._flush_plain(link)

    def _flush_plain(self, link: _Link) -> None:
        if not link.to_plain or link.plain is None:
            return
        try:
            n = link.plain.send(link.to_plain)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            link.plain_eof = True
            link.to_plain.clear()
            return
        resume = len(link.to_plain) >= BUFFER_BYTES
        del link.to_plain[:n]
        if resume and len(link.to_plain) < BUFFER_BYTES:
            self._from_tls(link)  # decrypted bytes may wait inside the SSL object, unseen by select

    def _from_plain(self, link: _Link) -> None:
        assert link.plain is not None
        while len(link.to_tls) < BUFFER_BYTES and not link.plain_eof:
            try:
                data = link.plain.recv(BUFFER_BYTES)
            except (BlockingIOError, InterruptedError):
                break
            except OSError:
                link.plain_eof = True
                break
            if not data:
                link.plain_eof = True
                break
            link.to_tls += data
        self._flush_tls(link)

    def _flush_tls(self, link: _Link) -> None:
        while link.to_tls:
            n = link.record or min(len(link.to_tls), RECORD)  # a retried write repeats its length
            try:
                link.tls.send(link.to_tls[:n])
            except (ssl.SSLWantWriteError, ssl.SSLWantReadError):
                link.record = n
                return
            except (ssl.SSLError, OSError):
                link.tls_eof = True
                link.to_tls.clear()
                return
            link.record = 0
            del link.to_tls[:n]

    def _settle(self, link: _Link) -> None:
        """Close a link that is over, or watch each side for what it can do now."""
        if link.closed or link.plain is None:
            return
        if link.tls_eof or (link.plain_eof and not link.to_tls):
            self._close(link)
            return
        tls_events = (R if len(link.to_plain) < BUFFER_BYTES else 0) | (W if link.to_tls else 0)
        plain_events = (R if len(link.to_tls) < BUFFER_BYTES and not link.plain_eof else 0) | \
            (W if link.to_plain else 0)
        self._watch(link.tls, tls_events, (link, "tls"))
        self._watch(link.plain, plain_events, (link, "plain"))

    def _watch(self, sock: socket.socket, events: int, data: Any) -> None:
        key = self._sel.get_map().get(sock.fileno())
        if key is None:
            if events:
                self._sel.register(sock, events, data)
        elif not events:
            self._sel.unregister(sock)
        elif key.events != events:
            self._sel.modify(sock, events, data)

    def _close(self, link: _Link) -> None:
        if link.closed:
            return
        link.closed = True
        self._links.discard(link)
        self._handshakes.pop(link, None)
        for sock in (link.tls, link.plain):
            if sock is None:
                continue
            if sock.fileno() in self._sel.get_map():
                self._sel.unregister(sock)
            sock.close()

    def _cleanup(self) -> None:
        for link in list(self._links):
            self._close(link)
        for sock in self._listeners:
            sock.close()
        self._listeners.clear()
        self._sel.close()
        self._wake_r.close()
        self._wake_w.close()
        try:
            os.unlink(self._path)
        except OSError:
            pass
        try:
            os.rmdir(self._dir)
        except OSError:
            pass
        self._stopped.set()
