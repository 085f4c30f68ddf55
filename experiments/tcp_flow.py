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
import random
import socket
import time
from typing import Annotated

import typer

from topologies.command import new_app, print_report, run_command

PORT = 5201


def payload(nbytes: int, seed: int = 0) -> bytes:
    return random.Random(seed).randbytes(nbytes)


def receive(listen: str, nbytes: int, timeout: float, seed: int = 0) -> dict[str, object]:
    srv = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind((listen, PORT))
    srv.listen(1)
    srv.settimeout(timeout)
    print(json.dumps({"listening": listen}), flush=True)
    conn, _ = srv.accept()
    cpu0 = time.process_time()
    conn.settimeout(timeout)
    h = hashlib.sha256()
    got = 0
    first = 0.0
    while got < nbytes:
        chunk = conn.recv(1 << 16)
        if not chunk:
            break
        first = first or time.monotonic()
        h.update(chunk)
        got += len(chunk)
    last = time.monotonic()
    cpu_s = time.process_time() - cpu0
    conn.close()
    srv.close()
    seconds = last - first if first else 0.0
    ok = got == nbytes and h.digest() == hashlib.sha256(payload(nbytes, seed)).digest()
    return {"ok": ok, "bytes": got, "seconds": seconds, "goodput_bps": 8 * got / seconds if seconds else 0.0,
            "cpu_s": cpu_s}


def send(to: str, nbytes: int, timeout: float, seed: int = 0) -> dict[str, object]:
    data = payload(nbytes, seed)
    deadline = time.monotonic() + timeout
    while True:  # the receiver may not listen yet
        try:
            s = socket.create_connection((to, PORT), timeout=timeout)
            break
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
    t0, cpu0 = time.monotonic(), time.process_time()
    s.sendall(data)
    s.shutdown(socket.SHUT_WR)
    s.recv(1)  # the receiver closes when it has everything
    s.close()
    return {"bytes": nbytes, "seconds": time.monotonic() - t0, "cpu_s": time.process_time() - cpu0}


PROG = "python -m experiments.tcp_flow"
app = new_app(__doc__.split("\n\n")[0], no_args_is_help=True)
BytesOpt = Annotated[int, typer.Option("--bytes", min=1, help="bytes to send / to receive")]
TimeoutOpt = Annotated[float, typer.Option("--timeout", min=0, help="seconds to wait for the other end")]


@app.command("recv")
def recv_cmd(listen: Annotated[str, typer.Option("--listen", help="address to listen on")],
             nbytes: BytesOpt, timeout: TimeoutOpt = 60.0) -> int:
    """Receive the seeded bytes; print one JSON line (ok when every byte matched)."""
    return print_report(receive(listen, nbytes, timeout))


@app.command("send")
def send_cmd(to: Annotated[str, typer.Option("--to", help="the receiver's address")],
             nbytes: BytesOpt, timeout: TimeoutOpt = 60.0) -> int:
    """Send the seeded bytes; print one JSON line."""
    return print_report(send(to, nbytes, timeout))


def main(argv: list[str] | None = None) -> int:
    return run_command(app, argv, prog=PROG)


if __name__ == "__main__":
    raise SystemExit(main())
