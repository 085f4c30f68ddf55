"""The bytes a hash in the fast path reads, as code (``hash_bytes``), for
``FastExterns.hash_input`` (``fast_externs``) where the fields are not the
frame's own bytes. It is pure text built from the fields' code and widths, with no
compiler state, so it lives apart from the compiler.
"""

from __future__ import annotations


def hash_bytes(parts: list[tuple[str, int]]) -> str:
    """Code for the bytes BMv2 hashes for the fields ``parts`` (code, width; each
    value fits its width): back to back from the most significant bit, zero bits up
    to a whole byte. Wide byte-aligned fields become bytes on their own and the
    others are gathered into small ints, so no shift runs on a long bit string."""
    chunks: list[str] = []
    acc: list[tuple[str, int]] = []  # fields of the chunk being gathered
    bits = 0  # its width

    def flush(pad: int) -> None:
        nonlocal acc, bits
        if not acc:
            return
        code, total = "", 0
        for c, w in acc:
            code = c if not code else f"({code} << {w} | {c})"
            total += w
        if pad:
            code, total = f"({code} << {pad})", total + pad
        chunks.append(f"{code}.to_bytes({total // 8})")
        acc, bits = [], 0

    for code, w in parts:
        if not bits and w >= 64 and w % 8 == 0:
            chunks.append(f"({code}).to_bytes({w // 8})")
            continue
        acc.append((f"({code})", w))
        bits += w
        if bits % 8 == 0 and bits >= 64:
            flush(0)
    flush(-bits % 8)
    # to_bytes is big-endian by default (Python >= 3.11, as pyproject requires), and a
    # few chunks are joined more cheaply by + than by b''.join of a tuple
    return " + ".join(chunks)
