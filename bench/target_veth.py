"""Packets per second through ``p4target run`` between two veths, against the ceiling.

In one run: the plain-Python raw-socket forwarding ceiling (as veth_ceiling.py), then
``p4target run bench/p4/veth_router.p4`` on the same veths (Ethernet/IPv6/UDP parse,
an exact and an LPM lookup over 500 routes, MAC rewrite, hop-limit decrement, a
counter), and the ratio of the two. Target: at least half the ceiling. Prints only;
run as root: ``.venv/bin/python bench/target_veth.py [SECONDS]``.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _vethlab import PYTHON, REPO, VethLab, require_root, stop  # noqa: E402

PROGRAM = REPO / "bench" / "p4" / "veth_router.p4"
ENTRIES = REPO / "bench" / "p4" / "veth_router.stf"
EXTRA_ROUTES = 500


def commands_file(directory: Path) -> Path:
    """The program's entries plus EXTRA_ROUTES /64 routes that the traffic never hits."""
    lines = [ENTRIES.read_text()]
    for i in range(EXTRA_ROUTES):
        prefix = (0x2001_0DB8 << 96) | (i << 64)
        lines.append(f"add routes hdr.ipv6.dst_addr:{prefix:#034x}/64 "
                     f"route(port:1, next_hop:0x0200000{i:05x})")
    path = directory / "entries.stf"
    path.write_text("\n".join(lines) + "\n")
    return path


def main() -> int:
    if not require_root():
        return 0
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 5.0
    with tempfile.TemporaryDirectory(prefix="p4t-bench-") as tmp, VethLab() as lab:
        ceiling = lab.measure_ceiling(seconds)
        log = Path(tmp) / "p4target.log"
        target = lab.spawn(PYTHON, "-m", "p4target", "run", str(PROGRAM),
                           "-i", "1@p4tin", "-i", "2@p4tout", "--no-grpc",
                           "--commands", str(commands_file(Path(tmp))), log=log)
        try:
            if not lab.wait_forwarding(timeout=60):
                print("p4target run did not forward; its log:")
                print(log.read_text())
                return 1
            through = lab.measure("p4target run (veth_router.p4)", seconds)
        finally:
            stop(target)
    print("veth forwarding, 96-byte IPv6/UDP frames, one sender, one forwarder process")
    print(ceiling.line())
    print(through.line())
    ratio = through.pps / ceiling.pps if ceiling.pps else 0.0
    print(f"ratio target/ceiling: {ratio:.2f} (target >= 0.50)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
