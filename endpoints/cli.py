"""``mrc-send`` and ``mrc-recv``: one MRC-lite transfer between two hosts.

Why two small commands: an experiment script starts ``mrc-recv`` in one Mininet host
and ``mrc-send`` in another, waits for both, and reads their JSON reports
(``--report``); the exit status says whether every byte arrived and matched (0) or
not (1). Human lines go to stdout, the JSON report (docs/endpoints.md)
to the file.

The sender's EV set comes from the address plan (``fabric.plan.nic_evs``) of the
topology (``--topology FILE`` or the shape as parameters, the default fabric if
neither) for the two hosts (``--src-host``/``--dst-host``, or found from the
addresses), with ``--evs``/``--ev-mode`` overriding the topology's; ``--ev-list``
gives a plain list instead (loopback, no fabric).
"""

from __future__ import annotations

import dataclasses
import ipaddress
import json
import logging
import os
import random
import socket
import sys
import time
from pathlib import Path
from typing import Annotated, Any, Callable, NoReturn, Optional

import typer

from endpoints import io, roce_cli, roce_options, wire
from endpoints.human import human_bps
from endpoints.receiver import peer_text
from endpoints.roce_options import RoceRecv, RoceSend
from endpoints.transport import Receiver, ReceiverConfig, Sender, SenderConfig
from endpoints.wire import STATE_VERIFIED, UDP_PORT_MRC
from fabric import plan
from cli_common.command import new_app, run_command
from cli_common.options import (
    HostsPerLeafOpt,
    LeavesOpt,
    PlanesOpt,
    SpinesOpt,
    TopologyOpt,
    address_problem,
    seconds_problem,
)
from fabric.paths import paths
from fabric.resolve import Shape, resolve
from fabric.topology import EvMode, Topology, TopologyError


class UsageError(ValueError):
    """Bad options: one line naming the option and the fix."""


def _fail(msg: str) -> NoReturn:
    typer.echo(f"error: {msg}", err=True)
    raise typer.Exit(1)


def _logging(verbose: int) -> None:
    level = logging.WARNING if verbose == 0 else logging.INFO if verbose == 1 else logging.DEBUG
    logging.basicConfig(level=level, format="%(name)s: %(message)s", stream=sys.stderr)


# ---- option checks (each before any work is done) and the files written at the end ----

def _seconds(option: str, value: float | None, *, zero_ok: bool = False) -> None:
    """A time option (cli_common/options.py ``seconds_problem``); None: not given."""
    problem = None if value is None else seconds_problem(value, zero_ok=zero_ok)
    if problem is not None:
        _fail(f"{option} {problem}")


def _port(port: int, option: str = "--port", zero_ok: bool = False) -> None:
    if not (0 if zero_ok else 1) <= port <= 0xFFFF:
        _fail(f"{option} {port}: give a UDP port, {0 if zero_ok else 1}..65535")


def _address(option: str, text: str) -> None:
    problem = address_problem(text)
    if problem is not None:
        _fail(f"{option} {problem}")


def _sender_addresses(to: str, bind: str) -> None:
    """--to, and --bind when given (else any address), of the same family."""
    _address("--to", to)
    if bind:
        _address("--bind", bind)
        if io.family_of(bind) != io.family_of(to):
            _fail(f"--bind {bind} and --to {to} are not of the same address family")


def _transfer_length(what: str, n: int, mtu: int) -> None:
    """A transfer has at most 2**24 packets, so that each PSN names one packet of it
    (the OPEN's 64-bit length field allows more)."""
    most = wire.PSN_MOD * mtu
    if not 0 <= n <= most:
        _fail(f"{what}: a transfer is 0 to {most} bytes (2**24 PSNs of --mtu {mtu} bytes)")


def _writable(option: str, path: Path | None) -> None:
    """Fail unless ``path`` can be written at the end: a file, new or not, in a directory that exists."""
    if path is None:
        return
    if path.is_dir():
        _fail(f"{option} {path}: is a directory; give a file name")
    if not path.parent.is_dir():
        _fail(f"{option} {path}: no directory {path.parent}; create it or give another path")
    if not os.access(path if path.exists() else path.parent, os.W_OK):
        _fail(f"{option} {path}: not writable; give another path")


def _write(problems: list[str], option: str, path: Path, data: bytes | bytearray) -> None:
    """Write a result file; a failure (the place changed since the start) joins ``problems``."""
    try:
        path.write_bytes(data)
    except OSError as exc:
        problems.append(f"{option} {path}: {exc.strerror}; nothing written there")


def _report_bytes(rep: dict[str, Any]) -> bytes:
    return (json.dumps(rep, indent=1) + "\n").encode()


def _source_port(given: int | None, port: int, transport: str) -> int | None:
    """--source-port checked; not given: MRC-lite's is --port, the RoCE baseline's
    None (any free one, or the one --path-ev picks)."""
    if given is None:
        return port if transport == "mrc" else None
    _port(given, "--source-port", zero_ok=True)
    return given


def _transport_options(transport: str, given: dict[str, Any], table: dict[str, tuple[str, Any]]) -> None:
    """--transport mrc | roce, and no option of the RoCE baseline with MRC-lite."""
    if transport not in ("mrc", "roce"):
        _fail(f"--transport {transport!r}: mrc or roce")
    wrong = roce_options.misplaced(transport, given, table)
    if wrong:
        _fail(f"{wrong} applies to --transport roce only")


# ---- the EV set ----------------------------------------------------------------


def _ev(text: str, part: str) -> int:
    try:
        ev = int(text, 0)
    except ValueError:
        raise UsageError(f"--ev-list: {part!r} is not an EV or a range (e.g. 4096-4159,5000)") from None
    if not 0 <= ev <= 0xFFFF:
        raise UsageError(f"--ev-list: EV {ev} is not a UDP port (0..65535)")
    return ev


def parse_ev_list(text: str) -> list[plan.EvPath]:
    """``4096,4097`` or ``4096-4159`` (and mixes): EVs without a known path
    (plane and spine -1). A range's ends are checked before it is expanded."""
    out: list[int] = []
    for part in text.split(","):
        part = part.strip()
        if "-" in part:
            lo, hi = (_ev(x, part) for x in part.split("-", 1))
            if lo > hi:
                raise UsageError(f"--ev-list: the range {part} is reversed; write {hi}-{lo}")
            out += range(lo, hi + 1)
        elif part:
            out.append(_ev(part, part))
    if len(set(out)) != len(out):
        raise UsageError("--ev-list: an EV is listed twice")
    if not out:
        raise UsageError("--ev-list is empty")
    return [plan.EvPath(ev, -1, -1) for ev in out]


def _host_of(topo: Topology, addr: str | None) -> str | None:
    if not addr:
        return None
    try:
        value = int(ipaddress.ip_address(addr))
    except ValueError:
        return None
    for h in topo.hosts:
        if plan.host_addr(h.leaf, h.port) == value:
            return h.name
    return None


def topology_evs(topo: Topology, src: str | None, dst: str | None, local: str | None,
                 remote: str | None) -> tuple[list[plan.EvPath], dict[int, str]]:
    """The NIC's EV set of host ``src`` towards ``dst`` (names, or found from the
    addresses) in ``topo``, and each EV's path as its switches (for the EV events)."""
    src = src or _host_of(topo, local)
    dst = dst or _host_of(topo, remote)
    if src is None or dst is None:
        raise UsageError("the EV set needs the two hosts: give --src-host and --dst-host (e.g. h1, h3), addresses "
                         "of the topology's hosts (--bind, --to), or a plain --ev-list")
    try:
        s, d = topo.host(src), topo.host(dst)
    except (KeyError, ValueError, TopologyError) as exc:
        raise UsageError(f"--src-host/--dst-host: {exc}") from None
    evs = plan.nic_evs(topo, s, d)
    if not evs:
        raise UsageError(f"topology {topo.name!r}: no path from {src} to {dst} in any plane")
    return evs, {p.ev: " > ".join(p.hops) for p in paths(topo, s, d)}


_EV_MODES: dict[str, EvMode] = {"explicit": "explicit", "generated": "generated"}


def _ev_mode(text: str | None) -> EvMode | None:
    if text is None:
        return None
    if text in _EV_MODES:
        return _EV_MODES[text]
    raise UsageError(f"--ev-mode {text!r}: explicit or generated")


def sender_evs(**options: Any) -> list[plan.EvPath]:
    """The sender's EV set (see ``sender_paths``)."""
    return sender_paths(**options)[0]


def sender_paths(*, ev_list: str | None, topology: Path | None, shape: dict[str, Any], evs: int | None,
                 ev_mode: str | None, src_host: str | None, dst_host: str | None, local: str | None,
                 remote: str | None) -> tuple[list[plan.EvPath], dict[int, str]]:
    """The sender's EV set and the names of their paths (none for a plain --ev-list)."""
    if ev_list is not None:
        if topology is not None or any(v is not None for v in shape.values()):
            raise UsageError("--ev-list replaces the topology's EVs: give it without --topology or shape options")
        return parse_ev_list(ev_list), {}
    if evs is not None and not 1 <= evs <= 256:
        raise UsageError(f"--evs {evs}: a NIC has 1..256 EVs")
    mode = _ev_mode(ev_mode)
    try:
        if topology is not None:
            topo = resolve(topology, Shape(**shape)).topology
            topo = dataclasses.replace(topo, evs_per_nic=topo.evs_per_nic if evs is None else evs,
                                       ev_mode=topo.ev_mode if mode is None else mode)
        else:
            topo = resolve(None, dataclasses.replace(Shape(**shape), evs_per_nic=evs, ev_mode=mode)).topology
    except TopologyError as exc:
        raise UsageError(str(exc)) from None
    return topology_evs(topo, src_host, dst_host, local, remote)


# ---- mrc-send --------------------------------------------------------------------

send_app = new_app()


CHUNK = 1 << 20


def pseudo_random(seed: int, n: int, chunk: int = CHUNK) -> bytearray:
    """The bytes of ``random.Random(seed).randbytes(n)``, drawn ``chunk`` bytes at a
    time: one draw of more than 2**28 bytes overflows (its bit count is a C int). A
    multiple of 4 as the chunk keeps the stream the same (the generator gives 32-bit
    words, lowest byte first)."""
    if chunk % 4:
        raise ValueError(f"chunk {chunk}: a multiple of 4 bytes keeps the stream the same")
    rng = random.Random(seed)
    out = bytearray(n)
    for at in range(0, n, chunk):
        end = min(at + chunk, n)
        out[at:end] = rng.randbytes(end - at)
    return out


def _sender_data(infile: Path | None, nbytes: int | None, seed: int, mtu: int) -> bytes | bytearray:
    """The bytes to send: the file, or ``nbytes`` from ``seed``; the length is checked first."""
    if infile is not None:
        try:
            length = infile.stat().st_size
        except OSError as exc:
            _fail(f"--in {infile}: {exc.strerror}")
        _transfer_length(f"--in {infile} has {length} bytes", length, mtu)
    else:
        length = nbytes or 0
        _transfer_length(f"--bytes {nbytes}", length, mtu)
    try:
        return infile.read_bytes() if infile is not None else pseudo_random(seed, length)
    except OSError as exc:
        _fail(f"--in {infile}: {exc.strerror}")
    except MemoryError:
        _fail(f"not enough memory for {length} bytes; send less")


@send_app.command()
@roce_options.expand("roce", RoceSend)
def send(
    to: Annotated[str, typer.Option(help="receiver's address (IPv6 or IPv4)")],
    nbytes: Annotated[Optional[int], typer.Option("--bytes", help="bytes to send (pseudo-random, from --seed)")] = None,
    infile: Annotated[Optional[Path], typer.Option("--in", help="send this file instead of --bytes")] = None,
    port: Annotated[int, typer.Option(help="the receiver's UDP port (and this end's, see --source-port)")] = UDP_PORT_MRC,
    source_port: Annotated[Optional[int], typer.Option(
        help="this end's UDP port, the source of every packet; the receiver's answers come back to it, and a "
             "NIC takes them for MRC-lite only on the MRC port (default: --port; with --transport roce any free "
             "one, the QP's entropy); 0: any free one")] = None,
    bind: Annotated[str, typer.Option(help="local address (ACKs arrive there; the source of the packets)")] = "",
    evs: Annotated[Optional[int], typer.Option(help="K EVs (default: the topology's evs_per_nic, 64)")] = None,
    ev_mode: Annotated[Optional[str], typer.Option(help="explicit | generated (default: the topology's)")] = None,
    ev_list: Annotated[Optional[str], typer.Option(help="plain EV list instead of a topology: 4096-4159,5000")] = None,
    topology: TopologyOpt = None,
    planes: PlanesOpt = None,
    spines: SpinesOpt = None,
    leaves: LeavesOpt = None,
    hosts_per_leaf: HostsPerLeafOpt = None,
    src_host: Annotated[Optional[str], typer.Option(help="this host's name in the topology (h1, ...)")] = None,
    dst_host: Annotated[Optional[str], typer.Option(help="the receiver's name in the topology")] = None,
    mtu: Annotated[int, typer.Option(help="payload bytes per packet")] = 1000,
    window: Annotated[int, typer.Option(help="data packets in flight, at most")] = SenderConfig.window,
    initial_window: Annotated[int, typer.Option(help="the congestion window starts here")] = 16,
    min_window: Annotated[int, typer.Option(help="congestion control never shrinks the window below this")] = 2,
    cc_base_rtt: Annotated[Optional[float], typer.Option(
        help="congestion control: the network's unloaded RTT, seconds (default: the smallest RTT seen)")] = None,
    cc_target_min: Annotated[float, typer.Option(
        help="congestion control: the delay target's floor, seconds above the base RTT "
             "(the target is half the base RTT, at least this)")] = SenderConfig.cc_target_min,
    cc_startup_delay: Annotated[float, typer.Option(
        help="congestion control: the window doubles each round trip until a mark, a trim, a queue's loss or "
             "a round trip delayed past this many delay targets; 0: no start-up")] = SenderConfig.cc_startup_delay,
    rate: Annotated[Optional[float], typer.Option(help="pacing, packets per second (default: window only)")] = None,
    ack_every: Annotated[int, typer.Option(
        help="ask for an ACK on every n-th packet at most (a quarter of the window while it is smaller; "
             "the SACK bitmap covers the others)")] = SenderConfig.ack_every,
    rto_min: Annotated[float, typer.Option(
        help="the retransmission timeout's floor, seconds: a timeout fires this long (or RFC 6298's RTO, if "
             "longer) after the last acknowledgement of new data")] = SenderConfig.rto_min,
    peer_ack_delay: Annotated[float, typer.Option(
        help="the receiver's --ack-delay, seconds: added to the retransmission timeout")] = SenderConfig.ack_delay,
    probe_interval: Annotated[float, typer.Option(help="seconds between probes of an ASSUMED_BAD EV")] = 0.02,
    ev_min_active: Annotated[int, typer.Option(help="GOOD EVs never fall below this")] = 8,
    retire_after: Annotated[int, typer.Option(
        help="loss NACKs (each in its EV's row: none of the EV's later packets acknowledged) on the EVs of one "
             "path that, standing --retire-delay, make the path's EVs ASSUMED_BAD")] = SenderConfig.retire_after,
    retire_delay: Annotated[float, typer.Option(
        help="seconds a path's loss NACKs must stand (from the first lost packet's send) before its EVs are "
             "retired: a path that only stalls for less delivers first")] = SenderConfig.retire_delay,
    spray: Annotated[str, typer.Option(help="adaptive (avoid EVs with recent CE echoes and trims) | rr (round robin)")] = "adaptive",
    sample_interval: Annotated[float, typer.Option(help="seconds between samples of delivered bytes")] = 0.01,
    seed: Annotated[int, typer.Option(help="data, QP and first PSN")] = 0,
    gso: Annotated[bool, typer.Option("--gso/--no-gso", help="send runs of equal packets in one system call "
                                      "(UDP segmentation offload; each packet keeps its EV)")] = True,
    timeout: Annotated[float, typer.Option(help="give up after this many seconds (exit 1)")] = 60.0,
    linger: Annotated[float, typer.Option(
        help="seconds to keep reading after the verdict: answers still on their way are counted as late")] = 0.2,
    report: Annotated[Optional[Path], typer.Option(help="write the JSON report here")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="no human lines")] = False,
    verbose: Annotated[int, typer.Option("--verbose", "-v", count=True, help="log EV events (-vv: more)")] = 0,
    transport: Annotated[str, typer.Option(
        help="mrc: MRC-lite; roce: the RoCEv2 RC baseline (one path per QP by ECMP hash, go-back-N, DCQCN; "
             "the options below; docs/transport.md)")] = "mrc",
    roce: RoceSend = roce_options.NONE_SEND,
) -> None:
    """Send one transfer to an mrc-recv; exit 0 when the receiver verified every byte."""
    _logging(verbose)
    _transport_options(transport, roce.given(), roce_options.SEND_OPTIONS)
    if transport == "roce" and rate is not None:
        _fail("--rate is MRC-lite's pacing: with --transport roce give --line-rate (Mb/s)")
    if (nbytes is None) == (infile is None) and not roce.print_ev:
        _fail("give the transfer as --bytes N or --in FILE (one of them)")
    _sender_addresses(to, bind)
    _port(port)
    source_port = _source_port(source_port, port, transport)
    for option, value, zero_ok in (("--timeout", timeout, False), ("--linger", linger, True),
                                   ("--cc-base-rtt", cc_base_rtt, False), ("--rto-min", rto_min, False),
                                   ("--peer-ack-delay", peer_ack_delay, True), ("--retire-delay", retire_delay, True),
                                   ("--cc-target-min", cc_target_min, True),
                                   ("--probe-interval", probe_interval, False),
                                   ("--sample-interval", sample_interval, False)):
        _seconds(option, value, zero_ok=zero_ok)
    if not 0 <= cc_startup_delay < float("inf"):
        _fail(f"--cc-startup-delay {cc_startup_delay:g}: give a number of delay targets, 0 (no start-up) or more")
    _writable("--report", report)
    if ev_mode not in (None, "explicit", "generated"):
        _fail(f"--ev-mode {ev_mode!r}: explicit or generated")
    try:
        ev_set, names = sender_paths(ev_list=ev_list, topology=topology,
                            shape={"planes": planes, "spines": spines, "leaves": leaves,
                                   "hosts_per_leaf": hosts_per_leaf},
                            evs=evs, ev_mode=ev_mode, src_host=src_host, dst_host=dst_host, local=bind, remote=to)
    except UsageError as exc:
        _fail(str(exc))
    if transport == "roce":
        rep = roce_cli.send(roce, to=to, port=port, bind=bind, source_port=source_port, ev_set=ev_set, names=names,
                            mtu=mtu, window=window, ack_every=ack_every, seed=seed, sample_interval=sample_interval,
                            data=lambda: _sender_data(infile, nbytes, seed, mtu), gso=gso, timeout=timeout,
                            linger=linger, fail=_fail)
        if rep is not None:
            _conclude(rep, [] if rep["ok"] else [rep["error"]], report, None if quiet else roce_cli.print_sender)
        return
    assert source_port is not None
    try:
        cfg = SenderConfig(mtu=mtu, window=window, initial_window=initial_window, min_window=min_window,
                           rate_pps=rate, ack_every=ack_every, rto_min=rto_min, ack_delay=peer_ack_delay,
                           probe_interval=probe_interval, ev_min_active=ev_min_active, retire_after=retire_after,
                           retire_delay=retire_delay,
                           sample_interval=sample_interval, seed=seed, spray=spray, cc_base_rtt=cc_base_rtt,
                           cc_target_min=cc_target_min, cc_startup_delay=cc_startup_delay)
        cfg.check()
    except ValueError as exc:
        _fail(str(exc))
    data = _sender_data(infile, nbytes, seed, mtu)
    try:
        sender = Sender(data, ev_set, cfg, now=0.0, path_names=names)
    except ValueError as exc:
        _fail(str(exc))
    try:
        sock = io.listen(bind or ("::" if io.family_of(to) == socket.AF_INET6 else "0.0.0.0"), source_port,
                         want_tclass=False)
    except io.IoError as exc:
        _fail(str(exc))
    transmit = io.Transmitter(sock, gso=gso)
    clock = time.monotonic
    t0 = clock()
    started = time.time()
    cpu0 = time.process_time()
    try:
        result = io.run_sender(sender, sock, transmit, (to, port), timeout, clock=lambda: clock() - t0,
                               linger=linger)
    finally:
        sock.close()
    rep = sender.report()
    rep["cpu_s"] = time.process_time() - cpu0  # this process's CPU (user + system) while it ran the transfer
    rep["started_at_unix"] = started  # report times are seconds after this
    rep["timed_out"] = result.timed_out
    rep["io"] = result.io
    rep["gso"] = transmit.gso  # False if asked off, or the kernel refused it
    rep["sha256"] = sender.digest.hex()
    if result.timed_out and not sender.finished:
        rep["error"] = f"no verdict from the receiver within {timeout:g} s (is mrc-recv running at {to} port {port}?)"
    _conclude(rep, [] if sender.ok else [rep["error"] or "transfer failed"], report, None if quiet else _print_sender)


def _conclude(rep: dict[str, Any], problems: list[str], report: Path | None,
              show: Callable[[dict[str, Any]], None] | None) -> None:
    """The sender's end: its report written, its lines shown, the problems as the error line."""
    if report is not None:
        _write(problems, "--report", report, _report_bytes(rep))
    if show is not None:
        show(rep)
    if problems:
        _fail("; ".join(problems))


def _print_sender(rep: dict[str, Any]) -> None:
    r = rep["retransmissions"]
    typer.echo(f"sent {rep['bytes']} bytes in {rep['packets']} packets of {rep['mtu']} bytes over "
               f"{len(rep['per_ev'])} EVs: {'verified by the receiver' if rep['ok'] else 'FAILED'}")
    if rep["completion_time_s"]:
        typer.echo(f"completion {rep['completion_time_s'] * 1e3:.1f} ms, goodput {human_bps(rep['goodput_bps'])}, "
                   f"{rep['packets_sent']} data packets sent")
    typer.echo(f"retransmissions {r['total']} (timeout {r['timeout']}, NACK {r['nack']}, trim NACK {r['trim_nack']}); "
               f"EVs retired {rep['evs_retired']}, recovered {rep['evs_recovered']}")
    typer.echo("per plane: " + ", ".join(f"{p}: {n}" for p, n in rep["per_plane_packets"].items()))
    if rep["dropped"]:
        typer.echo("dropped: " + ", ".join(f"{k} {v}" for k, v in sorted(rep["dropped"].items())))


# ---- mrc-recv --------------------------------------------------------------------

recv_app = new_app()


@recv_app.command()
@roce_options.expand("roce", RoceRecv)
def recv(
    listen: Annotated[str, typer.Option(help="address to listen on (IPv6 or IPv4)")],
    port: Annotated[int, typer.Option(help="MRC-lite UDP port")] = UDP_PORT_MRC,
    nbytes: Annotated[Optional[int], typer.Option("--bytes", help="accept only transfers of exactly N bytes")] = None,
    max_bytes: Annotated[int, typer.Option(help="largest transfer accepted (its buffer is allocated whole)")] = ReceiverConfig.max_bytes,
    out: Annotated[Optional[Path], typer.Option(help="write the verified bytes here (FILE.2, ... for more transfers)")] = None,
    count: Annotated[int, typer.Option(help="transfers to receive before exiting")] = 1,
    nack_delay: Annotated[float, typer.Option(help="seconds a hole may stay open before it is NACKed")] = 0.005,
    renack_interval: Annotated[float, typer.Option(help="seconds before a hole is NACKed again (at least the reordering window)")] = 0.02,
    ack_delay: Annotated[float, typer.Option(help="seconds before an arrival without ack_req is ACKed")] = 0.001,
    trim_dscp: Annotated[int, typer.Option(help="DSCP that marks a trimmed packet (the NIC's)")] = 62,
    seed: Annotated[int, typer.Option(help="QPs, rkeys, buffer addresses")] = 0,
    gro: Annotated[bool, typer.Option("--gro/--no-gro", help="let the kernel hand over a run of arrivals in one "
                                      "read (UDP_GRO, where the interface coalesces)")] = True,
    timeout: Annotated[float, typer.Option(help="give up after this many seconds (exit 1)")] = 60.0,
    linger: Annotated[float, typer.Option(help="seconds to keep answering after the last transfer")] = 0.5,
    report: Annotated[Optional[Path], typer.Option(help="write the JSON report here")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="no human lines")] = False,
    verbose: Annotated[int, typer.Option("--verbose", "-v", count=True)] = 0,
    transport: Annotated[str, typer.Option(
        help="mrc: MRC-lite; roce: the RoCEv2 RC baseline (in-order PSNs, one NAK per gap, CNPs)")] = "mrc",
    roce: RoceRecv = roce_options.NONE_RECV,
) -> None:
    """Receive transfers from mrc-send; exit 0 when each one's SHA-256 matched."""
    _logging(verbose)
    _transport_options(transport, roce.given(), roce_options.RECV_OPTIONS)
    if count < 1:
        _fail("--count must be at least 1")
    _port(port)
    for option, value, zero_ok in (("--timeout", timeout, False), ("--linger", linger, True),
                                   ("--nack-delay", nack_delay, True), ("--renack-interval", renack_interval, False),
                                   ("--ack-delay", ack_delay, True)):
        _seconds(option, value, zero_ok=zero_ok)
    if max_bytes < 0:
        _fail(f"--max-bytes {max_bytes}: give 0 or more bytes")
    if nbytes is not None and not 0 <= nbytes <= max_bytes:
        _fail(f"--bytes {nbytes}: 0..--max-bytes ({max_bytes})")
    _writable("--out", out)
    _writable("--report", report)
    receiver: io.ReceiverLike
    if transport == "roce":
        receiver, class_dscp = roce_cli.receiver(roce.given(), max_bytes=max_bytes, expect_bytes=nbytes, count=count,
                                                 seed=seed, fail=_fail)
    else:
        receiver, class_dscp = _mrc_receiver(ReceiverConfig(
            max_bytes=max_bytes, expect_bytes=nbytes, max_connections=count, nack_delay=nack_delay,
            renack_interval=renack_interval, ack_delay=ack_delay, trim_dscp=trim_dscp, seed=seed)), 0
    try:
        sock = io.listen(listen, port, want_tclass=True, coalesce=gro, dscp=class_dscp)
    except io.IoError as exc:
        _fail(str(exc))
    if not quiet:  # a script may wait for this line; mrc-send retries OPEN anyway
        typer.echo(f"listening on {listen} port {port} for {count} transfer(s)")
        sys.stdout.flush()
    clock = time.monotonic
    t0 = clock()
    started = time.time()
    cpu0 = time.process_time()
    try:
        result = io.run_receiver(receiver, sock, io.Transmitter(sock), count, timeout, linger,
                                 clock=lambda: clock() - t0)
    finally:
        sock.close()
    rep = receiver.report()
    rep["cpu_s"] = time.process_time() - cpu0  # this process's CPU while it received (linger included)
    rep["started_at_unix"] = started  # connection times are seconds after this
    rep["timed_out"] = result.timed_out
    rep["io"] = result.io
    done: list[Any] = receiver.completed
    failure = _receiver_failure(done, count, timeout, result.timed_out)
    rep["ok"] = failure is None
    problems = [] if failure is None else [failure]
    if out is not None:
        for i, c in enumerate(done):
            if c.state == STATE_VERIFIED:
                _write(problems, "--out", out if i == 0 else out.with_name(f"{out.name}.{i + 1}"), c.buf)
    if report is not None:
        _write(problems, "--report", report, _report_bytes(rep))
    if not quiet:
        (roce_cli.print_receiver if transport == "roce" else _print_receiver)(rep)
    if problems:
        _fail("; ".join(problems))


def _mrc_receiver(cfg: ReceiverConfig) -> io.ReceiverLike:
    try:
        return Receiver(cfg)
    except ValueError as exc:
        _fail(str(exc))


def _receiver_failure(done: list[Any], count: int, timeout: float, timed_out: bool) -> str | None:
    """Why the receiver fails, or None when ``count`` transfers arrived and each verified."""
    bad = [c for c in done if c.state != STATE_VERIFIED]
    if len(done) >= count and not bad:
        return None
    if timed_out:
        return f"{len(done)} of {count} transfers complete after {timeout:g} s"
    if bad:
        return f"{len(bad)} transfer(s) arrived with a SHA-256 different from the sender's (first from {peer_text(bad[0].peer)})"
    return "transfers incomplete"


def _print_receiver(rep: dict[str, Any]) -> None:
    for c in rep["connections"]:
        typer.echo(f"from {c['peer']}: {c['received_bytes']}/{c['bytes']} bytes, {c['verdict']}, "
                   f"{c['counts'].get('duplicates', 0)} duplicates, {c['counts'].get('trimmed', 0)} trimmed, "
                   f"goodput {human_bps(c['goodput_bps'])}")
    if rep["dropped"]:
        typer.echo("dropped: " + ", ".join(f"{k} {v}" for k, v in sorted(rep["dropped"].items())))


def send_main() -> None:
    sys.exit(run_command(send_app, prog="mrc-send"))


def recv_main() -> None:
    sys.exit(run_command(recv_app, prog="mrc-recv"))
