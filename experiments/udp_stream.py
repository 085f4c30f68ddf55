"""One unpaced UDP stream between two hosts (the ceiling a transport is compared with):
``python -m experiments.udp_stream recv --listen ADDR --bytes N`` prints one JSON line
(bytes and datagrams delivered, seconds from the first to the last one, the delivered
rate); ``python -m experiments.udp_stream send --to ADDR --bytes N --size S`` sends N
bytes in datagrams of S payload bytes as fast as the socket takes them.

Why: a transport's goodput through the fabric is bounded by what the fabric delivers
of a stream that never waits for feedback; measured in the same run as the transport
(bench/experiments_goodput.py), the ratio says how much the transport's own
mechanisms (window, ACKs, retransmissions) cost. Lost datagrams are not resent: the
delivered rate is what arrived. The NIC sprays non-MRC traffic per flow, so the
stream takes one path, as a TCP flow does.

Each side reports ``cpu_s``, its process's CPU while the datagrams moved (the
receiver's from its first datagram), as the MRC-lite endpoints report theirs.

Each datagram starts with its 4-byte sequence number; the sender ends with a few
datagrams of 4 bytes (the end marker) so the receiver stops without waiting for its
idle timeout.
"""

from __future__ import annotations

import json
import socket
import struct
import time
from typing import Annotated

import typer

from endpoints.io import family_of
from cli_common.options import ip_address, seconds
from cli_common.command import CommandError, new_app, print_report, run_command

PORT = 5202
_SEQ = struct.Struct("!I")
END = b"\xff\xff\xff\xff"
MAX_BYTES = 1 << 30  # a stream of seconds to minutes, fewer datagrams than 32-bit sequence numbers count


def receive(listen: str, nbytes: int, timeout: float, idle: float = 1.0) -> dict[str, object]:
    """Count what arrives until the end marker, ``nbytes`` payload bytes, or ``idle``
    seconds without a datagram after the first."""
    s = socket.socket(family_of(listen), socket.SOCK_DGRAM)
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        s.bind((listen, PORT))
    except OSError as exc:
        s.close()
        raise CommandError(f"--listen {listen}: cannot listen on UDP port {PORT} ({exc.strerror}); give an address "
                           "of this host whose port is free") from None
    print(json.dumps({"listening": listen}), flush=True)
    s.settimeout(timeout)
    got = datagrams = 0
    first = last = cpu0 = 0.0
    seen_max = -1
    buf = bytearray(1 << 16)
    try:
        while got < nbytes:
            n = s.recv_into(buf)
            now = time.monotonic()
            if n == 4 and buf[:4] == END:
                break
            if not first:
                first, cpu0 = now, time.process_time()
                s.settimeout(idle)
            last = now
            got += n
            datagrams += 1
            if n >= 4:
                seen_max = max(seen_max, _SEQ.unpack_from(buf)[0])
    except TimeoutError:
        pass
    finally:
        s.close()
    cpu_s = time.process_time() - cpu0 if first else 0.0
    seconds = last - first
    return {"ok": datagrams > 0, "bytes": got, "datagrams": datagrams, "sent_seen": seen_max + 1,
            "seconds": seconds, "delivered_bps": 8 * got / seconds if seconds > 0 else 0.0, "cpu_s": cpu_s}


def send(to: str, nbytes: int, size: int, start_delay: float = 0.5) -> dict[str, object]:
    """``nbytes`` in datagrams of ``size`` bytes, back to back (a full socket buffer
    waits: the rate is what the host's stack and NIC take)."""
    s = socket.socket(family_of(to), socket.SOCK_DGRAM)
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
        s.connect((to, PORT))
    except OSError as exc:
        s.close()
        raise CommandError(f"--to {to}: cannot send to UDP port {PORT} there ({exc.strerror}); give a reachable "
                           "address") from None
    time.sleep(start_delay)  # the receiver binds after its host started it
    body = bytes(size - 4)
    count = -(-nbytes // size)
    t0, cpu0 = time.monotonic(), time.process_time()
    for i in range(count):
        try:
            s.send(_SEQ.pack(i) + body)
        except (ConnectionRefusedError, BlockingIOError):
            pass  # an ICMP report of an earlier datagram, or a full queue: the datagram is lost
    seconds, cpu_s = time.monotonic() - t0, time.process_time() - cpu0
    for _ in range(5):
        time.sleep(0.05)
        try:
            s.send(END)
        except ConnectionRefusedError:
            pass
    s.close()
    return {"bytes": count * size, "datagrams": count, "seconds": seconds, "cpu_s": cpu_s}


PROG = "python -m experiments.udp_stream"
app = new_app(__doc__.split("\n\n")[0], no_args_is_help=True)
BytesOpt = Annotated[int, typer.Option("--bytes", min=1, max=MAX_BYTES,
                                       help="payload bytes to send / to expect at most")]


@app.command("recv")
def recv_cmd(listen: Annotated[str, typer.Option("--listen", callback=ip_address,
                                                  help="address to listen on (IPv6 or IPv4)")],
             nbytes: BytesOpt,
             timeout: Annotated[float, typer.Option("--timeout", callback=seconds,
                                                    help="seconds to wait for the first datagram")] = 60.0) -> int:
    """Count the datagrams that arrive; print one JSON line."""
    return print_report(receive(listen, nbytes, timeout))


@app.command("send")
def send_cmd(to: Annotated[str, typer.Option("--to", callback=ip_address, help="the receiver's address")],
             nbytes: BytesOpt,
             size: Annotated[int, typer.Option("--size", min=5, max=65000,
                                               help="payload bytes per datagram")] = 1408) -> int:
    """Send the datagrams as fast as the socket takes them; print one JSON line."""
    return print_report(send(to, nbytes, size))


def main(argv: list[str] | None = None) -> int:
    return run_command(app, argv, prog=PROG)


if __name__ == "__main__":
    raise SystemExit(main())
