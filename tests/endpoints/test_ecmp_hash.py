"""The RoCE baseline's path choice (endpoints/ecmp.py): CRC-32 over the QP's 4-tuple,
modulo the number of EVs. The CRC is recomputed here bit by bit (the reflected
IEEE 802.3 polynomial 0xEDB88320, initial and final XOR 0xFFFFFFFF), and a few EVs
are written out."""

from __future__ import annotations

import ipaddress
import random
from collections import Counter

import pytest

from endpoints import ecmp

EVS = list(range(20000, 20064))  # 64 EVs


def crc32_bitwise(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0xEDB88320 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def key(src: str, dst: str, sport: int, dport: int) -> bytes:
    return (ipaddress.ip_address(src).packed + ipaddress.ip_address(dst).packed + sport.to_bytes(2, "big")
            + dport.to_bytes(2, "big"))


def test_the_crc_is_crc32() -> None:
    assert crc32_bitwise(b"123456789") == 0xCBF43926  # the CRC-32 check value


@pytest.mark.parametrize("src,dst,sport,dport,crc,ev", [
    ("fd00:0:0:1::1", "fd00:0:1:1::1", 4791, 4791, 0xBBEEECE9, 20000 + 0xBBEEECE9 % 64),
    ("fd00:0:0:1::1", "fd00:0:1:1::1", 49152, 4791, 0xF7A2756E, 20046),
    ("fd00:0:0:1::1", "fd00:0:1:1::1", 49153, 4791, 0xF6601F59, 20025),
    ("10.0.0.1", "10.0.0.2", 50000, 4791, 0x482C4C41, 20001),
])
def test_the_ev_of_a_4_tuple(src: str, dst: str, sport: int, dport: int, crc: int, ev: int) -> None:
    assert crc32_bitwise(key(src, dst, sport, dport)) == crc
    assert ecmp.flow_hash(src, dst, sport, dport) == crc
    assert ecmp.qp_ev(src, dst, sport, dport, EVS) == ev
    assert 0xBBEEECE9 % 64 == 41  # the first row's EV is 20041


def test_qps_on_random_source_ports_collide_as_on_an_ecmp_fabric() -> None:
    """64 QPs on source ports drawn at random (as a NIC or the kernel draws them) over
    64 EVs: balls into bins, some EVs carry several QPs and others none."""
    ports = random.Random(5).sample(range(49152, 65536), 64)
    evs = [ecmp.qp_ev("fd00:0:0:1::1", "fd00:0:1:1::1", p, 4791, EVS) for p in ports]
    assert evs == [EVS[crc32_bitwise(key("fd00:0:0:1::1", "fd00:0:1:1::1", p, 4791)) % 64] for p in ports]
    assert len(set(evs)) < 64  # at least two QPs share a path
    assert max(Counter(evs).values()) >= 2


def test_an_aligned_block_of_ports_spreads_one_to_one() -> None:
    """CRC-32 is linear over GF(2): ports 49152..49215 differ in their low 6 bits only,
    and the low 6 bits of the CRC (mod 64) are then an invertible function of them
    here, so these 64 QPs take the 64 EVs once each (docs/transport.md)."""
    evs = [ecmp.qp_ev("fd00:0:0:1::1", "fd00:0:1:1::1", p, 4791, EVS) for p in range(49152, 49216)]
    assert sorted(evs) == EVS


def test_a_source_port_for_a_chosen_ev() -> None:
    port = ecmp.source_port_for_ev("fd00:0:0:1::1", "fd00:0:1:1::1", 4791, EVS, 20025)
    assert port == 49153  # 49152 hashes onto 20046 (above), 49153 onto 20025
    for ev in (20000, 20063):
        p = ecmp.source_port_for_ev("fd00:0:0:1::1", "fd00:0:1:1::1", 4791, EVS, ev)
        assert p is not None and crc32_bitwise(key("fd00:0:0:1::1", "fd00:0:1:1::1", p, 4791)) % 64 == ev - 20000
        assert all(crc32_bitwise(key("fd00:0:0:1::1", "fd00:0:1:1::1", q, 4791)) % 64 != ev - 20000
                   for q in range(49152, p))
    with pytest.raises(ValueError, match="not in the EV list"):
        ecmp.source_port_for_ev("fd00:0:0:1::1", "fd00:0:1:1::1", 4791, EVS, 5)


def test_mixed_families_and_bad_ports_are_refused() -> None:
    with pytest.raises(ValueError, match="same address family"):
        ecmp.flow_hash("10.0.0.1", "fd00::1", 1, 2)
    with pytest.raises(ValueError, match="UDP ports"):
        ecmp.flow_hash("10.0.0.1", "10.0.0.2", 70000, 2)
