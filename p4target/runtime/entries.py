"""Match values and table entries as the control plane names them.

These are the values callers of ``Switch.table_add`` pass per key field, and what
``Switch.table_entries`` gives back. They are plain frozen values so the P4Runtime
server, the STF runner and tests can build and compare them without knowing how
the match engines store entries.
"""

from __future__ import annotations

from dataclasses import dataclass, field
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


@dataclass(frozen=True, slots=True)
class Range:
    """``low <= key <= high``."""

    low: int
    high: int


@dataclass(frozen=True, slots=True)
class Optional:
    """The key field equals ``value``; leaving the field out matches anything."""

    value: int


@dataclass(frozen=True, slots=True)
class Member:
    """An entry of a table with an action profile points at one member."""

    member_id: int


@dataclass(frozen=True, slots=True)
class Group:
    """An entry of a table with an action selector points at one group."""

    group_id: int


MatchValue = Union[Exact, Lpm, Ternary, Range, Optional]
ActionSpec = Union[str, Member, Group]


@dataclass(frozen=True, slots=True)
class EntryHandle:
    """What ``table_add`` returns: enough to find the entry again."""

    table: str
    match: tuple
    priority: int | None


@dataclass
class TableEntry:
    """One installed entry, as ``Switch.table_entries`` reports it.

    ``match`` holds only the fields that are not wildcards (a don't-care ternary,
    lpm /0, range over the whole field or absent optional is left out, as P4Runtime
    does). Exactly one of ``action``, ``member``, ``group`` is set. ``counters`` is
    (packets, bytes) of the table's direct counter, or None without one.
    """

    table: str
    match: dict[str, MatchValue]
    action: str | None = None
    params: dict[str, int] = field(default_factory=dict)
    member: int | None = None
    group: int | None = None
    priority: int | None = None
    counters: tuple[int, int] | None = None
    meter_config: tuple[float, int, float, int] | None = None
    is_const: bool = False
