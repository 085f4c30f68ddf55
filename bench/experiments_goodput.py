"""Goodput of experiments 1 (spraying) and 5 (against TCP), run small on one Mininet
fabric (4 planes x (2 leaves + 2 spines), 2 hosts per leaf, embedded target).

Prints the goodput of the MRC-lite transfer sprayed per packet over 8 paths, of the
same bytes as one plain UDP flow that the NIC sprays per flow (one path), and of one
TCP flow (plain Python sockets) between the same hosts. Needs root and Mininet;
prints only, never asserts. The full experiments (larger transfers, plots) are
``make experiments``.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

BYTES = 4_000_000
RATE = 4000.0


def main() -> int:
    if os.geteuid() != 0:
        print("experiments_goodput: skipped (needs root: Mininet)")
        return 0
    from experiments import common as C
    from experiments import spraying, tcp

    with tempfile.TemporaryDirectory() as tmp, C.programmed_fabric(C.topology()) as fn:
        s = spraying.run(fn, Path(tmp) / "spray", nbytes=BYTES, rate=RATE)
        t = tcp.run(fn, Path(tmp) / "tcp", nbytes=BYTES, rate=None)  # window only, TCP-sized payloads
    print(f"experiment 1, {BYTES} bytes h1 -> h3 paced at {RATE:g} packets/s:")
    print(f"  MRC-lite sprayed per packet (8 paths): {C.mbps(s['mrc']['goodput_bps'])} Mb/s "
          f"(verified {s['mrc']['ok']}, plane spread {100 * s['mrc']['plane_spread']:.1f}%)")
    print(f"  plain UDP sprayed per flow (1 path):   {C.mbps(s['per_flow']['goodput_bps'])} Mb/s "
          f"(verified {s['per_flow']['ok']})")
    print(f"experiment 5, {BYTES} bytes h1 -> h3, one after the other:")
    print(f"  MRC-lite, window only, 1380 B:     {C.mbps(t['mrc']['goodput_bps'])} Mb/s "
          f"(verified {t['mrc']['ok']}, retransmissions {(t['mrc']['retransmissions'] or {}).get('total')})")
    print(f"  TCP, one flow:                     {C.mbps(t['tcp'].get('goodput_bps'))} Mb/s "
          f"(verified {t['tcp'].get('ok')})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
