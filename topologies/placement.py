"""Which server runs each P4 switch of a fabric spread over several machines.

Why a policy of its own: a link between two servers is a tunnel (an encapsulation per
frame, a hop through both kernels and the wire), a link on one server is a veth. The
default ``plane`` keeps each plane whole on one server: a plane's leaf-spine links
never leave it, and only the NIC-to-leaf links cross servers (one per host and plane).
``round-robin`` spreads the leaves and spines one by one (most fabric links cross; for
trying the tunnels, or to even out a lopsided fabric). A placement file names the
server of chosen switches or whole planes.

A host goes where the placement file puts it (``h3: SERVER``), else it stays on the
local machine, where the runner runs; its NIC always goes with it (a host's link to
its NIC is a veth), and its endpoints run there. ``LOCAL`` is the local machine's
server name, as in Mininet's cluster edition; it may also appear in the server list
to give it planes of its own.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import yaml

from fabric import plan as P
from fabric.entries import nodes
from fabric.topology import Topology, TopologyError

LOCAL = "localhost"
PLANE = "plane"
ROUND_ROBIN = "round-robin"
POLICIES = (PLANE, ROUND_ROBIN)
_PLANE_KEY = re.compile(r"^plane(\d+)$")


class PlacementError(TopologyError):
    """A placement that cannot be used; the message names the entry and the fix."""


def place(topo: Topology, servers: Sequence[str], policy: str | Path = PLANE) -> dict[str, str]:
    """Server of every P4 switch of ``topo`` (controller names), by ``policy``: ``plane``,
    ``round-robin`` or the path of a placement file."""
    return place_nodes(topo, servers, policy)[0]


def place_nodes(topo: Topology, servers: Sequence[str],
                policy: str | Path = PLANE) -> tuple[dict[str, str], dict[str, str]]:
    """Server of every P4 switch and of every host of ``topo`` (controller names), by
    ``policy``; the policies keep the hosts here, a placement file may move them."""
    if not servers:
        raise PlacementError("no servers to place on: give --servers a,b,c")
    here = {h.name: LOCAL for h in topo.hosts}
    if str(policy) == PLANE:
        return {n.name: LOCAL if n.tier == P.NIC else servers[n.plane % len(servers)] for n in nodes(topo)}, here
    if str(policy) == ROUND_ROBIN:
        fabric = [n for n in nodes(topo) if n.tier != P.NIC]
        where = {n.name: servers[k % len(servers)] for k, n in enumerate(fabric)}
        return {n.name: where.get(n.name, LOCAL) for n in nodes(topo)}, here
    return place_from_file(topo, servers, Path(policy))


def place_from_file(topo: Topology, servers: Sequence[str], path: Path) -> tuple[dict[str, str], dict[str, str]]:
    """A placement file: YAML mapping of switch names (``p0-leaf1``), whole planes
    (``plane2``) or hosts (``h3``: the host and its NIC) to servers; a switch's own
    line wins over its plane's. Switches and hosts not named stay on the local
    machine. (switches, hosts)."""
    if not path.is_file():
        raise PlacementError(f"--placement {path}: no such file; give plane, round-robin or a YAML file "
                             "mapping switches or planes (plane0: SERVER) to servers")
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise PlacementError(f"{path}: not YAML: {exc}") from None
    if not isinstance(data, dict):
        raise PlacementError(f"{path}: must map switch names or planes to servers, e.g. 'plane0: {servers[0]}'")
    allowed = [*servers, LOCAL]
    planes: dict[int, str] = {}
    own: dict[str, str] = {}
    hosts = {h.name: LOCAL for h in topo.hosts}
    for key, server in data.items():
        key = str(key)
        if str(server) not in allowed:
            raise PlacementError(f"{path}: {key}: server {server!r} is not one of --servers "
                                 f"({', '.join(allowed)})")
        _place_entry(topo, path, key, str(server), planes, own, hosts)
    nic_of = {h.nic: h.name for h in topo.hosts}
    switches = {n.name: hosts[nic_of[n.name]] if n.tier == P.NIC else own.get(n.name, planes.get(n.plane, LOCAL))
                for n in nodes(topo)}
    return switches, hosts


def _place_entry(topo: Topology, path: Path, key: str, server: str, planes: dict[int, str], own: dict[str, str],
                 hosts: dict[str, str]) -> None:
    """One line of a placement file into ``planes``, ``own`` (switches) or ``hosts``."""
    known = {n.name: n for n in nodes(topo)}
    m = _PLANE_KEY.match(key)
    if m is not None:
        if int(m.group(1)) >= topo.planes:
            raise PlacementError(f"{path}: {key}: the fabric has planes 0 to {topo.planes - 1}")
        planes[int(m.group(1))] = server
    elif key in hosts:
        hosts[key] = server
    elif key not in known:
        raise PlacementError(f"{path}: {key}: no such switch or host (switches are named as the controller "
                             "names them, e.g. p0-leaf0, p1-spine1, hosts h1, h2, ...; or give a plane: plane0)")
    elif known[key].tier == P.NIC:
        host = next(h.name for h in topo.hosts if h.nic == key)
        raise PlacementError(f"{path}: {key}: a NIC runs where its host runs: place the host ({host}: {server})")
    else:
        own[key] = server


def crossing_links(topo: Topology, where: dict[str, str]) -> int:
    """How many fabric links (NIC-leaf and leaf-spine) join switches of two servers."""
    from fabric.names import cables, node_names

    names = node_names(topo, "")
    return sum(1 for c in cables(topo, names)
               if c.name is not None and where.get(c.a, LOCAL) != where.get(c.b, LOCAL))
