"""``Switch.inject`` takes a direct path (ingress straight to egress, no queues) when
nothing else is waiting; ``send`` + ``run_until_idle`` always takes the general loop.
Both must give the same outputs, drops, statistics, digests and counters, whatever
the packet asks for (clones, multicast, resubmit, recirculate, shaped queues, ...).
``Device.receive_batch`` must equal ``receive`` per frame.
"""

from __future__ import annotations

from collections import Counter as _Counter
from pathlib import Path

import pytest
from scapy.layers.inet6 import IPv6, UDP
from scapy.layers.l2 import Ether

from p4target.errors import EntryError

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


@pytest.mark.parametrize("digest_listener", [True, False])  # without one: Switch.inject_batch
def test_device_receive_batch_equals_receive(program, digest_listener) -> None:
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
        dev.output_sink = lambda p, d, out=out: out.append((p, untimed(d)))
        dev.add_packet_in_listener(lambda d, pins=pins: pins.append(untimed(d)))
        if digest_listener:
            dev.add_digest_listener(lambda name, rows, digs=digs: digs.append((name, rows)))
        frames = [f for p, f in FRAMES if p == 1] + [frame(FWD, arg=9)] + [frame(DIGEST, arg=2)]
        if batched:
            dev.receive_batch(1, frames)
        else:
            for f in frames:
                dev.receive(1, f)
        results.append((out, pins, digs, dev.rx_frames, dev.tx_frames, dev.errors, dict(sw.drops)))
    assert results[0] == results[1]
    assert results[0][0] and results[0][1]  # ports and the cpu port got something
    assert bool(results[0][2]) == digest_listener  # and a digest was delivered


def test_device_process_batch_counts_a_failing_frame_and_goes_on(program) -> None:
    from p4target.device import Device

    dev = Device()
    dev.load(program)
    assert dev.process_batch(600, [frame(FWD, arg=2), frame(FWD, arg=2)]) == []  # no port 600
    assert dev.errors == 2 and dev.rx_frames == 2
    assert [p for p, _ in dev.process_batch(1, [frame(FWD, arg=2)])] == [2]  # and works on


def runs_by_port(frames):
    """Consecutive frames from the same port, as netio hands them over: [(port, [frame])]."""
    runs: list[tuple[int, list[bytes]]] = []
    for port, f in frames:
        if runs and runs[-1][0] == port:
            runs[-1][1].append(f)
        else:
            runs.append((port, [f]))
    return runs


@pytest.mark.parametrize("shaped", [False, True])
def test_inject_batch_equals_inject_frame_by_frame(program, shaped) -> None:
    one, batch = configured(program), configured(program)
    if shaped:
        for sw in (one, batch):
            sw.set_queue_rate(2, 1000)
    frames = [(1, f) for _, f in FRAMES] + FRAMES + [(1, frame(FWD, arg=2, val=v)) for v in range(5)]
    for port, run in runs_by_port(frames):
        want = [o for f in run for o in one.inject(port, f)]
        got = batch.inject_batch(port, run)
        assert observed(batch, got) == observed(one, want), [f.hex() for f in run]
        assert one.fast_packets == batch.fast_packets
    assert one.drops and one.port_stats[2].tx_packets >= (1 if shaped else 5)  # forwarded and dropped


FABRIC = Path(__file__).resolve().parents[3] / "p4src" / "fabric.p4"
# uN: my uSID 0x100; the next one, 0x102, leaves on port 2 (as bench/target_veth.py)
FABRIC_ENTRIES = """\
add my_sid hdr.ipv6.dst_addr:0xfcbbbb00010000000000000000000000/48 usid_un()
add usid_fwd hdr.ipv6.dst_addr:0xfcbbbb00010200000000000000000000/48 fwd(port:2, dmac:0x020000000b02)
add port_mac standard_metadata.egress_port:2 set_src_mac(mac:0x020000000a02)
"""


def fabric_switch(tmp_path: Path, **kw):
    from p4target import Switch
    from p4target.cli.run import apply_commands

    sw = Switch.load(FABRIC, **kw)
    (tmp_path / "fabric.stf").write_text(FABRIC_ENTRIES)
    apply_commands(sw, tmp_path / "fabric.stf")
    sw.bind_fast_path()
    return sw


def un_frame(hlim: int = 64, payload: bytes = b"\0" * 34) -> bytes:
    return bytes(Ether(src="02:00:00:00:00:01", dst="02:00:00:00:0a:01")
                 / IPv6(src="fd00:0:1:1::2", dst="fcbb:bb00:100:102:e001::", hlim=hlim)
                 / UDP(sport=49152, dport=4791) / payload)


@pytest.mark.parametrize("real_time", [False, True])
def test_fabric_inject_batch_takes_the_fast_path_and_equals_inject(tmp_path, real_time) -> None:
    import random

    rng = random.Random(13)
    good = un_frame()
    frames = [good, un_frame(hlim=1), good[:20], good[:60], b"", good]
    for _ in range(200):  # mutated uN frames: some the fast path takes, some not
        b = bytearray(good)
        for _ in range(rng.randrange(1, 4)):
            b[rng.randrange(len(b))] = rng.randrange(256)
        frames.append(bytes(b[:rng.choice([len(b), len(b), rng.randrange(len(b))])]))
    one = fabric_switch(tmp_path, real_time=real_time)
    batch = fabric_switch(tmp_path, real_time=real_time)
    want = []
    for f in frames:
        want += one.inject(1, f)
    got = []
    for i in range(0, len(frames), 64):
        got += batch.inject_batch(1, frames[i:i + 64])
    assert observed(batch, got) == observed(one, want)
    assert one.fast_packets == batch.fast_packets
    assert 0 < batch.fast_packets < len(frames)  # both paths were taken
    # the uN shift: the next uSID moves up, the frame leaves on port 2 with its MACs set
    assert got[0] == (2, bytes.fromhex("020000000b02" "020000000a02") + good[12:21] + bytes([63])
                      + good[22:38] + bytes.fromhex("fcbbbb000102e0010000000000000000") + good[54:])
    counters = [(sw.counter_read("FabricIngress.rx_port", 1), sw.counter_read("FabricEgress.tx_port", 2),
                 [sw.counter_read("FabricIngress.drops", i) for i in range(8)]) for sw in (one, batch)]
    assert counters[0] == counters[1]
    assert counters[1][0][0] == len(frames)  # fabric.p4 counts every frame in, first thing
    assert counters[1][1][0] == sum(1 for p, _ in got if p == 2) > 2


def test_inject_batch_reports_a_failing_frame_and_goes_on(program) -> None:
    sw = configured(program)
    failed: list[tuple[bytes, type]] = []
    out = sw.inject_batch(600, [frame(FWD, arg=2), b"xx"], lambda f, e: failed.append((f, type(e))))
    assert out == [] and [f for f, _ in failed] == [frame(FWD, arg=2), b"xx"]
    with pytest.raises(EntryError, match="ingress port 600"):
        sw.inject_batch(600, [frame(FWD, arg=2)])


def counted_fast_path(sw, declined: set[bytes]) -> _Counter[bytes]:
    """Wrap ``sw``'s bound fast path: count its calls per frame and decline (None:
    "not this packet") the frames in ``declined``, as the real one declines some."""
    calls: _Counter[bytes] = _Counter()
    real = sw._fast
    assert real is not None and sw.fast_kind == "python"

    def fast(data, port, now):
        calls[bytes(data)] += 1
        return None if data in declined else real(data, port, now)

    sw._fast = fast
    return calls


def test_inject_batch_runs_the_fast_path_once_per_frame(tmp_path) -> None:
    # distinct uN frames (the payload numbers them); every third one the wrapped fast
    # path declines; the real one takes the hop-limit-1 frame (it drops it) and
    # declines the short one
    good = [un_frame(payload=i.to_bytes(2, "big") * 17) for i in range(30)]
    frames = good[:10] + [un_frame(hlim=1), good[0][:20]] + good[10:]
    declined = set(good[::3])
    one = fabric_switch(tmp_path, native=False)
    batch = fabric_switch(tmp_path, native=False)
    one_calls, batch_calls = counted_fast_path(one, declined), counted_fast_path(batch, declined)
    want = []
    for f in frames:
        want += one.inject(1, f)
    got = batch.inject_batch(1, frames[:16]) + batch.inject_batch(1, frames[16:])
    assert batch_calls == one_calls == _Counter(frames)  # each frame's fast path ran once
    assert observed(batch, got) == observed(one, want)
    assert one.fast_packets == batch.fast_packets == len(good) - len(declined) + 1
    assert dict(batch.drops) == {"ingress_drop": 2}  # the hop-limit-1 and the short frame
    # the declined uN frames left through the general path, as the taken ones did
    assert [p for p, _ in got] == [2] * len(good)
    assert batch.port_stats[1].rx_packets == len(frames)
    assert batch.port_stats[1].rx_bytes == sum(map(len, frames))
