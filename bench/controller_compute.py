"""The controller's computation for the full-size fabric: every entry of every switch.

131,072 hosts on 8 planes of 512 leaves and 256 spines (6,144 fabric switches) with
GENERATED EVs: every entry of every fabric switch and NIC is computed and materialised
as the value the installer writes (fabric/entries.py), then dropped. Prints the
number of entries, the seconds and the peak RSS of this process (targets: under 30 s
and under 2 GB). Prints only; never asserts.
"""

from __future__ import annotations

import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fabric.entries import leaf_entries, nic_entries, spine_entries
from fabric.topology import from_parameters


def main() -> None:
    topo = from_parameters(name="full", planes=8, leaves=512, spines=256, hosts_per_leaf=256,
                           evs_per_nic=64, ev_mode="generated")
    t0 = time.perf_counter()
    fabric = nics = 0
    for p in range(topo.planes):
        for i in range(len(topo.leaves)):
            for _ in leaf_entries(topo, p, i):
                fabric += 1
        for j in range(topo.spines):
            for _ in spine_entries(topo, p, j):
                fabric += 1
    t1 = time.perf_counter()
    for h in topo.hosts:
        nics += len(nic_entries(topo, h))
    t2 = time.perf_counter()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"controller compute, {topo.summary()}")
    print(f"  fabric switches: {topo.planes * (len(topo.leaves) + topo.spines):,}, entries {fabric:,}, {t1 - t0:.1f} s")
    print(f"  NICs: {len(topo.hosts):,}, entries {nics:,}, {t2 - t1:.1f} s")
    print(f"  total: {fabric + nics:,} entries in {t2 - t0:.1f} s (target < 30 s), "
          f"peak RSS {rss:,.0f} MB (target < 2,048 MB)")


if __name__ == "__main__":
    main()
