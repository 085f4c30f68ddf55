"""The address plan at the edges of its ranges, against values written out by hand.

Why: fabric/plan.py is the one owner of uSIDs, carriers, addresses, MACs and EVs;
the dataplane tests use it on both sides (entries and expected frames), so a wrong
plan would pass there. Here every value is a literal worked out from
docs/addressing.md, at the corners of the plan (plane 7, leaf 511, spine 255, port
4095), and every position one past a corner must be refused.
"""

from __future__ import annotations

import pytest

from fabric import plan as P
from fabric.topology import Host, from_parameters


def test_global_usids_at_the_corners() -> None:
    assert P.leaf_usid(0, 0) == 0x0100
    assert P.leaf_usid(0, 511) == 0x02FF
    assert P.spine_usid(0, 0) == 0x0300
    assert P.spine_usid(0, 255) == 0x03FF
    assert P.leaf_usid(1, 0) == 0x0400
    assert P.leaf_usid(7, 0) == 0x1600
    assert P.leaf_usid(7, 511) == 0x17FF
    assert P.spine_usid(7, 0) == 0x1800
    assert P.spine_usid(7, 255) == 0x18FF
    # The old test copy gave leaf 512 of plane 0 the uSID of spine 0: the last leaf
    # and the first spine must differ, and leaf 512 does not exist.
    assert P.leaf_usid(0, 511) != P.spine_usid(0, 0)


def test_every_global_usid_is_unique_and_clear_of_the_local_ranges() -> None:
    usids = [P.leaf_usid(p, i) for p in range(8) for i in range(512)]
    usids += [P.spine_usid(p, j) for p in range(8) for j in range(256)]
    assert len(set(usids)) == len(usids) == 8 * 768
    assert min(usids) == 0x0100 and max(usids) == 0x18FF
    assert P.nic_usid(1) == 0xE001 and P.nic_usid(4095) == 0xEFFF
    assert P.ua_usid(1) == 0xF001 and P.ua_usid(4095) == 0xFFFF


@pytest.mark.parametrize("call", [
    lambda: P.leaf_usid(0, 512),
    lambda: P.leaf_usid(0, -1),
    lambda: P.leaf_usid(8, 0),
    lambda: P.spine_usid(0, 256),
    lambda: P.spine_usid(8, 255),
    lambda: P.spine_usid(-1, 0),
    lambda: P.nic_usid(0),
    lambda: P.nic_usid(4096),
    lambda: P.ua_usid(0),
    lambda: P.ua_usid(4096),
    lambda: P.locator(0),
    lambda: P.locator(0x10000),
    lambda: P.carrier([]),
    lambda: P.carrier([1] * 7),
    lambda: P.carrier([0x0100, 0]),
], ids=["leaf512", "leaf-1", "plane8-leaf", "spine256", "plane8-spine", "plane-1", "nic0", "nic4096",
        "ua0", "ua4096", "locator0", "locator17bit", "carrier0", "carrier7", "carrier-zero-usid"])
def test_usids_outside_the_plan_are_refused(call) -> None:
    with pytest.raises(P.PlanError, match="outside the address plan|carrier holds"):
        call()


def test_carriers_at_the_corners() -> None:
    assert P.ip(P.path_carrier(7, 511, 255, 0, 4095)) == "fcbb:bb00:17ff:18ff:1600:efff::"
    assert P.ip(P.path_carrier(0, 511, 0, 0, 1)) == "fcbb:bb00:2ff:300:100:e001::"
    assert P.ip(P.path_carrier(0, 0, 255, 511, 4095)) == "fcbb:bb00:100:3ff:2ff:efff::"
    assert P.ip(P.path_carrier(7, 511, None, 511, 4095)) == "fcbb:bb00:17ff:efff::"
    assert P.ip(P.path_carrier(3, 2, 7, 2, 1)) == "fcbb:bb00:a02:e001::"  # same leaf: the spine is not used
    assert P.path_carrier(7, 511, 255, 0, 4095) == 0xFCBB_BB00_17FF_18FF_1600_EFFF_0000_0000
    assert P.ip(P.locator(0x18FF)) == "fcbb:bb00:18ff::"
    assert P.ip(P.carrier([0xE001])) == "fcbb:bb00:e001::"


@pytest.mark.parametrize("args", [
    (8, 0, 0, 1, 1), (0, 512, 0, 0, 1), (0, 0, 256, 1, 1), (0, 0, 0, 512, 1),
    (0, 0, 0, 1, 4096), (0, 0, 0, 1, 0), (0, 0, None, 1, 1),
], ids=["plane8", "src-leaf512", "spine256", "dst-leaf512", "port4096", "port0", "no-spine"])
def test_carriers_outside_the_plan_are_refused(args) -> None:
    with pytest.raises(P.PlanError):
        P.path_carrier(*args)


def test_host_and_nic_addresses_at_the_corners() -> None:
    assert P.ip(P.host_addr(0, 1)) == "fd00:0:0:1::1"
    assert P.ip(P.host_addr(511, 4095)) == "fd00:0:1ff:fff::1"
    assert P.ip(P.host_prefix(511, 4095)) == "fd00:0:1ff:fff::"
    assert P.ip(P.gateway_addr(511, 4095)) == "fd00:0:1ff:fff::fe"
    assert P.ip(P.leaf_prefix(511)) == "fd00:0:1ff::"
    assert P.ip(P.nic_addr(0, 1)) == "fd00:1:0:1::1"
    assert P.ip(P.nic_addr(511, 4095)) == "fd00:1:1ff:fff::1"
    assert P.host_addr(511, 4095) != P.nic_addr(511, 4095)


@pytest.mark.parametrize("call", [
    lambda: P.host_addr(512, 1), lambda: P.host_addr(0, 0), lambda: P.host_addr(0, 4096),
    lambda: P.nic_addr(512, 1), lambda: P.nic_addr(0, 4096), lambda: P.nic_addr(-1, 1),
    lambda: P.leaf_prefix(512), lambda: P.gateway_addr(0, 4096),
], ids=["host-leaf512", "host-port0", "host-port4096", "nic-leaf512", "nic-port4096", "nic-leaf-1",
        "prefix-leaf512", "gateway-port4096"])
def test_addresses_outside_the_plan_are_refused(call) -> None:
    with pytest.raises(P.PlanError, match="outside the address plan"):
        call()


def test_macs_at_the_corners() -> None:
    # 02 | plane (4 bits) | tier (4 bits) | index (20 bits) | port (12 bits)
    assert P.mac_text(P.mac(0, P.LEAF, 0, 1)) == "02:01:00:00:00:01"
    assert P.mac_text(P.mac(7, P.LEAF, 511, 4095)) == "02:71:00:1f:ff:ff"
    assert P.mac_text(P.mac(7, P.SPINE, 255, 4095)) == "02:72:00:0f:ff:ff"
    assert P.mac_text(P.mac(0, P.SPINE, 0, 512)) == "02:02:00:00:02:00"
    assert P.mac_text(P.mac(7, P.NIC, (1 << 20) - 1, 8)) == "02:73:ff:ff:f0:08"
    assert P.mac(7, P.NIC, (1 << 20) - 1, 8) == 0x0273_FFFF_F008
    host = Host(index=5, leaf=1, port=2)
    assert P.mac_text(P.host_mac(host)) == "02:04:00:00:50:00"
    assert P.mac_text(P.nic_gateway_mac(host)) == "02:03:00:00:50:00"
    assert P.mac_text(P.nic_plane_mac(host, 7)) == "02:73:00:00:50:08"
    # Leaf 511 and spine 0 of a plane, port 1: different tiers, different MACs.
    assert P.mac(0, P.LEAF, 511, 1) != P.mac(0, P.SPINE, 0, 1)


@pytest.mark.parametrize("args", [
    (8, P.LEAF, 0, 1), (0, 0, 0, 1), (0, 5, 0, 1), (0, P.NIC, 1 << 20, 1), (0, P.LEAF, 0, 4096), (0, P.LEAF, -1, 0),
], ids=["plane8", "tier0", "tier5", "index2^20", "port4096", "index-1"])
def test_macs_outside_the_plan_are_refused(args) -> None:
    with pytest.raises(P.PlanError, match="outside the address plan"):
        P.mac(*args)


def test_generated_evs_at_the_corners() -> None:
    # plane (15..13) | spine (12..5) | entropy (4..0)
    assert P.generated_ev(0, 0, 0) == 0x0000
    assert P.generated_ev(7, 255, 31) == 0xFFFF
    assert P.generated_ev(7, 0, 0) == 0xE000
    assert P.generated_ev(0, 255, 0) == 0x1FE0
    assert P.generated_ev(3, 2, 1) == 0x6041
    assert P.explicit_ev(0) == 0x1000 and P.explicit_ev(255) == 0x10FF


@pytest.mark.parametrize("call", [
    lambda: P.generated_ev(8, 0), lambda: P.generated_ev(0, 256), lambda: P.generated_ev(0, 0, 32),
    lambda: P.explicit_ev(256), lambda: P.explicit_ev(-1), lambda: P.nic_plane_port(8),
], ids=["plane8", "spine256", "entropy32", "ev256", "ev-1", "nic-plane8"])
def test_evs_outside_the_plan_are_refused(call) -> None:
    with pytest.raises(P.PlanError, match="outside the address plan"):
        call()


def test_nic_evs_written_out_for_a_small_fabric() -> None:
    """2 planes x 3 spines, 4 EVs per NIC: EV k on plane k mod 2; host h starts at spine
    (h * ceil(4 / 2)) mod 3 and takes the next spine every 2 EVs (docs/addressing.md)."""
    topo = from_parameters(planes=2, spines=3, leaves=2, hosts_per_leaf=2, evs_per_nic=4)
    h1, h2, h3, h4 = topo.hosts
    as_tuples = lambda evs: [(e.ev, e.plane, e.spine) for e in evs]  # noqa: E731
    assert as_tuples(P.nic_evs(topo, h1)) == [(0x1000, 0, 0), (0x1001, 1, 0), (0x1002, 0, 1), (0x1003, 1, 1)]
    assert as_tuples(P.nic_evs(topo, h2)) == [(0x1000, 0, 2), (0x1001, 1, 2), (0x1002, 0, 0), (0x1003, 1, 0)]
    assert as_tuples(P.nic_evs(topo, h3, h1)) == [(0x1000, 0, 1), (0x1001, 1, 1), (0x1002, 0, 2), (0x1003, 1, 2)]
    gen = from_parameters(planes=2, spines=3, leaves=2, hosts_per_leaf=2, evs_per_nic=4, ev_mode="generated")
    g2 = gen.hosts[1]
    assert as_tuples(P.nic_evs(gen, g2)) == [(0x0041, 0, 2), (0x2041, 1, 2), (0x0001, 0, 0), (0x2001, 1, 0)]
    # EVs over one (plane, spine) pair run the entropy field up from 1 (never EV 0).
    one = from_parameters(planes=1, spines=1, leaves=1, hosts_per_leaf=2, evs_per_nic=3, ev_mode="generated")
    assert as_tuples(P.nic_evs(one, one.hosts[0])) == [(0x0001, 0, 0), (0x0002, 0, 0), (0x0003, 0, 0)]


def test_port_numbers_of_the_cabling() -> None:
    topo = from_parameters(planes=1, spines=4, leaves=3, hosts_per_leaf=5)
    assert [P.leaf_uplink_port(topo, s) for s in range(4)] == [6, 7, 8, 9]
    assert [P.spine_port(i) for i in range(3)] == [1, 2, 3]
    assert [P.nic_plane_port(p) for p in range(8)] == [1, 2, 3, 4, 5, 6, 7, 8]
    assert P.highest_port(topo) == ("leaf", 9)
    assert P.v1model_port_problem(topo) is None
    wide = from_parameters(planes=1, spines=256, leaves=2, hosts_per_leaf=300)
    assert P.highest_port(wide) == ("leaf", 556)
    assert "port 556" in (P.v1model_port_problem(wide) or "")
