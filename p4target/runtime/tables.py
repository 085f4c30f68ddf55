"""Table match engines and ``TableRuntime.apply``, the per-packet lookup.

The engine is fixed by the key's match kinds when the switch is built:
- exact only: one dict from the key tuple to the entry (one lookup per packet);
- exact + one lpm: one dict per prefix length, probed longest first;
- anything with ternary/range/optional: a scan in priority order (higher
  priority value first, then insertion order), each entry one AND-compare over
  the concatenated key plus its range checks.
``apply`` is bound once per table to the leanest variant that the table's
features allow (no profile, no direct counter/meter: return the stored result).

Control-plane writes are validated completely before anything is changed, so a
refused request leaves the table as it was.
"""

from __future__ import annotations

import bisect
import itertools
import logging
from typing import Callable, Mapping

from p4target.errors import EntryError
from p4target.model import KeyMatch, ProgramModel, Table
from p4target.runtime.actions import action_args, args_to_params, find_action
from p4target.runtime.entries import (
    Exact,
    Group,
    Lpm,
    Member,
    Optional,
    Range,
    TableEntry,
    Ternary,
)
from p4target.runtime.externs import GREEN, DirectMeter, MeterState, check_meter_config
from p4target.runtime.profiles import ActionProfile

log = logging.getLogger(__name__)

_PRIORITY_KINDS = ("ternary", "range", "optional")


class _Entry:
    """One stored entry. ``wire`` is an opaque encoding a control-plane front end (the
    P4Runtime server) may attach for its reads; the table never looks at it, and a
    modified entry is a new ``_Entry``, so it never outlives what it describes."""

    __slots__ = ("spec", "priority", "action", "args", "member", "group", "result",
                 "counter", "meter", "is_const", "seq", "mask", "value", "ranges", "wire", "slots")

    def __init__(self) -> None:
        self.wire: bytes | None = None
        self.counter: list[int] | None = None
        self.meter: MeterState | None = None
        self.member: int | None = None
        self.group: int | None = None
        self.action: str | None = None
        self.args: tuple[int, ...] = ()
        self.result: tuple[int, tuple[int, ...], bool] | None = None
        self.is_const = False
        # an entry of a table with an action profile: the results of the live member
        # slots it chooses from (one for a member; a group's, weights expanded), a
        # list the table keeps up to date in place (see TableRuntime.fast_lookup)
        self.slots: list[tuple[int, tuple[int, ...], bool]] | None = None


class TableRuntime:
    """One table of a running switch: its entries, default action and lookup."""

    def __init__(
        self,
        table: Table,
        model: ProgramModel,
        profile: ActionProfile | None = None,
        direct_meter: DirectMeter | None = None,
        has_direct_counter: bool = False,
        counter_bytes: bool = True,
    ) -> None:
        self.table = table
        self.name = table.name
        self.model = model
        self.size = table.size
        self.profile = profile
        self.direct_meter = direct_meter
        self.has_direct_counter = has_direct_counter
        self._counter_bytes = counter_bytes
        self.keys = table.match_keys
        self._widths = tuple(k.bitwidth for k in self.keys)
        self._sel_widths = tuple(k.bitwidth for k in table.selector_keys)
        self._action_index = {a.name: i for i, a in enumerate(table.actions)}
        self._action_scope = {a.name: a.scope for a in table.actions}
        self.needs_priority = any(k.match_kind in _PRIORITY_KINDS for k in self.keys)
        kinds = [k.match_kind for k in self.keys]
        if all(k == "exact" for k in kinds):
            self.engine = "exact"
        elif kinds.count("lpm") == 1 and all(k in ("exact", "lpm") for k in kinds):
            self.engine = "lpm"
        else:
            self.engine = "scan"
        self._entries: dict[object, _Entry] = {}
        self._seq = itertools.count()
        # lpm engine state
        self._lpm_pos = kinds.index("lpm") if self.engine == "lpm" else -1
        self._lpm_width = self._widths[self._lpm_pos] if self.engine == "lpm" else 0
        self._lpm_only = self.engine == "lpm" and len(kinds) == 1
        self._lpm: dict[int, dict[object, _Entry]] = {}
        self._lpm_lens: list[int] = []
        # (shift, bucket) per prefix length, longest first: what apply probes
        self._lpm_probe: list[tuple[int, dict[object, _Entry]]] = []
        # scan engine state
        self._scan: list[_Entry] = []
        self._scan_keys: list[tuple[int, int]] = []
        self._has_ranges = "range" in kinds
        self.is_const = table.const_entries is not None
        # ("m" or "g", member or group id) -> the slot list entries share (_Entry.slots)
        self._slot_lists: dict[tuple[str, int], list[tuple[int, tuple[int, ...], bool]]] = {}
        if profile is not None:
            profile.listeners.append(self._refresh_slots)
        self._set_default_internal(table.default_action, table.default_args)
        if table.const_entries:
            self._install_const(table.const_entries)
        self.apply = self._pick_apply()

    # ------------------------------------------------------------------------------
    # per-packet lookup
    # ------------------------------------------------------------------------------
    def _pick_apply(self) -> Callable:
        plain = self.profile is None and not self.has_direct_counter and self.direct_meter is None
        if plain and self.engine == "exact":
            return self._apply_exact_plain
        if plain and self._lpm_only:
            return self._apply_lpm_only_plain
        if plain and self.engine == "scan":
            return self._apply_scan_plain
        if (self.profile is not None and not self.has_direct_counter and self.direct_meter is None
                and self._lpm_only):
            return self._apply_lpm_only_profile
        return self._apply_generic

    def _apply_lpm_only_profile(self, st, key, sel):
        """One LPM key into an action profile/selector (e.g. per-destination spraying)."""
        value = key[0]
        for shift, bucket in self._lpm_probe:
            e = bucket.get(value >> shift)
            if e is not None:
                break
        else:
            return self._default
        if e.result is not None:
            return e.result
        if e.member is not None:
            m = self.profile.members.get(e.member)  # type: ignore[union-attr]
        else:
            m = self.profile.select(e.group, sel, self._sel_widths)  # type: ignore[union-attr]
        if m is None:
            return self._default
        r = m.results.get(self.name)
        if r is None:
            r = m.results[self.name] = (self._action_index[m.action], m.args, True)
        return r

    def _apply_scan_plain(self, st, key, sel):
        if not self._scan:  # an empty ternary table (e.g. an optional QoS map): no key packing
            return self._default
        e = self._lookup(key)
        if e is None:
            return self._default
        return e.result

    def _apply_lpm_only_plain(self, st, key, sel):
        value = key[0]
        for shift, bucket in self._lpm_probe:
            e = bucket.get(value >> shift)
            if e is not None:
                return e.result
        return self._default

    def _lpm_reindex(self) -> None:
        self._lpm_lens = lens = sorted(self._lpm, reverse=True)
        width = self._lpm_width
        # in place: the fast path holds this list (fast_probe)
        self._lpm_probe[:] = [(width - plen, self._lpm[plen]) for plen in lens]

    def fast_lookup(self) -> tuple[str, object]:
        """What the fast path (p4target/compiler/fast_tables.py) binds to look the table up
        in place instead of calling ``apply``: ("exact", the entries' ``get``, keyed by
        the key tuple), ("lpm", the probe list of (shift, bucket) longest prefix
        first, keyed by the shifted value) or ("scan", the entries in match order, each
        with ``mask`` and ``value`` over the packed key), each entry's ``result`` on a hit and the
        table's ``_default`` on a miss. Both objects are updated in place by every
        control-plane write; ("apply", ``apply``) for any other table.

        A table with an action profile or selector (and no direct counter or meter)
        gives "exact" or "lpm" too (and "lpm_exact": exact keys and one LPM, the probe
        list's buckets keyed by (the exact values in key order, shifted value)): its
        entries' ``slots`` are the results to choose
        from (``slots[hash % len(slots)]`` as ``ActionProfile.select`` chooses; empty:
        the default), kept up to date in place when a member or group changes or a
        watch port goes down or up."""
        if self.apply == self._apply_exact_plain:
            return "exact", self._entries.get
        if self.apply == self._apply_lpm_only_plain:
            return "lpm", self._lpm_probe
        if self.apply == self._apply_scan_plain and not self._has_ranges:
            return "scan", self._scan
        if not self.has_direct_counter and self.direct_meter is None:
            if self.engine == "lpm" and not self._lpm_only:
                # exact keys + one LPM: each bucket keyed by (the exact values, shifted)
                return "lpm_exact", self._lpm_probe
            if self.profile is not None:
                if self.engine == "exact":
                    return "exact", self._entries.get
                if self._lpm_only:
                    return "lpm", self._lpm_probe
        return "apply", self.apply

    def _slot_results(self, key: tuple[str, int]) -> list[tuple[int, tuple[int, ...], bool]]:
        """The results an entry pointing at member/group ``key`` chooses from now."""
        profile = self.profile
        assert profile is not None
        kind, ident = key
        if kind == "m":
            m = profile.members.get(ident)
            members: tuple = (m,) if m is not None else ()
        else:
            members = profile.live_members(ident)
        out = []
        for m in members:
            r = m.results.get(self.name)
            if r is None:
                r = m.results[self.name] = (self._action_index[m.action], m.args, True)
            out.append(r)
        return out

    def _slot_list(self, key: tuple[str, int]) -> list[tuple[int, tuple[int, ...], bool]]:
        lst = self._slot_lists.get(key)
        if lst is None:
            lst = self._slot_lists[key] = []
        lst[:] = self._slot_results(key)
        return lst

    def _refresh_slots(self) -> None:
        """The profile changed: every slot list again, in place (entries hold them)."""
        for key, lst in self._slot_lists.items():
            lst[:] = self._slot_results(key)

    def _apply_exact_plain(self, st, key, sel):
        e = self._entries.get(key)
        if e is None:
            return self._default
        return e.result

    def _lookup(self, key: tuple[int, ...]) -> _Entry | None:
        engine = self.engine
        if engine == "exact":
            return self._entries.get(key)
        if engine == "lpm":
            pos = self._lpm_pos
            width = self._lpm_width
            value = key[pos]
            lpm = self._lpm
            if self._lpm_only:
                for plen in self._lpm_lens:
                    e = lpm[plen].get(value >> (width - plen))
                    if e is not None:
                        return e
                return None
            rest = key[:pos] + key[pos + 1:]
            for plen in self._lpm_lens:
                e = lpm[plen].get((rest, value >> (width - plen)))
                if e is not None:
                    return e
            return None
        packed = 0
        for v, w in zip(key, self._widths):
            packed = (packed << w) | v
        if self._has_ranges:
            for e in self._scan:
                if packed & e.mask == e.value:
                    for pos, lo, hi in e.ranges:
                        if not lo <= key[pos] <= hi:
                            break
                    else:
                        return e
            return None
        for e in self._scan:
            if packed & e.mask == e.value:
                return e
        return None

    def peek(self, key, sel):
        """``apply`` for a table with a direct counter and no direct meter, without
        counting: (result, the entry's [packets, bytes] or None). The fast path
        (p4target/compiler/fast_tables.py) counts it once the packet is sure to finish."""
        e = self._lookup(key)
        if e is None:
            return self._default, None
        if e.result is not None:
            return e.result, e.counter
        profile = self.profile
        if e.member is not None:
            m = profile.members.get(e.member)  # type: ignore[union-attr]
        else:
            m = profile.select(e.group, sel, self._sel_widths)  # type: ignore[union-attr]
        if m is None:
            return self._default, e.counter
        return (self._action_index[m.action], m.args, True), e.counter

    def _apply_generic(self, st, key, sel):
        e = self._lookup(key)
        if e is None:
            return self._default
        counter = e.counter
        if counter is not None:
            counter[0] += 1
            counter[1] += st.sm.packet_length
        dm = self.direct_meter
        if dm is not None:
            meter = e.meter
            if meter is None:
                dm.executed(st, GREEN)
            else:
                units = 1 if dm.packets else st.sm.packet_length
                dm.executed(st, meter.execute(units, dm.clock_us()))
        if e.result is not None:
            return e.result
        profile = self.profile
        if e.member is not None:
            m = profile.members.get(e.member)
        else:
            m = profile.select(e.group, sel, self._sel_widths)
        if m is None:
            return self._default
        return (self._action_index[m.action], m.args, True)

    # ------------------------------------------------------------------------------
    # validation: match, priority, action
    # ------------------------------------------------------------------------------
    def _where(self) -> str:
        return f"table {self.name}"

    def canon_match(self, match: Mapping[str, object]) -> tuple:
        """Check a match dict and return its canonical spec (one item per key)."""
        where = self._where()
        if not isinstance(match, Mapping):
            raise EntryError("invalid", f"{where}: match must be a dict of key field name to match value")
        names = {k.name for k in self.keys}
        for name in match:
            if name not in names:
                known = ", ".join(k.name for k in self.keys) or "(the table has no key)"
                raise EntryError("invalid", f"{where}: no key field {name!r}; key fields: {known}")
        spec = []
        for k in self.keys:
            w = k.bitwidth
            top = 1 << w
            full = top - 1
            m = match.get(k.name)
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
                spec.append(fits(m.value, "value"))
            elif kind == "lpm":
                if m is None:
                    spec.append((0, 0))
                    continue
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
                spec.append((value, plen))
            elif kind == "ternary":
                if m is None:
                    spec.append((0, 0))
                    continue
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
                spec.append((value, mask))
            elif kind == "range":
                if m is None:
                    spec.append((0, full))
                    continue
                if isinstance(m, Exact):
                    m = Range(m.value, m.value)
                if not isinstance(m, Range):
                    raise EntryError("invalid", f"{here}: needs Range, got {type(m).__name__}")
                low = fits(m.low, "low")
                high = fits(m.high, "high")
                if low > high:
                    raise EntryError("invalid", f"{here}: low {low:#x} is above high {high:#x}")
                spec.append((low, high))
            elif kind == "optional":
                if m is None:
                    spec.append(None)
                    continue
                if isinstance(m, Exact):
                    m = Optional(m.value)
                if not isinstance(m, Optional):
                    raise EntryError("invalid", f"{here}: needs Optional, got {type(m).__name__}")
                spec.append(fits(m.value, "value"))
            else:
                raise EntryError("unimplemented", f"{here}: match kind {kind} is not supported")
        return tuple(spec)

    def _canon_priority(self, priority: int | None) -> int | None:
        where = self._where()
        if self.needs_priority:
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

    def _ident(self, spec: tuple, priority: int | None) -> object:
        return (spec, priority) if self.needs_priority else spec

    def _check_action(self, action: str, for_default: bool) -> None:
        where = self._where()
        if action not in self._action_index:
            raise EntryError(
                "invalid",
                f"{where}: action {action} is not an action of this table (allowed: {', '.join(self._action_index)})",
            )
        scope = self._action_scope[action]
        if for_default and scope == "table_only":
            raise EntryError("invalid", f"{where}: action {action} is @tableonly and cannot be the default")
        if not for_default and scope == "default_only":
            raise EntryError("invalid", f"{where}: action {action} is @defaultonly and cannot be in an entry")

    def _build_entry(self, spec: tuple, priority: int | None, action, params) -> _Entry:
        """A complete, validated entry that is not yet in the table."""
        where = self._where()
        e = _Entry()
        e.spec = spec
        e.priority = priority
        if isinstance(action, Member):
            if self.profile is None:
                raise EntryError("invalid", f"{where}: has no action profile; give an action name, not a member")
            if action.member_id not in self.profile.members:
                raise EntryError("not_found", f"{where}: member {action.member_id} does not exist in {self.profile.name}")
            e.member = action.member_id
            e.slots = self._slot_list(("m", action.member_id))
        elif isinstance(action, Group):
            if self.profile is None or not self.profile.is_selector:
                raise EntryError("invalid", f"{where}: has no action selector; groups cannot be used")
            if action.group_id not in self.profile.groups:
                raise EntryError("not_found", f"{where}: group {action.group_id} does not exist in {self.profile.name}")
            e.group = action.group_id
            e.slots = self._slot_list(("g", action.group_id))
        elif isinstance(action, str):
            if self.profile is not None:
                raise EntryError(
                    "invalid", f"{where}: uses action profile {self.profile.name}; give Member(id) or Group(id)"
                )
            self._check_action(action, for_default=False)
            act = find_action(self.model, action, where)
            e.action = action
            e.args = action_args(act, params, where)
            e.result = (self._action_index[action], e.args, True)
        else:
            raise EntryError("invalid", f"{where}: action must be an action name, Member or Group, got {action!r}")
        self._place(e)
        return e

    def _place(self, e: _Entry) -> None:
        """Per-table parts of a new entry: direct counter, insertion order, scan masks."""
        if self.has_direct_counter:
            e.counter = [0, 0]
        e.seq = next(self._seq)
        if self.engine == "scan":
            spec = e.spec
            mask = value = 0
            ranges = []
            for i, (k, s) in enumerate(zip(self.keys, spec)):
                w = k.bitwidth
                full = (1 << w) - 1
                mask <<= w
                value <<= w
                kind = k.match_kind
                if kind == "exact":
                    mask |= full
                    value |= s
                elif kind == "lpm":
                    pmask = full ^ ((1 << (w - s[1])) - 1)
                    mask |= pmask
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

    # ------------------------------------------------------------------------------
    # engine bookkeeping
    # ------------------------------------------------------------------------------
    def _lpm_slot(self, spec: tuple) -> tuple[int, object]:
        pos = self._lpm_pos
        value, plen = spec[pos]
        shifted = value >> (self._lpm_width - plen)
        if self._lpm_only:
            return plen, shifted
        return plen, (spec[:pos] + spec[pos + 1:], shifted)

    def _insert(self, ident: object, e: _Entry) -> None:
        self._entries[ident] = e
        if self.engine == "lpm":
            plen, k = self._lpm_slot(e.spec)
            bucket = self._lpm.get(plen)
            if bucket is None:
                bucket = self._lpm[plen] = {}
                self._lpm_reindex()
            bucket[k] = e
        elif self.engine == "scan":
            sort_key = (-e.priority, e.seq)
            i = bisect.bisect_left(self._scan_keys, sort_key)
            self._scan_keys.insert(i, sort_key)
            self._scan.insert(i, e)

    def _remove(self, ident: object) -> _Entry:
        e = self._entries.pop(ident)
        if self.engine == "lpm":
            plen, k = self._lpm_slot(e.spec)
            bucket = self._lpm[plen]
            del bucket[k]
            if not bucket:
                del self._lpm[plen]
                self._lpm_reindex()
        elif self.engine == "scan":
            i = bisect.bisect_left(self._scan_keys, (-e.priority, e.seq))
            del self._scan_keys[i]
            del self._scan[i]
        return e

    def _replace(self, ident: object, old: _Entry, new: _Entry) -> None:
        """Put ``new`` where ``old`` was, keeping its place among equal priorities."""
        new.seq = old.seq
        new.counter = old.counter if new.counter is not None else None
        new.meter = old.meter
        self._remove(ident)
        self._insert(ident, new)

    # ------------------------------------------------------------------------------
    # control plane
    # ------------------------------------------------------------------------------
    def _check_mutable(self) -> None:
        if self.is_const:
            raise EntryError("const", f"{self._where()} has const entries and cannot be changed")

    def _refs(self, kind: str, ident: int) -> int:
        if kind == "member":
            return sum(1 for e in self._entries.values() if e.member == ident)
        return sum(1 for e in self._entries.values() if e.group == ident)

    def add(self, match: Mapping[str, object], action, params: Mapping[str, int] | None = None,
            priority: int | None = None) -> tuple[tuple, int | None]:
        self._check_mutable()
        if not self.keys:
            raise EntryError("invalid", f"{self._where()} has no key; only its default action can be set")
        spec = self.canon_match(match)
        prio = self._canon_priority(priority)
        ident = self._ident(spec, prio)
        if ident in self._entries:
            raise EntryError("exists", f"{self._where()}: an entry with this match{self._prio_text(prio)} exists")
        if len(self._entries) >= self.size:
            raise EntryError("full", f"{self._where()} is full ({self.size} entries); raise its size or delete entries")
        e = self._build_entry(spec, prio, action, params)
        self._insert(ident, e)
        return spec, prio

    def add_checked(self, spec: tuple, priority: int | None, action: str, args: tuple[int, ...]) -> _Entry:
        """Insert an entry whose parts the caller has already checked; returns it.

        For front ends that validate completely on their own (the P4Runtime server
        checks widths, prefixes, masks, ranges, priorities and action parameters
        against the same program): ``spec`` is in ``canon_match``'s form, ``args``
        in the action's parameter order, fitting their widths. What depends on the
        table's contents is still checked here: const or keyless table, duplicate,
        full, and that ``action`` is an action of the table usable in entries.
        """
        if self.is_const or not self.keys:
            self._check_mutable()
            raise EntryError("invalid", f"{self._where()} has no key; only its default action can be set")
        ident = (spec, priority) if self.needs_priority else spec
        entries = self._entries
        if ident in entries:
            raise EntryError("exists", f"{self._where()}: an entry with this match{self._prio_text(priority)} exists")
        if len(entries) >= self.size:
            raise EntryError("full", f"{self._where()} is full ({self.size} entries); raise its size or delete entries")
        e = self._checked_entry(spec, priority, action, args)
        if self.engine == "exact":
            entries[ident] = e
        else:
            self._insert(ident, e)
        return e

    def modify_checked(self, spec: tuple, priority: int | None, action: str, args: tuple[int, ...]) -> None:
        """``modify`` with values checked as for ``add_checked``: the entry keeps its
        place, direct counter and meter."""
        self._check_mutable()
        ident = (spec, priority) if self.needs_priority else spec
        old = self._entries.get(ident)
        if old is None:
            raise EntryError("not_found", f"{self._where()}: no entry with this match{self._prio_text(priority)}")
        self._replace(ident, old, self._checked_entry(old.spec, old.priority, action, args))

    def delete_checked(self, spec: tuple, priority: int | None) -> None:
        """``delete`` of a key in ``canon_match``'s form (and a checked priority)."""
        self._check_mutable()
        ident = (spec, priority) if self.needs_priority else spec
        if ident not in self._entries:
            raise EntryError("not_found", f"{self._where()}: no entry with this match{self._prio_text(priority)}")
        self._remove(ident)

    def _checked_entry(self, spec: tuple, priority: int | None, action: str, args: tuple[int, ...]) -> _Entry:
        """A new entry with a direct action, its values checked by the caller."""
        if self.profile is not None:
            raise EntryError("invalid", f"{self._where()}: uses action profile {self.profile.name}; "
                             "give Member(id) or Group(id)")
        index = self._action_index.get(action)
        if index is None or self._action_scope[action] == "default_only":
            self._check_action(action, for_default=False)  # raises, saying which
        e = _Entry()
        e.spec = spec
        e.priority = priority
        e.action = action
        e.args = args
        e.result = (index, args, True)
        self._place(e)
        return e

    @staticmethod
    def _prio_text(prio: int | None) -> str:
        return f" and priority {prio}" if prio is not None else ""

    def _find(self, match, priority) -> tuple[object, _Entry]:
        spec = self.canon_match(match)
        prio = self._canon_priority(priority)
        ident = self._ident(spec, prio)
        e = self._entries.get(ident)
        if e is None:
            raise EntryError("not_found", f"{self._where()}: no entry with this match{self._prio_text(prio)}")
        return ident, e

    def modify(self, match, action, params=None, priority=None) -> None:
        self._check_mutable()
        ident, old = self._find(match, priority)
        new = self._build_entry(old.spec, old.priority, action, params)
        self._replace(ident, old, new)

    def delete(self, match, priority=None) -> None:
        self._check_mutable()
        ident, _ = self._find(match, priority)
        self._remove(ident)

    def clear(self) -> None:
        self._check_mutable()
        self._entries.clear()
        self._lpm.clear()
        self._lpm_reindex()
        self._scan.clear()
        self._scan_keys.clear()

    def _set_default_internal(self, action: str, args: tuple[int, ...]) -> None:
        self.default_action = action
        self.default_args = tuple(args)
        index = self._action_index.get(action)
        if index is None:
            raise EntryError("invalid", f"{self._where()}: default action {action} is not an action of the table")
        self._default = (index, self.default_args, False)

    def set_default(self, action: str, params: Mapping[str, int] | None = None) -> None:
        where = self._where()
        if self.table.default_is_const:
            raise EntryError("const", f"{where}: the default action is const and cannot be changed")
        if not isinstance(action, str):
            raise EntryError("invalid", f"{where}: the default action must be an action name")
        self._check_action(action, for_default=True)
        act = find_action(self.model, action, where)
        args = action_args(act, params, where)
        self._set_default_internal(action, args)

    def reset_default(self) -> None:
        self._set_default_internal(self.table.default_action, self.table.default_args)

    def direct_counter(self, match, priority=None) -> tuple[int, int]:
        if not self.has_direct_counter:
            raise EntryError("invalid", f"{self._where()} has no direct counter")
        _, e = self._find(match, priority)
        return e.counter[0], e.counter[1]

    def set_direct_counter(self, match, priority, packets: int, nbytes: int) -> None:
        if not self.has_direct_counter:
            raise EntryError("invalid", f"{self._where()} has no direct counter")
        _, e = self._find(match, priority)
        e.counter[0], e.counter[1] = packets, nbytes

    def set_direct_meter(self, match, priority, config: tuple[float, int, float, int] | None) -> None:
        if self.direct_meter is None:
            raise EntryError("invalid", f"{self._where()} has no direct meter")
        _, e = self._find(match, priority)
        if config is None:
            e.meter = None
            return
        check_meter_config(f"{self._where()} direct meter", *config)
        e.meter = MeterState(*config)

    def entries(self) -> list[TableEntry]:
        return [self.describe(e) for e in self.records()]

    def find_record(self, spec: tuple, priority: int | None) -> _Entry | None:
        """The stored entry with this key (``canon_match``'s form) and priority, if any."""
        return self._entries.get((spec, priority) if self.needs_priority else spec)

    def records(self) -> list[_Entry]:
        """The stored entries in read order (the scan engine's match order, else insertion
        order), for front ends that encode entries themselves: each has ``spec``
        (``canon_match``'s form), ``priority``, ``action`` and ``args`` (or ``member`` /
        ``group``), ``is_const`` and the front end's ``wire``."""
        if self.engine == "scan":
            return list(self._scan)
        return list(self._entries.values())

    def __len__(self) -> int:
        return len(self._entries)

    def describe(self, e: _Entry) -> TableEntry:
        """A stored entry as the control plane names it."""
        match: dict[str, object] = {}
        for k, s in zip(self.keys, e.spec):
            w = k.bitwidth
            full = (1 << w) - 1
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
        params: dict[str, int] = {}
        if e.action is not None:
            params = args_to_params(self.model.action(e.action), e.args)
        return TableEntry(
            table=self.name,
            match=match,
            action=e.action,
            params=params,
            member=e.member,
            group=e.group,
            priority=e.priority,
            counters=(e.counter[0], e.counter[1]) if e.counter is not None else None,
            meter_config=e.meter.config if e.meter is not None else None,
            is_const=e.is_const,
        )

    # ------------------------------------------------------------------------------
    # const entries from the program
    # ------------------------------------------------------------------------------
    def _install_const(self, const_entries) -> None:
        n = len(const_entries)
        for i, ce in enumerate(const_entries):
            match = {}
            for k, km in zip(self.keys, ce.matches):
                mv = _match_from_model(km, k.bitwidth)
                if mv is not None:
                    match[k.name] = mv
            priority = ce.priority
            if self.needs_priority and priority is None:
                priority = n - i  # earlier const entries win, as p4c orders them
            if not self.needs_priority:
                priority = None
            act = find_action(self.model, ce.action, self._where())
            params = args_to_params(act, ce.args)
            spec = self.canon_match(match)
            prio = self._canon_priority(priority)
            ident = self._ident(spec, prio)
            if ident in self._entries:
                log.warning("%s: duplicate const entry %d ignored", self._where(), i)
                continue
            if ce.action not in self._action_index:
                raise EntryError("invalid", f"{self._where()}: const entry action {ce.action} not in the table")
            e = self._build_entry(spec, prio, ce.action, params) if self.profile is None else None
            if e is None:
                raise EntryError("unimplemented", f"{self._where()}: const entries with an action profile")
            e.is_const = True
            self._insert(ident, e)


def _match_from_model(km: KeyMatch, width: int):
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
