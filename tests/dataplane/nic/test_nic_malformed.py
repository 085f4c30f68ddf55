"""Malformed frames on every port: dropped and counted, never forwarded, never a crash."""

from __future__ import annotations

import random

from scapy.layers.inet6 import IPv6

from p4target.runtime.entries import Exact
from tests.dataplane.nic.nic_frames import fabric_frame, mrc_frame
from tests.dataplane.nic.nic_case import host_ip, nic_ip, nic_plane_port
from tests.dataplane.packets import mrc_write, usid_carrier


def total_drops(sw) -> int:
    """Drops nic.p4 counted; the target itself must not have had to drop anything."""
    assert sw.drops.get("internal_error", 0) == 0 and sw.drops.get("assert", 0) == 0
    return sum(sw.counter_read("NicIngress.drops", r)[0] for r in range(32))


def test_every_truncation_of_a_host_frame_is_dropped_and_counted(nic):
    sw, cfg = nic
    frame = bytes(mrc_frame(cfg, 1, 1, cfg.explicit[0].ev))
    for cut in range(len(frame)):
        assert sw.inject(0, frame[:cut]) == [], cut
    assert total_drops(sw) == len(frame)
    assert len(sw.inject(0, frame)) == 1


def test_every_truncation_of_a_fabric_frame_is_dropped_and_counted(nic):
    sw, cfg = nic
    inner = bytes(IPv6(src=host_ip(1, 1), dst=host_ip(0, 1)) / mrc_write(3, 1, b"q" * 16))
    frame = fabric_frame(cfg, 2, nic_ip(1, 1), usid_carrier([0xE001]), inner)
    for cut in range(len(frame)):
        assert sw.inject(nic_plane_port(2), frame[:cut]) == [], cut
    assert total_drops(sw) == len(frame)
    assert len(sw.inject(nic_plane_port(2), frame)) == 1


def test_random_garbage_and_bit_flips_never_crash_and_are_counted(nic):
    sw, cfg = nic
    rng = random.Random(6)
    good_host = bytes(mrc_frame(cfg, 1, 1, cfg.explicit[3].ev))
    inner = bytes(IPv6(src=host_ip(1, 1), dst=host_ip(0, 1)) / mrc_write(3, 1, b"q" * 16))
    good_fabric = fabric_frame(cfg, 0, nic_ip(1, 1), usid_carrier([0xE001]), inner)
    sent = 0
    forwarded = 0
    for i in range(400):
        port = rng.choice([0, nic_plane_port(0)])
        base = good_host if port == 0 else good_fabric
        if i % 4 == 0:
            data = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 120)))
        else:
            buf = bytearray(base)
            for _ in range(rng.randrange(1, 4)):
                pos = rng.randrange(len(buf))
                buf[pos] ^= 1 << rng.randrange(8)
            data = bytes(buf)
        out = sw.inject(port, data)
        sent += 1
        assert len(out) <= 1
        forwarded += len(out)
        for _, frame in out:
            # Whatever leaves is a well-formed IPv6 frame of consistent length.
            assert frame[12:14] == b"\x86\xdd"
            assert int.from_bytes(frame[18:20], "big") + 54 <= len(frame)
    assert total_drops(sw) + forwarded == sent


def test_an_egress_port_without_macs_drops_and_counts(nic):
    sw, cfg = nic
    e = next(e for e in cfg.explicit if e.plane == 1)
    sw.table_delete("NicEgress.egress_port", {"standard_metadata.egress_port": Exact(nic_plane_port(1))})
    assert sw.inject(0, bytes(mrc_frame(cfg, e.dst_leaf, e.dst_port, e.ev))) == []
    assert sw.counter_read("NicEgress.drops", 14)[0] == 1
    assert sw.counter_read("NicEgress.plane_tx", 1)[0] == 0


def test_host_traffic_from_a_foreign_source_is_dropped_and_counted(nic):
    sw, cfg = nic
    e = cfg.explicit[0]
    for src in ("fd00:0:1:1::1", "fe80::1", "fd00:0:0:2::1"):
        frame = mrc_frame(cfg, e.dst_leaf, e.dst_port, e.ev)
        frame[IPv6].src = src
        assert sw.inject(0, bytes(frame)) == []
    assert sw.counter_read("NicIngress.drops", 17)[0] == 3
    assert sw.counter_read("NicIngress.ev_tx", e.ev)[0] == 0
