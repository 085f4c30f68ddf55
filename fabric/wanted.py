"""The entries wanted in every switch for a set of denied links: the one place that
turns "these links are to be avoided" into per-switch entries (pure).

Why one function: ``mrcctl install``, ``mrcctl entries``, ``mrcctl deny``, the
Mininet network's install and the experiments all need the same answer; the fabric's
tables never depend on the links (docs/fabric.md), the NICs' spray groups and EV
tables leave out the paths over a denied link (docs/nic.md).
"""

from __future__ import annotations

from collections.abc import Iterable

from fabric.entries import Entry, Node, entries_of, nodes
from fabric.paths import failures_of, find_link
from fabric.topology import Topology


def wanted_entries(topo: Topology, denied: Iterable[str] = (), *, only: Iterable[Node] | None = None,
                   program: str | None = None) -> dict[str, list[Entry]]:
    """Switch name -> every entry it should hold while the links named ``denied``
    (as ``mrcctl links`` names them) are avoided; ``only`` some switches, or only
    those running ``program`` (``"fabric"`` or ``"nic"``). A name that is no link of
    ``topo`` raises TopologyError naming it."""
    failures = failures_of({find_link(topo, name) for name in denied})
    chosen = nodes(topo) if only is None else list(only)
    return {n.name: entries_of(topo, n, failures) for n in chosen if program is None or n.program == program}
