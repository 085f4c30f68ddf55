"""Entries to P4Runtime bytes and messages and back, for one P4Info.

Why this shape: the controller's entries (fabric/entries.py) name tables,
actions and fields as the P4Info does; a ``Codec`` built once per P4Info checks them
against it and turns them into P4Runtime's bytes (controller/wire.py: ids, canonical
byte strings, one encoding per entry, made by the check and kept for the write), and
turns what a switch reads back into the same values, so reconciling is comparing
values. Why apart from the session (controller/p4rt.py): it is computation on a
P4Info only, no switch and no gRPC; the check before any write, the reconciler's
comparison and the tests use it without connecting to anything.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, cast

from finsy.proto.p4.config.v1 import p4info_pb2
from finsy.proto.p4.v1 import p4runtime_pb2

from controller import wire
from controller.errors import EntryError
from controller.pipeline import pipeline
from fabric.entries import Entry, GroupEntry, MatchValue, MemberEntry, TableEntry
from fabric.match import Exact, Lpm, Ternary


def _int(data: bytes) -> int:
    return int.from_bytes(data, "big")


_U32, _I32 = (1 << 32) - 1, 1 << 31


def _in_range(where: str, what: str, value: int, low: int, high: int | None) -> None:
    """EntryError unless ``low <= value <= high`` (P4Runtime's uint32/int32 fields)."""
    if value < low or (high is not None and value > high):
        bound = f"at least {low}" if high is None else f"{low}..{high}"
        raise EntryError(f"{where}: {what} {value} is out of range ({bound})")


@dataclass(frozen=True)
class _Table:
    id: int
    fields: dict[str, tuple[int, int, int]]  # name -> (id, bitwidth, match type)
    names: dict[int, str]
    size: int
    order: dict[str, int]


@dataclass(frozen=True)
class _Action:
    id: int
    params: dict[str, tuple[int, int]]  # name -> (id, bitwidth)
    names: dict[int, str]
    rank: dict[str, int]  # name -> position in the P4Info (param ids need not be in order)


@dataclass
class Encoded:
    """A switch's entries as the check encoded them (Codec.encode_into): each one's
    ``updates`` field inserting it, in the entries' order; where each run of entries
    of one kind (TableEntry, MemberEntry, GroupEntry) starts; entries per table and
    action profile."""

    updates: list[bytes] = field(default_factory=list, repr=False)  # (16,000 of them: not in a repr)
    runs: list[tuple[int, type]] = field(default_factory=list, repr=False)
    counts: dict[str, int] = field(default_factory=dict)


MT = p4info_pb2.MatchField
_EXACT, _LPM, _TERNARY = MT.EXACT, MT.LPM, MT.TERNARY


class Codec:
    """Encode/decode entries for one P4Info: ids and widths looked up once, and one
    byte encoder per entry shape (controller/wire.py) that checks and encodes an
    entry in one pass.

    ``target``: what the switch's P4Runtime server can do with selector groups. BMv2's
    (PI) keeps a watch port per member but reads every member of a group back with
    the watch port of the group's last member, and fails a MODIFY that changes a
    group's members; so on BMv2 groups are compared without their watch ports
    (``comparable``) and a changed group is deleted and inserted again
    (``remake_groups``, controller/reconcile.py)."""

    def __init__(self, p4info: p4info_pb2.P4Info, target: str = "embedded") -> None:
        self.p4info = p4info
        self.target = target
        self.reads_watch_ports = self.modifies_groups = target != "bmv2"
        self.tables: dict[str, _Table] = {}
        self.table_names: dict[int, str] = {}
        for t in p4info.tables:
            fields = {m.name: (m.id, m.bitwidth, int(m.match_type)) for m in t.match_fields}
            self.tables[t.preamble.name] = _Table(t.preamble.id, fields, {m.id: m.name for m in t.match_fields},
                                                  t.size, {m.name: k for k, m in enumerate(t.match_fields)})
            self.table_names[t.preamble.id] = t.preamble.name
        self.actions: dict[str, _Action] = {}
        self.action_names: dict[int, str] = {}
        for a in p4info.actions:
            params = {p.name: (p.id, p.bitwidth) for p in a.params}
            self.actions[a.preamble.name] = _Action(a.preamble.id, params, {p.id: p.name for p in a.params},
                                                    {p.name: k for k, p in enumerate(a.params)})
            self.action_names[a.preamble.id] = a.preamble.name
        self.profiles = {p.preamble.name: p.preamble.id for p in p4info.action_profiles}
        self.profile_names = {v: k for k, v in self.profiles.items()}
        self.profile_sizes = {p.preamble.name: p.size for p in p4info.action_profiles}
        self.table_profiles = {t.preamble.name: self.profile_names[t.implementation_id]
                               for t in p4info.tables if t.implementation_id in self.profile_names}
        self.counters = {c.preamble.name: (c.preamble.id, c.size) for c in p4info.counters}
        self._order_cache: dict[tuple[str, tuple[str, ...]], bool] = {}
        self._shapes: dict[tuple[object, ...], wire.Encoders] = {}  # (kind, table or profile, action, names and kinds) -> encoders
        self._last: dict[tuple[object, ...], wire.Encoders] = {}  # (kind, table or profile, action) -> the encoders used last

    # -- encode

    def _action_spec(self, name: str, params: Sequence[tuple[str, int]], where: str) -> _Action:
        """The action, after checking its parameters' names and widths (EntryError)."""
        a = self.actions.get(name)
        if a is None:
            raise EntryError(f"{where}: no action {name!r} in the P4Info")
        if len(params) != len(a.params):
            raise EntryError(f"{where}: action {name} takes {', '.join(a.params) or 'no parameters'}")
        for pname, value in params:
            spec = a.params.get(pname)
            if spec is None:
                raise EntryError(f"{where}: action {name} has no parameter {pname!r}")
            if value < 0 or value >> spec[1]:
                raise EntryError(f"{where}: {name}({pname}={value:#x}) does not fit {spec[1]} bits")
        return a

    def _field_spec(self, table: str, t: _Table, fname: str, mv: MatchValue) -> tuple[int, int, int]:
        """(field id, width, match type) of a match value, after checking it (EntryError)."""
        spec = t.fields.get(fname)
        if spec is None:
            raise EntryError(f"{table}: no match field {fname!r}")
        _, width, mtype = spec
        if isinstance(mv, Exact) and mtype == _EXACT:
            if mv.value >> width or mv.value < 0:
                raise EntryError(f"{table}: {fname}={mv.value:#x} does not fit {width} bits")
        elif isinstance(mv, Lpm) and mtype == _LPM:
            if mv.value >> width or mv.value < 0 or not 0 < mv.prefix_len <= width:
                raise EntryError(f"{table}: {fname} {mv.value:#x}/{mv.prefix_len} does not fit {width} bits")
        elif isinstance(mv, Ternary) and mtype == _TERNARY:
            if mv.mask >> width or mv.value & ~mv.mask or mv.value < 0:
                raise EntryError(f"{table}: {fname} {mv.value:#x} &&& {mv.mask:#x} is not a {width}-bit ternary")
        else:
            raise EntryError(f"{table}: {fname} is {MT.MatchType.Name(cast(Any, mtype)).lower()}, "
                             f"not {type(mv).__name__}")
        return spec

    def _profile_id(self, name: str) -> int:
        pid = self.profiles.get(name)
        if pid is None:
            raise EntryError(f"no action profile {name!r} in the P4Info")
        return pid

    def _validate(self, e: Entry) -> None:
        """Raise the EntryError that says how ``e`` does not fit the P4Info, if it does not."""
        if isinstance(e, MemberEntry):
            self._profile_id(e.profile)
            _in_range(e.profile, "member id", e.member_id, 0, _U32)
            self._action_spec(e.action, e.params, e.profile)
            return
        if isinstance(e, GroupEntry):
            self._profile_id(e.profile)
            _in_range(e.profile, "group id", e.group_id, 0, _U32)
            for mid, weight, watch in e.members:
                _in_range(e.profile, f"group {e.group_id}: member id", mid, 0, _U32)
                _in_range(e.profile, f"group {e.group_id}: weight", weight, -_I32, _I32 - 1)
                _in_range(e.profile, f"group {e.group_id}: watch port", watch, 0, None)
            return
        t = self.tables.get(e.table)
        if t is None:
            raise EntryError(f"no table {e.table!r} in the P4Info")
        if (e.group is None) == (e.action is None):
            raise EntryError(f"{e.table}: an entry needs an action or a group (one of them)")
        _in_range(e.table, "priority", e.priority, -_I32, _I32 - 1)
        if e.group is not None:
            _in_range(e.table, "group id", e.group, 0, _U32)
        for fname, mv in e.match:
            self._field_spec(e.table, t, fname, mv)
        if e.action is not None:  # (the check above: an entry has an action or a group)
            self._action_spec(e.action, e.params, e.table)

    def _shape(self, e: TableEntry | MemberEntry) -> wire.Encoders:
        """The shape of ``e`` (made on first use), after checking ``e`` (EntryError)."""
        self._validate(e)
        if isinstance(e, TableEntry):
            key: tuple[object, ...] = (TableEntry, e.table, e.action, tuple((f, type(mv)) for f, mv in e.match),
                          tuple(p for p, _ in e.params))
        else:
            key = (MemberEntry, e.profile, e.action, tuple(p for p, _ in e.params))
        shape = self._shapes.get(key)
        if shape is None:
            shape = self._shapes[key] = self._new_shape(e)
        return shape

    def _new_shape(self, e: TableEntry | MemberEntry) -> wire.Encoders:
        params: list[tuple[str, int, int]] = []
        if e.action is not None:
            a = self.actions[e.action]
            params = [(name, *a.params[name]) for name, _ in e.params]
        if isinstance(e, MemberEntry):
            return wire.member_encoder(self.profiles[e.profile], self.actions[e.action].id, params)
        t = self.tables[e.table]
        fields = [(fname, type(mv), t.fields[fname][0], t.fields[fname][1]) for fname, mv in e.match]
        return wire.table_encoder(e.table, t.id, fields, e.action,
                                  None if e.action is None else self.actions[e.action].id, params)

    def update_bytes(self, e: Entry) -> bytes:
        """``e`` as the ``updates`` field of a WriteRequest inserting it (wire.retype
        makes the other kinds), after checking that it fits the P4Info (names, kinds,
        widths, ranges; EntryError if not). The encoder used last for the same table
        (or profile) and action is tried first: it checks and encodes the entry in one
        pass and says None when the entry is of another shape or does not fit; only
        then is the entry looked at field by field."""
        if isinstance(e, GroupEntry):
            b = wire.group_update(self._profile_id(e.profile), e)
            if b is None:
                self._validate(e)
                raise EntryError(f"{e.profile}: group {e.group_id} does not fit P4Runtime")
            return b
        key = (type(e), e.table if isinstance(e, TableEntry) else e.profile, e.action)
        enc = self._last.get(key)
        if enc is not None:
            b = enc.one(e)
            if b is not None:
                return b
        enc = self._last[key] = self._shape(e)
        b = enc.one(e)
        if b is None:  # _validate passed, so this is a bug of the encoders, not of the entry
            raise EntryError(f"{key[1]}: {e!r} passed the checks but could not be encoded")
        return b

    def encode_into(self, out: Encoded, entries: Sequence[Entry], start: int = 0, stop: int | None = None) -> None:
        """Add ``update_bytes`` of ``entries[start:stop]`` to ``out``, in order.

        Entries come in runs of one table and action (an EV table is most of a NIC's
        entries): after the first entry of a run, its shape's ``run`` encoder takes the
        others, as far as they go (to an entry of another table, action or shape, or
        one that does not fit, which goes through ``update_bytes`` and starts the next
        run). What the write needs is noted per run, not per entry: the entries per
        table and profile (``check_sizes``) and where each run starts (the write
        order: members, groups, table entries)."""
        updates, counts, runs = out.updates, out.counts, out.runs
        add = updates.append
        base = len(updates) - start  # entries[i] is updates[base + i]
        i, n = start, len(entries) if stop is None else stop
        while i < n:
            e = entries[i]
            first = i
            add(self.update_bytes(e))
            i += 1
            if isinstance(e, TableEntry):
                run = self._last[(TableEntry, e.table, e.action)].run
                assert run is not None  # every table entry's shape has one (wire.table_encoder)
                i = run(entries, i, n, add)
                counts[e.table] = counts.get(e.table, 0) + i - first
            elif isinstance(e, MemberEntry):
                counts[e.profile] = counts.get(e.profile, 0) + 1
            runs.append((base + first, type(e)))

    def updates_of(self, entries: Sequence[Entry]) -> list[bytes]:
        """``update_bytes`` of each entry, in order (see ``encode_into``)."""
        out = Encoded()
        self.encode_into(out, entries)
        return out.updates

    def check(self, e: Entry) -> None:
        """Does ``e`` fit the P4Info (names, kinds, widths)? EntryError if not. (The
        check is the encoding: the Reconciler keeps ``update_bytes`` for the write.)"""
        self.update_bytes(e)

    def encode(self, e: Entry) -> p4runtime_pb2.Entity:
        """``e`` as an Entity message (EntryError if it does not fit)."""
        return p4runtime_pb2.Entity.FromString(wire.entity(self.update_bytes(e)))

    def write_request(self, kind: str, entries: Iterable[Entry]) -> p4runtime_pb2.WriteRequest:
        """A WriteRequest message of ``kind`` (insert, modify, delete) updates, one per
        entry (EntryError for one that does not fit), parsed from the bytes the
        installer sends (``updates``)."""
        return p4runtime_pb2.WriteRequest.FromString(self.updates(kind, entries))

    def updates(self, kind: str, entries: Iterable[Entry]) -> bytes:
        """The ``updates`` fields of a WriteRequest of ``kind`` updates, one per entry."""
        return b"".join(wire.retype(self.update_bytes(e), kind) for e in entries)

    # -- decode

    def decode(self, ent: p4runtime_pb2.Entity) -> Entry | None:
        """The entry value of a read entity (None for kinds the controller does not write)."""
        kind = ent.WhichOneof("entity")
        if kind == "action_profile_member":
            m = ent.action_profile_member
            return MemberEntry(self.profile_names[m.action_profile_id], m.member_id,
                               self.action_names[m.action.action_id], self._params(m.action))
        if kind == "action_profile_group":
            g = ent.action_profile_group
            return GroupEntry(self.profile_names[g.action_profile_id], g.group_id,
                              tuple((m.member_id, m.weight, _int(m.watch_port)) for m in g.members))
        if kind != "table_entry":
            return None
        te = ent.table_entry
        name = self.table_names[te.table_id]
        t = self.tables[name]
        match: list[tuple[str, MatchValue]] = []
        for fm in te.match:
            fname = t.names[fm.field_id]
            which = fm.WhichOneof("field_match_type")
            if which == "exact":
                match.append((fname, Exact(_int(fm.exact.value))))
            elif which == "lpm":
                match.append((fname, Lpm(_int(fm.lpm.value), fm.lpm.prefix_len)))
            elif which == "ternary":
                match.append((fname, Ternary(_int(fm.ternary.value), _int(fm.ternary.mask))))
            else:
                match.append((fname, Exact(-1)))  # a kind we never write: differs from every entry of ours
        match.sort(key=lambda fm: t.order[fm[0]])
        act_kind = te.action.WhichOneof("type")
        if act_kind == "action_profile_group_id":
            return TableEntry(name, tuple(match), None, (), te.priority, te.action.action_profile_group_id)
        act = te.action.action
        return TableEntry(name, tuple(match), self.action_names[act.action_id], self._params(act), te.priority)

    def _params(self, act: p4runtime_pb2.Action) -> tuple[tuple[str, int], ...]:
        a = self.actions[self.action_names[act.action_id]]
        return tuple(sorted(((a.names[p.param_id], _int(p.value)) for p in act.params),
                            key=lambda kv: a.rank[kv[0]]))

    def _in_order(self, owner: str, names: tuple[str, ...], rank: dict[str, int]) -> bool:
        key = (owner, names)
        ok = self._order_cache.get(key)
        if ok is None:
            ok = self._order_cache[key] = [rank.get(n, -1) for n in names] == sorted(rank.get(n, -1) for n in names)
        return ok

    def canonical(self, e: Entry) -> Entry:
        """``e`` with its match fields in P4Info order and parameters in P4Info order
        (what ``decode`` gives back for it). Entries already in order (the usual case,
        remembered per table and action) are returned as they are."""
        if isinstance(e, TableEntry):
            t = self.tables[e.table]
            match, params = e.match, e.params
            if not self._in_order(e.table, tuple(fm[0] for fm in match), t.order):
                match = tuple(sorted(match, key=lambda fm: t.order[fm[0]]))
            if e.action is not None and params:
                a = self.actions[e.action]
                if not self._in_order(e.action, tuple(kv[0] for kv in params), a.rank):
                    params = tuple(sorted(params, key=lambda kv: a.rank[kv[0]]))
            if match is e.match and params is e.params:
                return e
            return TableEntry(e.table, match, e.action, params, e.priority, e.group)
        if isinstance(e, MemberEntry):
            a = self.actions[e.action]
            if self._in_order(e.action, tuple(kv[0] for kv in e.params), a.rank):
                return e
            return MemberEntry(e.profile, e.member_id, e.action, tuple(sorted(e.params, key=lambda kv: a.rank[kv[0]])))
        return e

    def comparable(self, e: Entry) -> Entry:
        """``e`` (canonical) as this target can report it: a group without its members'
        watch ports where the target does not read them back."""
        if isinstance(e, GroupEntry) and not self.reads_watch_ports:
            return GroupEntry(e.profile, e.group_id, tuple((m, w, 0) for m, w, _ in e.members))
        return e

    def check_sizes(self, encoded: Encoded, switch: str) -> None:
        """Refuse, before anything is written, more entries than a table or profile
        holds (as ``encode_into`` counted them)."""
        for name, n in encoded.counts.items():
            size = self.tables[name].size if name in self.tables else self.profile_sizes.get(name, 0)
            if size and n > size:
                raise EntryError(f"{switch}: {n} entries for {name}, which holds {size}; "
                                 "use fewer EVs per NIC (--evs-per-nic) or GENERATED EVs (--ev-mode generated)")


@lru_cache(maxsize=8)
def codec(program: str, target: str = "embedded") -> Codec:
    """The codec of ``p4src/<program>.p4``'s P4Info on ``target``, made once."""
    return Codec(pipeline(program, target).p4info, target)
