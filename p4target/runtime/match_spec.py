"""A table key's match values, checked and put in canonical form.

The control plane names a match as a dict of key field name to ``Exact``/``Lpm``/
``Ternary``/``Range``/``Optional`` (or a bare int); the match engines and the
P4Runtime server work on the canonical *spec* instead, one item per key field in
key order, so that equal matches are equal tuples whatever form they were given in:
- exact, optional given: the value; optional left out: ``None``;
- lpm: ``(value, prefix_len)``, left out ``(0, 0)``;
- ternary: ``(value, mask)``, left out ``(0, 0)``;
- range: ``(low, high)``, left out ``(0, 2**width - 1)``.
These are pure functions of the key fields, kept apart from the tables so that a
spec is fully checked before any table is touched (a refused write changes nothing).
"""

from __future__ import annotations

from typing import Mapping, Sequence

from p4target.errors import EntryError
from p4target.model import KeyField, KeyMatch
from p4target.runtime.entries import Exact, Lpm, MatchValue, Optional, Range, Ternary

PRIORITY_KINDS = ("ternary", "range", "optional")


def needs_priority(keys: Sequence[KeyField]) -> bool:
    """Entries of a key with a ternary, range or optional field can overlap, so they
    are ordered by a priority the control plane gives."""
    return any(k.match_kind in PRIORITY_KINDS for k in keys)


def canon_match(keys: Sequence[KeyField], match: Mapping[str, object], where: str) -> tuple:
    """Check a match dict against ``keys`` and return its canonical spec."""
    if not isinstance(match, Mapping):
        raise EntryError("invalid", f"{where}: match must be a dict of key field name to match value")
    names = {k.name for k in keys}
    for name in match:
        if name not in names:
            known = ", ".join(k.name for k in keys) or "(the table has no key)"
            raise EntryError("invalid", f"{where}: no key field {name!r}; key fields: {known}")
    return tuple(_canon_field(k, match.get(k.name), where) for k in keys)


def _canon_field(k: KeyField, m: object, where: str) -> object:  # noqa: C901 — one case per match kind and accepted value form
    """One key field's item of the spec (see the module docstring)."""
    w = k.bitwidth
    top = 1 << w
    full = top - 1
    here = f"{where}, field {k.name} ({k.match_kind}, bit<{w}>)"
    if isinstance(m, bool):
        raise EntryError("invalid", f"{here}: match value must be an integer or match object")
    if isinstance(m, int):
        m = Exact(m)

    def fits(value: object, what: str) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise EntryError("invalid", f"{here}: {what} must be an integer, got {value!r}")
        if value < 0 or value >= top:
            raise EntryError("invalid", f"{here}: {what} {value:#x} is wider than {w} bits")
        return value

    kind = k.match_kind
    if kind == "exact":
        if m is None:
            raise EntryError("invalid", f"{here}: exact fields must be given")
        if not isinstance(m, Exact):
            raise EntryError("invalid", f"{here}: needs Exact, got {type(m).__name__}")
        return fits(m.value, "value")
    if kind == "lpm":
        if m is None:
            return (0, 0)
        if isinstance(m, Exact):
            m = Lpm(m.value, w)
        if not isinstance(m, Lpm):
            raise EntryError("invalid", f"{here}: needs Lpm, got {type(m).__name__}")
        value = fits(m.value, "value")
        plen = m.prefix_len
        if isinstance(plen, bool) or not isinstance(plen, int) or not 0 <= plen <= w:
            raise EntryError("invalid", f"{here}: prefix length {plen!r} must be 0..{w}")
        if value & ((1 << (w - plen)) - 1):
            raise EntryError(
                "invalid", f"{here}: value {value:#x} has bits set beyond the /{plen} prefix; clear them"
            )
        return (value, plen)
    if kind == "ternary":
        if m is None:
            return (0, 0)
        if isinstance(m, Exact):
            m = Ternary(m.value, full)
        if not isinstance(m, Ternary):
            raise EntryError("invalid", f"{here}: needs Ternary, got {type(m).__name__}")
        value = fits(m.value, "value")
        mask = fits(m.mask, "mask")
        if value & ~mask:
            raise EntryError(
                "invalid", f"{here}: value {value:#x} has bits outside mask {mask:#x}; clear them"
            )
        return (value, mask)
    if kind == "range":
        if m is None:
            return (0, full)
        if isinstance(m, Exact):
            m = Range(m.value, m.value)
        if not isinstance(m, Range):
            raise EntryError("invalid", f"{here}: needs Range, got {type(m).__name__}")
        low = fits(m.low, "low")
        high = fits(m.high, "high")
        if low > high:
            raise EntryError("invalid", f"{here}: low {low:#x} is above high {high:#x}")
        return (low, high)
    if kind == "optional":
        if m is None:
            return None
        if isinstance(m, Exact):
            m = Optional(m.value)
        if not isinstance(m, Optional):
            raise EntryError("invalid", f"{here}: needs Optional, got {type(m).__name__}")
        return fits(m.value, "value")
    raise EntryError("unimplemented", f"{here}: match kind {kind} is not supported")


def canon_priority(with_priority: bool, priority: int | None, where: str) -> int | None:
    """The priority an entry is stored with: 1..2**31-1 where the key needs one (the
    P4Runtime range), else None (0 is accepted as "none", as P4Runtime sends it)."""
    if with_priority:
        if priority is None or isinstance(priority, bool) or not isinstance(priority, int) or priority < 1:
            raise EntryError(
                "invalid",
                f"{where}: entries need a priority >= 1 (the key has ternary/range/optional fields); "
                f"got {priority!r}",
            )
        if priority >= 1 << 31:
            raise EntryError("invalid", f"{where}: priority {priority} is above 2**31-1")
        return priority
    if priority not in (None, 0):
        raise EntryError(
            "invalid", f"{where}: priority {priority!r} given, but the key has no ternary/range/optional field"
        )
    return None


def describe_match(keys: Sequence[KeyField], spec: tuple) -> dict[str, MatchValue]:
    """A spec as the control plane names it, wildcard fields left out (as P4Runtime
    reads them back)."""
    match: dict[str, MatchValue] = {}
    for k, s in zip(keys, spec, strict=False):
        full = (1 << k.bitwidth) - 1
        kind = k.match_kind
        if kind == "exact":
            match[k.name] = Exact(s)
        elif kind == "lpm" and s[1] > 0:
            match[k.name] = Lpm(s[0], s[1])
        elif kind == "ternary" and s[1] != 0:
            match[k.name] = Ternary(s[0], s[1])
        elif kind == "range" and s != (0, full):
            match[k.name] = Range(s[0], s[1])
        elif kind == "optional" and s is not None:
            match[k.name] = Optional(s)
    return match


def match_from_model(km: KeyMatch, width: int) -> MatchValue | None:
    """A const entry's match of one field (from the program) as a control-plane
    value, None for a wildcard. An lpm value is cut to its prefix and a ternary
    value to its mask, so that the entry passes ``canon_match`` as the program
    means it rather than being refused for bits the match ignores anyway."""
    kind = km.kind
    if kind == "dontcare":
        return None
    if kind == "exact":
        return Exact(km.value)
    if kind == "lpm":
        plen = km.mask_or_prefix_or_high
        if not plen:
            return None
        keep = ((1 << width) - 1) ^ ((1 << (width - plen)) - 1) if plen <= width else -1
        return Lpm(km.value & keep, plen)
    if kind == "ternary":
        mask = km.mask_or_prefix_or_high
        return Ternary(km.value & mask, mask) if mask else None
    if kind == "range":
        return Range(km.value, km.mask_or_prefix_or_high)
    if kind == "optional":
        return Optional(km.value)
    raise EntryError("invalid", f"const entry match kind {kind!r} is unknown")
