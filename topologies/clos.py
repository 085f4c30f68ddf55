"""The multiplane 2-tier Clos as a Mininet topology, built from the fabric model.

Why from the model: every table entry is computed from a ``Topology``
(fabric/topology.py, a topology file or parameters; the entries in fabric/entries.py);
the Mininet network must be cabled exactly as those entries assume. So this Topo takes
the same ``Topology`` and cables it with the model's own list (fabric/names.py
``cables``, on the plan's port numbers, fabric/plan.py, and the links of
fabric/paths.py): every host's only link goes to port 0 of its own NIC node, every NIC
has one link per plane to its leaf, every leaf one uplink per spine, and a Linux SRv6
node (topologies/hosts.py) stands on its leaf port with a plain host behind it. Switch
options carry what the switch nodes (topologies/p4switch.py) need: program, device id,
gRPC port. ``inventory_of`` gives the running network's state file
(controller/network_state.py) from the started nodes.

``MrcClos(topology=...)`` takes a model; ``mrcclos(planes=2, spines=1, leaves=2,
hosts=1)`` or ``mrcclos(file="topologies/x.yaml")`` is what Mininet's command line
calls for ``--topo mrcclos,...`` (topologies/mn_custom.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mininet.topo import Topo

from controller.targets import DEFAULT_GRPC_BASE, SwitchTarget
from fabric import plan as P
from fabric.entries import nodes
from fabric.names import DEFAULT_PREFIX, NodeNames, cables, inner_host, node_names
from fabric.resolve import Shape, resolve
from fabric.srv6 import linux_node_locator, linux_node_routes
from fabric.topology import LinuxHost, Topology
from topologies.hosts import FabricHost, LinuxInnerHost, LinuxSrv6Node
from controller.network_state import Inventory, LinkEnds


class MrcClos(Topo):
    """Mininet topology of ``topology``: hosts, NICs, leaves and spines, cabled by the plan.

    ``grpc_base``: switch k (the model's ordinal, fabric/entries.py) serves P4Runtime on
    ``127.0.0.1:grpc_base + k`` with device id ``k + 1`` (controller/targets.py's
    default addresses); 0 lets every switch take a free port when it starts.
    """

    def build(self, topology: Topology | None = None, prefix: str = DEFAULT_PREFIX,
              grpc_base: int = DEFAULT_GRPC_BASE, run_dir: str | Path | None = None, **_: Any) -> None:
        topo = topology if topology is not None else resolve().topology
        names = node_names(topo, prefix)
        self.topology = topo
        self.names = names
        for n in nodes(topo):
            self.addSwitch(names.mininet(n.name), program=n.program, device_id=n.ordinal + 1,
                           grpc_port=grpc_base + n.ordinal if grpc_base else 0, run_dir=run_dir,
                           mrc_name=n.name)
        for h in topo.hosts:
            self.addHost(names.mininet(h.name), cls=FabricHost, mrc_name=h.name,
                         mac=P.mac_text(P.host_mac(h)), ipv6=P.ip(P.host_addr(h.leaf, h.port)),
                         gateway=P.ip(P.gateway_addr(h.leaf, h.port)))
        for lx in topo.linux_hosts:
            self._add_linux_node(topo, names, lx)
        for c in cables(topo, names):
            self.addLink(c.a, c.b, port1=c.a_port, port2=c.b_port)

    def _add_linux_node(self, topo: Topology, names: NodeNames, lx: LinuxHost) -> None:
        """A Linux SRv6 node on its leaf port, and the plain host behind it."""
        host_addr, gw = P.host_addr(lx.leaf, lx.port), P.gateway_addr(lx.leaf, lx.port)
        routes = [(r.prefix, r.carrier) for r in linux_node_routes(topo, lx)]
        self.addHost(names.mininet(lx.name), cls=LinuxSrv6Node, mrc_name=lx.name,
                     mac=P.mac_text(P.linux_host_mac(topo, lx)),
                     leaf_mac=P.mac_text(P.mac(lx.plane, P.LEAF, lx.leaf, lx.port)), inner_gw=P.ip(gw),
                     routes=routes, locator=linux_node_locator(lx))
        inner = inner_host(lx.name)
        self.addHost(names.mininet(inner), cls=LinuxInnerHost, mrc_name=inner,
                     mac=P.mac_text(P.mac(lx.plane, P.HOST, len(topo.hosts) + len(topo.linux_hosts) + lx.index, 0)),
                     ipv6=P.ip(host_addr), gateway=P.ip(gw))


def mrcclos(planes: int | None = None, spines: int | None = None, leaves: int | None = None,
            hosts: int | None = None, file: str | None = None, prefix: str = DEFAULT_PREFIX,
            grpc_base: int = DEFAULT_GRPC_BASE) -> MrcClos:
    """``--topo mrcclos,planes=2,spines=1,leaves=2,hosts=1`` (defaults: the default fabric)
    or ``--topo mrcclos,file=topologies/x.yaml``."""
    shape = Shape(planes=planes, spines=spines, leaves=leaves, hosts_per_leaf=hosts)
    topo = resolve(Path(file) if file is not None else None, shape).topology
    return MrcClos(topology=topo, prefix=prefix, grpc_base=grpc_base)


def _server_of(node: Any) -> str | None:
    """ssh destination of a node on another server (topologies/cluster.py), None here."""
    server = getattr(node, "cluster_server", None)
    return None if server is None or server.local else str(server.dest)


def inventory_of(topo: Topology, names: NodeNames, switches: dict[str, Any], source: dict[str, Any]) -> Inventory:
    """The network state file's content: every switch's gRPC address and device id (from
    the started Mininet switch nodes ``switches``, by Mininet name) and every
    controller link's Mininet interfaces."""
    targets = {}
    for n in nodes(topo):
        sw = switches[names.mininet(n.name)]
        targets[n.name] = SwitchTarget(n.name, sw.grpc_addr, sw.device_id, n.program, sw.target,
                                       getattr(sw, "tls_dir", None))
    links = {c.name: LinkEnds(c.a, c.a_intf, c.b, c.b_intf, a_server=_server_of(switches.get(c.a)),
                              b_server=_server_of(switches.get(c.b)))
             for c in cables(topo, names) if c.name is not None}
    return Inventory(targets, source, links)
