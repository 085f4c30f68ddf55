"""Hash and checksum algorithms computed exactly as BMv2's simple_switch does.

v1model's ``hash()``, ``verify_checksum``/``update_checksum`` and action selectors
must give the same numbers on this target as on BMv2, or ECMP/spray choices and
checksums would differ between the two. BMv2 first packs the field list into bytes
(fields back to back from the most significant bit, zero bits appended to reach a
whole byte), then runs the algorithm over those bytes. The parameters below are
BMv2's: crc16 is CRC-16/ARC (poly 0x8005, reflected, init 0), crc32 is the
IEEE/zlib CRC-32, crc16_custom/crc32_custom start from those same settings,
crcCCITT is CRC-16/CCITT-FALSE, csum16 is the RFC 1071 Internet checksum,
xor16/xor32 fold big-endian words (tail padded with zero bytes), identity keeps
the first 8 bytes as a big-endian integer.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Callable


def to_bytes(data: int, nbits: int) -> bytes:
    """Pack an ``nbits``-wide bit string into bytes the way BMv2's BufBuilder does."""
    if nbits <= 0:
        return b""
    pad = (-nbits) % 8
    return ((data & ((1 << nbits) - 1)) << pad).to_bytes((nbits + pad) // 8, "big")


def _reflect(value: int, nbits: int) -> int:
    out = 0
    for _ in range(nbits):
        out = (out << 1) | (value & 1)
        value >>= 1
    return out


@dataclass(frozen=True)
class CrcConfig:
    """A CRC in BMv2's terms (the Rocksoft model's parameters)."""

    width: int
    polynomial: int
    initial_remainder: int
    final_xor_value: int
    data_reflected: bool
    remainder_reflected: bool


class Crc:
    """A table-driven CRC over bytes, MSB-first register as BMv2's crc_custom."""

    def __init__(self, config: CrcConfig) -> None:
        self.config = config
        w = config.width
        top = 1 << (w - 1)
        mask = (1 << w) - 1
        table = []
        for dividend in range(256):
            rem = dividend << (w - 8)
            for _ in range(8):
                rem = ((rem << 1) ^ config.polynomial) if rem & top else (rem << 1)
            table.append(rem & mask)
        self._table = tuple(table)
        self._refl8 = tuple(_reflect(b, 8) for b in range(256))

    def __call__(self, data: bytes) -> int:
        c = self.config
        w = c.width
        shift = w - 8
        mask = (1 << w) - 1
        table = self._table
        rem = c.initial_remainder
        if c.data_reflected:
            refl = self._refl8
            for b in data:
                rem = (table[refl[b] ^ (rem >> shift)] ^ (rem << 8)) & mask
        else:
            for b in data:
                rem = (table[b ^ (rem >> shift)] ^ (rem << 8)) & mask
        if c.remainder_reflected:
            rem = _reflect(rem, w)
        return rem ^ c.final_xor_value


CRC16 = CrcConfig(16, 0x8005, 0x0000, 0x0000, True, True)
CRC32 = CrcConfig(32, 0x04C11DB7, 0xFFFFFFFF, 0xFFFFFFFF, True, True)
CRC_CCITT = CrcConfig(16, 0x1021, 0xFFFF, 0x0000, False, False)
CRC8 = CrcConfig(8, 0x07, 0x00, 0x00, False, False)

_crc16 = Crc(CRC16)
_crc_ccitt = Crc(CRC_CCITT)


def crc16(data: bytes) -> int:
    return _crc16(data)


def crc32(data: bytes) -> int:
    # BMv2's crc32 has the parameters of zlib's; zlib computes it in C.
    return zlib.crc32(data) & 0xFFFFFFFF


def crc_ccitt(data: bytes) -> int:
    return _crc_ccitt(data)


def csum16(data: bytes) -> int:
    """RFC 1071 one's-complement checksum; an odd last byte is padded with zero."""
    if len(data) & 1:
        data = data + b"\x00"
    total = sum(int.from_bytes(data[i:i + 2], "big") for i in range(0, len(data), 2))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def _xor_words(data: bytes, nbytes: int) -> int:
    acc = 0
    for i in range(0, len(data), nbytes):
        chunk = data[i:i + nbytes]
        acc ^= int.from_bytes(chunk.ljust(nbytes, b"\x00"), "big")
    return acc


def xor16(data: bytes) -> int:
    return _xor_words(data, 2)


def xor32(data: bytes) -> int:
    return _xor_words(data, 4)


def identity(data: bytes) -> int:
    return int.from_bytes(data[:8], "big")


def _identity_of_bits(data: int, nbits: int) -> int:
    """``identity(to_bytes(data, nbits))`` without the bytes."""
    if nbits <= 0:
        return 0
    pad = (-nbits) % 8
    value = (data & ((1 << nbits) - 1)) << pad
    extra = nbits + pad - 64
    return value >> extra if extra > 0 else value


def of_bits(fn: Callable[[bytes], int]) -> Callable[[int, int], int]:
    """``fn`` over an ``nbits``-wide bit string given as an int (``fn(to_bytes(data,
    nbits))``): what an action selector hashes its key with, once per packet; the
    identity hash needs no bytes at all."""
    if fn is identity:
        return _identity_of_bits
    return lambda data, nbits: fn(to_bytes(data, nbits))


class HashEngine:
    """Every algorithm by its v1model/BMv2 name, with per-switch custom CRC state.

    One instance per switch: ``crc16_custom``/``crc32_custom`` can be reconfigured
    at run time (as BMv2's CLI allows), and ``round_robin`` keeps a counter.
    ``random`` is served by the caller's seeded generator.
    """

    def __init__(self, random_fn: Callable[[], int] | None = None) -> None:
        self._custom: dict[str, Crc] = {
            "crc16_custom": Crc(CRC16),
            "crc32_custom": Crc(CRC32),
            "crc8_custom": Crc(CRC8),
        }
        self._round_robin = 0
        self._random_fn = random_fn
        self._fns: dict[str, Callable[[bytes], int]] = {
            "crc16": crc16,
            "crc32": zlib.crc32,  # what crc32() computes, without a Python call
            "crcCCITT": crc_ccitt,
            "crc_ccitt": crc_ccitt,
            "csum16": csum16,
            "cksum16": csum16,
            "xor16": xor16,
            "xor32": xor32,
            "identity": identity,
            "round_robin": self._next_round_robin,
            "random": self._random,
        }
        for name, crc in self._custom.items():
            self._fns[name] = crc

    def _next_round_robin(self, data: bytes) -> int:
        value = self._round_robin
        self._round_robin += 1
        return value

    def _random(self, data: bytes) -> int:
        if self._random_fn is None:
            raise ValueError("hash algorithm 'random' needs a random source")
        return self._random_fn()

    def algorithms(self) -> tuple[str, ...]:
        return tuple(self._fns)

    def function(self, algo: str) -> Callable[[bytes], int]:
        """The byte-level function for ``algo``; KeyError names unknown ones."""
        try:
            return self._fns[algo]
        except KeyError:
            raise KeyError(
                f"unknown hash algorithm {algo!r}; known: {', '.join(sorted(self._fns))}"
            ) from None

    def set_custom_crc(self, algo: str, config: CrcConfig) -> None:
        """Reconfigure ``crc16_custom``/``crc32_custom`` (BMv2's set_crc*_parameters)."""
        if algo not in self._custom:
            raise KeyError(f"{algo!r} is not a custom CRC")
        expected = self._custom[algo].config.width
        if config.width != expected:
            raise ValueError(f"{algo} needs a {expected}-bit configuration")
        crc = Crc(config)
        self._custom[algo] = crc
        self._fns[algo] = crc

    def hash(self, algo: str, data: int, nbits: int) -> int:
        return self.function(algo)(to_bytes(data, nbits))

    def hash_bytes(self, algo: str, data: bytes) -> int:
        return self.function(algo)(data)
