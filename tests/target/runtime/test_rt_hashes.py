"""Hash algorithms against the published check values of the CRC catalogue
(input "123456789") and hand-computed sums, as BMv2 defines each algorithm."""

from __future__ import annotations

import zlib

import pytest

from p4target.runtime.bindings import Bindings
from p4target.runtime.hashes import CRC_CCITT, CrcConfig, HashEngine, csum16, identity, to_bytes, xor16

CHECK = b"123456789"


@pytest.mark.parametrize(
    "algo, expected",
    [
        ("crc16", 0xBB3D),  # CRC-16/ARC
        ("crc32", 0xCBF43926),  # CRC-32 (IEEE)
        ("crc16_custom", 0xBB3D),  # BMv2's default custom config equals crc16
        ("crc32_custom", 0xCBF43926),
        ("crcCCITT", 0x29B1),  # CRC-16/CCITT-FALSE
        ("crc8_custom", 0xF4),  # CRC-8, poly 0x07
    ],
)
def test_crc_check_values(algo: str, expected: int) -> None:
    assert HashEngine().hash_bytes(algo, CHECK) == expected


def test_crc32_matches_zlib_on_random_data() -> None:
    import random

    rng = random.Random(3)
    eng = HashEngine()
    for n in (0, 1, 5, 64, 301):
        data = bytes(rng.getrandbits(8) for _ in range(n))
        assert eng.hash_bytes("crc32", data) == zlib.crc32(data)


def test_custom_crc_reconfigured() -> None:
    eng = HashEngine()
    eng.set_custom_crc("crc16_custom", CRC_CCITT)
    assert eng.hash_bytes("crc16_custom", CHECK) == 0x29B1
    # CRC-16/XMODEM: poly 0x1021, init 0, no reflection -> 0x31C3
    eng.set_custom_crc("crc16_custom", CrcConfig(16, 0x1021, 0, 0, False, False))
    assert eng.hash_bytes("crc16_custom", CHECK) == 0x31C3
    with pytest.raises(ValueError):
        eng.set_custom_crc("crc16_custom", CrcConfig(32, 1, 0, 0, False, False))


def test_csum16_is_the_internet_checksum() -> None:
    # RFC 1071 example bytes: 00 01 f2 03 f4 f5 f6 f7 -> sum 0xddf2 -> checksum 0x220d
    assert csum16(bytes.fromhex("0001f203f4f5f6f7")) == 0x220D
    # an IPv4 header with a correct checksum sums to 0
    hdr = bytes.fromhex("4500003c1c4640004006b1e6ac100a63ac100a0c")
    assert csum16(hdr) == 0
    # odd length: the last byte is padded with a zero byte after it
    assert csum16(b"\x01") == (~0x0100) & 0xFFFF


def test_xor16_and_identity() -> None:
    assert xor16(bytes.fromhex("12345678")) == 0x1234 ^ 0x5678
    assert xor16(bytes.fromhex("123456")) == 0x1234 ^ 0x5600
    assert identity(bytes.fromhex("0102")) == 0x0102
    assert identity(bytes(range(1, 11))) == 0x0102030405060708


def test_bit_strings_pad_at_the_end() -> None:
    assert to_bytes(0b101, 3) == bytes([0b10100000])
    assert to_bytes(0x1234, 16) == b"\x12\x34"
    assert to_bytes(0x1FF, 9) == bytes([0xFF, 0x80])


def test_bindings_hash_and_checksum_over_fields() -> None:
    rt = Bindings(seed=1)
    # two 16-bit fields 0x3132, 0x3334 are the bytes "1234"
    assert rt.hash("crc32", 0x31323334, 32) == zlib.crc32(b"1234")
    assert rt.checksum("csum16", 0x0001F203, 32, bytes.fromhex("f4f5f6f7")) == 0x220D
    with pytest.raises(KeyError):
        rt.hash("md5", 1, 8)


def test_round_robin_and_random_are_deterministic() -> None:
    eng = HashEngine()
    assert [eng.hash_bytes("round_robin", b"") for _ in range(3)] == [0, 1, 2]
    a, b = Bindings(seed=7), Bindings(seed=7)
    assert [a.hash("random", 0, 8) for _ in range(5)] == [b.hash("random", 0, 8) for _ in range(5)]
    values = {a.random(None, 3, 5) for _ in range(200)}
    assert values == {3, 4, 5}


@pytest.mark.parametrize("data, nbits, expected", [
    (0, 0, 0),
    (0x1234, 16, 0x1234),
    (0x5, 3, 0xA0),  # 101 then five zero bits: one byte 1010_0000
    (0x1FF, 9, 0xFF80),  # 1_1111_1111 then seven zero bits
    (0x0102030405060708, 64, 0x0102030405060708),
    (0x0102030405060708090A, 80, 0x0102030405060708),  # the first 8 bytes only
    (0x123, 8, 0x23),  # wider than its 8 bits: the bits beyond are not hashed
])
def test_hashes_of_bits_given_as_an_int(data: int, nbits: int, expected: int) -> None:
    """What an action selector hashes: the identity without building bytes, the others
    through the bytes; both as over to_bytes(data, nbits)."""
    from p4target.runtime.hashes import of_bits

    assert of_bits(identity)(data, nbits) == expected
    assert identity(to_bytes(data, nbits)) == expected
    crc = HashEngine().function("crc16")
    assert of_bits(crc)(data, nbits) == crc(to_bytes(data, nbits))
