"""``mrc-send --transport roce`` and ``mrc-recv --transport roce``: the RoCEv2 RC
baseline on the commands MRC-lite uses (``endpoints/cli.py`` parses MRC-lite's options
and hands the RoCE ones here as one object, ``endpoints/roce_options.py``).

The QP's path: the sender's EV list is the one MRC-lite would spray over; the QP
takes the one EV its 4-tuple hashes onto (``endpoints/ecmp.py``). ``--source-port``
fixes the port (default: any free one, as a NIC draws a QP's source port),
``--path-ev EV`` picks the first port from 49152 up whose hash lands on EV, and
``--print-ev`` prints the choice without sending.
"""

from __future__ import annotations

import math
import socket
import time
from dataclasses import dataclass
from typing import Any, Callable, NoReturn

import typer

from endpoints import ecmp, events, io
from endpoints.human import human_bps
from endpoints.dcqcn import DcqcnConfig
from endpoints.roce_config import DSCP_DATA, MESSAGE_PACKETS, RETRY_COUNT_MAX, RoceReceiverConfig, RoceSenderConfig
from endpoints.roce_options import RECV_OPTIONS, SEND_OPTIONS, RoceSend
from endpoints.receiver import ReceiverConfig
from fabric.plan import EvPath
from endpoints.roce_receiver import RoceReceiver
from endpoints.roce_sender import RoceSender

Fail = Callable[[str], NoReturn]

def _value(given: dict[str, Any], key: str, table: dict[str, tuple[str, Any]]) -> Any:
    value = given.get(key)
    return table[key][1] if value is None else value


def _check_ranges(o: dict[str, Any], fail: Fail) -> None:
    """Each RoCE option of mrc-send in its range, one error line naming it."""
    if o["cc"] not in ("dcqcn", "none"):
        fail(f"--cc {o['cc']!r}: dcqcn or none")
    if not 0 <= o["retry_count"] <= RETRY_COUNT_MAX:
        fail(f"--retry-count {o['retry_count']}: give 0..{RETRY_COUNT_MAX} (retry_cnt is a 3-bit field)")
    if not 0 <= o["dscp"] <= 63:
        fail(f"--dscp {o['dscp']}: give a DSCP, 0..63")
    for key, low_ok in (("ack_timeout", False), ("dcqcn_k", False), ("dcqcn_t", False)):
        v = o[key]
        if not ((v >= 0 if low_ok else v > 0) and v <= 86400):
            fail(f"{SEND_OPTIONS[key][0]} {v}: give more than 0 seconds, up to a day (86400)")
    for key in ("line_rate", "dcqcn_min_rate"):
        if not 0 < o[key] < math.inf:
            fail(f"{SEND_OPTIONS[key][0]} {o[key]}: give more than 0 Mb/s")
    for key in ("dcqcn_rai", "dcqcn_rhai"):
        if not 0 <= o[key] < math.inf:
            fail(f"{SEND_OPTIONS[key][0]} {o[key]}: give 0 Mb/s or more")
    if o["dcqcn_min_rate"] > o["line_rate"]:
        fail(f"--dcqcn-min-rate {o['dcqcn_min_rate']}: at most --line-rate ({o['line_rate']} Mb/s)")
    if not 0 < o["dcqcn_g"] <= 1:
        fail(f"--dcqcn-g {o['dcqcn_g']}: give a gain in (0, 1] (the paper's 1/256 = 0.00390625)")
    if o["dcqcn_b"] < 1 or o["dcqcn_f"] < 0:
        fail(f"--dcqcn-b {o['dcqcn_b']} / --dcqcn-f {o['dcqcn_f']}: at least 1 byte and 0 stages")


def sender_config(given: dict[str, Any], *, mtu: int, window: int, ack_every: int, seed: int,
                  sample_interval: float, fail: Fail) -> RoceSenderConfig:
    """The requester's parameters from the options (defaults for those not given)."""
    o = {key: _value(given, key, SEND_OPTIONS) for key in SEND_OPTIONS}
    if o["message_size"] is None:
        o["message_size"] = MESSAGE_PACKETS * mtu
    _check_ranges(o, fail)
    if o["message_size"] < mtu or o["message_size"] % mtu or o["message_size"] >= 1 << 31:
        fail(f"--message-size {o['message_size']}: give a multiple of --mtu ({mtu}) below 2**31 bytes")
    dcqcn = DcqcnConfig(line_rate=o["line_rate"] * 1e6, min_rate=o["dcqcn_min_rate"] * 1e6, g=o["dcqcn_g"],
                        alpha_timer=o["dcqcn_k"], increase_timer=o["dcqcn_t"], byte_counter=o["dcqcn_b"],
                        fast_recovery=o["dcqcn_f"], rate_ai=o["dcqcn_rai"] * 1e6, rate_hai=o["dcqcn_rhai"] * 1e6)
    cfg = RoceSenderConfig(mtu=mtu, message_size=o["message_size"], window=window, ack_every=ack_every,
                           ack_timeout=o["ack_timeout"], retry_count=o["retry_count"], cc=o["cc"], dcqcn=dcqcn,
                           sample_interval=sample_interval, seed=seed)
    try:
        cfg.check()
    except ValueError as exc:
        fail(str(exc))
    return cfg


def local_address(to: str, port: int, bind: str, fail: Fail) -> str:
    """The address the QP's packets leave from (the hash reads it): --bind, or the
    one the routing table gives for --to (no packet is sent to find it)."""
    if bind:
        return bind
    with socket.socket(io.family_of(to), socket.SOCK_DGRAM) as s:
        try:
            s.connect((to, port))
        except OSError as exc:
            fail(f"--to {to}: no route from this host ({exc.strerror}); give --bind")
        return str(s.getsockname()[0])


@dataclass(frozen=True)
class QpPath:
    """The QP's 4-tuple and the EV it hashes onto."""

    src: str
    dst: str
    sport: int
    dport: int
    ev: int
    index: int
    crc: int
    n_evs: int
    path: str | None

    def line(self) -> str:
        path = f"; path {self.path}" if self.path else ""
        return (f"QP [{self.src}]:{self.sport} -> [{self.dst}]:{self.dport}: CRC-32 {self.crc:#010x}, EV {self.ev} "
                f"(index {self.index} of {self.n_evs}){path}")

    def report(self) -> dict[str, Any]:
        return {"src": self.src, "dst": self.dst, "source_port": self.sport, "dest_port": self.dport,
                "crc32": self.crc, "index": self.index, "evs": self.n_evs, "path": self.path}


def qp_path(src: str, dst: str, sport: int, dport: int, evs: list[int], names: dict[int, str]) -> QpPath:
    crc = ecmp.flow_hash(src, dst, sport, dport)
    index = crc % len(evs)
    return QpPath(src, dst, sport, dport, evs[index], index, crc, len(evs), names.get(evs[index]))


def qp_source_port(src: str, to: str, port: int, evs: list[int], given: int | None, path_ev: int | None,
                fail: Fail) -> int:
    """--source-port, or the first port whose hash lands on --path-ev, or 0 (any)."""
    if path_ev is None:
        return 0 if given is None else given
    if given is not None:
        fail("--path-ev chooses the source port: give --path-ev or --source-port, not both")
    if path_ev not in evs:
        fail(f"--path-ev {path_ev}: not one of the sender's {len(evs)} EVs")
    sport = ecmp.source_port_for_ev(src, to, port, evs, path_ev)
    if sport is None:
        fail(f"--path-ev {path_ev}: no source port in {ecmp.EPHEMERAL_FIRST}..65535 hashes onto it")
    return sport


@dataclass(frozen=True)
class SendRun:
    """What one ``mrc-send --transport roce`` runs, the options already checked."""

    to: str
    port: int
    bind: str
    src: str
    sport: int
    evs: list[int]
    names: dict[int, str]
    dscp: int
    gso: bool
    timeout: float
    linger: float


def send(opts: RoceSend, *, to: str, port: int, bind: str, source_port: int | None, ev_set: list[EvPath],
         names: dict[int, str], mtu: int, window: int, ack_every: int, seed: int, sample_interval: float,
         data: Callable[[], bytes | bytearray], gso: bool, timeout: float, linger: float,
         fail: Fail) -> dict[str, Any] | None:
    """``mrc-send --transport roce``: the transfer's report, or None after ``--print-ev``
    printed the QP's path. MRC-lite's options (``endpoints/cli.py``) are checked."""
    if window < 1 or ack_every < 1:
        fail(f"--window {window} / --ack-every {ack_every}: at least 1 packet")
    given = opts.given()
    cfg = sender_config(given, mtu=mtu, window=window, ack_every=ack_every, seed=seed,
                        sample_interval=sample_interval, fail=fail)
    evs = [e.ev for e in ev_set]
    src = local_address(to, port, bind, fail)
    sport = qp_source_port(src, to, port, evs, source_port, opts.path_ev, fail)
    if opts.print_ev:
        if sport == 0:
            fail("--print-ev: the path hashes the source port; give --source-port or --path-ev")
        typer.echo(qp_path(src, to, sport, port, evs, names).line())
        return None
    run = SendRun(to=to, port=port, bind=bind, src=src, sport=sport, evs=evs, names=names,
                  dscp=DSCP_DATA if opts.dscp is None else opts.dscp, gso=gso, timeout=timeout, linger=linger)
    return run_send(run, data(), cfg, fail)


def run_send(run: SendRun, data: bytes | bytearray, cfg: RoceSenderConfig, fail: Fail) -> dict[str, Any]:
    """Open the socket, hash the QP onto its EV, run the transfer; the report."""
    try:
        sock = io.listen(run.bind or ("::" if io.family_of(run.to) == socket.AF_INET6 else "0.0.0.0"), run.sport,
                         want_tclass=False, dscp=run.dscp)
    except io.IoError as exc:
        fail(str(exc))
    sport = int(sock.getsockname()[1])
    path = qp_path(run.src, run.to, sport, run.port, run.evs, run.names)
    sender = RoceSender(data, path.ev, cfg)
    transmit = io.Transmitter(sock, gso=run.gso)
    clock = time.monotonic
    t0 = clock()
    started = time.time()
    cpu0 = time.process_time()
    try:
        result = io.run_sender(sender, sock, transmit, (run.to, run.port), run.timeout, clock=lambda: clock() - t0,
                               linger=run.linger)
    finally:
        sock.close()
    if not sender.finished:
        sender.fail(result.elapsed, f"no verdict from the receiver within {run.timeout:g} s (is mrc-recv "
                                    f"--transport roce running at {run.to} port {run.port}?)")
    if sender.state == "error":  # the fabric's event collector hears of it (docs/mrcctl.md, "Events")
        events.qp_error(path.path, path.ev, sender.error or "error")
    rep = sender.report()
    rep.update(source_port=sport, dscp=run.dscp, ecmp=path.report(), cpu_s=time.process_time() - cpu0,
               started_at_unix=started, timed_out=result.timed_out, io=result.io, gso=transmit.gso,
               sha256=sender.digest.hex())
    return rep


def print_sender(rep: dict[str, Any]) -> None:
    g = rep["go_back_n"]
    verdict = "verified by the receiver" if rep["ok"] else f"FAILED ({rep['error']})"
    typer.echo(f"sent {rep['bytes']} bytes in {rep['packets']} packets of {rep['mtu']} bytes on one QP, EV "
               f"{rep['ev']} (source port {rep['source_port']}): {verdict}")
    if rep["ok"]:
        typer.echo(f"completion {rep['completion_time_s'] * 1e3:.1f} ms, goodput {human_bps(rep['goodput_bps'])}, "
                   f"{rep['packets_sent']} data packets sent")
    typer.echo(f"go-back-N: {g['rewinds']} rewinds, {g['resent']} packets resent, {g['naks_received']} NAKs, "
               f"{g['timeouts']} timeouts, {g['retries_most_in_row']} of {g['retry_count']} retries in a row at "
               f"most; longest stall {rep['longest_stall_s'] * 1e3:.1f} ms")
    connect = rep["connect_s"]
    typer.echo(f"connection: {rep['control']['open_sent']} OPEN(s) sent, "
               + ("never accepted" if connect is None else f"accepted after {connect * 1e3:.1f} ms"))
    r = rep["rate_bps"]
    typer.echo(f"rate control {rep['cc']}: {rep['cnps_received']} CNPs, rate min {human_bps(r['min'])}, final "
               f"{human_bps(r['final'])} (line {human_bps(r['line'])})")
    if rep["dropped"]:
        typer.echo("dropped: " + ", ".join(f"{k} {v}" for k, v in sorted(rep["dropped"].items())))


def receiver(given: dict[str, Any], *, max_bytes: int, expect_bytes: int | None, count: int, seed: int,
             fail: Fail) -> tuple[RoceReceiver, int]:
    """The responder from the options, and the DSCP its ACKs leave with."""
    o = {key: _value(given, key, RECV_OPTIONS) for key in RECV_OPTIONS}
    for key in ("dscp", "cnp_dscp"):
        if not 0 <= o[key] <= 63:
            fail(f"{RECV_OPTIONS[key][0]} {o[key]}: give a DSCP, 0..63")
    if not 0 <= o["cnp_interval"] <= 86400:
        fail(f"--cnp-interval {o['cnp_interval']}: give 0 seconds or more, up to a day (86400)")
    cfg = RoceReceiverConfig(ReceiverConfig(max_bytes=max_bytes, expect_bytes=expect_bytes, max_connections=count,
                                            seed=seed),
                             cnp_interval=o["cnp_interval"], cnp_tclass=o["cnp_dscp"] << 2 | io.ECT0)
    try:
        return RoceReceiver(cfg), o["dscp"]
    except ValueError as exc:
        fail(str(exc))


def print_receiver(rep: dict[str, Any]) -> None:
    for c in rep["connections"]:
        n = c["counts"]
        typer.echo(f"from {c['peer']} on EV {c['ev']}: {c['received_bytes']}/{c['bytes']} bytes, {c['verdict']}, "
                   f"{n['naks']} NAKs, {n['cnps']} CNPs, {n['out_of_sequence']} out of sequence dropped, "
                   f"{n['duplicates']} duplicates, goodput {human_bps(c['goodput_bps'])}")
    if rep["dropped"]:
        typer.echo("dropped: " + ", ".join(f"{k} {v}" for k, v in sorted(rep["dropped"].items())))

