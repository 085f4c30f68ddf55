"""A plain MRC-lite WRITE stream between two fabric hosts, for throughput figures.

Why: bench/fabric_net.py measures how many packets per second the fabric carries, one
plane or sprayed; it needs a sender with no transport in the way (no window, ACKs
or retransmissions: the demo and the experiments use the real endpoints, mrc-send and
mrc-recv, through topologies/transfer.py). The stream is one the NICs treat as MRC (UDP destination port 4791, the EV in
the BTH's pkey, docs/packet-formats.md) and that goes over every plane: each packet
carries one EV of the sending NIC's EXPLICIT EV set (fabric.plan.nic_evs), round
robin, so the NIC's EV table puts it on that EV's plane and spine. The host's
own kernel builds IPv6 and UDP (real sockets in the Mininet host); the payload is a
BTH (opcode WRITE, PSN) and a RETH (address, length) in front of the data.

Run inside Mininet hosts: ``python -m topologies.mrc_flow recv --port 4791 --seconds T``
prints one JSON line with what arrived (packets per EV); ``python -m topologies.mrc_flow
send DST --evs 4096,4097 --packets N --pps R`` sends and prints what it sent.
"""

from __future__ import annotations

import json
import socket
import struct
import subprocess
import sys
import time
from collections import Counter
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from cli_common import options as cli_options
from cli_common.command import new_app, print_report, run_command

if TYPE_CHECKING:
    from topologies.fabric_net import FabricNetwork

MRC_PORT = 4791
OP_WRITE = 0x0A
PAYLOAD = 256


def write_packet(psn: int, payload: bytes, ev: int, dest_qp: int = 0x12, vaddr: int = 0x1000) -> bytes:
    """BTH (12 bytes, the EV in pkey) + RETH (16 bytes) + payload of an MRC-lite WRITE."""
    bth = struct.pack("!BBHII", OP_WRITE, 0, ev, dest_qp & 0xFFFFFF, (1 << 31) | (psn & 0xFFFFFF))
    reth = struct.pack("!QII", vaddr + psn * len(payload), 0x55, len(payload))
    return bth + reth + payload


def send(dst: str, evs: list[int], packets: int, pps: float, src: str | None = None,
         size: int = PAYLOAD) -> dict[str, object]:
    """Send ``packets`` WRITEs to ``dst``, EV ``evs[k % len(evs)]`` for packet k."""
    sock = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    sock.bind((src or "::", 0))
    sent: Counter[int] = Counter()
    gap = 1.0 / pps if pps > 0 else 0.0
    t0 = time.monotonic()
    try:
        for k in range(packets):
            if gap:
                delay = t0 + k * gap - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
            ev = evs[k % len(evs)]
            sock.sendto(write_packet(k, bytes([k & 0xFF]) * size, ev), (dst, MRC_PORT))
            sent[ev] += 1
    finally:
        sock.close()
    return {"sent": sum(sent.values()), "seconds": round(time.monotonic() - t0, 3),
            "per_ev": {str(k): v for k, v in sorted(sent.items())}}


def receive(seconds: float, port: int = MRC_PORT, idle: float = 1.0, expect: int = 0) -> dict[str, object]:
    """Count MRC WRITEs arriving on ``port`` for ``seconds`` (or until ``expect`` arrived,
    then ``idle`` seconds without a packet), per EV (the BTH's pkey)."""
    s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    s.bind(("::", port))
    got: Counter[int] = Counter()
    psns: set[int] = set()
    first = last = 0.0
    nbytes = 0
    end = time.monotonic() + seconds
    try:
        while time.monotonic() < end:
            s.settimeout(max(0.01, min(idle, end - time.monotonic())))
            try:
                data = s.recv(65535)
            except (socket.timeout, TimeoutError):
                if expect and sum(got.values()) >= expect:
                    break
                continue
            if len(data) >= 12 and data[0] == OP_WRITE:
                last = time.monotonic()
                first = first or last
                nbytes += len(data)
                got[int.from_bytes(data[2:4], "big")] += 1
                psns.add(struct.unpack("!I", data[8:12])[0] & 0xFFFFFF)
    finally:
        s.close()
    return {"received": sum(got.values()), "distinct_psns": len(psns), "udp_payload_bytes": nbytes,
            "first_to_last_seconds": round(last - first, 6),
            "per_ev": {str(k): v for k, v in sorted(got.items())}}


def run_stream(fn: FabricNetwork, src: str, dst: str, evs: list[int], packets: int, pps: float, *,
               size: int = PAYLOAD, timeout: float = 120.0) -> dict[str, Any]:
    """Run ``recv`` in host ``dst`` and ``send`` in host ``src`` of a started fabric
    (topologies/fabric_net.py's FabricNetwork ``fn``); the sender's and the receiver's
    JSON in one dict (``sent``, ``received``, ``per_ev``, ``first_to_last_seconds``, ...)."""
    from topologies.p4switch import REPO

    py = sys.executable
    recv = fn.host(dst).popen([py, "-m", "topologies.mrc_flow", "recv", "--seconds", str(timeout / 2), "--expect",
                               str(packets)], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        time.sleep(0.5)  # the receiver binds its socket
        send_out = fn.host(src).popen([py, "-m", "topologies.mrc_flow", "send", fn.address(dst), "--evs",
                                       ",".join(map(str, evs)), "--packets", str(packets), "--pps", str(pps),
                                       "--size", str(size), "--src", fn.address(src)], cwd=REPO,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE).communicate(timeout=timeout)[0]
        recv_out = recv.communicate(timeout=timeout)[0]
    finally:
        if recv.poll() is None:
            recv.kill()
            recv.wait()
    sent = json.loads(send_out.decode().strip().splitlines()[-1])
    got = json.loads(recv_out.decode().strip().splitlines()[-1])
    return {**got, "sent": sent["sent"]}


app = new_app("MRC-lite WRITE flow over UDP 4791 (demo and tests).", no_args_is_help=True)
PROG = "python -m topologies.mrc_flow"


def _usage(text: str) -> int:
    print(f"error: {text} (see {PROG} --help)", file=sys.stderr)
    return 2


@app.command("send")
def send_cmd(dst: Annotated[str, typer.Argument(help="the receiver's address")],
             evs: Annotated[str, typer.Option("--evs", help="comma-separated EVs (0..65535)")],
             packets: Annotated[int, typer.Option("--packets", help="WRITEs to send")] = 200,
             pps: Annotated[float, typer.Option("--pps", min=0, callback=cli_options.finite, help="packets per second (0: as fast as possible)")] = 500.0,
             src: Annotated[Optional[str], typer.Option("--src", help="source address to bind")] = None,
             size: Annotated[int, typer.Option("--size", help="payload bytes after BTH+RETH")] = PAYLOAD) -> int:
    """Send WRITEs, one EV after the other; print JSON."""
    try:
        ev_list = [int(x, 0) for x in evs.split(",") if x]
    except ValueError:
        return _usage("--evs: give numbers separated by commas, e.g. 4096,4097")
    if not ev_list or not all(0 <= e < 65536 for e in ev_list):
        return _usage("--evs: EVs are 16-bit numbers, 0..65535")
    if not 0 <= size <= 1400:
        return _usage("--size: 0..1400 bytes (the host MTU is 1460)")
    return print_report(send(dst, ev_list, packets, pps, src, size))


@app.command("recv")
def recv_cmd(seconds: Annotated[float, typer.Option("--seconds", callback=cli_options.seconds, help="stop after this long")] = 10.0,
             port: Annotated[int, typer.Option("--port", help="UDP port to listen on")] = MRC_PORT,
             expect: Annotated[int, typer.Option("--expect", help="stop 1 s after this many arrived")] = 0) -> int:
    """Count WRITEs per EV; print JSON."""
    return print_report(receive(seconds, port, expect=expect))


def main(argv: list[str] | None = None) -> int:
    return run_command(app, argv, prog=PROG)


if __name__ == "__main__":
    sys.exit(main())
