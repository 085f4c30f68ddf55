"""What the hostile-client suite needs: the server in its own process, a healthy
controller that checks every answer, and a raw HTTP/2 client that misbehaves.

Each runs on loopback in plaintext (``h2``) or over mutual TLS (``tls``: the h2
transport behind its TLS front, with certificates ``mrcctl certs`` made for the
session). Over TLS the raw client holds a valid client certificate: every attack on
HTTP/2 is then one an authenticated client makes (``Target.connect``); the attacks of
clients without one are ``tls_attacks``.

Why a process of its own: the bar for each attack is about the server (its RSS, its
CPU, its log), and in the test's own process the attacker's buffers and threads
would count too.

The raw client ``Raw`` is the ``h2`` package's ``H2Connection`` (client side,
validation off, so it sends what it is told); ``attacks`` writes the frames a client
must not send by hand (``frame``), with ``h2``'s HPACK encoder.
"""

from __future__ import annotations

import functools
import os
import socket
import ssl
import struct
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import grpc
import h2.config
import h2.connection
import h2.events
import h2.exceptions
from finsy.proto.p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from tests.p4runtime.p4rt_client import Names, entity, ins

ROOT = Path(__file__).resolve().parents[3]
PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
HEALTHY_DEADLINE = 2.0  # seconds: each call of the healthy client
SCALE = int(os.environ.get("HOSTILE_SCALE", "1"))  # multiplies the attacks' counts
TICK = os.sysconf("SC_CLK_TCK")
DST = 0x0A0000000001  # the healthy client's own entry in exact_t
BIG_TABLE_ENTRIES = 1000  # exact_t entries written at start: what the large Reads return

# frame types (RFC 9113 section 6)
DATA, HEADERS, PRIORITY, RST_STREAM, SETTINGS, PUSH_PROMISE, PING, GOAWAY, WINDOW_UPDATE, CONTINUATION = range(10)
END_STREAM, ACK, END_HEADERS, PADDED, PRIO = 0x1, 0x1, 0x4, 0x8, 0x20


def frame(kind: int, flags: int, sid: int, payload: bytes = b"", length: int | None = None) -> bytes:
    """One HTTP/2 frame; ``length`` (when given) is what the header declares."""
    n = len(payload) if length is None else length
    return struct.pack(">I", n)[1:] + bytes((kind, flags)) + struct.pack(">I", sid) + payload


def grpc_message(body: bytes, flag: int = 0, length: int | None = None) -> bytes:
    """gRPC's length-prefixed message; ``length`` (when given) is what the prefix declares."""
    return bytes((flag,)) + struct.pack(">I", len(body) if length is None else length) + body


def request_headers(method: str = "Capabilities", *, path: str | None = None, http_method: str = "POST",
                    content_type: str = "application/grpc", extra: Iterable[tuple[str, str]] = ()) -> list:
    return [(":method", http_method), (":scheme", "http"), (":path", f"/p4.v1.P4Runtime/{method}" if path is None else path),
            (":authority", "localhost"), ("content-type", content_type), ("te", "trailers"), *extra]


CAPABILITIES = p4runtime_pb2.CapabilitiesRequest().SerializeToString()


# ---- certificates -------------------------------------------------------------------------
@functools.lru_cache(maxsize=None)
def certs(ca: str = "ca") -> Path:
    """A directory ``mrcctl certs`` wrote for a server at 127.0.0.1 (``server-s1.*``) and a
    client; each ``ca`` name its own CA. Made once per process, removed at its exit."""
    import atexit
    import shutil

    from controller.certs import ServerName, make_certs

    d = Path(tempfile.mkdtemp(prefix=f"hostile-{ca}-"))
    atexit.register(shutil.rmtree, d, True)
    make_certs(d, [ServerName("s1", "127.0.0.1")])
    return d


def client_context(directory: Path | None, with_cert: bool = True) -> ssl.SSLContext:
    """A client context that trusts ``directory``'s CA (None: trusts nothing, checks
    nothing) and, ``with_cert``, presents its client certificate; ALPN h2."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    if directory is None:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    else:
        context.load_verify_locations(cafile=str(directory / "ca.pem"))
        if with_cert:
            context.load_cert_chain(directory / "client.pem", directory / "client.key")
    context.set_alpn_protocols(["h2"])
    return context


# ---- the server's process ------------------------------------------------------------------
def _stat_fields(path: Path) -> list[str]:
    text = path.read_text()
    return text[text.rindex(")") + 2:].split()


@dataclass
class Target:
    """The server process; ``transport`` is the one it really runs on."""

    proc: subprocess.Popen
    port: int
    transport: str
    log_path: Path
    tls: ssl.SSLContext | None = None  # the raw client's, with a valid client certificate

    @property
    def name(self) -> str:
        """The transport as the suite names it: h2, grpc.server, or either +tls."""
        return self.transport + ("+tls" if self.tls is not None else "")

    def connect(self, timeout: float = 5.0) -> socket.socket:
        """A connection to the server (TLS with the client certificate, handshake done,
        when the server speaks TLS)."""
        sock = socket.create_connection(("127.0.0.1", self.port), timeout=timeout)
        if self.tls is None:
            return sock
        try:
            return self.tls.wrap_socket(sock, server_hostname="127.0.0.1")
        except BaseException:
            sock.close()
            raise

    def alive(self) -> bool:
        return self.proc.poll() is None

    def rss_kb(self) -> int:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        raise AssertionError("no VmRSS")

    def peak_kb(self) -> int:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
        raise AssertionError("no VmHWM")

    def reset_peak(self) -> None:
        """The peak RSS (VmHWM) starts again from the current RSS."""
        Path(f"/proc/{self.proc.pid}/clear_refs").write_text("5")

    def cpu_s(self) -> float:
        """CPU time of the whole process so far, user + system."""
        f = _stat_fields(Path(f"/proc/{self.proc.pid}/stat"))
        return (int(f[11]) + int(f[12])) / TICK

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self) -> None:
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()
                self.proc.wait(timeout=10)
            except (subprocess.TimeoutExpired, OSError):
                self.proc.kill()
                self.proc.wait()
        self.log_path.unlink(missing_ok=True)


TRANSPORTS = {"h2": ("h2", False), "tls": ("h2", True), "grpc": ("grpc", False), "grpc-tls": ("grpc", True)}


def start_target(transport: str, limits: str | None = None) -> Target:
    """The server on ``transport`` (``TRANSPORTS``: ``h2`` or ``grpc``, in plaintext or
    ``tls``/``grpc-tls`` over mutual TLS); fails loudly when it runs on another one (the
    h2 loop not built, say)."""
    kind, secure = TRANSPORTS[transport]
    env = dict(os.environ, P4TARGET_GRPC_TRANSPORT=kind, P4TARGET_NATIVE="0", PYTHONPATH=str(ROOT))
    env.pop("HOSTILE_TLS_DIR", None)
    if secure:
        env["HOSTILE_TLS_DIR"] = str(certs())
    fd, name = tempfile.mkstemp(prefix="hostile-", suffix=".log")
    log = os.fdopen(fd, "w")
    argv = [sys.executable, "-m", "tests.p4runtime.hostile.serve"] + ([limits] if limits else [])
    proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
                            text=True)
    log.close()
    line = proc.stdout.readline().split()
    if len(line) != 3:
        proc.kill()
        raise AssertionError(f"the server did not start: {Path(name).read_text()}")
    want = {"h2": "h2", "grpc": "grpc.server"}[kind]
    target = Target(proc, int(line[0]), line[1], Path(name), client_context(certs()) if secure else None)
    if target.transport != want:  # h2 is only reported once its compiled loop is made
        target.stop()
        raise AssertionError(f"asked for the {want} transport, the server runs on {line[1]}: "
                             "build the HTTP/2 loop (make native)")
    return target


def new_channel(port: int, tls_dir: Path | None) -> grpc.Channel:
    """A grpcio channel to the server: plaintext, or TLS with ``tls_dir``'s client certificate."""
    if tls_dir is None:
        return grpc.insecure_channel(f"127.0.0.1:{port}")
    creds = grpc.ssl_channel_credentials(root_certificates=(tls_dir / "ca.pem").read_bytes(),
                                         private_key=(tls_dir / "client.key").read_bytes(),
                                         certificate_chain=(tls_dir / "client.pem").read_bytes())
    return grpc.secure_channel(f"127.0.0.1:{port}", creds)


# ---- the healthy controller ---------------------------------------------------------------
@dataclass
class Healthy:
    """A well-behaved grpcio client; ``check`` runs one round of calls, each with a
    ``HEALTHY_DEADLINE`` deadline, and checks every answer."""

    port: int
    p4info: Any
    device_config: bytes
    election: int = 10
    port_value: int = 1
    latencies: list[float] = field(default_factory=list)
    tls_dir: Path | None = None  # the certificates of a TLS server

    def __post_init__(self) -> None:
        self.channel = new_channel(self.port, self.tls_dir)
        self.stub = p4runtime_pb2_grpc.P4RuntimeStub(self.channel)
        self.names = Names(self.p4info)

    def close(self) -> None:
        self.channel.close()

    def _timed(self, fn: Any, *args: Any) -> Any:
        t0 = time.monotonic()
        out = fn(*args, timeout=HEALTHY_DEADLINE)
        self.latencies.append(time.monotonic() - t0)
        return out

    def _arbitrate(self) -> tuple[Any, Any]:
        """A new StreamChannel, primary with the next election id: (requests, responses)."""
        self.election += 1
        req = p4runtime_pb2.StreamMessageRequest()
        req.arbitration.device_id = 1
        req.arbitration.election_id.low = self.election
        outbox: list = [req]
        done = threading.Event()

        def requests() -> Any:
            yield outbox[0]
            done.wait()

        t0 = time.monotonic()
        responses = self.stub.StreamChannel(requests(), timeout=30)
        first = next(responses)
        took = time.monotonic() - t0
        self.latencies.append(took)
        assert took <= HEALTHY_DEADLINE, f"arbitration answered after {took:.1f} s"
        assert first.WhichOneof("update") == "arbitration", first
        assert first.arbitration.election_id.low == self.election
        assert first.arbitration.status.code == 0, first.arbitration.status
        return done, responses

    def setup(self) -> None:
        """Push the pipeline, write the healthy entry and ``BIG_TABLE_ENTRIES`` others
        (the large Reads of the attacks)."""
        done, responses = self._arbitrate()
        try:
            req = p4runtime_pb2.SetForwardingPipelineConfigRequest(
                device_id=1, action=p4runtime_pb2.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT)
            req.election_id.low = self.election
            req.config.p4info.CopyFrom(self.p4info)
            req.config.p4_device_config = self.device_config
            self.stub.SetForwardingPipelineConfig(req, timeout=60)
            updates = [ins(self.names.entry("exact_t", {"hdr.eth.dst_addr": DST}, "fwd", port=1))]
            updates += [ins(self.names.entry("exact_t", {"hdr.eth.dst_addr": 0x020000000000 + i}, "fwd", port=2))
                        for i in range(BIG_TABLE_ENTRIES)]
            w = p4runtime_pb2.WriteRequest(device_id=1, updates=updates)
            w.election_id.low = self.election
            self.stub.Write(w, timeout=60)
        finally:
            done.set()
            responses.cancel()

    def check(self) -> None:
        """Capabilities, GetForwardingPipelineConfig, arbitration, a Write, a Read: each
        answered correctly within the deadline (grpc raises DEADLINE_EXCEEDED past it)."""
        caps = self._timed(self.stub.Capabilities, p4runtime_pb2.CapabilitiesRequest())
        assert caps.p4runtime_api_version.startswith("1."), caps
        got = self._timed(self.stub.GetForwardingPipelineConfig, p4runtime_pb2.GetForwardingPipelineConfigRequest(
            device_id=1, response_type=p4runtime_pb2.GetForwardingPipelineConfigRequest.P4INFO_AND_COOKIE))
        assert [t.preamble.id for t in got.config.p4info.tables] == [t.preamble.id for t in self.p4info.tables]
        done, responses = self._arbitrate()
        try:
            self.port_value = self.port_value % 200 + 1
            e = self.names.entry("exact_t", {"hdr.eth.dst_addr": DST}, "fwd", port=self.port_value)
            w = p4runtime_pb2.WriteRequest(device_id=1, updates=[ins(e, "MODIFY")])
            w.election_id.low = self.election
            self._timed(self.stub.Write, w)
            key = self.names.entry("exact_t", {"hdr.eth.dst_addr": DST})
            read = p4runtime_pb2.ReadRequest(device_id=1, entities=[entity(table_entry=key)])
            t0 = time.monotonic()
            found = [x for r in self.stub.Read(read, timeout=HEALTHY_DEADLINE) for x in r.entities]
            self.latencies.append(time.monotonic() - t0)
            assert len(found) == 1, found
            assert found[0].table_entry.action.action.params[0].value == bytes((self.port_value,)), found
        finally:
            done.set()
            responses.cancel()


@dataclass
class Served:
    target: Target
    healthy: Healthy
    limits: str | None = None
    figures: list = field(default_factory=list)
    transport: str = "h2"  # as ``serve`` was asked: a key of ``TRANSPORTS``

    def cpu_over(self, window: float) -> float:
        """CPU seconds the server's process (its loop thread and every other) used in
        ``window`` seconds from now."""
        c0 = self.target.cpu_s()
        time.sleep(window)
        return self.target.cpu_s() - c0


def serve(transport: str, rt_config: tuple, limits: str | None = None) -> Served:
    """The server on ``transport`` with its healthy client, pipeline pushed and checked."""
    target = start_target(transport, limits)
    p4info, device_config = rt_config
    healthy = Healthy(target.port, p4info, device_config, tls_dir=certs() if target.tls is not None else None)
    healthy.setup()
    healthy.check()
    return Served(target, healthy, limits, transport=transport)


class Watch:
    """The healthy client calling in a loop in a thread while an attack runs;
    ``failures`` are its errors (a call past its deadline is one)."""

    def __init__(self, healthy: Healthy) -> None:
        self.healthy = healthy
        self.failures: list[str] = []
        self.rounds = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.healthy.check()
                self.rounds += 1
            except (grpc.RpcError, AssertionError, StopIteration) as e:
                self.failures.append(f"{type(e).__name__}: {e}"[:300])
            self._stop.wait(0.05)

    def __enter__(self) -> "Watch":
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join(timeout=30)


# ---- the raw client ------------------------------------------------------------------------
def recv_within(sock: socket.socket, seconds: float) -> bytes | None:
    """What the peer sends within ``seconds``: b"" when nothing came in time, None when
    the connection is closed (or broken)."""
    sock.settimeout(seconds)
    try:
        data = sock.recv(65536)
    except socket.timeout:
        return b""
    except OSError:
        return None
    return data or None


class Raw:
    """One TCP connection to the server, with an ``h2`` client session for what is
    well formed; ``send`` writes bytes as they are."""

    def __init__(self, target: Target) -> None:
        self.sock = target.connect()
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        config = h2.config.H2Configuration(client_side=True, header_encoding="utf-8",
                                           validate_outbound_headers=False, normalize_outbound_headers=False,
                                           validate_inbound_headers=False)
        self.h2 = h2.connection.H2Connection(config)
        self.events: list = []
        self.closed = False
        self.h2.initiate_connection()
        self.flush()

    def flush(self) -> None:
        self.send(self.h2.data_to_send())

    def send(self, data: bytes) -> bool:
        """False when the server has closed the connection."""
        try:
            self.sock.sendall(data)
            return True
        except OSError:
            self.closed = True
            return False

    def receive(self, timeout: float = 2.0, until: Any = None) -> list:
        """Events until ``until(events)`` is true, the connection closes or ``timeout``."""
        end = time.monotonic() + timeout
        while not self.closed and (until is None or not until(self.events)):
            left = end - time.monotonic()
            if left <= 0:
                break
            data = recv_within(self.sock, left)
            if data is None:
                self.closed = True
                break
            if not data:
                break
            try:
                self.events.extend(self.h2.receive_data(data))
            except h2.exceptions.ProtocolError as e:
                self.events.append(e)
                self.closed = True
            self.flush()
        return self.events

    def status(self, sid: int, timeout: float = 2.0) -> str | None:
        """The call's grpc-status (``"RST <code>"`` when reset; None: no answer)."""
        def ended(events: list) -> bool:
            return any(getattr(e, "stream_id", None) == sid and isinstance(e, (h2.events.StreamEnded,
                                                                               h2.events.StreamReset))
                       for e in events)

        self.receive(timeout, ended)
        status = None
        for e in self.events:
            if getattr(e, "stream_id", None) != sid:
                continue
            if isinstance(e, (h2.events.ResponseReceived, h2.events.TrailersReceived)):
                status = dict(e.headers).get("grpc-status", status)
            elif isinstance(e, h2.events.StreamReset):
                return status or f"RST {int(e.error_code)}"
        return status

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass
