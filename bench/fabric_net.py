"""The Mininet fabric: time to a ready network, ping RTT and UDP throughput across it.

Starts the default fabric (4 planes x (2 leaves + 2 spines), 2 hosts per leaf: 20
embedded-target processes) under a private prefix and run directory, with the
controller installing every table, and prints:

- seconds until every switch answers P4Runtime, and until every table is installed;
  memory (RSS) of the switch processes;
- ping -6 RTT between two hosts on different leaves (NIC, leaf, spine, leaf, NIC: 5
  P4 switches each way);
- UDP throughput of one MRC flow between the same hosts, sent as fast as the sender
  can: on one plane (the EVs of plane 0 only) and sprayed over all planes (every EV).

Needs root and Mininet. Prints only; never asserts.
"""

from __future__ import annotations

import os
import re
import secrets
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from topologies.mrc_flow import run_stream  # noqa: E402


def rss_mb(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            pass
    return total / 1024


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU time of the processes so far."""
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
        except (OSError, IndexError, ValueError):
            pass
    return total / os.sysconf("SC_CLK_TCK")


def udp_flow(fn, src: str, dst: str, evs: list[int], packets: int, size: int) -> dict:  # noqa: ANN001
    got = run_stream(fn, src, dst, evs, packets, 0, size=size)
    secs = got["first_to_last_seconds"] or 1e-9
    return {"sent": got["sent"], "received": got["received"], "pps": got["received"] / secs,
            "mbps": got["udp_payload_bytes"] * 8 / secs / 1e6}


def main() -> int:
    if os.geteuid() != 0:
        print("fabric_net: needs root (Mininet); skipped")
        return 0
    from controller import plan as P
    from controller.topology import default_topology
    from topologies.fabric_net import fabric_network, install_tables

    topo = default_topology()
    prefix = "mrc" + secrets.token_hex(2)[:3]
    with tempfile.TemporaryDirectory(prefix="mrc-bench-") as tmp:
        t0 = time.monotonic()
        with fabric_network(topo, prefix=prefix, target="embedded", grpc_base=0, run_dir=Path(tmp)) as fn:
            rep = install_tables(fn)
            ready = time.monotonic() - t0
            pids = [sw.proc.pid for sw in fn.p4_switches()]
            print(f"fabric_net: default fabric ({len(pids)} P4 switch processes): switches answer after "
                  f"{fn.switches_ready:.1f} s, every table ({rep.entries} entries) installed after {ready:.1f} s; "
                  f"switch RSS {rss_mb(pids):.0f} MB total, {rss_mb(pids) / len(pids):.0f} MB each")
            c0 = cpu_seconds(pids)
            time.sleep(5)
            idle = (cpu_seconds(pids) - c0) / 5 * 100
            print(f"fabric_net: idle network: the {len(pids)} switch processes use {idle:.1f}% of one core together")
            src, dst = "h1", "h3"  # leaf 0 to leaf 1: through a spine
            fn.ping(src, dst, count=3)  # neighbour discovery and warm caches
            out = fn.host(src).cmd(f"ping -6 -n -c 50 -i 0.02 {fn.address(dst)}")
            m = re.search(r"= ([\d.]+)/([\d.]+)/([\d.]+)/", out)
            if m:
                print(f"fabric_net: ping -6 {src} -> {dst} (5 P4 switches each way): rtt min/avg/max "
                      f"{m.group(1)}/{m.group(2)}/{m.group(3)} ms over 50 pings")
            s, d = topo.host(src), topo.host(dst)
            evs = P.nic_evs(topo, s, d)
            for label, chosen in (("one plane (plane 0's EVs)", [e.ev for e in evs if e.plane == 0]),
                                  ("sprayed over all 4 planes", [e.ev for e in evs])):
                r = udp_flow(fn, src, dst, chosen, packets=5000, size=1024)
                print(f"fabric_net: UDP (MRC WRITE, 1024-byte payload) {src} -> {dst}, {label}: "
                      f"{r['received']}/{r['sent']} delivered, {r['pps']:,.0f} packets/s, {r['mbps']:.1f} Mb/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
