"""Runtime of the embedded target: everything stateful that runs a compiled program.

Tables and their match engines, action profiles/selectors, counters, registers,
meters, the packet replication engine, the traffic manager, and ``Switch``, the
Python API built on them. See docs/target-internals.md sections 2 and 3.
"""

from __future__ import annotations

from p4target.runtime.bindings import Bindings
from p4target.runtime.entries import (
    EntryHandle,
    Exact,
    Group,
    Lpm,
    Member,
    Optional,
    Range,
    TableEntry,
    Ternary,
)
from p4target.runtime.switch import Switch

__all__ = [
    "Bindings", "EntryHandle", "Exact", "Group", "Lpm", "Member", "Optional", "Range",
    "Switch", "TableEntry", "Ternary",
]
