"""The timestamped MRC-lite WRITE stream bench/fabric_delay.py sends through the fabric.

Run inside two Mininet hosts of one machine, which share the kernel's clock: ``python
-m bench._delay_flow recv --packets N --seconds T`` prints one JSON line with each
packet's one-way delay; ``python -m bench._delay_flow send DST --evs 4096,4097 --pps R
--packets N --trace-every K`` sends at a steady rate. Each packet is an MRC-lite WRITE
(BTH with the EV in pkey, RETH, 1,024 bytes of data) whose RETH carries the send time
(``vaddr``: CLOCK_REALTIME in nanoseconds, taken just before ``sendto``) and, in one
packet of every K, the trace mark (``rkey``) that the bench's capture socket filters
on. The RETH is what a trimming switch keeps, so even a trimmed packet has its time.
The receiver takes the kernel's receive timestamp of each datagram (``SO_TIMESTAMPNS``,
the same clock, set when the frame enters the host's interface), so the delay is the
sender's stack and the fabric, without the receiver's stack or scheduling.
"""

from __future__ import annotations

import argparse
import json
import socket
import struct
import sys
import time

MRC_PORT = 4791
OP_WRITE = 0x0A
SIZE = 1024
TRACE_MARK = 0x7D3A11C5  # RETH rkey of a traced packet (other packets: 0)
HEADER = struct.Struct("!BBHII" "QII")  # BTH (opcode, flags, pkey, dest QP, ack_req + PSN), RETH
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)


def packet(seq: int, ev: int, sent_ns: int, traced: bool, payload: bytes) -> bytes:
    return HEADER.pack(OP_WRITE, 0, ev, 0x12, (1 << 31) | (seq & 0xFFFFFF), sent_ns,
                       TRACE_MARK if traced else 0, len(payload)) + payload


def send(dst: str, src: str, evs: list[int], pps: float, packets: int, trace_every: int) -> dict[str, object]:
    """``packets`` WRITEs at ``pps`` on a fixed schedule (a late packet goes at once, the
    next ones keep their times), EV ``evs[k % len(evs)]`` for packet k."""
    sock = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    sock.bind((src, 0))
    payload = bytes(SIZE)
    gap = 1.0 / pps
    t0 = time.monotonic()
    late = 0
    try:
        for k in range(packets):
            delay = t0 + k * gap - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            elif delay < -gap:
                late += 1
            ev = evs[k % len(evs)]
            sock.sendto(packet(k, ev, time.time_ns(), k % trace_every == 0, payload), (dst, MRC_PORT))
    finally:
        sock.close()
    return {"sent": packets, "seconds": round(time.monotonic() - t0, 3), "late": late}


def receive(packets: int, seconds: float) -> dict[str, object]:
    """Each WRITE's (PSN, one-way delay in ns, trimmed) until ``packets`` arrived or
    ``seconds`` passed, and 1 s without a packet after the first."""
    s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    s.bind(("::", MRC_PORT))
    out: list[tuple[int, int, int]] = []
    end = time.monotonic() + seconds
    try:
        while len(out) < packets and time.monotonic() < end:
            s.settimeout(max(0.01, min(1.0, end - time.monotonic())))
            try:
                data, anc, _, _ = s.recvmsg(2048, 64)
            except (socket.timeout, TimeoutError):
                if out:
                    break
                continue
            if len(data) < HEADER.size or data[0] != OP_WRITE:
                continue
            rx_ns = next((int.from_bytes(d[:8], sys.byteorder) * 1_000_000_000 + int.from_bytes(d[8:16], sys.byteorder)
                          for level, kind, d in anc if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS),
                         time.time_ns())
            fields = HEADER.unpack_from(data)
            out.append((fields[4] & 0xFFFFFF, rx_ns - fields[5], int(len(data) == HEADER.size)))
    finally:
        s.close()
    return {"received": len(out), "psn_delay_ns_trimmed": out}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench._delay_flow")
    sub = parser.add_subparsers(dest="command", required=True)
    snd = sub.add_parser("send")
    snd.add_argument("dst")
    snd.add_argument("--src", required=True)
    snd.add_argument("--evs", required=True)
    snd.add_argument("--pps", type=float, required=True)
    snd.add_argument("--packets", type=int, required=True)
    snd.add_argument("--trace-every", type=int, default=1)
    rcv = sub.add_parser("recv")
    rcv.add_argument("--packets", type=int, required=True)
    rcv.add_argument("--seconds", type=float, required=True)
    args = parser.parse_args(argv)
    if args.command == "send":
        evs = [int(x, 0) for x in args.evs.split(",")]
        report = send(args.dst, args.src, evs, args.pps, args.packets, max(1, args.trace_every))
    else:
        report = receive(args.packets, args.seconds)
    print(json.dumps(report, separators=(",", ":")), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
