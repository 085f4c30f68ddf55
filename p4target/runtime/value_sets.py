"""Parser value sets (``value_set<T>(size) vs;``, P4_16 13.11): select cases the control plane fills.

A value set holds up to ``size`` members; a member gives one match value per field
of ``T`` (one field for ``bit<W>``), each of the field's match kind (``@match`` on a
struct field, exact by default), as table keys do. ``select(k1, ..., kn) { vs: ... }``
takes the case when some member matches every key. A new value set is empty: its
cases match nothing until the control plane writes members (P4Runtime's
``ValueSetEntry`` replaces them all at once, as ``set_members`` does).
"""

from __future__ import annotations

from collections.abc import Sequence

from p4target.errors import EntryError
from p4target.model import ValueSet
from p4target.runtime.entries import Exact, Lpm, Optional, Range, Ternary

MatchValue = Exact | Lpm | Ternary | Range | Optional
Check = tuple[int, int, int, int]  # (mask, value, low, high): key & mask == value and low <= key <= high


class ValueSetRuntime:
    """The members of one value set, and the check the generated parser calls."""

    def __init__(self, model: ValueSet) -> None:
        self.model = model
        self.members: list[tuple[MatchValue, ...]] = []
        self._checks: list[tuple[Check, ...]] = []

    def set_members(self, members: Sequence[Sequence[MatchValue]]) -> None:
        """Replace the members (all or nothing: a bad member leaves the set unchanged)."""
        if len(members) > self.model.size:
            raise EntryError("full", f"value set {self.model.name} holds {self.model.size} members, "
                             f"not {len(members)}")
        checks = [self._member_checks(tuple(m)) for m in members]
        self.members = [tuple(m) for m in members]
        self._checks = checks

    def match(self, keys: tuple[int, ...]) -> bool:
        """True when some member matches ``keys`` (one value per field, in order)."""
        for checks in self._checks:
            for k, (mask, value, low, high) in zip(keys, checks, strict=True):
                if k & mask != value or not low <= k <= high:
                    break
            else:
                return True
        return False

    def _member_checks(self, member: tuple[MatchValue, ...]) -> tuple[Check, ...]:
        fields = self.model.fields
        if len(member) != len(fields):
            raise EntryError("invalid", f"a member of value set {self.model.name} has {len(fields)} "
                             f"field(s), not {len(member)}")
        return tuple(_check(v, f.bitwidth, f.annotations.get("match", "exact").strip() or "exact",
                            f"{self.model.name}.{f.name or 'value'}")
                     for v, f in zip(member, fields, strict=True))


def _check(v: MatchValue, width: int, kind: str, where: str) -> Check:
    full = (1 << width) - 1
    wanted = {"exact": Exact, "ternary": (Ternary, Exact), "lpm": (Lpm, Exact), "range": (Range, Exact),
              "optional": (Optional, Exact)}.get(kind, Exact)
    if not isinstance(v, wanted):  # type: ignore[arg-type]  # a class or a tuple of classes
        raise EntryError("invalid", f"{where} is a {kind} field; {type(v).__name__} does not fit it")
    if isinstance(v, Range):
        if not 0 <= v.low <= v.high <= full:
            raise EntryError("invalid", f"{where}: range {v.low}..{v.high} is outside 0..{full} or empty")
        return 0, 0, v.low, v.high
    if isinstance(v, Ternary):
        mask, value = v.mask, v.value
    elif isinstance(v, Lpm):
        if not 0 <= v.prefix_len <= width:
            raise EntryError("invalid", f"{where}: prefix length {v.prefix_len} is outside 0..{width}")
        mask = full ^ ((1 << (width - v.prefix_len)) - 1)
        value = v.value
    else:
        mask, value = full, v.value
    if not 0 <= value <= full or not 0 <= mask <= full:
        raise EntryError("invalid", f"{where}: value {value:#x} does not fit in {width} bits")
    return mask, value & mask, 0, full
