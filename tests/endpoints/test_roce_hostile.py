"""The RoCE baseline's responder against packets that do not fit: each is dropped and
counted under its reason, answers nothing and writes nothing, and the expected
packet after it is still placed."""

from __future__ import annotations

import pytest

from endpoints import wire
from endpoints.roce_config import RoceSenderConfig
from endpoints.roce_receiver import RoceReceiver
from endpoints.roce_sender import RoceSender

PEER = ("fd00:0:0:1::1", 4791)
DATA = bytes(range(256)) * 16  # 4096 bytes: messages of 2 packets of 1000, the last an Only of 96


def opened() -> tuple[RoceReceiver, RoceSender]:
    tx = RoceSender(DATA, 7, RoceSenderConfig(message_size=2000, first_psn=10, window=8))
    rx = RoceReceiver()
    (st,) = rx.on_packet(tx.poll(0.0)[0].payload, 0.0, PEER, 7)
    tx.on_packet(st.payload, 0.0)
    assert tx.state == "sending"
    return rx, tx


def with_byte(b: bytes, at: int, value: int) -> bytes:
    return b[:at] + bytes([value]) + b[at + 1:]


def psn(b: bytes, p: int) -> bytes:
    return b[:9] + p.to_bytes(3, "big") + b[12:]


CASES = {
    "truncated BTH": (lambda tx: tx._packet(0)[:11], PEER, "truncated"),
    "truncated RETH": (lambda tx: tx._packet(0)[:20], PEER, "truncated"),
    "another QP": (lambda tx: with_byte(tx._packet(0), 7, tx._packet(0)[7] ^ 1), PEER, "wrong_qp"),
    "another peer": (lambda tx: tx._packet(0), ("fd00:0:0:2::1", 4791), "wrong_peer"),
    "wrong rkey": (lambda tx: with_byte(tx._packet(0), 23, tx._packet(0)[23] ^ 1), PEER, "bad_rkey"),
    "wrong address": (lambda tx: with_byte(tx._packet(0), 19, tx._packet(0)[19] ^ 0x10), PEER, "bad_address"),
    "a Middle first": (lambda tx: psn(tx._packet(1), 10), PEER, "bad_opcode_sequence"),
    "short payload": (lambda tx: tx._packet(0)[:-1], PEER, "bad_length"),
    "far ahead": (lambda tx: psn(tx._packet(0), 10 + 8), PEER, "psn_out_of_window"),
    "an opcode it does not take": (lambda tx: with_byte(tx._packet(0), 0, 0x04), PEER, "bad_opcode"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_packet_that_does_not_fit_is_dropped_and_counted(case: str) -> None:
    rx, tx = opened()
    make, peer, reason = CASES[case]
    assert rx.on_packet(make(tx), 0.001, peer, 7) == []
    assert rx.drops == {reason: 1}
    (c,) = rx.conns.values()
    assert c.expected == 0 and c.counts["packets"] == 0 and bytes(c.buf) == bytes(len(DATA))
    # the expected packet still fits
    rx.on_packet(tx._packet(0), 0.002, PEER, 7)
    assert c.expected == 1 and bytes(c.buf[:1000]) == DATA[:1000]


def test_the_whole_transfer_in_order_verifies() -> None:
    rx, tx = opened()
    out = []
    for i in range(tx.n_packets):
        out += rx.on_packet(tx._packet(i), 0.001, PEER, 7)
    (c,) = rx.conns.values()
    assert c.state == wire.STATE_VERIFIED and bytes(c.buf) == DATA and c.msn == 3
    assert [t.payload[0] for t in out][-2:] == [wire.OP_ACK, wire.OP_STATUS]
