"""One fabric link degraded: both of its ends' egress queues limited to a rate
(``p4target run --queue-rate PORT=PPS``), as the experiments limit links
(experiments/ecmp.py). A switch restarted with another rate starts empty, so the
tables are installed again after it."""

from __future__ import annotations

from typing import Any

from fabric.paths import find_link
from topologies.fabric_net import install_tables


def ends(topo: Any, name: str) -> list[tuple[str, int]]:
    """(switch, port) of both ends of fabric link ``name`` (leaf:spine); TopologyError otherwise."""
    link = find_link(topo, name)
    if link.kind != "fabric":
        raise ValueError(f"--queue-rate {name}: give a leaf-spine link (e.g. p0-leaf0:p0-spine0)")
    return [(link.a, link.a_port), (link.b, link.b_port)]


def limit(fn: Any, name: str, pps: float | None) -> None:
    """Restart the link's two switches with (None: without) the rate and reinstall."""
    for switch, port in ends(fn.topo, name):
        sw = fn.switch(switch)
        sw.extra_args = [] if pps is None else ["--queue-rate", f"{port}={pps:g}"]
        sw.restart()
    rep = install_tables(fn)
    if rep.failed:
        raise RuntimeError(f"install after the restart failed: {rep.summary()}")


def uplinks(topo: Any) -> dict[str, list[int]]:
    """Every leaf and its ports to the spines."""
    from fabric import plan as P

    return {topo.leaf_name(p, leaf): [P.leaf_uplink_port(topo, s) for s in range(topo.spines) if topo.cabled(p, leaf, s)]
            for p in range(topo.planes) for leaf in range(len(topo.leaves))}


def limit_uplinks(fn: Any, pps: float | None) -> None:
    """Restart every leaf with (None: without) the rate on each of its uplinks and
    reinstall: the leaf-to-spine links, not the CPU, are then the bottleneck."""
    for leaf, ports in uplinks(fn.topo).items():
        sw = fn.switch(leaf)
        sw.extra_args = [] if pps is None else [a for port in ports for a in ("--queue-rate", f"{port}={pps:g}")]
        sw.restart()
    rep = install_tables(fn)
    if rep.failed:
        raise RuntimeError(f"install after the restart failed: {rep.summary()}")
