"""``TableRuntime``: one table of a running switch, its per-packet lookup and its
control-plane writes and reads.

The entries live in the lookup structure of the table's engine
(p4target/runtime/match_engines.py); matches are checked and put in canonical
form by p4target/runtime/match_spec.py. ``apply`` is bound once per table to the
leanest variant that the table's features allow (no profile, no direct
counter/meter: return the stored result).

Control-plane writes are validated completely before anything is changed, so a
refused request leaves the table as it was.
"""

from __future__ import annotations

import itertools
import logging
from typing import Callable, Mapping

from p4target.errors import EntryError
from p4target.model import ProgramModel, Table
from p4target.runtime.actions import args_to_params, find_action
from p4target.runtime.entries import TableEntry
from p4target.runtime.externs import GREEN, DirectMeter, MeterState, check_meter_config
from p4target.runtime.match_engines import LpmIndex, ScanIndex, StoredEntry, engine_of
from p4target.runtime.match_spec import (
    canon_match,
    canon_priority,
    describe_match,
    match_from_model,
    needs_priority,
)
from p4target.runtime.profiles import ActionProfile
from p4target.runtime.table_actions import TableActions

log = logging.getLogger(__name__)


class TableRuntime:
    """One table of a running switch: its entries, default action and lookup."""

    def __init__(
        self,
        table: Table,
        model: ProgramModel,
        profile: ActionProfile | None = None,
        direct_meter: DirectMeter | None = None,
        has_direct_counter: bool = False,
    ) -> None:
        self.table = table
        self.name = table.name
        self.model = model
        self.size = table.size
        self.profile = profile
        self.direct_meter = direct_meter
        self.has_direct_counter = has_direct_counter
        self.keys = table.match_keys
        self._sel_widths = tuple(k.bitwidth for k in table.selector_keys)
        self._actions = TableActions(table, model, profile)
        self._action_index = self._actions.index  # read per packet by the profile variants
        self.needs_priority = needs_priority(self.keys)
        kinds = [k.match_kind for k in self.keys]
        self.engine = engine_of(kinds)
        # ident (the spec, with the priority where the key needs one) -> entry; for
        # the exact engine this dict is the lookup structure itself
        self._entries: dict[object, StoredEntry] = {}
        self._seq = itertools.count()
        self._index: LpmIndex | ScanIndex | None = None
        self._lookup: Callable[[tuple[int, ...]], StoredEntry | None] = self._entries.get
        # the index's structures, held here too so that the apply variants reach them
        # with one attribute lookup (they are changed in place, never rebound)
        self._lpm_probe: list[tuple[int, dict[object, StoredEntry]]] = []
        self._scan: list[StoredEntry] = []
        self._lpm_only = False
        if self.engine == "lpm":
            lpm = self._index = LpmIndex(kinds, [k.bitwidth for k in self.keys])
            self._lookup, self._lpm_probe, self._lpm_only = lpm.lookup, lpm.probe, lpm.only
        elif self.engine == "scan":
            scan = self._index = ScanIndex(self.keys)
            self._lookup, self._scan = scan.lookup, scan.order
        self.is_const = table.const_entries is not None
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

    def _apply_exact_plain(self, st, key, sel):
        e = self._entries.get(key)
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

    def _apply_scan_plain(self, st, key, sel):
        if not self._scan:  # an empty ternary table (e.g. an optional QoS map): no key packing
            return self._default
        e = self._lookup(key)
        if e is None:
            return self._default
        return e.result

    def _apply_lpm_only_profile(self, st, key, sel):
        """One LPM key into an action profile/selector (e.g. per-destination spraying).
        Its entries point at a member or group, never at an action directly."""
        value = key[0]
        for shift, bucket in self._lpm_probe:
            e = bucket.get(value >> shift)
            if e is not None:
                break
        else:
            return self._default
        # a table whose entries run members or groups has a profile, and an entry runs
        # a group when it runs no member
        if e.member is not None:
            m = self.profile.members.get(e.member)  # type: ignore[union-attr]  # a table whose entries run members or groups has a profile
        else:
            m = self.profile.select(e.group, sel, self._sel_widths)  # type: ignore[union-attr, arg-type]  # as above; an entry that runs no member runs a group
        if m is None:
            return self._default
        r = m.results.get(self.name)
        if r is None:
            r = m.results[self.name] = (self._action_index[m.action], m.args, True)
        return r

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
        profile = self.profile  # as in apply: there is one, and an entry without a member runs a group
        if e.member is not None:
            m = profile.members.get(e.member)  # type: ignore[union-attr]  # as in apply
        else:
            m = profile.select(e.group, sel, self._sel_widths)  # type: ignore[union-attr, arg-type]  # as in apply
        if m is None:
            return self._default
        return (self._action_index[m.action], m.args, True)

    def peek(self, key, sel):
        """``apply`` for a table with a direct counter and no direct meter, without
        counting: (result, the entry's [packets, bytes] or None). The fast path
        (p4target/compiler/fast_tables.py) counts it once the packet is sure to finish."""
        e = self._lookup(key)
        if e is None:
            return self._default, None
        if e.result is not None:
            return e.result, e.counter
        profile = self.profile  # as in apply
        if e.member is not None:
            m = profile.members.get(e.member)  # type: ignore[union-attr]  # as in apply
        else:
            m = profile.select(e.group, sel, self._sel_widths)  # type: ignore[union-attr, arg-type]  # as in apply
        if m is None:
            return self._default, e.counter
        return (self._action_index[m.action], m.args, True), e.counter

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
        if self.apply == self._apply_scan_plain and not self._index.has_ranges:  # type: ignore[union-attr]  # the scan engine is the index of a scan table
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

    # ------------------------------------------------------------------------------
    # checks of match and priority, new entries
    # ------------------------------------------------------------------------------
    def _where(self) -> str:
        return f"table {self.name}"

    def canon_match(self, match: Mapping[str, object]) -> tuple:
        """Check a match dict and return its canonical spec (one item per key; see
        p4target/runtime/match_spec.py)."""
        return canon_match(self.keys, match, self._where())

    def _canon_priority(self, priority: int | None) -> int | None:
        return canon_priority(self.needs_priority, priority, self._where())

    def _ident(self, spec: tuple, priority: int | None) -> object:
        return (spec, priority) if self.needs_priority else spec

    def _build_entry(self, spec: tuple, priority: int | None, action, params) -> StoredEntry:
        """A complete, validated entry that is not yet in the table."""
        e = StoredEntry()
        e.spec = spec
        e.priority = priority
        self._actions.fill(e, action, params)
        self._place(e)
        return e

    def _place(self, e: StoredEntry) -> None:
        """Per-table parts of a new entry: direct counter, insertion order."""
        if self.has_direct_counter:
            e.counter = [0, 0]
        e.seq = next(self._seq)

    # ------------------------------------------------------------------------------
    # the ident map and the engine's index, changed together
    # ------------------------------------------------------------------------------
    def _insert(self, ident: object, e: StoredEntry) -> None:
        self._entries[ident] = e
        if self._index is not None:
            self._index.insert(e)

    def _remove(self, ident: object) -> StoredEntry:
        e = self._entries.pop(ident)
        if self._index is not None:
            self._index.remove(e)
        return e

    def _replace(self, ident: object, old: StoredEntry, new: StoredEntry) -> None:
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

    def add_checked(self, spec: tuple, priority: int | None, action: str, args: tuple[int, ...]) -> StoredEntry:
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

    def _checked_entry(self, spec: tuple, priority: int | None, action: str, args: tuple[int, ...]) -> StoredEntry:
        """A new entry with a direct action, its values checked by the caller."""
        e = StoredEntry()
        e.spec = spec
        e.priority = priority
        self._actions.fill_checked(e, action, args)
        self._place(e)
        return e

    @staticmethod
    def _prio_text(prio: int | None) -> str:
        return f" and priority {prio}" if prio is not None else ""

    def _find(self, match, priority) -> tuple[object, StoredEntry]:
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
        if self._index is not None:
            self._index.clear()

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
        self._set_default_internal(action, self._actions.default_args(action, params))

    def reset_default(self) -> None:
        self._set_default_internal(self.table.default_action, self.table.default_args)

    def direct_counter(self, match, priority=None) -> tuple[int, int]:
        if not self.has_direct_counter:
            raise EntryError("invalid", f"{self._where()} has no direct counter")
        _, e = self._find(match, priority)
        assert e.counter is not None  # every entry of a table with a direct counter has one
        return e.counter[0], e.counter[1]

    def set_direct_counter(self, match, priority, packets: int, nbytes: int) -> None:
        if not self.has_direct_counter:
            raise EntryError("invalid", f"{self._where()} has no direct counter")
        _, e = self._find(match, priority)
        assert e.counter is not None  # as in direct_counter
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

    def find_record(self, spec: tuple, priority: int | None) -> StoredEntry | None:
        """The stored entry with this key (``canon_match``'s form) and priority, if any."""
        return self._entries.get((spec, priority) if self.needs_priority else spec)

    def records(self) -> list[StoredEntry]:
        """The stored entries in read order (the scan engine's match order, else insertion
        order), for front ends that encode entries themselves: each has ``spec``
        (``canon_match``'s form), ``priority``, ``action`` and ``args`` (or ``member`` /
        ``group``), ``is_const`` and the front end's ``wire``."""
        if self.engine == "scan":
            return list(self._scan)
        return list(self._entries.values())

    def __len__(self) -> int:
        return len(self._entries)

    def describe(self, e: StoredEntry) -> TableEntry:
        """A stored entry as the control plane names it."""
        params: dict[str, int] = {}
        if e.action is not None:
            params = args_to_params(self.model.action(e.action), e.args)
        return TableEntry(
            table=self.name,
            match=describe_match(self.keys, e.spec),
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
            for k, km in zip(self.keys, ce.matches, strict=False):
                mv = match_from_model(km, k.bitwidth)
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
            if self.profile is not None:
                raise EntryError("unimplemented", f"{self._where()}: const entries with an action profile")
            e = self._build_entry(spec, prio, ce.action, params)
            e.is_const = True
            self._insert(ident, e)

