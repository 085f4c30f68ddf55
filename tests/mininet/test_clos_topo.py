"""The Mininet topology of the fabric: names, ports and links (no root, no network).

Expected cabling is written out by hand from the address plan's rules (docs/addressing.md):
leaf host ports 1..H, leaf uplink to spine j at H + 1 + j, spine port to leaf i at 1 + i,
NIC host port 0, NIC plane p port 1 + p.
"""

from __future__ import annotations

import pytest

from fabric.topology import TopologyError, from_parameters
from fabric.resolve import topology_source
from topologies.clos import MrcClos, mrcclos
from fabric.names import cables, node_names
from topologies.p4switch import choose_target, switch_class, EmbeddedP4Switch


def _links(t: MrcClos) -> set[tuple[str, int, str, int]]:
    out = set()
    for _a, _b, info in t.links(withInfo=True):
        out.add((info["node1"], info["port1"], info["node2"], info["port2"]))
    return out


def test_small_clos_is_cabled_as_the_plan_says() -> None:
    t = mrcclos(planes=2, spines=1, leaves=2, hosts=2)
    assert sorted(t.hosts()) == ["h1", "h2", "h3", "h4"]
    assert sorted(t.switches()) == sorted(
        ["nic1", "nic2", "nic3", "nic4", "p0-leaf0", "p0-leaf1", "p0-spine0", "p1-leaf0", "p1-leaf1", "p1-spine0"])
    assert _links(t) == {
        # each host to port 0 of its own NIC
        ("h1", 0, "nic1", 0), ("h2", 0, "nic2", 0), ("h3", 0, "nic3", 0), ("h4", 0, "nic4", 0),
        # NIC plane port 1 + p to its leaf's host port (h1, h2 on leaf 0; h3, h4 on leaf 1)
        ("nic1", 1, "p0-leaf0", 1), ("nic1", 2, "p1-leaf0", 1), ("nic2", 1, "p0-leaf0", 2), ("nic2", 2, "p1-leaf0", 2),
        ("nic3", 1, "p0-leaf1", 1), ("nic3", 2, "p1-leaf1", 1), ("nic4", 1, "p0-leaf1", 2), ("nic4", 2, "p1-leaf1", 2),
        # leaf uplink port 2 + 1 + 0 = 3 to the spine's port 1 + leaf
        ("p0-leaf0", 3, "p0-spine0", 1), ("p0-leaf1", 3, "p0-spine0", 2),
        ("p1-leaf0", 3, "p1-spine0", 1), ("p1-leaf1", 3, "p1-spine0", 2),
    }


def test_switch_and_host_options_come_from_the_plan() -> None:
    t = mrcclos(planes=2, spines=1, leaves=2, hosts=2, grpc_base=50100)
    leaf = t.nodeInfo("p1-leaf0")
    # ordinal: plane 0 leaves, plane 0 spine, plane 1 leaves, ... so p1-leaf0 is the 4th switch
    assert (leaf["program"], leaf["device_id"], leaf["grpc_port"], leaf["mrc_name"]) == ("fabric", 4, 50103, "p1-leaf0")
    nic = t.nodeInfo("nic3")
    assert (nic["program"], nic["device_id"], nic["mrc_name"]) == ("nic", 9, "nic3")
    h3 = t.nodeInfo("h3")  # h3: first host of leaf 1, leaf port 1
    assert (h3["ipv6"], h3["gateway"], h3["mac"]) == ("fd00:0:1:1::1", "fd00:0:1:1::fe", "02:04:00:00:20:00")
    assert mrcclos(planes=1, spines=1, leaves=1, hosts=1, grpc_base=0).nodeInfo("p0-leaf0")["grpc_port"] == 0


def test_controller_links_keep_their_names() -> None:
    topo = from_parameters(planes=1, spines=2, leaves=2, hosts_per_leaf=1)
    names = node_names(topo, "mrcab")
    all_cables = cables(topo, names)
    by_name = {c.name: c for c in all_cables if c.name is not None}
    c = by_name["p0-leaf1:p0-spine1"]
    assert (c.a_intf, c.b_intf) == ("mrcabp0l1-eth3", "mrcabp0s1-eth2")
    c = by_name["nic2:p0-leaf1"]
    assert (c.a_intf, c.b_intf) == ("mrcabn2-eth1", "mrcabp0l1-eth1")
    host_links = [(c.a_intf, c.b_intf) for c in all_cables if c.name is None]
    assert host_links == [("mrcabh1-eth0", "mrcabn1-eth0"), ("mrcabh2-eth0", "mrcabn2-eth0")]
    assert names.controller("mrcabp0s1") == "p0-spine1" and names.mininet("h2") == "mrcabh2"


def test_names_refuse_bad_prefixes_and_long_interfaces() -> None:
    topo = from_parameters(planes=2, spines=1, leaves=2, hosts_per_leaf=1)
    with pytest.raises(TopologyError, match="prefix 'xyz'"):
        node_names(topo, "xyz")
    with pytest.raises(TopologyError, match="prefix"):
        node_names(topo, "mrc-1")
    big = from_parameters(planes=8, spines=2, leaves=200, hosts_per_leaf=40)
    with pytest.raises(TopologyError, match="longer than 15 characters"):
        node_names(big, "mrcabcd")
    node_names(from_parameters(), "mrcabc")  # the default fabric fits with a test prefix


def test_without_a_prefix_every_node_has_the_controllers_name() -> None:
    topo = from_parameters()  # the default fabric: 4 planes x (2 leaves + 2 spines), 2 hosts per leaf
    names = node_names(topo)
    assert names.mininet("h1") == "h1" and names.mininet("p3-spine1") == "p3-spine1"
    assert names.mininet("nic4") == "nic4" and names.controller("p0-leaf1") == "p0-leaf1"
    by_name = {c.name: c for c in cables(topo, names) if c.name}
    assert (by_name["p0-leaf0:p0-spine1"].a_intf, by_name["p0-leaf0:p0-spine1"].b_intf) == (
        "p0-leaf0-eth4", "p0-spine1-eth1")
    # p0-spine10-eth12 would not fit Linux's 15 characters: the compact names, still without a prefix
    big = node_names(from_parameters(planes=2, spines=11, leaves=12, hosts_per_leaf=2))
    assert big.mininet("p1-spine10") == "p1s10" and big.mininet("h3") == "h3" and big.mininet("nic24") == "n24"


def test_topology_source_gives_back_the_same_topology() -> None:
    topo = from_parameters(planes=3, spines=2, leaves=2, hosts_per_leaf=1, evs_per_nic=12)
    src = topology_source(topo)
    assert from_parameters(**src["parameters"]) == topo
    assert from_parameters(**src["parameters"]) != from_parameters(planes=3, spines=2, leaves=2, hosts_per_leaf=1)


def test_embedded_target_without_bmv2_and_a_clear_refusal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    assert choose_target("auto") == "embedded"
    assert switch_class("auto") is EmbeddedP4Switch
    with pytest.raises(ValueError, match="simple_switch_grpc, p4c-bm2-ss not on the PATH"):
        choose_target("bmv2")
    with pytest.raises(ValueError, match="choose one of"):
        choose_target("ovs")


def test_free_ports_are_never_handed_out_twice() -> None:
    from topologies.p4switch import free_port

    ports = [free_port() for _ in range(200)]
    assert len(set(ports)) == 200
