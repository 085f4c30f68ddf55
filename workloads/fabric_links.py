"""The fabric's leaf-spine links and the packets each carried, from the switches'
``tx_port`` counters (both directions: the leaf's uplink port, the spine's port
towards the leaf), read over P4Runtime before and after a job."""

from __future__ import annotations

import asyncio
from typing import Any

from controller.counters import Counts, delta, read_all
from fabric import plan as P

TX = "FabricEgress.tx_port"


def fabric_links(topo: Any) -> list[dict[str, Any]]:
    out = []
    for p in range(topo.planes):
        for leaf in range(len(topo.leaves)):
            for s in range(topo.spines):
                if topo.cabled(p, leaf, s):
                    ln, sn = topo.leaf_name(p, leaf), topo.spine_name(p, s)
                    out.append({"name": f"{ln}:{sn}", "plane": p, "leaf": ln, "spine": sn,
                                "up_port": P.leaf_uplink_port(topo, s), "down_port": P.spine_port(leaf)})
    return out


def read(fn: Any) -> dict[str, Counts]:
    names = sorted({x for link in fabric_links(fn.topo) for x in (link["leaf"], link["spine"])})
    return asyncio.run(read_all([fn.inventory.switches[n] for n in names]))


def packets(fn: Any, before: dict[str, Counts], after: dict[str, Counts]) -> dict[str, int]:
    """Packets each fabric link carried between the two reads."""
    d = delta(after, before)
    out = {}
    for link in fabric_links(fn.topo):
        up = d.get(link["leaf"], {}).get(TX, {}).get(link["up_port"], (0, 0))[0]
        down = d.get(link["spine"], {}).get(TX, {}).get(link["down_port"], (0, 0))[0]
        out[link["name"]] = up + down
    return out
