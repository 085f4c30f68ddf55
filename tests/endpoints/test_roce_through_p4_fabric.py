"""The RoCE baseline's packets through the project's P4 programs on the embedded
target (nic.p4, fabric.p4, the controller's entries; tests/dataplane/fabric_net.py):
every data packet of the QP crosses the one spine its EV names; its ACKs, NAKs,
CNPs and STATUS are parsed and delivered by the same programs; and a cable cut on
the QP's path stalls it into the error state, where MRC-lite on the same cut retires
the EVs across it and completes (tests/endpoints/test_through_p4_fabric.py)."""

from __future__ import annotations

import random

from fabric.plan import nic_evs
from endpoints import wire
from endpoints.common import Tx
from endpoints.dcqcn import DcqcnConfig
from endpoints.roce_config import RoceSenderConfig
from endpoints.roce_receiver import RoceReceiver
from endpoints.roce_sender import RoceSender
from tests.endpoints.test_through_p4_fabric import TOPO, Fabric, exchange

CFG = RoceSenderConfig(mtu=1000, message_size=8000, window=32, ack_every=8, ack_timeout=0.01, cc="dcqcn",
                       dcqcn=DcqcnConfig(line_rate=1e9))


def run(fabric: Fabric, data: bytes, ev: int, cut: tuple[str, str] | None = None,
        limit: float = 2.0) -> tuple[RoceSender, RoceReceiver, list[int]]:
    """The QP on ``ev`` over the fabric, every packet walked through the P4 programs
    (``cut``: that cable is cut once the transfer is accepted); also the opcodes the
    sender got back."""
    sender, receiver = RoceSender(data, ev, CFG), RoceReceiver()

    def cut_when_accepted(s: RoceSender) -> None:
        if cut is not None and s.state == "sending":
            fabric.cut = cut

    back = exchange(fabric, sender, receiver, limit, cut_when_accepted)
    return sender, receiver, back


def test_the_qp_stays_on_the_spine_of_its_ev() -> None:
    h1, h2 = TOPO.host("h1"), TOPO.host("h2")
    evs = nic_evs(TOPO, h1, h2)
    qp_ev = evs[5]
    fabric = Fabric(h1, h2)
    data = random.Random(3).randbytes(40 * 1000 + 9)  # 41 packets: messages of 8, the last an Only
    sender, receiver, back = run(fabric, data, qp_ev.ev)
    assert sender.ok, sender.error
    (c,) = receiver.conns.values()
    assert bytes(c.buf) == data and c.state == wire.STATE_VERIFIED
    assert fabric.spines_of == {qp_ev.ev: {TOPO.spine_name(qp_ev.plane, qp_ev.spine)}}
    assert fabric.lost == 0
    assert sender.report()["packets_sent"] == 41
    # ACKs (32 bytes: BTH, AETH and the block the P4 parser reads after every AETH) and STATUS came back
    assert back.count(wire.OP_ACK) == c.counts["acks"] > 0 and wire.OP_STATUS in back


def test_a_cnp_and_a_nak_cross_the_p4_programs() -> None:
    """A NAK and a CNP built by the receiver are walked back through the NICs and the
    fabric and reach the sender whole."""
    h1, h2 = TOPO.host("h1"), TOPO.host("h2")
    fabric = Fabric(h1, h2)
    ev = nic_evs(TOPO, h1, h2)[0].ev
    for payload in (wire.cnp(0x123456), wire.ack(0x123456, 77, wire.SYNDROME_NAK_PSN_SEQUENCE, ev, 78, 0, msn=3)):
        got = fabric.carry(h2, h1, Tx(ev, payload))
        assert got is not None
        assert got[1] == ev and got[3][:2] + got[3][4:] == payload[:2] + payload[4:]  # the EV in the pkey


def test_a_cut_on_the_qps_path_ends_in_the_error_state() -> None:
    """The cable between h1's leaf and the QP's spine is cut: every packet of the QP
    is lost there, the local ACK timer (10 ms) expires 1 + 7 times and the QP goes
    to the error state. A QP whose EV crosses another spine completes."""
    h1, h2 = TOPO.host("h1"), TOPO.host("h2")
    evs = nic_evs(TOPO, h1, h2)
    qp_ev = evs[2]
    cut = (TOPO.leaf_name(qp_ev.plane, h1.leaf), TOPO.spine_name(qp_ev.plane, qp_ev.spine))
    data = random.Random(4).randbytes(20 * 1000)
    fabric = Fabric(h1, h2)
    sender, receiver, _back = run(fabric, data, qp_ev.ev, cut)
    assert sender.state == "error" and sender.error is not None and sender.error.startswith("retry count exceeded")
    g = sender.report()["go_back_n"]
    assert (g["timeouts"], g["retries_most_in_row"]) == (8, 7)
    assert fabric.lost == 20 * 8  # 20 packets, sent once and resent 7 times
    other = next(e for e in evs if (e.plane, e.spine) != (qp_ev.plane, qp_ev.spine))
    sender, receiver, _back = run(Fabric(h1, h2), data, other.ev, cut)
    assert sender.ok, sender.error
