"""Malformed and hostile packets, built with scapy (tests/dataplane/packets.py), fed to
the receiver and the sender in the middle of a transfer: each is dropped and counted
under its reason, nothing crashes, and the transfer still completes with every byte
equal to what was sent."""

from __future__ import annotations

import random
from collections.abc import Callable

from scapy.packet import Raw

from fabric.plan import EvPath
from endpoints import wire
from endpoints.transport import Receiver, Sender, SenderConfig
from tests.dataplane.packets import AETH, BTH, RETH, SACK, Probe, Status
from tests.endpoints.simnet import SENDER_ADDR, SimNet, run_transfer

MTU = 1000
N = 200
EVS = [EvPath(0x1000 + k, k % 4, k // 4) for k in range(16)]
FIRST_PSN = 0x00FF00


def data() -> bytes:
    return random.Random(5).randbytes(N * MTU)


def run_with(inject: Callable[[Sender, Receiver], None], when: int = N // 2):
    """Run a transfer; once the receiver has ``when`` packets, call ``inject``."""
    done = []

    def hook(t: float, s: Sender, r: Receiver) -> None:
        if not done and r.conns and next(iter(r.conns.values())).packets >= when:
            done.append(t)
            inject(s, r)

    payload = data()
    run = run_transfer(payload, EVS, SimNet(seed=2, jitter=100e-6), sender_cfg=SenderConfig(first_psn=FIRST_PSN),
                       hook=hook)
    assert done, "the injection point was never reached"
    assert run.sender.ok, run.sender.error
    assert run.conn.state == wire.STATE_VERIFIED
    assert bytes(run.conn.buf) == payload
    return run


def conn_of(r: Receiver):
    (c,) = r.conns.values()
    return c


def missing_idx(c) -> int:
    """A packet the receiver does not have yet (a hostile write there would stick)."""
    return next(i for i in range(c.cum + 1, c.n_packets) if not c.has(i))


def write(c, idx: int, **over) -> bytes:
    f = dict(dest_qp=c.qp, psn=(FIRST_PSN + idx) & 0xFFFFFF, vaddr=c.vaddr + idx * MTU, rkey=c.rkey,
             dma_len=MTU, payload=b"\xEE" * MTU)
    f.update(over)
    pkt = BTH(opcode=0x0A, dest_qp=f["dest_qp"], psn=f["psn"], ack_req=1) / RETH(
        vaddr=f["vaddr"], rkey=f["rkey"], dma_len=f["dma_len"])
    return bytes(pkt / Raw(f["payload"])) if f["payload"] else bytes(pkt)


def test_receiver_drops_hostile_data_and_counts_it() -> None:
    answers: list = []

    def inject(s: Sender, r: Receiver) -> None:
        c = conn_of(r)
        i = missing_idx(c)
        before = bytes(c.buf)
        cases = [
            ("wrong_qp", write(c, i, dest_qp=c.qp ^ 0x1), SENDER_ADDR),
            ("bad_rkey", write(c, i, rkey=c.rkey ^ 0x1), SENDER_ADDR),
            ("wrong_peer", write(c, i), "fd00:0:0:2::1"),
            ("psn_out_of_window", write(c, i, psn=(FIRST_PSN + c.cum + 100_000) & 0xFFFFFF), SENDER_ADDR),
            ("psn_out_of_window", write(c, i, psn=(FIRST_PSN + c.cum - 100_000) & 0xFFFFFF), SENDER_ADDR),
            ("psn_out_of_window", write(c, i, psn=(FIRST_PSN + N + 5) & 0xFFFFFF), SENDER_ADDR),  # past the end
            ("bad_address", write(c, i, vaddr=c.vaddr + N * MTU), SENDER_ADDR),
            ("bad_address", write(c, i, vaddr=c.vaddr - MTU), SENDER_ADDR),
            ("bad_address", write(c, i, vaddr=c.vaddr + N * MTU - 10, dma_len=MTU, payload=b"\xEE" * MTU),
             SENDER_ADDR),
            ("address_mismatch", write(c, i, vaddr=c.vaddr + (i + 1) * MTU), SENDER_ADDR),
            ("address_mismatch", write(c, i, dma_len=10, payload=b"\xEE" * 10), SENDER_ADDR),
            ("truncated", write(c, i)[:8], SENDER_ADDR),  # half a BTH
            ("truncated", write(c, i)[:20], SENDER_ADDR),  # half a RETH
            ("truncated", write(c, i)[:28 + 500], SENDER_ADDR),  # half the payload
            ("bad_length", write(c, i) + b"\xEE" * 10, SENDER_ADDR),
            ("bad_opcode", bytes(BTH(opcode=0x04, dest_qp=c.qp) / Raw(b"\xEE" * 100)), SENDER_ADDR),
            ("truncated", bytes(BTH(opcode=0xC0, dest_qp=c.qp))[:12], SENDER_ADDR),
            ("wrong_qp", bytes(BTH(opcode=0xC0, dest_qp=c.qp ^ 1) / Probe(ev=0x1000, seq=1)), SENDER_ADDR),
            ("truncated", b"", SENDER_ADDR),
        ]
        for reason, pkt, peer in cases:
            before_drops = r.drops[reason]
            answers.extend(r.on_packet(pkt, 0.0, peer, 0x1000, 0))
            assert r.drops[reason] == before_drops + 1, reason
        assert bytes(c.buf) == before
        assert not c.has(i)

    run = run_with(inject)
    assert answers == []  # nothing answered, no state touched
    assert run.receiver.drops == {"wrong_qp": 2, "bad_rkey": 1, "wrong_peer": 1, "psn_out_of_window": 3,
                                  "bad_address": 3, "address_mismatch": 2, "truncated": 5, "bad_length": 1,
                                  "bad_opcode": 1}


def test_receiver_ignores_a_forged_duplicate() -> None:
    """A packet that passes every check but for a PSN already placed is acknowledged,
    never written over the good bytes."""

    def inject(s: Sender, r: Receiver) -> None:
        c = conn_of(r)
        before = bytes(c.buf)
        dups = c.counts["duplicates"]
        placed = next(i for i in range(N) if c.has(i))
        out = r.on_packet(write(c, placed), 0.0, SENDER_ADDR, 0x1000, 0)
        assert [bytes(o.payload)[0] for o in out] == [wire.OP_ACK]
        assert c.counts["duplicates"] == dups + 1
        assert bytes(c.buf) == before

    run_with(inject)


def ack(s: Sender, cum_idx: int, *, qp: int | None = None, syndrome: int = 0, base_idx: int = 0,
        bitmap: int = 0) -> bytes:
    return bytes(BTH(opcode=0x11, dest_qp=s.qp if qp is None else qp, psn=(FIRST_PSN + cum_idx) & 0xFFFFFF)
                 / AETH(syndrome=syndrome) / SACK(ev=0x1000, base_psn=(FIRST_PSN + base_idx) & 0xFFFFFF,
                                                  bitmap=bitmap))


def test_sender_drops_forged_acks_and_counts_them() -> None:
    def inject(s: Sender, r: Receiver) -> None:
        state = (s.una, s._acked, s.acked_bytes, dict(s.flight.inflight), list(s.flight.lost), s.good_evs())
        cases = [
            ("ack_unsent", ack(s, s.next_idx + 10)),  # cumulative ACK for data never sent
            ("ack_unsent", ack(s, s.una - 1, base_idx=s.next_idx, bitmap=1 << 63)),  # SACK of a PSN never sent
            ("ack_unsent", ack(s, s.una - 1, syndrome=0x60, base_idx=s.next_idx + 1, bitmap=1 << 63)),  # NACK
            ("ack_unsent", ack(s, s.una - 1, syndrome=0x61, base_idx=s.next_idx + 3, bitmap=1 << 63)),  # trim NACK
            ("psn_out_of_window", ack(s, s.una - 200_000)),
            ("wrong_qp", ack(s, s.next_idx - 1, qp=s.qp ^ 1)),
            ("bad_syndrome", ack(s, s.una - 1, syndrome=0x20)),
            ("truncated", ack(s, s.next_idx - 1)[:20]),
            ("truncated", b"\x11"),
            ("bad_opcode", bytes(BTH(opcode=0x0A, dest_qp=s.qp) / RETH() / Raw(b"x" * 10))),
            ("bad_probe", bytes(BTH(opcode=0xC1, dest_qp=s.qp) / Probe(ev=0x1000, seq=12345))),
            # A verdict before everything was sent.
            ("status_early", bytes(BTH(opcode=0xC3, dest_qp=s.qp, psn=(FIRST_PSN + N - 1) & 0xFFFFFF)
                                 / Status(ev=0x1000, state=3))),
        ]
        for reason, pkt in cases:
            where = s.counts if reason == "status_early" else s.drops
            before = where[reason]
            s.on_packet(pkt, 0.0)
            assert where[reason] == before + 1, reason
        assert (s.una, s._acked, s.acked_bytes, dict(s.flight.inflight), list(s.flight.lost), s.good_evs()) == state
        assert not s.finished

    run = run_with(inject, when=20)
    assert run.sender.drops == {"ack_unsent": 4, "psn_out_of_window": 1, "wrong_qp": 1, "bad_syndrome": 1,
                                "truncated": 2, "bad_opcode": 1, "bad_probe": 1}
    assert run.sender.report()["evs_retired"] == 0


def test_random_garbage_and_mutated_headers_never_crash_or_corrupt() -> None:
    rng = random.Random(99)
    seen: list = []

    def inject(s: Sender, r: Receiver) -> None:
        c = conn_of(r)
        # Copies of packets already on the wire (a copy of one not sent yet could not
        # have been seen), each with one header bit flipped.
        valid = [write(c, i, payload=data()[i * MTU:(i + 1) * MTU]) for i in range(s.next_idx)]
        for k in range(3000):
            if k % 2:
                pkt = rng.randbytes(rng.randrange(0, 1200))
                if pkt:
                    pkt = bytes([rng.choice([0x0A, 0x0B, 0x11, 0xC0, 0xC1, 0xC2, 0xC3])]) + pkt[1:]
            else:  # a valid packet with one header bit flipped
                b = bytearray(rng.choice(valid))
                bit = rng.randrange(28 * 8)
                b[bit // 8] ^= 1 << (bit % 8)
                pkt = bytes(b)
            seen.extend(r.on_packet(pkt, 0.0, SENDER_ADDR, 0x1000, 0))
            s.on_packet(pkt, 0.0)

    run = run_with(inject, when=50)
    assert sum(run.receiver.drops.values()) > 1000
    assert sum(run.sender.drops.values()) > 1000
