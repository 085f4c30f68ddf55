"""One TCP transfer between two hosts with plain Python sockets (the comparison flow of
experiment 5): ``python -m experiments.tcp_flow recv --listen ADDR --bytes N`` prints
one JSON line (bytes, seconds from the first to the last byte, SHA-256 verified);
``python -m experiments.tcp_flow send --to ADDR --bytes N`` sends the same seeded bytes.
Each side reports ``cpu_s``: its process's CPU (user + system) while the bytes moved,
as the MRC-lite endpoints report theirs, so a bench can compare what the ends cost.
"""

from __future__ import annotations

import hashlib
import json
import socket
import time
from typing import Annotated

import typer

from endpoints.cli import pseudo_random
from endpoints.io import family_of
from endpoints.transport import ReceiverConfig
from cli_common.options import ip_address, seconds
from cli_common.command import CommandError, new_app, print_report, run_command

PORT = 5201
MAX_BYTES = ReceiverConfig.max_bytes  # each end holds the data whole, as mrc-recv does


def payload(nbytes: int, seed: int = 0) -> bytearray:
    """The bytes of ``random.Random(seed).randbytes(nbytes)`` (drawn a megabyte at a time)."""
    try:
        return pseudo_random(seed, nbytes)
    except MemoryError:
        raise CommandError(f"--bytes {nbytes}: not enough memory here to hold the data; give fewer bytes") from None


def receive(listen: str, nbytes: int, timeout: float, seed: int = 0) -> dict[str, object]:
    srv = socket.socket(family_of(listen), socket.SOCK_STREAM)
    try:
        srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        srv.bind((listen, PORT))
        srv.listen(1)
    except OSError as exc:
        srv.close()
        raise CommandError(f"--listen {listen}: cannot listen on TCP port {PORT} ({exc.strerror}); give an address "
                           "of this host whose port is free") from None
    srv.settimeout(timeout)
    print(json.dumps({"listening": listen}), flush=True)
    try:
        conn, _ = srv.accept()
    except TimeoutError:
        raise CommandError(f"no sender within {timeout:g} s (is `send --to {listen}` running?)") from None
    finally:
        srv.close()
    cpu0 = time.process_time()
    conn.settimeout(timeout)
    h = hashlib.sha256()
    got = 0
    first = 0.0
    while got < nbytes:
        try:
            chunk = conn.recv(1 << 16)
        except OSError:  # the sender went silent or away: the report says what arrived (ok false)
            break
        if not chunk:
            break
        first = first or time.monotonic()
        h.update(chunk)
        got += len(chunk)
    last = time.monotonic()
    cpu_s = time.process_time() - cpu0
    conn.close()
    took = last - first if first else 0.0
    ok = got == nbytes and h.digest() == hashlib.sha256(payload(nbytes, seed)).digest()
    return {"ok": ok, "bytes": got, "seconds": took, "goodput_bps": 8 * got / took if took else 0.0,
            "cpu_s": cpu_s}


def send(to: str, nbytes: int, timeout: float, seed: int = 0) -> dict[str, object]:
    data = payload(nbytes, seed)
    deadline = time.monotonic() + timeout
    while True:  # the receiver may not listen yet
        try:
            s = socket.create_connection((to, PORT), timeout=timeout)
            break
        except OSError as exc:
            if time.monotonic() > deadline:
                raise CommandError(f"--to {to}: no receiver on TCP port {PORT} within {timeout:g} s "
                                   f"({exc.strerror or exc}); start `recv --listen {to}` there first") from None
            time.sleep(0.1)
    t0, cpu0 = time.monotonic(), time.process_time()
    with s:
        try:
            s.sendall(data)
            s.shutdown(socket.SHUT_WR)
            s.recv(1)  # the receiver closes when it has everything
        except OSError as exc:
            raise CommandError(f"--to {to}: the transfer broke off ({exc.strerror or exc})") from None
    return {"bytes": nbytes, "seconds": time.monotonic() - t0, "cpu_s": time.process_time() - cpu0}


PROG = "python -m experiments.tcp_flow"
app = new_app(__doc__.split("\n\n")[0], no_args_is_help=True)
BytesOpt = Annotated[int, typer.Option("--bytes", min=1, max=MAX_BYTES, help="bytes to send / to receive")]
TimeoutOpt = Annotated[float, typer.Option("--timeout", callback=seconds, help="seconds to wait for the other end")]


@app.command("recv")
def recv_cmd(listen: Annotated[str, typer.Option("--listen", callback=ip_address,
                                                  help="address to listen on (IPv6 or IPv4)")],
             nbytes: BytesOpt, timeout: TimeoutOpt = 60.0) -> int:
    """Receive the seeded bytes; print one JSON line (ok when every byte matched)."""
    return print_report(receive(listen, nbytes, timeout))


@app.command("send")
def send_cmd(to: Annotated[str, typer.Option("--to", callback=ip_address, help="the receiver's address")],
             nbytes: BytesOpt, timeout: TimeoutOpt = 60.0) -> int:
    """Send the seeded bytes; print one JSON line."""
    return print_report(send(to, nbytes, timeout))


def main(argv: list[str] | None = None) -> int:
    return run_command(app, argv, prog=PROG)


if __name__ == "__main__":
    raise SystemExit(main())
