"""Loss NACKs taken back (endpoints/receiver.py, sender.py, ev_set.py; docs/transport.md
"What brings an EV back") over the simulated network: one path trails the others by
more than the receiver's NACK delay but loses nothing.

Why: before the receiver has learned the paths' spread (first contact between two
hosts), its 5 ms reordering window NACKs the late path's packets; two such NACKs in
a row retire the EV. When a NACKed packet then arrives in its first transmission,
the receiver's ACK for it carries LATE and the sender takes the loss back: the
streak restarts and the EV, retired by those NACKs only, is GOOD again at once
(event ``restored``, cause ``late``), not one probe interval later. A path that
really loses packets sends no LATE and stays retired.
"""

from __future__ import annotations

import random

from fabric.plan import EvPath
from endpoints import wire
from endpoints.transport import ASSUMED_BAD, GOOD, ReceiverConfig, Sender, SenderConfig
from tests.endpoints.simnet import SimNet, run_transfer

MTU = 1000
PACKETS = 400
EVS = [EvPath(0x1000 + k, k % 2, k // 2) for k in range(8)]
LATE_EV = 0x1003  # every packet on it 8 ms late (each way): beyond the 5 ms NACK delay, nothing lost
DEAD_EV = 0x1006  # its data lost from the start: a real failure
CFG = SenderConfig(ev_min_active=2)  # the floor (8 by default) would bring a retired EV of 8 back at once
# No wait before a path's losses retire its EVs (retire_delay 0): two NACKs retire the
# late EV, which is what the LATE ACK is to take back (with the default 50 ms wait the
# 8 ms late path delivers first and is never retired: test_stalled_path_sim.py)
AT_ONCE = SenderConfig(ev_min_active=2, retire_delay=0)
PROBE_INTERVAL = 0.020  # SenderConfig's default: the earliest a probe could bring an EV back


def data() -> bytes:
    return random.Random(3).randbytes(PACKETS * MTU)


def late_and_dead_net() -> SimNet:
    return SimNet(delay=lambda ev: 0.008 if ev == LATE_EV else 0.0, dead_fwd=lambda t, ev: ev == DEAD_EV)


def events_of(run, ev: int) -> list[tuple[str, str, str]]:
    return [(e["event"], e["state"], e["cause"]) for e in run.sender.events if e["ev"] == ev]


def test_a_late_path_is_restored_when_its_nacked_packet_arrives_and_a_dead_one_stays_retired() -> None:
    payload = data()
    run = run_transfer(payload, EVS, late_and_dead_net(), sender_cfg=AT_ONCE)
    assert run.sender.ok, run.sender.error
    assert bytes(run.conn.buf) == payload
    # The late EV: retired by two spurious loss NACKs, restored by the first LATE ACK,
    # before any probe could have answered; GOOD at the end.
    assert events_of(run, LATE_EV)[:2] == [("retired", ASSUMED_BAD, "nack"), ("restored", GOOD, "late")]
    retired, restored = [e["t"] for e in run.sender.events if e["ev"] == LATE_EV][:2]
    assert restored - retired < PROBE_INTERVAL
    assert run.sender.evs[LATE_EV].state == GOOD
    assert run.sender.report()["control"]["ev_losses_taken_back"] >= 1
    # The dead EV: retired by loss NACKs and never restored (probes over it die too).
    assert events_of(run, DEAD_EV) == [("retired", ASSUMED_BAD, "nack")]
    assert run.sender.evs[DEAD_EV].state == ASSUMED_BAD
    # No other EV was ever blamed.
    assert {e["ev"] for e in run.sender.events} == {LATE_EV, DEAD_EV}


def test_a_learned_window_leaves_nothing_to_take_back() -> None:
    # The same late path with a reordering window of 20 ms from the start: no NACK,
    # no LATE, no event (the test above measures the take-back, not a kind network).
    run = run_transfer(data(), EVS, SimNet(delay=lambda ev: 0.008 if ev == LATE_EV else 0.0),
                       sender_cfg=CFG, receiver_cfg=ReceiverConfig(nack_delay=0.020))
    assert run.sender.ok, run.sender.error
    assert run.sender.events == []
    assert run.sender.counts["ev_losses_taken_back"] == 0


FIRST_PSN = 0x000100
QP_RECV = 0x77


def sending_sender() -> tuple[Sender, dict[int, list[int]]]:
    """A sender whose transfer was accepted and whose first 16 packets are out (two
    per EV, round robin): the PSNs each EV carried."""
    s = Sender(data(), EVS, SenderConfig(ev_min_active=2, first_psn=FIRST_PSN, retire_delay=0), now=0.0)
    s.poll(0.0)  # OPEN
    s.on_packet(wire.Status(EVS[0].ev, s.qp, 0, wire.STATE_ACCEPTED, 0, QP_RECV, 1, 0).pack(), 0.0001)
    by_ev: dict[int, list[int]] = {}
    for tx in s.poll(0.0001):
        if tx.payload[0] == wire.OP_WRITE:
            by_ev.setdefault(tx.ev, []).append(wire.DATA.unpack_from(tx.payload)[4] & wire.PSN_MASK)
    return s, by_ev


def test_the_late_flag_round_trips_beside_ce() -> None:
    raw = wire.ack(0x42, 0x000FFF, wire.SYNDROME_ACK, LATE_EV, 0x001000, 0b1, wire.FLAG_CE | wire.FLAG_LATE)
    (_op, _f, _pk, qp, _w2, aeth, ev, flags, _r, _base, _bm) = wire.ACK.unpack_from(raw)
    assert (qp, aeth, ev, flags) == (0x42, 0, LATE_EV, 0x03)
    assert len(raw) == 32 and raw[18] == 0x03  # flags: byte 18 (BTH 12, AETH 4, SACK ev 2)


def test_a_late_ack_restores_an_ev_its_nacks_retired_and_a_truncated_one_is_dropped() -> None:
    s, by_ev = sending_sender()
    psns = by_ev[LATE_EV]
    assert len(psns) >= 2, by_ev
    # A loss NACK naming LATE_EV's two packets (sent once each): retire_after 2, retired.
    base = psns[0]
    bits = 1 | 1 << wire.psn_diff(psns[1], base)
    s.on_packet(wire.ack(s.qp, (FIRST_PSN - 1) & wire.PSN_MASK, wire.SYNDROME_NACK_LOSS, LATE_EV, base, bits), 0.006)
    assert s.evs[LATE_EV].state == ASSUMED_BAD
    assert s.events[-1]["event"] == "retired" and s.events[-1]["cause"] == "nack"
    # The receiver's ACK for psns[0]'s first transmission, arriving late: cum below it,
    # the bitmap has it, flags LATE, echo LATE_EV.
    late_ack = wire.ack(s.qp, (FIRST_PSN - 1) & wire.PSN_MASK, wire.SYNDROME_ACK, LATE_EV, base, 1, wire.FLAG_LATE)
    # Cut short by one byte: dropped and counted, nothing applied.
    s.on_packet(late_ack[:-1], 0.009)
    assert s.drops["truncated"] == 1
    assert s.evs[LATE_EV].state == ASSUMED_BAD
    assert s.counts["ev_losses_taken_back"] == 0
    # Whole: the loss is taken back, the EV GOOD again, one event (restored, late).
    s.on_packet(late_ack, 0.009)
    assert s.counts["ev_losses_taken_back"] == 1
    assert s.evs[LATE_EV].state == GOOD and s.evs[LATE_EV].loss_streak == 0
    assert LATE_EV in s.good_evs()
    assert [(e["event"], e["cause"]) for e in s.events] == [("retired", "nack"), ("restored", "late")]
    # A second LATE for the same EV (its other packet) changes no state.
    s.on_packet(wire.ack(s.qp, (FIRST_PSN - 1) & wire.PSN_MASK, wire.SYNDROME_ACK, LATE_EV, psns[1], 1,
                         wire.FLAG_LATE), 0.0095)
    assert s.counts["ev_losses_taken_back"] == 2
    assert len(s.events) == 2
