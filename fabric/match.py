"""Match values of a table entry's key fields, as plain data.

Why here: the fabric's entries are values that several writers take (the P4Runtime
codec, STF lines, an in-process switch); each of them turns these into its own
encoding, so the model owns its match kinds instead of borrowing a target's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union


@dataclass(frozen=True, slots=True)
class Exact:
    """The key field equals ``value``."""

    value: int


@dataclass(frozen=True, slots=True)
class Lpm:
    """The top ``prefix_len`` bits of the key field equal those of ``value``."""

    value: int
    prefix_len: int


@dataclass(frozen=True, slots=True)
class Ternary:
    """``key & mask == value`` (``value`` has no bits outside ``mask``)."""

    value: int
    mask: int


MatchValue = Union[Exact, Lpm, Ternary]
