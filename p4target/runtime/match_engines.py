"""The lookup structures behind a table's entries, one per kind of key.

The engine is fixed by the key's match kinds when the switch is built:
- exact only: the table's own dict from the key tuple to the entry (one lookup
  per packet; nothing here);
- exact + one lpm (``LpmIndex``): one dict per prefix length, probed longest first;
- anything with ternary/range/optional (``ScanIndex``): a scan in priority order
  (higher priority value first, then insertion order), each entry one AND-compare
  over the concatenated key plus its range checks.
The structures are changed in place, never rebound, because the fast path
(p4target/compiler/fast_tables.py) binds them once (``TableRuntime.fast_lookup``)
and reads them on every packet.
"""

from __future__ import annotations

import bisect
from typing import Callable, Sequence

from p4target.model import KeyField
from p4target.runtime.externs import MeterState

Result = tuple[int, tuple[int, ...], bool]  # (action index, args, hit): what apply returns


def engine_of(kinds: Sequence[str]) -> str:
    """"exact", "lpm" (exact fields and one lpm) or "scan" for these match kinds."""
    if all(k == "exact" for k in kinds):
        return "exact"
    if list(kinds).count("lpm") == 1 and all(k in ("exact", "lpm") for k in kinds):
        return "lpm"
    return "scan"


class StoredEntry:
    """One stored entry. ``wire`` is an opaque encoding a control-plane front end (the
    P4Runtime server) may attach for its reads; the table never looks at it, and a
    modified entry is a new ``StoredEntry``, so it never outlives what it describes.
    ``mask``, ``value`` and ``ranges`` are set by ``ScanIndex`` only."""

    __slots__ = ("spec", "priority", "action", "args", "member", "group", "result",
                 "counter", "meter", "is_const", "seq", "mask", "value", "ranges", "wire", "slots")
    # set by whoever builds the entry, before it is stored
    spec: tuple
    priority: int | None
    seq: int
    # set by ScanIndex.insert
    mask: int
    value: int
    ranges: tuple[tuple[int, int, int], ...]

    def __init__(self) -> None:
        self.wire: bytes | None = None
        self.counter: list[int] | None = None
        self.meter: MeterState | None = None
        self.member: int | None = None
        self.group: int | None = None
        self.action: str | None = None
        self.args: tuple[int, ...] = ()
        self.result: Result | None = None
        self.is_const = False
        # an entry of a table with an action profile: the results of the live member
        # slots it chooses from (one for a member; a group's, weights expanded), a
        # list the table keeps up to date in place (see TableRuntime.fast_lookup)
        self.slots: list[Result] | None = None


class LpmIndex:
    """Entries of an exact + one-lpm key, by prefix length. With the lpm field alone
    a bucket is keyed by the field's value shifted right past the prefix; with exact
    fields too, by (the exact values in key order, that shifted value)."""

    __slots__ = ("pos", "width", "only", "buckets", "probe", "lookup")

    def __init__(self, kinds: Sequence[str], widths: Sequence[int]) -> None:
        self.pos = list(kinds).index("lpm")
        self.width = widths[self.pos]
        self.only = len(kinds) == 1
        self.buckets: dict[int, dict[object, StoredEntry]] = {}
        # (shift, bucket) per prefix length, longest first: what a lookup probes
        self.probe: list[tuple[int, dict[object, StoredEntry]]] = []
        self.lookup: Callable[[tuple[int, ...]], StoredEntry | None] = (
            self._lookup_lpm_only if self.only else self._lookup_with_exact)

    def _slot(self, spec: tuple) -> tuple[int, object]:
        pos = self.pos
        value, plen = spec[pos]
        shifted = value >> (self.width - plen)
        if self.only:
            return plen, shifted
        return plen, (spec[:pos] + spec[pos + 1:], shifted)

    def _reindex(self) -> None:
        width = self.width
        self.probe[:] = [(width - plen, self.buckets[plen]) for plen in sorted(self.buckets, reverse=True)]

    def insert(self, e: StoredEntry) -> None:
        plen, k = self._slot(e.spec)
        bucket = self.buckets.get(plen)
        if bucket is None:
            bucket = self.buckets[plen] = {}
            self._reindex()
        bucket[k] = e

    def remove(self, e: StoredEntry) -> None:
        plen, k = self._slot(e.spec)
        bucket = self.buckets[plen]
        del bucket[k]
        if not bucket:
            del self.buckets[plen]
            self._reindex()

    def clear(self) -> None:
        self.buckets.clear()
        self.probe.clear()

    def _lookup_lpm_only(self, key: tuple[int, ...]) -> StoredEntry | None:
        value = key[0]
        for shift, bucket in self.probe:
            e = bucket.get(value >> shift)
            if e is not None:
                return e
        return None

    def _lookup_with_exact(self, key: tuple[int, ...]) -> StoredEntry | None:
        pos = self.pos
        value = key[pos]
        rest = key[:pos] + key[pos + 1:]
        for shift, bucket in self.probe:
            e = bucket.get((rest, value >> shift))
            if e is not None:
                return e
        return None


class ScanIndex:
    """Entries of a key with ternary/range/optional fields in match order. Each entry
    gets a ``mask`` and ``value`` over the key fields packed into one int (first field
    highest) and its ``ranges`` (key position, low, high) that are not the whole field."""

    __slots__ = ("keys", "widths", "has_ranges", "order", "_sort_keys")

    def __init__(self, keys: Sequence[KeyField]) -> None:
        self.keys = tuple(keys)
        self.widths = tuple(k.bitwidth for k in keys)
        self.has_ranges = any(k.match_kind == "range" for k in keys)
        self.order: list[StoredEntry] = []
        self._sort_keys: list[tuple[int, int]] = []  # (-priority, seq) of ``order``

    def _pattern(self, e: StoredEntry) -> None:
        mask = value = 0
        ranges = []
        for i, (k, s) in enumerate(zip(self.keys, e.spec, strict=False)):
            w = k.bitwidth
            full = (1 << w) - 1
            mask <<= w
            value <<= w
            kind = k.match_kind
            if kind == "exact":
                mask |= full
                value |= s
            elif kind == "lpm":
                mask |= full ^ ((1 << (w - s[1])) - 1)
                value |= s[0]
            elif kind == "ternary":
                mask |= s[1]
                value |= s[0]
            elif kind == "optional":
                if s is not None:
                    mask |= full
                    value |= s
            elif kind == "range":
                if s != (0, full):
                    ranges.append((i, s[0], s[1]))
        e.mask, e.value, e.ranges = mask, value, tuple(ranges)

    def insert(self, e: StoredEntry) -> None:
        self._pattern(e)
        assert e.priority is not None  # the table gives every entry of a ternary/range key one
        sort_key = (-e.priority, e.seq)
        i = bisect.bisect_left(self._sort_keys, sort_key)
        self._sort_keys.insert(i, sort_key)
        self.order.insert(i, e)

    def remove(self, e: StoredEntry) -> None:
        assert e.priority is not None  # as in insert
        i = bisect.bisect_left(self._sort_keys, (-e.priority, e.seq))
        del self._sort_keys[i]
        del self.order[i]

    def clear(self) -> None:
        self.order.clear()
        self._sort_keys.clear()

    def lookup(self, key: tuple[int, ...]) -> StoredEntry | None:
        packed = 0
        for v, w in zip(key, self.widths, strict=False):
            packed = (packed << w) | v
        if self.has_ranges:
            for e in self.order:
                if packed & e.mask == e.value:
                    for pos, lo, hi in e.ranges:
                        if not lo <= key[pos] <= hi:
                            break
                    else:
                        return e
            return None
        for e in self.order:
            if packed & e.mask == e.value:
                return e
        return None
