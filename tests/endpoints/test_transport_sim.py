"""The transport's state machines over a simulated network (tests/endpoints/simnet.py).

Every test checks the bytes the receiver placed against the bytes the sender had,
and the receiver's verdict; expected EV states and counts are derived from the
network the test built (which EVs it kills, trims, when).
"""

from __future__ import annotations

import random
from collections import Counter

import pytest

from fabric.plan import nic_evs
from fabric.topology import from_parameters
from endpoints import wire
from endpoints.transport import ASSUMED_BAD, GOOD, SenderConfig
from tests.endpoints.simnet import SimNet, run_transfer

MTU = 1000


def payload(n: int, seed: int = 7) -> bytes:
    return random.Random(seed).randbytes(n)


def evs(k: int = 16, mode: str = "explicit"):
    topo = from_parameters(evs_per_nic=k, ev_mode=mode)
    return nic_evs(topo, topo.host("h1"), topo.host("h3"))


def assert_delivered(run, data: bytes) -> None:
    assert run.sender.ok, run.sender.error
    assert run.conn.state == wire.STATE_VERIFIED
    assert bytes(run.conn.buf) == data
    assert run.sender.report()["completion_time_s"] > 0


def data_sent(run):
    return [s for s in run.to_receiver if s.payload[0] == wire.OP_WRITE]


def test_clean_network_sprays_evenly_and_retransmits_nothing() -> None:
    data = payload(160 * MTU + 123)  # 161 packets, the last one short
    run = run_transfer(data, evs(16), SimNet())
    assert_delivered(run, data)
    rep = run.sender.report()
    assert rep["packets"] == 161 and rep["packets_sent"] == 161
    assert rep["retransmissions"]["total"] == 0
    # One EV per packet, rotating over the 16 EVs: 161 = 10 * 16 + 1.
    sent = [e["sent"] for e in rep["per_ev"]]
    assert sorted(sent) == [10] * 15 + [11]
    assert sorted(rep["per_plane_packets"].values()) == [40, 40, 40, 41]
    # Each data packet left on a different EV than the one before it.
    pkts = data_sent(run)
    assert all(a.ev != b.ev for a, b in zip(pkts, pkts[1:], strict=False))
    assert rep["evs_retired"] == 0 and rep["ev_events"] == []


@pytest.mark.parametrize("mode", ["explicit", "generated"])
def test_packets_leave_with_the_ev_as_source_port(mode: str) -> None:
    data = payload(200 * MTU)
    ev_set = evs(8, mode)
    run = run_transfer(data, ev_set, SimNet())
    assert_delivered(run, data)
    assert {s.ev for s in data_sent(run)} == {e.ev for e in ev_set}
    # The receiver's feedback leaves on its rotation over the EVs the sender used:
    # once it knows all 8 (the first round trip), every 8 consecutive feedback packets
    # leave on the 8 EVs, the same cycle over and over.
    back = [s.ev for s in run.to_sender]
    assert len(back) > 24
    assert set(back[16:24]) == {e.ev for e in ev_set}
    assert all(back[k] == back[k - 8] for k in range(24, len(back) - 8))
    # The last 8: the last ACK and the verdict, a pair on each of the next 4 EVs.
    assert back[-8::2] == back[-7::2] == [back[k - 8] for k in range(len(back) - 8, len(back) - 4)]
    # The SACK block echoes the EV of the data packet answered: in order (a clean
    # network), the packet whose PSN is the cumulative PSN.
    ev_of_psn = {int.from_bytes(p.payload[9:12], "big") & 0xFFFFFF: p.ev for p in data_sent(run)}
    acks = [s for s in run.to_sender if s.payload[0] == wire.OP_ACK]
    assert acks and all(int.from_bytes(a.payload[16:18], "big") == ev_of_psn[int.from_bytes(a.payload[9:12], "big")]
                        for a in acks)
    # The last ACK and the verdict go back on 4 different EVs, the same bytes each.
    last_psn = (run.sender.first_psn + 199) & 0xFFFFFF
    final = [a for a in acks if int.from_bytes(a.payload[9:12], "big") == last_psn]
    assert len(final) == 4 and len({a.ev for a in final}) == 4
    assert len({a.payload for a in final}) == 1


def test_reordering_is_not_loss() -> None:
    data = payload(400 * MTU)
    net = SimNet(seed=3, path_skew=20e-6, jitter=1e-3)  # up to 1.3 ms apart, NACK after 5 ms
    run = run_transfer(data, evs(16), net)
    assert_delivered(run, data)
    assert net.counts["reordered"] > 50
    rep = run.sender.report()
    assert rep["retransmissions"]["total"] == 0
    assert rep["evs_retired"] == 0
    # the receiver counts the first arrivals below the highest PSN it had: overtaken packets
    assert 50 < run.conn.counts["out_of_order"] < 400
    in_order = run_transfer(data, evs(16), SimNet(seed=3))
    assert_delivered(in_order, data)
    assert in_order.conn.counts["out_of_order"] == 0


def test_duplicates_are_acknowledged_not_placed_twice() -> None:
    data = payload(300 * MTU)
    net = SimNet(seed=4, duplicate=0.1, jitter=200e-6)
    run = run_transfer(data, evs(16), net)
    assert_delivered(run, data)
    assert net.counts["duplicated"] > 20
    c = run.conn
    assert c.counts["duplicates"] > 0
    assert c.packets == 300 and c.received_bytes == len(data)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_five_percent_random_loss(seed: int) -> None:
    data = payload(500 * MTU + 1, seed)
    net = SimNet(seed=seed, loss=0.05, jitter=300e-6)
    cfg = SenderConfig(ev_min_active=8, seed=seed)
    run = run_transfer(data, evs(32), net, sender_cfg=cfg)
    assert_delivered(run, data)
    assert net.counts["lost"] > 30
    rep = run.sender.report()
    assert rep["retransmissions"]["total"] >= 1
    # every resend had a cause; a packet declared lost may be acknowledged before its resend leaves
    assert rep["retransmissions"]["timeout"] + rep["retransmissions"]["nack"] >= rep["retransmissions"]["total"]
    assert run.min_good >= 8


def test_a_path_that_drops_everything_is_retired() -> None:
    data = payload(2000 * MTU)
    ev_set = evs(16)
    dead = {e.ev for e in ev_set if e.plane == 1 and e.spine == 0}  # 2 of the 16 EVs
    assert len(dead) == 2
    net = SimNet(seed=5, dead=lambda t, ev: ev in dead)
    cfg = SenderConfig(rate_pps=100_000, probe_interval=0.005)  # 2000 packets: 20 ms
    run = run_transfer(data, ev_set, net, sender_cfg=cfg)
    assert_delivered(run, data)
    s = run.sender
    retired = {e["ev"] for e in s.events if e["event"] == "retired"}
    assert retired == dead
    assert {ev for ev, st in s.evs.items() if st.state == ASSUMED_BAD} == dead
    # After retirement only probes go out on the dead EVs.
    for ev in dead:
        t_retired = min(e["t"] for e in s.events if e["ev"] == ev)
        assert not [p for p in data_sent(run) if p.ev == ev and p.t > t_retired]
        assert [p for p in run.to_receiver if p.ev == ev and p.payload[0] == wire.OP_PROBE and p.t > t_retired]
    assert s.report()["retransmissions"]["total"] >= len(dead)


def test_a_path_that_comes_back_is_recovered_by_probes() -> None:
    data = payload(3000 * MTU)
    ev_set = evs(16)
    dead = {e.ev for e in ev_set if e.plane == 2}  # 4 EVs, both spines of plane 2
    down, up = 0.002, 0.03
    net = SimNet(seed=6, dead=lambda t, ev: ev in dead and down <= t < up)
    # 3000 packets: 60 ms; the losses of a path retire its EVs 5 ms after the first
    cfg = SenderConfig(rate_pps=50_000, probe_interval=0.005, retire_delay=0.005)
    run = run_transfer(data, ev_set, net, sender_cfg=cfg)
    assert_delivered(run, data)
    s = run.sender
    for ev in dead:
        ev_events = [e for e in s.events if e["ev"] == ev]
        assert [e["event"] for e in ev_events] == ["retired", "recovered"], ev_events
        retired, recovered = ev_events
        assert down <= retired["t"] < up
        assert recovered["cause"] == "probe" and up <= recovered["t"] < up + 0.02
        assert s.evs[ev].state == GOOD
        # Data flows on it again once recovered.
        assert [p for p in data_sent(run) if p.ev == ev and p.t > recovered["t"]]
    assert {e["ev"] for e in s.events} == dead


def test_trims_retransmit_at_once_and_retire_nothing() -> None:
    data = payload(600 * MTU)
    ev_set = evs(16)
    net = SimNet(seed=8, trim=lambda t, ev, rng: rng.random() < 0.1)
    # A retransmission timeout of at least 1 s: anything resent earlier was resent by a NACK.
    cfg = SenderConfig(rto_min=1.0, rto_initial=1.0)
    run = run_transfer(data, ev_set, net, sender_cfg=cfg)
    assert_delivered(run, data)
    s = run.sender
    rep = s.report()
    assert net.counts["trimmed"] > 30
    assert run.conn.counts["trimmed"] == net.counts["trimmed"]
    assert run.conn.counts["trimmed_marked"] == net.counts["trimmed"]
    assert rep["retransmissions"]["trim_nack"] == net.counts["trimmed"]
    assert rep["retransmissions"]["total"] == net.counts["trimmed"]
    assert rep["evs_retired"] == 0 and s.events == []
    assert run.end < 0.5
    # Each trim NACK's PSN is resent before any packet sent for the first time, and
    # long before a retransmission timeout could have resent it.
    sent = data_sent(run)
    firsts: set[int] = set()
    first_sent_at = []
    for p in sent:
        psn = int.from_bytes(p.payload[9:12], "big")
        if psn not in firsts:
            firsts.add(psn)
            first_sent_at.append(p.t)
    nacks = [d for d in run.delivered_to_sender
             if d.payload[0] == wire.OP_ACK and d.payload[12] == wire.SYNDROME_NACK_TRIMMED]
    assert len(nacks) == net.counts["trimmed"]
    for d in nacks:
        psn = int.from_bytes(d.payload[20:24], "big")
        resent = min(p.t for p in sent if p.t >= d.t and int.from_bytes(p.payload[9:12], "big") == psn)
        assert resent - d.t < 0.005
        assert not [t for t in first_sent_at if d.t < t < resent], (psn, d.t, resent)


def trimmed_transfer():
    """A transfer with one data packet in ten trimmed, run to its verdict."""
    data = payload(200 * MTU)
    run = run_transfer(data, evs(16), SimNet(seed=8, trim=lambda t, ev, rng: rng.random() < 0.1))
    assert_delivered(run, data)
    return run


def answers(run, syndrome: int) -> list[bytes]:
    return [p.payload for p in run.to_sender if p.payload[0] == wire.OP_ACK and p.payload[12] == syndrome]


def test_answers_after_the_verdict_are_counted_late_and_trim_nacks_apart() -> None:
    """A trim NACK overtaken by the verdict (a timeout resent its packet, the ACK came
    back on another path) reaches a finished sender: it is counted, as late and as a
    late trim NACK, and nothing of it is applied."""
    run = trimmed_transfer()
    s = run.sender
    nacks, acks = answers(run, wire.SYNDROME_NACK_TRIMMED), answers(run, wire.SYNDROME_ACK)
    assert nacks and acks
    before = s.report()
    other_qp = bytearray(nacks[0])
    other_qp[7] ^= 1  # the low byte of the destination QP
    for p in [*nacks, acks[-1], bytes(other_qp), nacks[0][:20]]:
        s.on_packet(p, run.end + 0.01)
    after = s.report()
    late = {k: after["control"][k] - before["control"][k] for k in ("late", "trim_nacks_late")}
    assert late == {"late": len(nacks) + 3, "trim_nacks_late": len(nacks)}  # not the other QP's, not the cut one
    for k in ("trim_nacks_received", "acks_received", "nacks_received"):
        assert after["control"][k] == before["control"][k]
    assert after["retransmissions"] == before["retransmissions"] and after["dropped"] == before["dropped"]
    assert s.ok and after["completion_time_s"] == before["completion_time_s"]


def test_ev_min_active_is_held() -> None:
    data = payload(1500 * MTU)
    ev_set = evs(16)
    dead = {e.ev for e in ev_set[:12]}  # 12 of 16 EVs drop everything, 8 must stay GOOD
    net = SimNet(seed=9, dead=lambda t, ev: ev in dead)
    cfg = SenderConfig(ev_min_active=8, probe_interval=0.005)
    run = run_transfer(data, ev_set, net, sender_cfg=cfg)
    assert_delivered(run, data)
    s = run.sender
    assert run.min_good == 8
    restored = [e for e in s.events if e["event"] == "restored"]
    assert restored and all(e["cause"] == "ev_min_active" and e["ev"] in dead for e in restored)
    # The 4 live EVs are never retired.
    assert not [e for e in s.events if e["ev"] not in dead]
    # The least recently failed comes back first: each restored EV was the bad EV
    # with the oldest retirement at that moment.
    bad: dict[int, float] = {}
    for e in s.events:
        if e["event"] == "retired":
            bad[e["ev"]] = e["t"]
        else:
            oldest = min(bad.values())
            assert bad.pop(e["ev"]) == oldest


def test_psn_wraps_around() -> None:
    data = payload(300 * MTU)
    cfg = SenderConfig(first_psn=(1 << 24) - 100)  # PSN 0 is packet 100
    run = run_transfer(data, evs(16), SimNet(jitter=300e-6, loss=0.02, seed=11), sender_cfg=cfg)
    assert_delivered(run, data)
    psns = {int.from_bytes(p.payload[9:12], "big") for p in data_sent(run)}
    assert psns == {((1 << 24) - 100 + i) % (1 << 24) for i in range(300)}
    assert run.sender.report()["retransmissions"]["total"] > 0


def test_empty_transfer() -> None:
    run = run_transfer(b"", evs(4), SimNet())
    assert_delivered(run, b"")


def test_corrupted_payload_is_a_failure() -> None:
    """A network that flips a byte of one packet's payload (and fixes the UDP
    checksum, as a broken middlebox would): the receiver's SHA-256 check fails."""
    data = payload(50 * MTU)
    net = SimNet(seed=10)
    carry = net.carry

    def flip(t, ev, body, index, back=False):
        if body[0] == wire.OP_WRITE and int.from_bytes(body[9:12], "big") == (run_first_psn[0] + 7) & 0xFFFFFF:
            body = body[:100] + bytes([body[100] ^ 0xFF]) + body[101:]
        return carry(t, ev, body, index, back)

    run_first_psn = [1000]
    net.carry = flip  # type: ignore[method-assign]
    run = run_transfer(data, evs(4), net, sender_cfg=SenderConfig(first_psn=1000))
    assert not run.sender.ok
    assert "SHA-256" in run.sender.error
    assert run.conn.state == wire.STATE_CORRUPT
    assert bytes(run.conn.buf) != data


def test_acks_requested_every_nth_packet_come_back_on_every_ev() -> None:
    data = payload(1280 * MTU)
    ev_set = evs(16)
    run = run_transfer(data, ev_set, SimNet(seed=12), sender_cfg=SenderConfig(ack_every=4))
    assert_delivered(run, data)
    asked = [p for p in data_sent(run) if p.payload[8] & 0x80]
    # Every 4th packet (and the last one): 1280 / 4 = 320.
    assert len(asked) == 320
    acks = [s for s in run.to_sender if s.payload[0] == wire.OP_ACK]
    # ACKs leave on every EV (so on every plane), evenly: the feedback rotation.
    per_ev = Counter(a.ev for a in acks)
    assert set(per_ev) == {e.ev for e in ev_set}
    assert max(per_ev.values()) - min(per_ev.values()) <= 2
    assert len(acks) < 1280 // 2


@pytest.mark.parametrize("window, asked", [(8, 640), (40, 128), (128, 80), (256, 80)])
def test_acks_are_requested_every_16th_packet_or_every_quarter_window(window: int, asked: int) -> None:
    """The default ``ack_every`` (16) is a ceiling: a window of 8 asks every 2nd packet,
    40 every 10th, 128 and more every 16th. A clean network never shrinks a window that
    starts at its ceiling: 1,280 packets over 2, 10 and 16."""
    data = payload(1280 * MTU)
    cfg = SenderConfig(initial_window=window, window=window)
    assert cfg.ack_every == 16
    run = run_transfer(data, evs(16), SimNet(seed=3), sender_cfg=cfg)
    assert_delivered(run, data)
    assert run.sender.report()["retransmissions"]["total"] == 0
    assert len([p for p in data_sent(run) if p.payload[8] & 0x80]) == asked


def test_pacing_and_window_hold() -> None:
    data = payload(500 * MTU)
    window = 64
    inflight_max = []
    net = SimNet(seed=13, loss=0.02, base_delay=2e-3)  # 4 ms RTT: the window, not the rate, limits at first
    cfg = SenderConfig(rate_pps=20_000, burst=8, window=window)
    run = run_transfer(data, evs(16), net, sender_cfg=cfg,
                       hook=lambda t, s, r: inflight_max.append(len(s.flight.inflight)))
    assert_delivered(run, data)
    assert max(inflight_max) == window
    # No more than burst + rate * t data packets by any time t.
    sends = [p.t for p in data_sent(run)]
    t0 = sends[0]
    assert all(k + 1 <= 8 + 20_000 * (t - t0) + 1e-9 for k, t in enumerate(sends))
    # 500 packets at 20,000/s take at least 25 ms.
    assert sends[-1] - t0 >= (500 - 8) / 20_000 - 1e-9


def test_a_path_dead_only_backwards_retires_nothing() -> None:
    """ACKs lost on the way back over some EVs: the SACK bitmaps of ACKs over the
    other EVs report the same packets, nothing times out."""
    data = payload(1000 * MTU)
    ev_set = evs(16)
    dead = {e.ev for e in ev_set if e.plane == 3}
    net = SimNet(seed=14, dead_back=lambda t, ev: ev in dead)
    run = run_transfer(data, ev_set, net)
    assert_delivered(run, data)
    assert net.counts["dead"] > 10  # ACKs were lost
    rep = run.sender.report()
    assert rep["retransmissions"]["total"] == 0 and rep["evs_retired"] == 0
