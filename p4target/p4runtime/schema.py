"""The running pipeline's P4Info, indexed by id and tied to the program's names.

The server answers in the ids of the P4Info the controller pushed, and calls the
Switch with model names. ``Schema`` joins the two: it checks the pushed P4Info
describes the compiled program (same objects, names, widths and match kinds, so a
P4Info of another program is refused before anything is applied) and keeps
id -> object maps for the request path.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from finsy.proto.p4.config.v1 import p4info_pb2

from p4target.model import ProgramModel, Table
from p4target.p4info import build_p4info
from p4target.p4runtime.errors import invalid
from p4target.p4runtime.wire import exact_heads, id_field, param_heads

MATCH_KIND_NAME = {
    p4info_pb2.MatchField.EXACT: "exact",
    p4info_pb2.MatchField.LPM: "lpm",
    p4info_pb2.MatchField.TERNARY: "ternary",
    p4info_pb2.MatchField.RANGE: "range",
    p4info_pb2.MatchField.OPTIONAL: "optional",
}

SCOPE_NAME = {
    p4info_pb2.ActionRef.TABLE_AND_DEFAULT: "all",
    p4info_pb2.ActionRef.TABLE_ONLY: "table_only",
    p4info_pb2.ActionRef.DEFAULT_ONLY: "default_only",
}


@dataclass(frozen=True)
class FieldInfo:
    id: int
    name: str
    bitwidth: int
    match_kind: str = "exact"


@dataclass
class ActionInfo:
    """An action of the P4Info; ``arg_order`` names its parameters in the program's
    order (the runtime's argument tuples), P4Info id order when the program has no such action."""

    id: int
    name: str
    params: dict[int, FieldInfo]
    arg_order: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        self.ordered_params = sorted(self.params.values(), key=lambda f: f.id)
        if not self.arg_order:
            self.arg_order = tuple(f.name for f in self.ordered_params)
        pos = {name: i for i, name in enumerate(self.arg_order)}
        # param id -> (position in the argument tuple, field): what decoding a request needs
        self.arg_slots = {f.id: (pos[f.name], f) for f in self.params.values()}
        # what wire.table_entry_element writes: Action.action_id, then params by id
        self.wire_id = id_field(1, self.id)
        self.wire_params = tuple((id_field(2, f.id), pos[f.name], param_heads(id_field(2, f.id), f.bitwidth))
                                 for f in self.ordered_params)


@dataclass
class ProfileInfo:
    id: int
    name: str
    with_selector: bool
    size: int
    max_group_size: int
    table_ids: tuple[int, ...]


@dataclass
class TableInfo:
    id: int
    name: str
    model: Table
    fields: dict[int, FieldInfo]
    actions: dict[int, str]  # action id -> scope
    needs_priority: bool
    is_const: bool
    const_default: bool
    profile: ProfileInfo | None = None
    direct_counter_id: int | None = None
    direct_meter_id: int | None = None

    def __post_init__(self) -> None:
        self.ordered_fields = sorted(self.fields.values(), key=lambda f: f.id)
        # The runtime keeps a key as one item per key field in the program's order
        # (TableRuntime.canon_match): field id -> position there, and the items of an
        # all-wildcard key, which the decoders of requests fill in.
        order = {k.name: i for i, k in enumerate(self.model.match_keys)}
        self.key_slots = {f.id: (order[f.name], f) for f in self.fields.values()}
        wildcard: list[object] = [None] * len(order)
        for f in self.fields.values():
            full = (1 << f.bitwidth) - 1
            wildcard[order[f.name]] = {"lpm": (0, 0), "ternary": (0, 0), "range": (0, full)}.get(f.match_kind)
        self.wildcard_key = tuple(wildcard)
        self.exact_bits = sum(1 << order[f.name] for f in self.fields.values() if f.match_kind == "exact")
        # what wire.table_entry_element writes: TableEntry.table_id, then FieldMatch.field_id by id
        self.wire_id = id_field(1, self.id)
        self.wire_fields = tuple(
            (id_field(1, f.id), order[f.name], f.match_kind,
             exact_heads(id_field(1, f.id), f.bitwidth) if f.match_kind == "exact" else None)
            for f in self.ordered_fields)


@dataclass
class ExternInfo:
    id: int
    name: str
    kind: str  # counter, direct_counter, meter, direct_meter, register
    size: int = 0
    unit: str = ""
    bitwidth: int = 0
    table_id: int | None = None


@dataclass
class MetadataInfo:
    """packet_in / packet_out controller header: field id -> (name, width)."""

    id: int
    name: str
    fields: dict[int, FieldInfo]


@dataclass
class Schema:
    p4info: p4info_pb2.P4Info
    model: ProgramModel
    tables: dict[int, TableInfo] = field(default_factory=dict)
    actions: dict[int, ActionInfo] = field(default_factory=dict)
    profiles: dict[int, ProfileInfo] = field(default_factory=dict)
    externs: dict[int, ExternInfo] = field(default_factory=dict)
    packet_in: MetadataInfo | None = None
    packet_out: MetadataInfo | None = None
    digests: dict[int, str] = field(default_factory=dict)
    tuple_digests: set[int] = field(default_factory=set)  # digests of a list: data as a P4 tuple
    value_sets: dict[int, p4info_pb2.ValueSet] = field(default_factory=dict)  # by id: the P4Info's own
    names: dict[tuple[str, str], int] = field(default_factory=dict)  # (kind, name) -> id
    actions_by_name: dict[str, ActionInfo] = field(default_factory=dict)

    def table(self, table_id: int) -> TableInfo:
        try:
            return self.tables[table_id]
        except KeyError:
            raise invalid(f"table id {table_id} is not in the P4Info") from None

    def action(self, action_id: int) -> ActionInfo:
        try:
            return self.actions[action_id]
        except KeyError:
            raise invalid(f"action id {action_id} is not in the P4Info") from None

    def profile(self, profile_id: int) -> ProfileInfo:
        try:
            return self.profiles[profile_id]
        except KeyError:
            raise invalid(f"action profile id {profile_id} is not in the P4Info") from None

    def extern(self, extern_id: int, kind: str) -> ExternInfo:
        e = self.externs.get(extern_id)
        if e is None or e.kind != kind:
            raise invalid(f"{kind.replace('_', ' ')} id {extern_id} is not in the P4Info")
        return e

    def id_of(self, kind: str, name: str) -> int:
        return self.names[(kind, name)]


def _check(cond: bool, message: str) -> None:
    if not cond:
        raise invalid(f"P4Info does not match the device config: {message}; push the P4Info p4c (or p4target) "
                      "generated for this program")


def build_schema(model: ProgramModel, pushed: p4info_pb2.P4Info | None = None) -> Schema:  # noqa: C901 — one loop per P4Info section, each checked against the program
    """Index ``pushed`` (or the P4Info generated from ``model`` when None/empty).

    Raises P4RTError(INVALID_ARGUMENT) when ``pushed`` does not describe ``model``.
    """
    generated = build_p4info(model)
    info = pushed if pushed is not None and pushed.ByteSize() > 0 else generated
    s = Schema(p4info=info, model=model)

    model_tables = {t.name: t for t in model.tables}
    model_actions = {a.name: a for a in model.actions}
    model_externs = {e.name: e for e in model.externs}

    pushed_names = {t.preamble.name for t in info.tables}
    _check(pushed_names == set(model_tables), f"tables {sorted(pushed_names ^ set(model_tables))} differ")
    pushed_actions = {a.preamble.name for a in info.actions}
    _check(set(model_actions) <= pushed_actions, f"actions {sorted(set(model_actions) - pushed_actions)} missing")

    for a in info.actions:
        ma = model_actions.get(a.preamble.name)
        params = {p.id: FieldInfo(p.id, p.name, p.bitwidth) for p in a.params}
        if ma is not None:
            mp = {p.name: p.bitwidth for p in ma.params}
            _check({p.name: p.bitwidth for p in a.params} == mp, f"parameters of action '{ma.name}' differ")
        order = tuple(p.name for p in ma.params) if ma is not None else ()
        s.actions[a.preamble.id] = s.actions_by_name[a.preamble.name] = ActionInfo(
            a.preamble.id, a.preamble.name, params, order)
        s.names[("action", a.preamble.name)] = a.preamble.id

    for p in info.action_profiles:
        prof = ProfileInfo(p.preamble.id, p.preamble.name, p.with_selector, p.size, p.max_group_size, tuple(p.table_ids))
        _check(p.preamble.name in model_externs, f"action profile '{p.preamble.name}' is not in the program")
        s.profiles[prof.id] = prof
        s.names[("action_profile", prof.name)] = prof.id

    def add_extern(kind: str, msg, size: int = 0, unit: str = "", bitwidth: int = 0, table_id: int | None = None):
        _check(msg.preamble.name in model_externs, f"{kind} '{msg.preamble.name}' is not in the program")
        s.externs[msg.preamble.id] = ExternInfo(msg.preamble.id, msg.preamble.name, kind, size, unit, bitwidth, table_id)
        s.names[(kind, msg.preamble.name)] = msg.preamble.id

    for c in info.counters:
        add_extern("counter", c, size=c.size, unit=p4info_pb2.CounterSpec.Unit.Name(c.spec.unit))
    for dcounter in info.direct_counters:
        add_extern("direct_counter", dcounter, unit=p4info_pb2.CounterSpec.Unit.Name(dcounter.spec.unit),
                   table_id=dcounter.direct_table_id)
    for m in info.meters:
        add_extern("meter", m, size=m.size, unit=p4info_pb2.MeterSpec.Unit.Name(m.spec.unit))
    for dmeter in info.direct_meters:
        add_extern("direct_meter", dmeter, unit=p4info_pb2.MeterSpec.Unit.Name(dmeter.spec.unit),
                   table_id=dmeter.direct_table_id)
    for r in info.registers:
        add_extern("register", r, size=r.size, bitwidth=r.type_spec.bitstring.bit.bitwidth)

    for t in info.tables:
        mt = model_tables[t.preamble.name]
        fields = {}
        for f in t.match_fields:
            kind = MATCH_KIND_NAME.get(f.match_type, f.other_match_type or "unknown")
            fields[f.id] = FieldInfo(f.id, f.name, f.bitwidth, kind)
        mkeys = {k.name: (k.bitwidth, k.match_kind) for k in mt.match_keys}
        _check(
            {f.name: (f.bitwidth, f.match_kind) for f in fields.values()} == mkeys,
            f"match fields of table '{mt.name}' differ",
        )
        actions = {}
        for ref in t.action_refs:
            _check(ref.id in s.actions, f"table '{mt.name}' refers to unknown action id {ref.id}")
            actions[ref.id] = SCOPE_NAME.get(ref.scope, "all")
        profile = s.profiles.get(t.implementation_id) if t.implementation_id else None
        _check((profile is None) == (mt.implementation is None), f"implementation of table '{mt.name}' differs")
        dc = dm = None
        for rid in t.direct_resource_ids:
            e = s.externs.get(rid)
            if e is not None and e.kind == "direct_counter":
                dc = rid
            elif e is not None and e.kind == "direct_meter":
                dm = rid
        s.tables[t.preamble.id] = TableInfo(
            id=t.preamble.id,
            name=mt.name,
            model=mt,
            fields=fields,
            actions=actions,
            needs_priority=any(f.match_kind in ("ternary", "range", "optional") for f in fields.values()),
            is_const=t.is_const_table or mt.const_entries is not None,
            const_default=bool(t.const_default_action_id) or mt.default_is_const,
            profile=profile,
            direct_counter_id=dc,
            direct_meter_id=dm,
        )
        s.names[("table", mt.name)] = t.preamble.id

    for h in info.controller_packet_metadata:
        md = MetadataInfo(h.preamble.id, h.preamble.name, {m.id: FieldInfo(m.id, m.name, m.bitwidth) for m in h.metadata})
        if h.preamble.name == "packet_in":
            s.packet_in = md
        elif h.preamble.name == "packet_out":
            s.packet_out = md
    for d in info.digests:
        s.digests[d.preamble.id] = d.preamble.name
        if d.type_spec.HasField("tuple"):
            s.tuple_digests.add(d.preamble.id)
        s.names[("digest", d.preamble.name)] = d.preamble.id
    for v in info.value_sets:
        s.value_sets[v.preamble.id] = v
    return s
