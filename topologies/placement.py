"""Which server runs each P4 switch of a fabric spread over several machines.

Why a policy of its own: a link between two servers is a tunnel (an encapsulation per
frame, a hop through both kernels and the wire), a link on one server is a veth. The
default ``plane`` keeps each plane whole on one server: a plane's leaf-spine links
never leave it, and only the NIC-to-leaf links cross servers (one per host and plane).
``round-robin`` spreads the leaves and spines one by one (most fabric links cross; for
trying the tunnels, or to even out a lopsided fabric). A placement file names the
server of chosen switches or whole planes.

The hosts and their NICs always stay on the local machine, where the runner, the
endpoints and the demo run: a host's link to its NIC is a veth. ``LOCAL`` is the
local machine's server name, as in Mininet's cluster edition; it may also appear in
the server list to give it planes of its own.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import yaml

from fabric import plan as P
from fabric.entries import nodes
from fabric.topology import Topology

LOCAL = "localhost"
PLANE = "plane"
ROUND_ROBIN = "round-robin"
POLICIES = (PLANE, ROUND_ROBIN)
_PLANE_KEY = re.compile(r"^plane(\d+)$")


class PlacementError(ValueError):
    """A placement that cannot be used; the message names the entry and the fix."""


def place(topo: Topology, servers: Sequence[str], policy: str | Path = PLANE) -> dict[str, str]:
    """Server of every P4 switch of ``topo`` (controller names), by ``policy``: ``plane``,
    ``round-robin`` or the path of a placement file."""
    if not servers:
        raise PlacementError("no servers to place on: give --servers a,b,c")
    if str(policy) == PLANE:
        return {n.name: LOCAL if n.tier == P.NIC else servers[n.plane % len(servers)] for n in nodes(topo)}
    if str(policy) == ROUND_ROBIN:
        fabric = [n for n in nodes(topo) if n.tier != P.NIC]
        where = {n.name: servers[k % len(servers)] for k, n in enumerate(fabric)}
        return {n.name: where.get(n.name, LOCAL) for n in nodes(topo)}
    return place_from_file(topo, servers, Path(policy))


def place_from_file(topo: Topology, servers: Sequence[str], path: Path) -> dict[str, str]:
    """A placement file: YAML mapping of switch names (``p0-leaf1``) or whole planes
    (``plane2``) to servers; a switch's own line wins over its plane's. Switches not
    named stay on the local machine."""
    if not path.is_file():
        raise PlacementError(f"--placement {path}: no such file; give plane, round-robin or a YAML file "
                             "mapping switches or planes (plane0: SERVER) to servers")
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise PlacementError(f"{path}: not YAML: {exc}") from None
    if not isinstance(data, dict):
        raise PlacementError(f"{path}: must map switch names or planes to servers, e.g. 'plane0: {servers[0]}'")
    known = {n.name: n for n in nodes(topo)}
    allowed = [*servers, LOCAL]
    planes: dict[int, str] = {}
    own: dict[str, str] = {}
    for key, server in data.items():
        key = str(key)
        if str(server) not in allowed:
            raise PlacementError(f"{path}: {key}: server {server!r} is not one of --servers "
                                 f"({', '.join(allowed)})")
        m = _PLANE_KEY.match(key)
        if m is not None:
            if int(m.group(1)) >= topo.planes:
                raise PlacementError(f"{path}: {key}: the fabric has planes 0 to {topo.planes - 1}")
            planes[int(m.group(1))] = str(server)
        elif key not in known:
            raise PlacementError(f"{path}: {key}: no such switch (switches are named as the controller names "
                                 "them, e.g. p0-leaf0, p1-spine1; or give a plane: plane0)")
        elif known[key].tier == P.NIC and str(server) != LOCAL:
            raise PlacementError(f"{path}: {key}: a NIC stays on the local machine with its host")
        else:
            own[key] = str(server)
    return {n.name: own.get(n.name, planes.get(n.plane, LOCAL) if n.tier != P.NIC else LOCAL)
            for n in nodes(topo)}


def crossing_links(topo: Topology, where: dict[str, str]) -> int:
    """How many fabric links (NIC-leaf and leaf-spine) join switches of two servers."""
    from fabric.names import cables, node_names

    names = node_names(topo, "")
    return sum(1 for c in cables(topo, names)
               if c.name is not None and where.get(c.a, LOCAL) != where.get(c.b, LOCAL))
