"""simple_switch's packet sequence on the embedded target, through a real program.

tests/target/runtime/p4/v1switch_ops.p4 writes what each pipeline stage saw into
report fields of its "cmd" header; each test sends a scapy frame through
``Switch`` and compares the exact bytes that come out (and where).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from scapy.layers.l2 import Ether
from scapy.packet import Packet, Raw, bind_layers
from scapy.fields import ByteField, IntField, ShortField

from p4target.errors import EntryError
from p4target.runtime.entries import Exact
from p4target.runtime.hashes import crc16

P4 = Path(__file__).parent / "p4" / "v1switch_ops.p4"
ETYPE_CMD = 0x88B5
DST = "02:00:00:00:00:0d"
SRC = "02:00:00:00:00:05"

FWD, MARK_TO_DROP, SPEC_511, MCAST, CLONE_I2E, CLONE_E2E, RESUBMIT, RECIRC = range(1, 9)
TRUNCATE, DIGEST, PRIORITY, METER, HASH, EGRESS_DROP, TABLE, ASSERT, RESUBMIT_FOREVER = range(9, 18)


class Cmd(Packet):
    name = "cmd"
    fields_desc = [
        ByteField("op", 0), ByteField("arg", 0), ShortField("val", 0),
        ByteField("in_type", 0), ByteField("eg_type", 0), ByteField("mark", 0), ByteField("err", 0),
        ShortField("rid", 0), ShortField("hash", 0),
        IntField("enq_qdepth", 0), IntField("deq_qdepth", 0), IntField("pkt_len", 0),
        IntField("ig_ts", 0), IntField("deq_delta", 0),
    ]


bind_layers(Ether, Cmd, type=ETYPE_CMD)


def frame(op: int, arg: int = 0, val: int = 0, src: str = SRC, dst: str = DST, payload: bytes = b"") -> bytes:
    pkt = Ether(dst=dst, src=src, type=ETYPE_CMD) / Cmd(op=op, arg=arg, val=val)
    if payload:
        pkt = pkt / Raw(payload)
    return bytes(pkt)


def expect(op: int, arg: int = 0, val: int = 0, src: str = SRC, dst: str = DST, payload: bytes = b"",
           **report) -> bytes:
    pkt = Ether(dst=dst, src=src, type=ETYPE_CMD) / Cmd(op=op, arg=arg, val=val, **report)
    if payload:
        pkt = pkt / Raw(payload)
    return bytes(pkt)


@pytest.fixture(scope="module")
def program():
    from p4target.compiler import compile_file

    return compile_file(P4)


@pytest.fixture
def sw(program):
    from p4target import Switch

    return Switch(program, seed=1)


def test_unicast_reports_length_and_instance_type(sw) -> None:
    f = frame(FWD, arg=2, payload=b"abc")
    assert sw.inject(1, f) == [(2, expect(FWD, arg=2, payload=b"abc", pkt_len=len(f)))]
    assert sw.port_stats[1].rx_packets == 1 and sw.port_stats[2].tx_packets == 1
    assert sw.counter_read("MyIngress.rx", 1) == (1, len(f))
    assert sw.register_read("MyIngress.last_len", 0) == len(f)


def test_frames_without_cmd_pass_unchanged(sw) -> None:
    f = bytes(Ether(dst=DST, src=SRC, type=0x86DD) / Raw(b"x" * 40))
    assert sw.inject(3, f) == [(1, f)]


@pytest.mark.parametrize("op, reason", [(MARK_TO_DROP, "ingress_drop"), (SPEC_511, "ingress_drop"),
                                        (EGRESS_DROP, "egress_drop")])
def test_drops_are_counted_by_reason(sw, op, reason) -> None:
    assert sw.inject(1, frame(op, arg=2)) == []
    assert sw.drops[reason] == 1 and sw.drop_count == 1


def test_multicast_replicates_with_rid(sw) -> None:
    sw.mc_group_set(5, [(1, 10), (2, 20), (3, 30)])
    f = frame(MCAST, arg=9, val=5)
    out = sw.inject(4, f)
    assert out == [
        (port, expect(MCAST, arg=9, val=5, eg_type=5, rid=rid, pkt_len=len(f)))
        for port, rid in ((1, 10), (2, 20), (3, 30))
    ]
    sw.mc_group_delete(5)
    assert sw.inject(4, f) == []
    assert sw.drops["mcast_group_empty"] == 1


def test_ingress_clone_is_the_received_packet_with_preserved_metadata(sw) -> None:
    sw.clone_session_set(7, [(4, 0)])
    f = frame(CLONE_I2E, arg=2, val=7)
    out = dict(sw.inject(1, f))
    assert out[2] == expect(CLONE_I2E, arg=2, val=7, src="00:00:00:00:00:00", mark=0xAB, pkt_len=len(f))
    assert out[4] == expect(CLONE_I2E, arg=2, val=7, eg_type=1, mark=0xAB, pkt_len=len(f))
    assert len(out) == 2


def test_clone_to_unknown_session_only_forwards(sw) -> None:
    out = sw.inject(1, frame(CLONE_I2E, arg=2, val=99))
    assert [p for p, _ in out] == [2]


def test_egress_clone_is_the_packet_as_it_leaves(sw) -> None:
    sw.clone_session_set(8, [(5, 0)], truncate=16)
    f = frame(CLONE_E2E, arg=2, val=8)
    out = dict(sw.inject(1, f))
    leaving = expect(CLONE_E2E, arg=2, val=8, dst="00:00:00:00:00:ee", mark=0xCD, hash=0x1234, pkt_len=len(f))
    assert out[2] == leaving
    # headers as they left; metadata reset except field list 1 (mark), so hash is 0
    clone = expect(CLONE_E2E, arg=2, val=8, dst="00:00:00:00:00:ee", eg_type=2, mark=0xCD, pkt_len=len(f))
    assert out[5] == clone[:16]  # the session truncates its copies
    sw.clone_session_set(8, [(5, 0)])
    out = dict(sw.inject(1, f))
    assert out[5] == clone


def test_resubmit_starts_again_from_the_received_packet(sw) -> None:
    f = frame(RESUBMIT, arg=2)
    # second pass: ingress saw instance_type 6; egress sees NORMAL, as simple_switch sets it
    assert sw.inject(1, f) == [(2, expect(RESUBMIT, arg=2, in_type=6, mark=0x77, pkt_len=len(f)))]


def test_recirculate_feeds_the_deparsed_packet_back(sw) -> None:
    f = frame(RECIRC, arg=2, val=1)
    out = sw.inject(1, f)
    assert out == [(2, expect(RECIRC, arg=2, val=2, in_type=4, mark=0x88, pkt_len=len(f)))]
    assert 3 not in sw.port_stats or sw.port_stats[3].tx_packets == 0


def test_truncate_cuts_the_emitted_packet(sw) -> None:
    f = frame(TRUNCATE, arg=2, val=20, payload=b"p" * 30)
    full = expect(TRUNCATE, arg=2, val=20, payload=b"p" * 30, pkt_len=len(f))
    assert sw.inject(1, f) == [(2, full[:20])]


def test_digest_reaches_the_control_plane(sw) -> None:
    sw.inject(6, frame(DIGEST, arg=2))
    assert sw.digests() == [("learn_t", (0x020000000005, 6))]
    assert sw.digests() == []


def test_parser_error_still_reaches_ingress(sw) -> None:
    f = bytes(Ether(dst=DST, src=SRC, type=ETYPE_CMD) / Raw(b"\x01\x02\x03\x04"))
    want = bytes(Ether(dst=DST, src=SRC, type=0xEEEE) / Raw(b"\x01\x02\x03\x04"))
    assert sw.inject(1, f) == [(9, want)]


def test_meter_colours_packets(sw) -> None:
    sw.meter_set("MyIngress.m", 0, 1, 1, 2, 2)  # packets: 1/s burst 1, peak 2/s burst 2
    marks = [Cmd(sw.inject(1, frame(METER, arg=2, val=0))[0][1][14:]).mark for _ in range(3)]
    assert marks == [0, 1, 2]
    sw.advance(2.0)
    assert Cmd(sw.inject(1, frame(METER, arg=2, val=0))[0][1][14:]).mark == 0
    # an unconfigured meter is always green
    assert Cmd(sw.inject(1, frame(METER, arg=2, val=3))[0][1][14:]).mark == 0


def test_hash_is_bmv2_crc16_of_the_addresses(sw) -> None:
    out = sw.inject(1, frame(HASH, arg=2))
    want = crc16(bytes.fromhex("02000000000d" "020000000005"))
    assert Cmd(out[0][1][14:]).hash == want


def test_table_hit_and_miss_through_the_api(sw) -> None:
    sw.table_add("MyIngress.ports", {"hdr.cmd.arg": Exact(3)}, "MyIngress.fwd", {"port": 6})
    assert [p for p, _ in sw.inject(1, frame(TABLE, arg=3))] == [6]
    assert sw.inject(1, frame(TABLE, arg=4)) == []
    sw.table_set_default("MyIngress.ports", "MyIngress.fwd", {"port": 7})
    assert [p for p, _ in sw.inject(1, frame(TABLE, arg=4))] == [7]
    entries = sw.table_entries("MyIngress.ports")
    assert [(e.match, e.action, e.params) for e in entries] == [
        ({"hdr.cmd.arg": Exact(3)}, "MyIngress.fwd", {"port": 6})]
    with pytest.raises(EntryError) as err:
        sw.table_add("MyIngress.ports", {"hdr.cmd.arg": 3}, "MyIngress.fwd", {"port": 6})
    assert err.value.kind == "exists"
    with pytest.raises(EntryError) as err:
        sw.table_add("MyIngress.nope", {}, "NoAction")
    assert err.value.kind == "invalid" and "MyIngress.ports" in str(err.value)


def test_priority_queues_serve_higher_priority_first(sw) -> None:
    sw.set_queue_rate(2, 1000)
    for _ in range(3):
        sw.send(1, frame(PRIORITY, arg=2, val=0))
    sw.send(1, frame(PRIORITY, arg=2, val=7))
    first = sw.run_until_idle()
    assert len(first) == 1
    rest = sw.advance(0.01)
    got = [Cmd(data[14:]) for _, data in first + rest]
    assert [c.val for c in got] == [7, 0, 0, 0]
    assert [(c.enq_qdepth, c.deq_qdepth) for c in got] == [(0, 0), (0, 2), (1, 1), (2, 0)]


def test_full_queue_drops_and_depths_are_visible(sw) -> None:
    sw.set_queue_rate(2, 1000)
    sw.set_queue_depth(2, 4)
    for _ in range(10):
        sw.send(1, frame(FWD, arg=2))
    out = sw.run_until_idle() + sw.advance(0.1)
    assert len(out) == 4
    assert sw.drops["queue_full"] == 6
    depths = [(Cmd(d[14:]).enq_qdepth, Cmd(d[14:]).deq_qdepth) for _, d in out]
    assert depths == [(0, 3), (1, 2), (2, 1), (3, 0)]


def test_port_down_drops_output_and_cpu_port_collects_packet_ins(program) -> None:
    from p4target import Switch

    sw = Switch(program, cpu_port=2)
    sw.set_port_status(3, False)
    assert sw.inject(1, frame(FWD, arg=3)) == []
    assert sw.drops["port_down"] == 1
    f = frame(FWD, arg=2)
    out = sw.inject(1, f)
    assert list(sw.packet_ins) == [data for _, data in out] and out[0][0] == 2


def test_virtual_clock_sets_timestamps_and_queueing_delay(sw) -> None:
    sw.advance(1.5)
    got = Cmd(sw.inject(1, frame(FWD, arg=2))[0][1][14:])
    assert (got.ig_ts, got.deq_delta) == (1_500_000, 0)
    sw.set_queue_rate(2, 1000)
    for _ in range(6):
        sw.send(1, frame(FWD, arg=2))
    out = sw.run_until_idle() + sw.advance(0.01)
    reports = [Cmd(d[14:]) for _, d in out]
    assert [r.ig_ts for r in reports] == [1_500_000] * 6
    # the idle port's token bucket lets 4 leave at once, then one packet per ms
    assert [r.deq_delta for r in reports] == [0, 0, 0, 0, 1000, 2000]


def test_failed_assert_drops_and_counts(sw) -> None:
    assert sw.inject(1, frame(ASSERT, arg=2, val=0xDEAD)) == []
    assert sw.drops["assert"] == 1
    assert len(sw.inject(1, frame(ASSERT, arg=2, val=1))) == 1


def test_endless_resubmit_is_cut_and_counted(sw) -> None:
    assert sw.inject(1, frame(RESUBMIT_FOREVER, arg=2)) == []
    assert sw.drops["loop"] == 1
    assert sw.inject(1, frame(FWD, arg=2))  # the switch carries on


def test_send_checks_the_port(sw) -> None:
    with pytest.raises(EntryError) as err:
        sw.send(511, frame(FWD))
    assert err.value.kind == "invalid"


def test_down_ingress_port_drops_on_receive(sw) -> None:
    sw.set_port_status(1, False)
    assert sw.inject(1, frame(FWD, arg=2)) == []
    assert sw.drops["port_down"] == 1 and sw.port_stats[1].rx_packets == 1
    sw.set_port_status(1, True)
    assert len(sw.inject(1, frame(FWD, arg=2))) == 1


def test_real_time_clock_follows_the_wall_clock(program) -> None:
    import time

    from p4target import Switch

    sw = Switch(program, real_time=True)
    time.sleep(0.02)
    got = Cmd(sw.inject(1, frame(FWD, arg=2))[0][1][14:])
    assert 20_000 <= got.ig_ts < 10_000_000
