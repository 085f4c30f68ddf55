"""On BMv2: a congested port trims only the traffic classes the topology names.

The same leaf and frames as tests/dataplane/fabric/test_fabric_trim_class.py (the
embedded target), on ``simple_switch_grpc`` filled with the controller's entries over
P4Runtime: the uplink to spine 0 is limited to 50 packets/s and a burst of MRC-lite
data (DSCP 0, even PSNs) and RoCEv2 data (DSCP 26, odd PSNs, the same UDP port, BTH
and RETH), all ECT(0), goes in back to back. Packet k finds at most k queued; at most
one or two leave before the burst is queued. Then the reconciler rewrites the leaf for
a fabric that trims DSCP 26 instead, and the same burst is cut the other way.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from scapy.layers.l2 import Ether

from tests.dataplane.bmv2.bmv2_leaf import Bmv2Leaf
from tests.dataplane.fabric.test_fabric_trim_class import CE, MRC_TC, ROCE_TC, UPLINK, cut, mixed, topo, whole
from tests.dataplane.fabric_net import switch_entries
from tests.dataplane.packets import BTH

pytestmark = [pytest.mark.root, pytest.mark.bmv2]

LEAF_NAME = "p0-leaf0"
PORTS = (1, 2, 3, 4)
RATE = 50.0  # packets/s: 16 packets take 0.32 s to leave
N = 16


@pytest.fixture(scope="module")
def bmv2(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Bmv2Leaf]:
    from controller.reconcile import Reconciler

    entries = switch_entries(topo(), LEAF_NAME)
    with Bmv2Leaf(tmp_path_factory.mktemp("bmv2-trim-class"), PORTS, LEAF_NAME, tag="k") as leaf:
        rep = asyncio.run(Reconciler([leaf.target]).run({LEAF_NAME: entries}))
        assert not rep.failed and rep.writes == len(entries), rep.summary()
        leaf.set_queue_rate(UPLINK, RATE)
        yield leaf


def _burst(leaf: Bmv2Leaf) -> dict[int, bytes]:
    leaf.drain()
    out = leaf.burst(1, mixed(N), expect=N, wait=3.0)
    assert [p for p, _ in out] == [UPLINK] * N, [p for p, _ in out]
    by_psn = {Ether(d)[BTH].psn: d for _, d in out}
    assert sorted(by_psn) == list(range(N))
    return by_psn


def _trimmed(leaf: Bmv2Leaf) -> int:
    from controller.counters import read_switch

    return asyncio.run(read_switch(leaf.target))["FabricEgress.trimmed"].get(UPLINK, (0, 0))[0]


def test_bmv2_trims_mrc_lite_data_and_not_roce_data(bmv2: Bmv2Leaf) -> None:
    before = _trimmed(bmv2)
    by_psn = _burst(bmv2)
    for psn in range(1, N, 2):  # RoCE: never cut; CE once it found more than 8 (PSN 11 on)
        assert by_psn[psn] in (whole(psn, ROCE_TC), whole(psn, ROCE_TC, outer_ecn=CE)), f"psn {psn}"
        if psn >= 11:
            assert by_psn[psn] == whole(psn, ROCE_TC, outer_ecn=CE), f"psn {psn}"
    for psn in range(0, N, 2):  # MRC-lite: whole up to PSN 4, cut from PSN 8 on
        assert by_psn[psn] in (whole(psn, MRC_TC), cut(psn, MRC_TC)), f"psn {psn}"
        if psn <= 4 or psn >= 8:
            assert by_psn[psn] == (whole(psn, MRC_TC) if psn <= 4 else cut(psn, MRC_TC)), f"psn {psn}"
    assert _trimmed(bmv2) - before == sum(by_psn[p] == cut(p, MRC_TC) for p in range(0, N, 2))


def test_bmv2_configured_to_trim_dscp_26_trims_that_class_only(bmv2: Bmv2Leaf) -> None:
    from controller.reconcile import Reconciler

    entries = switch_entries(topo((26,)), LEAF_NAME)
    rep = asyncio.run(Reconciler([bmv2.target]).run({LEAF_NAME: entries}))
    assert not rep.failed and rep.writes == 2, rep.summary()  # trim_class: DSCP 0 out, 26 in
    by_psn = _burst(bmv2)
    for psn in range(0, N, 2):  # MRC-lite: never cut; CE from PSN 10 on
        assert by_psn[psn] in (whole(psn, MRC_TC), whole(psn, MRC_TC, outer_ecn=CE)), f"psn {psn}"
        if psn >= 10:
            assert by_psn[psn] == whole(psn, MRC_TC, outer_ecn=CE), f"psn {psn}"
    for psn in range(1, N, 2):  # RoCE: whole up to PSN 3, cut from PSN 7 on
        assert by_psn[psn] in (whole(psn, ROCE_TC), cut(psn, ROCE_TC)), f"psn {psn}"
        if psn <= 3 or psn >= 7:
            assert by_psn[psn] == (whole(psn, ROCE_TC) if psn <= 3 else cut(psn, ROCE_TC)), f"psn {psn}"
