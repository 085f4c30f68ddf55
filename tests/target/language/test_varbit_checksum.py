"""varbit fields in checksum field lists: the field contributes
its current bits. Expected checksums come from scapy's own IPv4 implementation (and
the STF file's hand sums): a frame scapy checksummed passes verify_checksum, and
the output after the TTL decrement carries the checksum scapy computes for TTL-1."""

from __future__ import annotations

from pathlib import Path

import pytest
from scapy.layers.inet import IP, IPOption
from scapy.layers.l2 import Ether

from p4target import Switch
from p4target.stf import run_stf_program

P4 = Path(__file__).parent / "p4"
PROG = P4 / "varbit_checksum.p4"


def test_stf() -> None:
    res = run_stf_program(PROG, P4 / "varbit_checksum.stf")
    assert res.failures == [] and res.passed


def frame(ttl: int, options: bytes, chksum: int | None = None) -> bytes:
    ip = IP(src="10.1.2.3", dst="10.9.8.7", ttl=ttl, id=0x1234, proto=17, chksum=chksum,
            options=[IPOption(options)] if options else [])
    return bytes(Ether(dst="00:00:00:00:00:02", src="00:00:00:00:00:01") / ip / b"data")


@pytest.mark.parametrize("options", [b"", b"\x01\x01\x01\x00", b"\x07\x07\x04" + bytes(33) + b"\x00\x00\x01\x00"])
def test_checksum_covers_the_options(options: bytes) -> None:
    sw = Switch.load(PROG)
    (port, out), = sw.inject(1, frame(64, options))
    assert port == 2 and out == frame(63, options)
    # a checksum one off is refused: the frame is dropped
    good = IP(frame(64, options)[14:]).chksum
    assert sw.inject(1, frame(64, options, chksum=good ^ 1)) == []
