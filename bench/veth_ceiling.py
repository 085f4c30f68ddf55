"""How fast can plain Python forward frames between two veths with raw sockets?

This is the ceiling for any Python dataplane on this machine: a loop that does
nothing but ``recv`` on one AF_PACKET socket and ``send`` on another. target_veth.py
compares ``p4target run`` against it. Prints only; run as root:
``.venv/bin/python bench/veth_ceiling.py [SECONDS]``.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _vethlab import VethLab, require_root


def main() -> int:
    if not require_root():
        return 0
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 5.0
    with VethLab() as lab:
        m = lab.measure_ceiling(seconds)
    print("veth forwarding ceiling (96-byte frames, one sender, one forwarder process)")
    print(m.line())
    return 0


if __name__ == "__main__":
    sys.exit(main())
