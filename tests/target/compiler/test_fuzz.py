"""10,000 random and truncated frames through multi-level parsers: never an exception;
every frame is either forwarded intact or handled on the parser-error path."""

from __future__ import annotations

import random

from scapy.layers.inet import UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Ether

from p4target import Switch
from p4target.runtime.entries import Lpm

KNOWN_ERRORS = {0, 1, 2, 3, 4, 5}       # report.err codes parser_features.p4 writes
MODIFYING_COUNTS = {0xF0, 0xF1, 0xF2, 0xF3, 9}      # counts whose ingress rewrites the stack/union


def random_frame(rng: random.Random) -> bytes:
    kind = rng.choice([1, 1, 2, 2, 3, 3, 4, 5, 6, rng.randrange(256)])
    count = rng.choice([0, 1, 5, 9, 10, 0x7F, 0x80, rng.randrange(256)])
    body = bytearray(rng.randbytes(rng.randrange(0, 24)))
    if kind == 1 and body:                 # stacks: sometimes end the list early
        for i in range(len(body)):
            body[i] &= 0xFE
        if rng.random() < 0.5:
            body[rng.randrange(len(body))] |= 1
    if kind == 2 and body:
        body[0] = rng.randrange(0, 12)     # varbit length in bytes, sometimes too long
    if kind == 3 and body:
        body[0] = (rng.choice([4, 6, rng.randrange(16)]) << 4) | (body[0] & 0xF)
    frame = bytes([kind, count]) + bytes(body)
    return frame[:rng.randrange(0, len(frame) + 1)] if rng.random() < 0.3 else frame


def test_ten_thousand_random_frames_through_the_parser_constructs(construct) -> None:
    sw = Switch.load(construct("parser_features.p4"))
    rng = random.Random(20261130)
    errors: dict[int, int] = {}
    for _ in range(10_000):
        frame = random_frame(rng)
        out = sw.inject(0, frame)
        assert len(out) == 1, frame.hex()
        port, data = out[0]
        assert port == 1
        err = data[0]
        assert err in KNOWN_ERRORS, (frame.hex(), data.hex())
        errors[err] = errors.get(err, 0) + 1
        kind = frame[0] if frame else None
        count = frame[1] if len(frame) > 1 else None
        if kind != 4 and count not in MODIFYING_COUNTS:
            # parse + deparse is the identity: valid headers re-emitted, the rest is payload
            assert data[10:] == frame, (frame.hex(), data.hex())
    # the generator reaches every outcome, so the loop really tests the error paths
    assert set(errors) == KNOWN_ERRORS, errors


def test_random_and_truncated_ipv6_frames_through_the_router(construct) -> None:
    sw = Switch.load(construct("basic_l3.p4"))
    sw.table_add("MyIngress.ipv6_lpm", {"hdr.ipv6.dst_addr": Lpm(0xFD00 << 112, 16)},
                 "MyIngress.route", {"port": 3, "dmac": 0x02_00_00_00_00_AA})
    rng = random.Random(7)
    good = bytes(Ether(dst="02:00:00:00:00:01", src="02:00:00:00:00:09") / IPv6(src="fd00::1", dst="fd00::2", hlim=9)
                 / UDP(sport=1, dport=2) / b"xyz")
    forwarded = 0
    for i in range(2_000):
        f = bytearray(good)
        for _ in range(rng.randrange(0, 4)):
            f[rng.randrange(len(f))] = rng.randrange(256)
        f = bytes(f[:rng.randrange(0, len(f) + 1)]) if i % 3 == 0 else bytes(f)
        out = sw.inject(1, f)
        for port, data in out:
            forwarded += 1
            assert port == 3 and len(data) == len(f)
            assert data[54 - 40 + 7] == f[54 - 40 + 7] - 1      # hop limit decremented
    assert forwarded > 500
