"""P4Runtime binary strings <-> integers, with the spec's width rules (section 8.3).

A value of a W-bit field travels as big-endian bytes. Senders should use the
canonical form, the shortest string that holds the value (zero is one byte, 0x00),
but a receiver puts no limit on the string's length: it accepts any string whose
value, leading zero bits removed, fits in W bits (so clients padding to the field's
width, or to an older, wider field, still work). An empty string or a value that
does not fit is refused with OUT_OF_RANGE, as the spec says, naming the field.
Reads always return the canonical form.
"""

from __future__ import annotations

from p4target.p4runtime.errors import OUT_OF_RANGE, P4RTError


def nbytes(bitwidth: int) -> int:
    return max(1, (bitwidth + 7) // 8)


def decode(data: bytes, bitwidth: int, what: str) -> int:
    """The integer in ``data`` for a ``bitwidth``-bit ``what``; P4RTError if it does not fit."""
    if not data:
        raise P4RTError(OUT_OF_RANGE, f"{what}: empty bytestring; send at least one byte (0x00 for zero)")
    value = int.from_bytes(data, "big")
    if value >> bitwidth:
        raise P4RTError(OUT_OF_RANGE, f"{what}: value 0x{value:x} does not fit in {bitwidth} bits")
    return value


def encode(value: int, bitwidth: int = 0) -> bytes:
    """Canonical bytestring of a non-negative integer (bitwidth kept for symmetry)."""
    if value <= 0:
        return b"\x00"
    return value.to_bytes((value.bit_length() + 7) // 8, "big")
