"""Real fabric.p4 / nic.p4 Switches filled with the controller's entries, and a walker.

Why: dataplane tests need switches filled exactly as the controller fills them, and
multi-switch tests need to carry a frame from one switch to the next. The plan and
the entries are the controller's (fabric/plan.py, fabric/entries.py, installed
by controller/local.py); this module only loads the programs, installs, and follows
the cabling (``fabric.paths.neighbour``) hop by hop. It never says what a switch
does to a packet: every output frame comes from the P4 program.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from controller import local
from fabric import plan as P
from fabric.entries import Entry, Node, TableEntry, entries_of, nodes
from fabric.paths import neighbour
from fabric.topology import Host, Topology
from fabric.match import Exact

if TYPE_CHECKING:  # pragma: no cover
    from p4target import Switch

REPO = Path(__file__).resolve().parents[2]
FABRIC_P4 = REPO / "p4src" / "fabric.p4"
NIC_P4 = REPO / "p4src" / "nic.p4"


# ---- text forms for scapy ------------------------------------------------------


def mac(plane: int, tier: int, index: int, port: int) -> str:
    """The plan's MAC of a port, as scapy text."""
    return P.mac_text(P.mac(plane, tier, index, port))


def ip(value: int) -> str:
    return P.ip(value)


# ---- entries -------------------------------------------------------------------


def entry(table: str, match: Mapping[str, Any], action: str, params: Mapping[str, int] | None = None,
          priority: int = 0) -> TableEntry:
    """A hand-written entry (a test's extra SID or route) in the controller's form;
    plain ints in ``match`` are exact values."""
    m = tuple((k, Exact(v) if isinstance(v, int) else v) for k, v in match.items())
    return TableEntry(table, m, action, tuple((params or {}).items()), priority)


def node_named(topo: Topology, name: str) -> Node:
    return next(n for n in nodes(topo) if n.name == name)


def switch_entries(topo: Topology, name: str) -> list[Entry]:
    """Every entry the controller computes for switch or NIC ``name``."""
    return entries_of(topo, node_named(topo, name))


# ---- switches ------------------------------------------------------------------


def load(program: Path, entries: Iterable[Entry] = (), seed: int = 1) -> "Switch":
    from p4target import Switch

    sw = Switch.load(str(program), seed=seed)
    local.install(sw, entries)
    return sw


def build(topo: Topology, *, nics: bool = False) -> dict[str, "Switch"]:
    """One loaded and filled Switch per fabric switch (and per NIC with ``nics``), by name."""
    out: dict[str, Switch] = {}
    for n in nodes(topo):
        if n.tier == P.NIC and not nics:
            continue
        out[n.name] = load(NIC_P4 if n.tier == P.NIC else FABRIC_P4, entries_of(topo, n))
    return out


# ---- walking -------------------------------------------------------------------


@dataclass(frozen=True)
class Hop:
    """A frame leaving switch ``node`` on ``port``; it arrives at ``to`` port ``to_port``."""

    node: str
    port: int
    frame: bytes
    to: str
    to_port: int


def walk(topo: Topology, switches: Mapping[str, "Switch"], start: str, port: int, frame: bytes,
         max_hops: int = 8) -> list[Hop]:
    """Inject ``frame`` into switch ``start`` on ``port`` and follow it switch to switch.

    Stops when a switch drops the frame or the frame arrives somewhere that is not in
    ``switches`` (a NIC the test does not run, or a host). A switch that emits more
    than one frame is an error here (the fabric never replicates).
    """
    by_name = {n.name: n for n in nodes(topo)}
    hops: list[Hop] = []
    name, in_port, data = start, port, frame
    for _ in range(max_hops):
        outputs = switches[name].inject(in_port, data)
        if not outputs:
            return hops
        if len(outputs) != 1:
            raise AssertionError(f"{name} emitted {len(outputs)} frames")
        out_port, data = outputs[0]
        other, other_port = neighbour(topo, by_name[name], out_port)
        hops.append(Hop(name, out_port, data, other.name, other_port))
        if isinstance(other, Host) or other.name not in switches:
            return hops
        name, in_port = other.name, other_port
    raise AssertionError("frame still in the fabric after max_hops")
