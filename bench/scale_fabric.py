"""The scale fabric: ready time, switch memory and idle CPU with the switches in shared processes.

Starts, under a private prefix and run directory, each with the switches placed as
``make run`` places them (``p4target group`` processes: the fabric in one per CPU
but one, the NICs in one) and every table installed by the controller:

- the default fabric (20 P4 switches, 8 paths between hosts on different leaves);
- ``topologies/hundreds.yaml`` (8 planes x (32 spines + 2 leaves), 2 hosts per leaf:
  276 P4 switches, 256 paths), when ``SCALE_FABRIC`` is unset or names it; another
  topology file with ``SCALE_FABRIC=topologies/x.yaml``.

For each it prints: seconds until every switch answers P4Runtime and until every
table is installed; the switch processes' memory (VmRSS summed over every process;
the receive and transmit rings are mapped into the process, so it counts them too)
in all and per switch, and how much of it the rings are; their CPU while the network
is idle; and a flow over every EV between the first host and one on another leaf,
its packets counted per path at the spines.

Needs root and Mininet. Prints only; never asserts.
"""

from __future__ import annotations

import os
import secrets
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.fabric_net import cpu_seconds, rss_mb  # noqa: E402

SCALE_FILE = REPO / "topologies" / "hundreds.yaml"


def ring_mb(pids: list[int]) -> float:
    """Memory of the PACKET_MMAP rings mapped into the processes (their 'packet' mappings)."""
    total = 0
    for pid in pids:
        try:
            lines = Path(f"/proc/{pid}/smaps").read_text().splitlines()
        except OSError:
            continue
        in_ring = False
        for line in lines:
            if line[:1].isdigit() or line[:1] in "abcdef" and "-" in line.split()[0]:
                in_ring = "socket:" in line or line.rstrip().endswith("packet")
            elif in_ring and line.startswith("Rss:"):
                total += int(line.split()[1])
    return total / 1024


def measure(topo, label: str) -> None:
    from fabric import plan as P
    from topologies import path_counts
    from topologies.fabric_net import fabric_network, install_tables
    from topologies.mrc_flow import run_stream

    prefix = "mrc" + secrets.choice("abcdefghijklmnopqrstuvwxyz")  # one character: port 34 of a leaf fits
    tag = f"scale_fabric [{label}]"
    with tempfile.TemporaryDirectory(prefix="mrc-bench-") as tmp:
        t0 = time.monotonic()
        with fabric_network(topo, prefix=prefix, target="embedded", grpc_base=0, run_dir=Path(tmp),
                            switches_per_process="cpu") as fn:
            rep = install_tables(fn)
            ready = time.monotonic() - t0
            sws = fn.p4_switches()
            pids = sorted({sw.proc.pid for sw in sws})
            rss, rings = rss_mb(pids), ring_mb(pids)
            print(f"{tag}: {len(sws)} P4 switches in {len(pids)} processes: switches answer after "
                  f"{fn.switches_ready:.1f} s, every table ({rep.entries} entries) installed after {ready:.1f} s")
            print(f"{tag}: switch memory {rss:,.0f} MB in all ({rings:,.0f} MB of it rings), "
                  f"{rss / len(sws):.1f} MB per switch")
            c0 = cpu_seconds(pids)
            time.sleep(10)
            print(f"{tag}: idle network: the {len(pids)} processes use {(cpu_seconds(pids) - c0) / 10 * 100:.1f}% "
                  "of one core together")
            src = topo.hosts[0]
            dst = next(h for h in topo.hosts if h.leaf != src.leaf)
            evs = [e.ev for e in P.nic_evs(topo, src, dst)]
            fn.ping(src.name, dst.name, count=1)
            before = path_counts.read_spines(topo, fn.inventory)
            got = run_stream(fn, src.name, dst.name, evs, 10 * len(evs), 2000, size=256)
            per_path = path_counts.path_packets(topo, before, path_counts.read_spines(topo, fn.inventory), src.leaf)
            print(f"{tag}: flow {src.name} -> {dst.name} over {len(evs)} EVs: {got['received']}/{got['sent']} "
                  f"delivered; {path_counts.summary(per_path)}")


def main() -> int:
    if os.geteuid() != 0:
        print("scale_fabric: needs root (Mininet); skipped")
        return 0
    from fabric.topology import default_topology, load_file

    measure(default_topology(), "default fabric")
    scale = Path(os.environ.get("SCALE_FABRIC", str(SCALE_FILE)))
    topo = load_file(scale)
    measure(topo, f"{topo.name}: {topo.planes} planes x ({topo.spines} spines + {len(topo.leaves)} leaves)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
