"""``Switch.inject`` takes a direct path (ingress straight to egress, no queues) when
nothing else is waiting; ``send`` + ``run_until_idle`` always takes the general loop.
Both must give the same outputs, drops, statistics, digests and counters, whatever
the packet asks for (clones, multicast, resubmit, recirculate, shaped queues, ...).
``Device.receive_batch`` must equal ``receive`` per frame.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from test_rt_v1switch import (
    ASSERT, CLONE_E2E, CLONE_I2E, DIGEST, EGRESS_DROP, FWD, HASH, MARK_TO_DROP, MCAST, METER,
    PRIORITY, RECIRC, RESUBMIT, RESUBMIT_FOREVER, SPEC_511, TABLE, TRUNCATE, frame,
)

P4 = Path(__file__).parent / "p4" / "v1switch_ops.p4"
ROUTER = Path(__file__).resolve().parents[3] / "bench" / "p4" / "router6.p4"

FRAMES = [
    (1, frame(FWD, arg=2)),
    (1, frame(MARK_TO_DROP, arg=2)),
    (1, frame(SPEC_511, arg=2)),
    (4, frame(MCAST, arg=9, val=5)),
    (4, frame(MCAST, arg=9, val=6)),  # empty group
    (1, frame(CLONE_I2E, arg=2, val=7)),
    (1, frame(CLONE_I2E, arg=2, val=99)),
    (1, frame(CLONE_E2E, arg=2, val=8)),
    (1, frame(RESUBMIT, arg=2)),
    (1, frame(RECIRC, arg=2, val=1)),
    (1, frame(TRUNCATE, arg=2, val=20, payload=b"p" * 30)),
    (6, frame(DIGEST, arg=2)),
    (1, frame(PRIORITY, arg=2, val=7)),
    (1, frame(PRIORITY, arg=3, val=2)),
    (1, frame(METER, arg=2, val=0)),
    (1, frame(METER, arg=2, val=0)),
    (1, frame(HASH, arg=2)),
    (1, frame(EGRESS_DROP, arg=2)),
    (1, frame(TABLE, arg=3)),
    (1, frame(TABLE, arg=4)),
    (1, frame(ASSERT, arg=2, val=0xDEAD)),
    (1, frame(RESUBMIT_FOREVER, arg=2)),
    (3, frame(FWD, arg=2)),  # ingress port down
    (1, frame(FWD, arg=5)),  # egress port down
    (1, b"\x01\x02"),  # too short for Ethernet
]


@pytest.fixture(scope="module")
def program():
    from p4target.compiler import compile_file

    return compile_file(P4)


def configured(program, **kw):
    from p4target import Switch
    from p4target.runtime.entries import Exact

    sw = Switch(program, seed=3, cpu_port=9, **kw)
    sw.mc_group_set(5, [(1, 10), (2, 20), (3, 30)])
    sw.clone_session_set(7, [(4, 0)])
    sw.clone_session_set(8, [(5, 0)], truncate=16)
    sw.meter_set("MyIngress.m", 0, 1, 1, 2, 2)
    sw.table_add("MyIngress.ports", {"hdr.cmd.arg": Exact(3)}, "MyIngress.fwd", {"port": 6})
    sw.set_port_status(3, False)
    sw.set_port_status(5, False)
    return sw


def observed(sw, outputs):
    return (outputs, dict(sw.drops),
            {p: vars(s) for p, s in sorted(sw.port_stats.items())},
            sw.digests(), list(sw.packet_ins))


@pytest.mark.parametrize("shaped", [False, True])
def test_inject_equals_send_and_run_until_idle(program, shaped) -> None:
    direct, general = configured(program), configured(program)
    if shaped:  # port 2 has a rate: its packets go through the traffic manager
        for sw in (direct, general):
            sw.set_queue_rate(2, 1000)
    for port, f in FRAMES:
        out_d = direct.inject(port, f)
        general.send(port, f)
        out_g = general.run_until_idle()
        assert observed(direct, out_d) == observed(general, out_g), f.hex()
        out_d, out_g = direct.advance(0.0011), general.advance(0.0011)
        assert observed(direct, out_d) == observed(general, out_g), f.hex()


def test_inject_with_frames_already_waiting_keeps_their_order(program) -> None:
    sw = configured(program)
    sw.send(1, frame(FWD, arg=2, val=1))
    out = sw.inject(1, frame(FWD, arg=2, val=2))
    assert [data[15:18] for _, data in out] == [frame(FWD, arg=2, val=v)[15:18] for v in (1, 2)]


def test_router_lpm_after_deletes_and_clear() -> None:
    from p4target import Switch
    from p4target.runtime.entries import Lpm

    sw = Switch.load(ROUTER)
    t = "RIngress.routes"
    key = "hdr.ipv6.dst_addr"
    dst = 0xFCBB_BB00_0100 << 80 | 1
    sw.table_add("RIngress.my_mac", {"sm.ingress_port": 1, "hdr.eth.dst": 0x020000000002},
                 "RIngress.accept_frame")
    sw.table_add(t, {key: Lpm(0xFCBB_BB00_0100 << 80, 48)}, "RIngress.route", {"port": 2, "next_mac": 1})
    sw.table_add(t, {key: Lpm(0xFCBB << 112, 16)}, "RIngress.route", {"port": 3, "next_mac": 1})
    sw.table_add(t, {key: Lpm(0, 0)}, "RIngress.route", {"port": 4, "next_mac": 1})
    eth = bytes.fromhex("020000000002" "020000000001" "86dd")
    ip6 = bytes.fromhex("60000000" "0000" "3b" "40") + bytes(16) + dst.to_bytes(16, "big")
    f = eth + ip6

    def port():
        out = sw.inject(1, f)
        return out[0][0] if out else None

    assert port() == 2
    sw.table_delete(t, {key: Lpm(0xFCBB_BB00_0100 << 80, 48)})
    assert port() == 3
    sw.table_delete(t, {key: Lpm(0xFCBB << 112, 16)})
    assert port() == 4
    sw.table_clear(t)
    assert port() is None  # default: drop
    sw.table_add(t, {key: Lpm(0xFCBB << 112, 16)}, "RIngress.route", {"port": 5, "next_mac": 1})
    assert port() == 5


def untimed(data: bytes) -> bytes:
    """A frame without the real-time timestamps the program reports (ig_ts, deq_delta)."""
    return data[:38] + data[46:]


def test_device_receive_batch_equals_receive(program) -> None:
    from p4target.device import Device

    results = []
    for batched in (False, True):
        dev = Device(device_id=1, cpu_port=9)
        dev.load(program)
        sw = dev.switch
        sw.mc_group_set(5, [(1, 10), (2, 20), (3, 30)])
        sw.clone_session_set(7, [(4, 0)])
        sw.table_add("MyIngress.ports", {"hdr.cmd.arg": 3}, "MyIngress.fwd", {"port": 6})
        out, pins, digs = [], [], []
        dev.output_sink = lambda p, d: out.append((p, untimed(d)))
        dev.add_packet_in_listener(lambda d: pins.append(untimed(d)))
        dev.add_digest_listener(lambda name, rows: digs.append((name, rows)))
        frames = [f for p, f in FRAMES if p == 1] + [frame(FWD, arg=9)] + [frame(DIGEST, arg=2)]
        if batched:
            dev.receive_batch(1, frames)
        else:
            for f in frames:
                dev.receive(1, f)
        results.append((out, pins, digs, dev.rx_frames, dev.tx_frames, dev.errors, dict(sw.drops)))
    assert results[0] == results[1]
    assert results[0][1]  # the cpu port got something
    assert results[0][2]  # and a digest was delivered
