"""Packets per path of a transfer, counted where the paths differ: at the spines.

Between two hosts on different leaves, a path is a (plane, spine) pair: the packets a
spine takes in on the port of the source's leaf (``FabricIngress.rx_port`` at
``plan.spine_port(leaf)``) are the packets of that path. ``read_spines`` reads the
spines' counters (I/O); ``path_packets``, ``summary`` and ``per_plane`` are pure.
"""

from __future__ import annotations

import asyncio

from controller.counters import Counts, delta, read_all
from fabric import plan as P
from fabric.entries import nodes
from fabric.topology import Topology
from controller.network_state import Inventory

RX_PORT = "FabricIngress.rx_port"


def spines(topo: Topology) -> list[tuple[int, int, str]]:
    """(plane, spine index, switch name) of every spine."""
    return [(n.plane, n.index, n.name) for n in nodes(topo) if n.tier == P.SPINE]


def read_spines(topo: Topology, inventory: Inventory) -> dict[str, Counts]:
    """The counters of every spine, read over P4Runtime."""
    return asyncio.run(read_all([inventory.switches[name] for _, _, name in spines(topo)]))


def path_packets(topo: Topology, before: dict[str, Counts], after: dict[str, Counts],
                 src_leaf: int) -> dict[tuple[int, int], int]:
    """(plane, spine) -> packets that came in from leaf ``src_leaf`` between the two reads."""
    d = delta(after, before)
    port = P.spine_port(src_leaf)
    return {(plane, idx): d.get(name, {}).get(RX_PORT, {}).get(port, (0, 0))[0]
            for plane, idx, name in spines(topo)}


def summary(counts: dict[tuple[int, int], int]) -> str:
    """``N of M paths carried packets (min A, max B packets per path)``."""
    used = [v for v in counts.values() if v > 0]
    low = min(counts.values()) if counts else 0
    return (f"{len(used)} of {len(counts)} paths carried packets (counted at the spines: "
            f"min {low}, max {max(counts.values(), default=0)} packets per path)")


def per_plane(counts: dict[tuple[int, int], int]) -> list[str]:
    """Every path's packets, a line per plane: ``plane P: A B C ... (spines 0-N)``."""
    lines = []
    for plane in sorted({p for p, _ in counts}):
        idx = sorted(s for p, s in counts if p == plane)
        span = f"spine {idx[0]}" if len(idx) == 1 else f"spines {idx[0]}-{idx[-1]}"
        lines.append(f"plane {plane}: {' '.join(str(counts[(plane, s)]) for s in idx)} ({span})")
    return lines
