"""P4Runtime binary strings <-> integers, with the spec's width rules.

A value of a W-bit field travels as big-endian bytes. The canonical form has no
leading zero bytes (zero is one byte, 0x00); clients may also pad to ceil(W/8)
bytes, which we accept. Anything longer, empty, or with bits above W is refused
with INVALID_ARGUMENT naming the field. Reads return the canonical form.
"""

from __future__ import annotations

from p4target.p4runtime.errors import invalid


def nbytes(bitwidth: int) -> int:
    return max(1, (bitwidth + 7) // 8)


def decode(data: bytes, bitwidth: int, what: str) -> int:
    """The integer in ``data`` for a ``bitwidth``-bit ``what``; P4RTError if it does not fit."""
    if not data:
        raise invalid(f"{what}: empty bytestring; send at least one byte (0x00 for zero)")
    if len(data) > nbytes(bitwidth):
        stripped = data.lstrip(b"\x00")
        if len(stripped) <= nbytes(bitwidth) and bitwidth > 0:
            raise invalid(
                f"{what}: {len(data)}-byte value for a {bitwidth}-bit field is not canonical; "
                f"send at most {nbytes(bitwidth)} bytes without extra leading zeros"
            )
        raise invalid(f"{what}: {len(data)}-byte value does not fit in {bitwidth} bits")
    value = int.from_bytes(data, "big")
    if value >> bitwidth:
        raise invalid(f"{what}: value 0x{value:x} does not fit in {bitwidth} bits")
    return value


def encode(value: int, bitwidth: int = 0) -> bytes:
    """Canonical bytestring of a non-negative integer (bitwidth kept for symmetry)."""
    if value <= 0:
        return b"\x00"
    return value.to_bytes((value.bit_length() + 7) // 8, "big")
