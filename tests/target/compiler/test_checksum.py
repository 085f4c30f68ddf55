"""verify_checksum / update_checksum(_with_payload) against the checksums scapy computes."""

from __future__ import annotations

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Ether

from p4target import Switch

# explicit addresses: scapy would otherwise look them up (and might send ARP/ND)
L2 = dict(dst="02:00:00:00:00:02", src="02:00:00:00:00:01")


@pytest.fixture(scope="module")
def sw():
    from tests.target.compiler.conftest import CONSTRUCTS
    return Switch.load(CONSTRUCTS / "checksum.p4")


def test_ipv4_checksum_is_verified_and_updated(sw) -> None:
    f = Ether(**L2) / IP(src="10.0.0.1", dst="10.0.0.2", ttl=9, id=77) / b"data"
    out = sw.inject(1, bytes(f))
    want = Ether(bytes(f))
    want[IP].ttl = 8
    del want[IP].chksum            # scapy recomputes it
    assert out == [(2, bytes(want))]


def test_wrong_ipv4_checksum_sets_checksum_error(sw) -> None:
    f = Ether(**L2) / IP(src="10.0.0.1", dst="10.0.0.2", ttl=9, chksum=0x1234) / b"data"
    assert sw.inject(1, bytes(f)) == []


def test_udp_checksum_with_payload_over_ipv6(sw) -> None:
    f = Ether(**L2) / IPv6(src="fd00::1", dst="fd00::2") / UDP(sport=1, dport=4791) / (b"payload!" * 3)
    out = sw.inject(1, bytes(f))
    want = Ether(bytes(f))
    want[UDP].sport = 5555
    del want[UDP].chksum
    assert out == [(2, bytes(want))]
