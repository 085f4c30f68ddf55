"""What the page shows of one reading (webview/snapshot.py, webview/model.py), from
counter values written out here.

The fabric: 1 plane x (2 leaves + 2 spines), 2 hosts per leaf. Its cabling, from
docs/addressing.md: a leaf's host ports are 1 and 2, its port to spine s is
2 + 1 + s; a spine's port to leaf l is 1 + l; a NIC's plane-0 port is 1.
"""

from __future__ import annotations

from fabric.topology import from_parameters
from webview.model import Drawing
from webview.snapshot import links_now, nic_rx_rates, switch_ports

TOPO = from_parameters(planes=1, spines=2, leaves=2, hosts_per_leaf=2)


def test_the_drawing_has_every_switch_and_cable_by_plane() -> None:
    d = Drawing(TOPO).to_json()
    assert d["switches"] == 8
    assert d["planes"] == [{"plane": 0, "spines": ["p0-spine0", "p0-spine1"], "leaves": ["p0-leaf0", "p0-leaf1"],
                            "linux": []}]
    assert [h["nic"] for h in d["hosts"]] == ["nic1", "nic2", "nic3", "nic4"]
    names = [k["name"] for k in d["links"]]
    assert sorted(names) == sorted(["p0-leaf0:p0-spine0", "p0-leaf0:p0-spine1", "p0-leaf1:p0-spine0",
                                    "p0-leaf1:p0-spine1", "nic1:p0-leaf0", "nic2:p0-leaf0", "nic3:p0-leaf1",
                                    "nic4:p0-leaf1"])


def test_states_and_loads_per_link() -> None:
    drawing = Drawing(TOPO)
    names = [k.name for k in drawing.links]
    # over 2 s: p0-leaf0 sent 30 packets to spine1 (its port 4), p0-spine1 sent 10 to leaf0 (its port 1);
    # nic1 sent 8 into plane 0, p0-leaf0 sent 6 to nic1 (its port 1)
    rates = {"p0-leaf0": {"FabricEgress.tx_port": {4: (30, 3000), 1: (6, 600)}},
             "p0-spine1": {"FabricEgress.tx_port": {1: (10, 1000)}},
             "nic1": {"NicEgress.plane_tx": {0: (8, 800)}},
             "nic3": {"NicIngress.plane_rx": {0: (40, 4000)}}}
    rows = dict(zip(names, links_now(drawing, ["p0-leaf1:p0-spine0"], ["p0-leaf1:p0-spine0", "nic2:p0-leaf0"],
                                     rates, 2.0), strict=True))
    assert rows["p0-leaf0:p0-spine1"] == ["up", 15.0, 5.0]
    assert rows["nic1:p0-leaf0"] == ["up", 4.0, 3.0]
    assert rows["p0-leaf0:p0-spine0"] == ["up", 0.0, 0.0]
    assert rows["p0-leaf1:p0-spine0"][0] == "down+denied"
    assert rows["nic2:p0-leaf0"][0] == "denied"
    assert nic_rx_rates(drawing, rates, 2.0) == {"nic1": 0.0, "nic2": 0.0, "nic3": 2000.0, "nic4": 0.0}
    without = links_now(drawing, ["nic4:p0-leaf1"], [], None, 0.0)
    assert without[names.index("nic4:p0-leaf1")] == ["down", None, None]


def test_a_switch_panel_names_each_port_and_its_counts() -> None:
    drawing = Drawing(TOPO)
    counts = {"FabricIngress.rx_port": {1: (100, 1)}, "FabricEgress.tx_port": {3: (50, 1)},
              "FabricEgress.trimmed": {3: (7, 1)}, "FabricEgress.ecn_marked": {3: (9, 1)},
              "FabricIngress.drops": {1: (2, 0)}}
    panel = switch_ports(drawing, "p0-leaf0", "fabric", counts, {"FabricEgress.tx_port": {3: (5, 1)}}, 0.5, {3: 12})
    by_port = {r["port"]: r for r in panel["ports"]}
    assert sorted(by_port) == [1, 2, 3, 4]
    assert (by_port[1]["peer"], by_port[1]["rx_packets"]) == ("nic1", 100)
    assert by_port[3] == {"port": 3, "link": "p0-leaf0:p0-spine0", "peer": "p0-spine0", "rx_packets": 0,
                          "rx_pps": 0.0, "tx_packets": 50, "tx_pps": 10.0, "trimmed_packets": 7,
                          "ce_marked_packets": 9, "max_qdepth": 12}
    assert by_port[4]["max_qdepth"] == 0
    assert [(d["counter"], d["packets"]) for d in panel["drops"]] == [("FabricIngress.drops", 2)]
    nic = switch_ports(drawing, "nic3", "nic", {"NicIngress.plane_rx": {0: (40, 4000)}}, None, 0.0, None)
    assert nic["ports"] == [{"port": 1, "link": "nic3:p0-leaf1", "peer": "p0-leaf1", "rx_packets": 40,
                             "tx_packets": 0}]
