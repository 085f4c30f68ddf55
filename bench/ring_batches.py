"""What a frame costs around the pipeline, by batch size and by how its outputs alternate ports.

Why: a sprayed frame reaches each switch of a group in smaller batches than a
frame on one plane, and its outputs change port from frame to frame (a NIC over its
planes, a leaf over its spines). This prints, in microseconds per frame (the best
of several repeats):

- ``Switch.inject_batch`` of fabric.p4 (uN) and nic.p4 (host to fabric, sprayed)
  with batches of 1, 4, 16 and 64 frames, and the fast path call alone;
- netio's transmit step (``NetIO._transmit``: the outputs sorted by port, each
  port's written into its PACKET_MMAP transmit ring at once) for 64 outputs all to
  one port or alternating over 2 or 4 ports; the rings are on the loopback
  interface and never flushed (their slots are given back after each batch), so
  this is the Python side only;
- a read of an empty receive ring (what a group loop pays per port of every active
  switch and pass).

The ring figures need root (AF_PACKET sockets); without it they are skipped.
Prints only; never asserts.
"""

from __future__ import annotations

import os
import socket
import sys
import timeit
from functools import partial
from pathlib import Path
from typing import Any, Callable

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

FRAME_BYTES = 1100
ETH_P_UNUSED = 0x88B5  # IEEE local experimental EtherType: nothing on lo carries it


def best_us(fn: Callable[[], Any], per_call: int, number: int = 2000, repeat: int = 7) -> float:
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number / per_call * 1e6


def bench_inject_batch() -> None:
    import _mrc_scenarios as S

    for name in ("fabric_un", "nic_spray"):
        sw, port, frame = getattr(S, name)()
        sw.inject(port, frame)
        sw.bind_fast_path(wait_native=True)
        figures = []
        for size in (1, 4, 16, 64):
            frames = [frame] * size
            figures.append(f"batch {size}: {best_us(partial(sw.inject_batch, port, frames), size, 4096 // size):.2f}")
        fast = sw._paths.batch_fast(port)
        alone = best_us(partial(fast, frame, port, 0), 1, 4096) if fast is not None else float("nan")
        print(f"ring_batches: {name} ({sw.fast_kind} fast path): inject_batch us per frame, "
              + ", ".join(figures) + f"; the fast path call alone {alone:.2f}")


class _Rings:
    """A NetIO whose ports' transmit rings are on lo, for ``_transmit`` alone."""

    def __init__(self, ports: int) -> None:
        from p4target.ports.linux_net import open_transmit_socket
        from p4target.ports.netio import NetIO
        from p4target.ports.packet_ring import TxRing, ring_layout

        self.nio = NetIO(object(), {p: f"bench{p}" for p in range(1, ports + 1)})
        self.rings = {p: TxRing(open_transmit_socket("lo"), ring_layout(2048, 256)) for p in range(1, ports + 1)}
        self.nio._tx_rings = self.rings

    def transmit(self, outputs: list[tuple[int, bytes]]) -> None:
        self.nio._transmit(outputs)
        for ring in self.rings.values():
            ring.discard()

    def close(self) -> None:
        for ring in self.rings.values():
            ring.close()
            ring.sock.close()


def bench_transmit() -> None:
    frame = bytes(FRAME_BYTES)
    figures = []
    for ports in (1, 2, 4):
        rings = _Rings(ports)
        outputs = [(1 + k % ports, frame) for k in range(64)]
        try:
            figures.append(f"{ports} port{'s' if ports > 1 else ''}: "
                           f"{best_us(partial(rings.transmit, outputs), 64, 300, 9):.2f}")
        finally:
            rings.close()
    print(f"ring_batches: transmit 64 outputs of {FRAME_BYTES} bytes into transmit rings, us per frame, "
          "alternating over " + ", ".join(figures))


def bench_empty_read() -> None:
    from p4target.ports.packet_ring import RxRing, ring_layout

    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_UNUSED))
    ring = RxRing(sock, ring_layout(2048, 256))
    sock.bind(("lo", ETH_P_UNUSED))
    out: list[bytes] = []
    try:
        print(f"ring_batches: a read of an empty receive ring: {best_us(lambda: ring.read(out, 256), 1, 20000):.2f} us")
    finally:
        ring.close()
        sock.close()


def main() -> int:
    bench_inject_batch()
    if os.geteuid() != 0:
        print("ring_batches: the ring figures need root (AF_PACKET sockets); skipped")
        return 0
    bench_transmit()
    bench_empty_read()
    return 0


if __name__ == "__main__":
    sys.exit(main())
