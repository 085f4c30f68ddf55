"""A trimmed packet overtakes the data queued ahead of it, on the embedded target and on BMv2.

Why: trimming only pays off if the header-only packet reaches the receiver before the
data queued in front of it, so the receiver asks for the payload again at once. v1model
learns the queue depth only after the queue (docs/fabric.md, "Trimming in v1model"), so
the packet is cut where it found the deep queue and its trim mark gets priority 7 at
every switch after that (``dscp_priority``); both targets then serve priority 7 first
(BMv2: ``simple_switch_grpc -- --priority-queues 8``).

Here one leaf (``p0-leaf0`` of the dataplane tests' tiny fabric, with trimming on) has
its uplink to spine 0 limited to 50 packets/s. Ten whole data packets go in back to
back, then a packet the upstream switch already trimmed (header only, trim DSCP). At
the far end of the uplink the trimmed packet arrives first or second (the first data
packet may already be on the wire), every packet arrives, and the data that found
more than the threshold queued is trimmed too, to the same bytes on both targets.
The depth a packet sees is that of its own priority's queue (BMv2's ``enq_qdepth``),
so the already trimmed packet finds an empty queue and is not counted again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Ether

from fabric.plan import LEAF, NIC
from fabric.topology import from_parameters
from tests.dataplane.bmv2.bmv2_leaf import Bmv2Leaf
from tests.dataplane.packets import BTH, L2, RETH, encapsulated, ipv6, mrc_write, usid_carrier
from tests.dataplane.fabric_net import FABRIC_P4, load, mac, switch_entries

LEAF_NAME = "p0-leaf0"
PORTS = (1, 2, 3, 4)
UPLINK = 3  # to spine 0
RATE = 50.0  # packets/s: ten packets take 0.2 s to leave
THRESHOLD = 4
TRIM_DSCP = 62  # the controller's default trim mark (docs/packet-formats.md)
DATA = 10
MARKED_PSN = 100
HOST_A, HOST_B, NIC_A = "fd00:0:0:1::1", "fd00:0:1:1::1", "fd00:1:0:1::1"
IN_L2 = L2(mac(0, NIC, 0, 1), mac(0, LEAF, 0, 1))
DA_IN = usid_carrier([0x0100, 0x0300, 0x0101, 0xE001])  # leaf 0, spine 0, leaf 1, NIC 1
PAYLOAD = bytes(range(256)) * 4
TOPO = from_parameters(name="tiny", planes=1, spines=2, leaves=2, hosts_per_leaf=2, trim_threshold=THRESHOLD)


def _data(psn: int) -> bytes:
    inner = ipv6(HOST_A, HOST_B) / mrc_write(ev=0x2001, psn=psn, payload=PAYLOAD, vaddr=0x10000 + psn * 1024)
    return bytes(encapsulated(IN_L2, NIC_A, DA_IN, inner, fl=0x2001))


def _already_trimmed() -> bytes:
    """A data packet as a trimming switch upstream leaves it: no payload, RETH's length
    still the payload's, the trim DSCP in the outer traffic class."""
    inner = ipv6(HOST_A, HOST_B) / mrc_write(ev=0x2001, psn=MARKED_PSN, vaddr=0x10000)
    pkt = Ether(bytes(encapsulated(IN_L2, NIC_A, DA_IN, inner, tc=TRIM_DSCP << 2, fl=0x2001)))
    pkt[RETH].dma_len = len(PAYLOAD)
    return bytes(pkt)


def _frames() -> list[bytes]:
    return [_data(psn) for psn in range(DATA)] + [_already_trimmed()]


def _check(out: list[tuple[int, bytes]], trimmed_count: int) -> None:
    assert [p for p, _ in out] == [UPLINK] * (DATA + 1), [p for p, _ in out]
    order = [Ether(d)[BTH].psn for _, d in out]
    assert sorted(order) == [*range(DATA), MARKED_PSN]
    assert order.index(MARKED_PSN) <= 1, order  # ahead of at least 8 data packets queued before it
    # header only: outer IPv6 40 + inner IPv6 40 + UDP 8 + BTH 12 + RETH 16 after Ethernet
    short = [Ether(d)[BTH].psn for _, d in out if len(d) == 14 + 40 + 40 + 8 + 12 + 16]
    assert MARKED_PSN in short
    assert all(Ether(d)[IPv6].tc >> 2 == TRIM_DSCP for _, d in out if Ether(d)[BTH].psn in short)
    # the last data packets found more than THRESHOLD queued: cut; the first ones not
    assert set(range(DATA - 3, DATA)) <= set(short) and not set(range(3)) & set(short), order
    assert trimmed_count == len(short) - 1, (trimmed_count, short)  # all but the marked one


def _embedded_burst() -> tuple[list[tuple[int, bytes]], int]:
    sw = load(FABRIC_P4, switch_entries(TOPO, LEAF_NAME))
    sw.set_queue_rate(UPLINK, RATE)
    for f in _frames():
        sw.send(1, f)
    out = sw.run_until_idle()
    out += sw.advance(1.0)
    return out, sw.counter_read("FabricEgress.trimmed", UPLINK)[0]


def test_embedded_target_serves_the_trimmed_packet_first() -> None:
    _check(*_embedded_burst())


@pytest.fixture(scope="module")
def bmv2(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Bmv2Leaf]:
    from controller.reconcile import Reconciler

    entries = switch_entries(TOPO, LEAF_NAME)
    with Bmv2Leaf(tmp_path_factory.mktemp("bmv2-prio"), PORTS, LEAF_NAME, tag="q") as leaf:
        rep = asyncio.run(Reconciler([leaf.target]).run({LEAF_NAME: entries}))
        assert not rep.failed and rep.writes == len(entries), rep.summary()
        yield leaf


@pytest.mark.root
@pytest.mark.bmv2
def test_bmv2_serves_the_trimmed_packet_first(bmv2: Bmv2Leaf) -> None:
    from controller.counters import read_switch

    bmv2.set_queue_rate(UPLINK, RATE)
    bmv2.drain()
    out = bmv2.burst(1, _frames(), expect=DATA + 1, wait=3.0)
    counts = asyncio.run(read_switch(bmv2.target))
    _check(out, counts["FabricEgress.trimmed"].get(UPLINK, (0, 0))[0])
    # the same bytes as the embedded target's for every packet whose fate does not hang
    # on when the first dequeue happened: the first three whole, the last three and
    # the already trimmed one cut, each with its UDP checksum recomputed by the program
    ours = {Ether(d)[BTH].psn: d for _, d in _embedded_burst()[0]}
    theirs = {Ether(d)[BTH].psn: d for _, d in out}
    for psn in (0, 1, 2, DATA - 3, DATA - 2, DATA - 1, MARKED_PSN):
        assert theirs[psn] == ours[psn], psn
