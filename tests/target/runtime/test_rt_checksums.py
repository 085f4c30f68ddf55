"""v1model checksums on the runtime's csum16, checked against scapy's own sums."""

from __future__ import annotations

from pathlib import Path

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Ether
from scapy.packet import Raw

P4 = Path(__file__).parent / "p4" / "checksum_ops.p4"
ETH = dict(dst="02:00:00:00:00:01", src="02:00:00:00:00:02")


@pytest.fixture(scope="module")
def sw():
    from p4target import Switch

    return Switch.load(P4)


def test_ipv4_checksum_verified_and_recomputed(sw) -> None:
    sent = Ether(**ETH) / IP(src="192.0.2.1", dst="198.51.100.7", ttl=9, id=77) / Raw(b"data")
    want = Ether(**ETH) / IP(src="192.0.2.1", dst="198.51.100.7", ttl=8, id=77) / Raw(b"data")
    assert sw.inject(1, bytes(sent)) == [(2, bytes(want))]


def test_bad_ipv4_checksum_sets_checksum_error(sw) -> None:
    sent = Ether(**ETH) / IP(src="192.0.2.1", dst="198.51.100.7", ttl=9, chksum=0x1234) / Raw(b"data")
    out = sw.inject(1, bytes(sent))
    assert [p for p, _ in out] == [3]


@pytest.mark.parametrize("payload", [b"", b"x", b"even payload", bytes(range(255))])
def test_udp_over_ipv6_checksum_with_payload(sw, payload: bytes) -> None:
    def pkt(hlim: int, chksum: int | None):
        return (Ether(**ETH) / IPv6(src="fd00:0:1::1", dst="fcbb:bb00:100:200::", hlim=hlim)
                / UDP(sport=49152, dport=4791, chksum=chksum) / Raw(payload))

    sent = bytes(pkt(64, 0))
    want = bytes(pkt(63, None))  # scapy computes the RFC 8200 checksum
    assert sw.inject(1, sent) == [(2, want)]
