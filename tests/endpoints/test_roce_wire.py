"""The RoCE baseline's packets read by scapy's own RoCEv2 layers (scapy.contrib.roce,
written apart from this project from the IBTA spec): the opcodes, PSNs, AckReq, the
AETH's syndrome and MSN, and the CNP (opcode 0x81, BECN, 16 reserved bytes)."""

from __future__ import annotations

import random

from scapy.contrib.roce import AETH, BTH, CNPPadding, cnp
from scapy.layers.inet import UDP
from scapy.layers.inet6 import IPv6
from scapy.packet import raw

from endpoints import wire
from endpoints.dcqcn import DcqcnConfig
from endpoints.roce_config import RoceReceiverConfig, RoceSenderConfig
from endpoints.roce_receiver import RoceReceiver
from endpoints.roce_sender import RoceSender
from tests.endpoints.simnet import DATA_OPCODES, SimNet, drive

ICRC = b"\0\0\0\0"  # the endpoints send no ICRC (the UDP checksum covers the packet); scapy's BTH ends with one


def decoded(payload: bytes) -> BTH:
    """The UDP payload decoded by scapy's RoCEv2 BTH (and what it binds after it). The
    BTH is named explicitly: the project's own scapy layers (tests/dataplane/packets.py)
    bind UDP port 4791 to MRC-lite's BTH when they are loaded."""
    frame = IPv6(src="fd00:0:0:1::1", dst="fd00:0:1:1::1") / UDP(sport=49152, dport=4791) / (payload + ICRC)
    return BTH(bytes(IPv6(raw(frame))[UDP].payload))


def test_the_packets_of_a_transfer_decode_as_rocev2() -> None:
    data = random.Random(1).randbytes(2_500)  # messages of 2 packets: First, Last; then Only (500 bytes)
    cfg = RoceSenderConfig(mtu=1000, message_size=2000, ack_every=2, cc="dcqcn", first_psn=100,
                           dcqcn=DcqcnConfig(line_rate=1e9))
    sender, receiver = RoceSender(data, 20005, cfg), RoceReceiver(RoceReceiverConfig(cnp_interval=0.0))
    to_rx, to_tx, *_ = drive(sender, receiver, SimNet(ce=lambda t, ev: True), {20005: 0})
    assert sender.ok
    pkts = [decoded(s.payload) for s in to_rx if s.payload[0] in DATA_OPCODES]
    names = [p[BTH].sprintf("%BTH.opcode%") for p in pkts]
    assert names == ["RC_RDMA_WRITE_FIRST", "RC_RDMA_WRITE_LAST", "RC_RDMA_WRITE_ONLY"]
    assert [p[BTH].psn for p in pkts] == [100, 101, 102]
    assert [p[BTH].ackreq for p in pkts] == [0, 1, 1]
    assert {p[BTH].dqpn for p in pkts} == {receiver.completed[0].qp}
    assert {p[BTH].pkey for p in pkts} == {0xFFFF}  # the I/O layer writes the EV here as it sends
    # RETH (vaddr, rkey, dma_len) follows the BTH of a First and an Only packet: the message's length
    c = receiver.completed[0]
    reth = [bytes(p[BTH].payload)[:16] for p in pkts]
    assert int.from_bytes(reth[0][:8], "big") == c.vaddr and int.from_bytes(reth[0][12:16], "big") == 2000
    assert int.from_bytes(reth[2][:8], "big") == c.vaddr + 2000 and int.from_bytes(reth[2][12:16], "big") == 500
    acks = [decoded(s.payload) for s in to_tx if s.payload[0] == wire.OP_ACK]
    assert [a[BTH].sprintf("%BTH.opcode%") for a in acks] == ["RC_ACKNOWLEDGE"] * 2
    assert [(a[AETH].syndrome, a[AETH].msn, a[BTH].psn) for a in acks] == [(0, 1, 101), (0, 2, 102)]
    cnps = [decoded(s.payload) for s in to_tx if s.payload[0] == wire.OP_CNP]
    assert len(cnps) == 3
    for p in cnps:
        assert p[BTH].opcode == 0x81 and p[BTH].becn == 1 and p[BTH].dqpn == sender.qp
        assert p.haslayer(CNPPadding)


def test_a_nak_carries_the_psn_sequence_error_syndrome() -> None:
    rx = RoceReceiver()
    o = wire.Open(7, wire.VERSION_ROCE, 0x1234, 50, 3000, 1000, 16, bytes(32))
    (st,) = rx.on_packet(o.pack(), 0.0, "peer", 7)
    status = wire.Status.unpack(st.payload)
    tx = RoceSender(bytes(3000), 7, RoceSenderConfig(first_psn=50))
    tx.state, tx.rqp, tx.rkey, tx.vaddr = "sending", status.receiver_qp, status.rkey, status.vaddr
    # packet 1 (PSN 51) before packet 0 (PSN 50): a gap at 50
    (nak,) = rx.on_packet(tx._packet(1), 0.0, "peer", 7)
    p = decoded(nak.payload)
    assert p[BTH].sprintf("%BTH.opcode%") == "RC_ACKNOWLEDGE"
    assert (p[AETH].syndrome, p[BTH].psn, p[BTH].dqpn) == (0x60, 50, 0x1234)


def test_the_cnp_is_scapys_cnp() -> None:
    ours = wire.cnp(0xABCDE)
    theirs = raw(cnp(0xABCDE))[:-4]  # without the ICRC
    assert len(ours) == len(theirs) == wire.CNP_LEN
    assert ours[0] == theirs[0] == 0x81
    assert ours[4:] == theirs[4:]  # BECN, QP, PSN 0, reserved bytes
    assert BTH(ours + ICRC).pkey == wire.PKEY
