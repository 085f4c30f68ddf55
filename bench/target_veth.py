"""Packets per second through ``p4target run`` between two veths, against the ceiling.

In one run: the plain-Python raw-socket forwarding ceiling (as veth_ceiling.py), then
``p4target run bench/p4/router6.p4`` (the program of bench/target_api.py) on the same
veths: Ethernet/IPv6/UDP parse, exact my_mac, exact host_routes (a miss), LPM over
1,000 routes, exact port_mac, MAC rewrite, hop-limit decrement, a counter; and the
ratio of the two. Target: at least half the ceiling. Prints only;
run as root: ``.venv/bin/python bench/target_veth.py [SECONDS]``.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _vethlab import PYTHON, REPO, VethLab, require_root, stop  # noqa: E402

PROGRAM = REPO / "bench" / "p4" / "router6.p4"
EXTRA_ROUTES = 1000
# What the benchmark frame (to 02:00:00:00:00:02, fcbb:bb00:100::1) needs, as STF
# control commands for ``p4target run --commands``.
ENTRIES = """\
add my_mac ingress_port:1 hdr.eth.dst:0x020000000002 accept_frame()
add routes hdr.ipv6.dst_addr:0xfcbbbb00010000000000000000000000/48 route(port:2, next_mac:0x020000000b02)
add port_mac egress_port:2 set_src(mac:0x020000000a02)
"""


def commands_file(directory: Path) -> Path:
    """The entries plus EXTRA_ROUTES /64 routes that the traffic never hits."""
    lines = [ENTRIES]
    for i in range(EXTRA_ROUTES):
        prefix = (0x2001_0DB8 << 96) | (i << 64)
        lines.append(f"add routes hdr.ipv6.dst_addr:{prefix:#034x}/64 "
                     f"route(port:1, next_mac:0x0200000{i:05x})")
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
            through = lab.measure("p4target run (router6.p4)", seconds)
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
