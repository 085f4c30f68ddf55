"""Write, for every entity but table entries and action profiles (p4target/p4runtime/write.py
owns those and the dispatch): counters, registers, meters (indexed and direct), the
packet replication engine, digest configurations and value sets. Each update is
checked whole before its Switch calls; the Switch refuses without changing anything."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, TypeVar

from finsy.proto.p4.config.v1 import p4info_pb2
from finsy.proto.p4.v1 import p4runtime_pb2

from p4target.errors import EntryError
from p4target.p4runtime import bytestrings
from p4target.p4runtime.errors import (
    ALREADY_EXISTS,
    NOT_FOUND,
    OUT_OF_RANGE,
    UNIMPLEMENTED,
    P4RTError,
    from_entry_error,
    invalid,
)
from p4target.p4runtime.state import PipelineState, entry_key
from p4target.p4runtime.translate import decode_match, decode_port, decode_priority
from p4target.runtime.entries import Exact, Lpm, Optional, Range, Ternary

if TYPE_CHECKING:  # pragma: no cover - typing only
    from p4target.runtime.switch import Switch

_T = TypeVar("_T")

INSERT = p4runtime_pb2.Update.INSERT
MODIFY = p4runtime_pb2.Update.MODIFY
DELETE = p4runtime_pb2.Update.DELETE


# ---- shared with write.py ---------------------------------------------------------------


def switch_call(fn: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
    """``fn(*args, **kwargs)``, a refusal of the switch's as a P4Runtime error."""
    try:
        return fn(*args, **kwargs)
    except EntryError as exc:
        raise from_entry_error(exc) from None


def require_entry(sw: Switch, t, match, priority) -> None:
    table = sw.tables[t.name]
    if table.find_record(table.canon_match(match), priority) is None:
        raise P4RTError(NOT_FOUND, f"table '{t.name}': no entry with this match and priority")


def meter_tuple(c: p4runtime_pb2.MeterConfig) -> tuple[int, int, int, int]:
    if c.eburst:
        raise invalid("meter config: eburst is only for single-rate meters; v1model meters are two-rate (trTCM)")
    if c.cir < 0 or c.pir < 0 or c.cburst < 0 or c.pburst < 0:
        raise invalid("meter config values cannot be negative")
    if c.pir < c.cir:
        raise invalid(f"meter config: pir {c.pir} is below cir {c.cir}")
    return (c.cir, c.cburst, c.pir, c.pburst)


# ---- indexed and direct externs ---------------------------------------------------------


def cells_of(msg, size: int, where: str) -> range | list[int]:
    """The cells an indexed entity's ``msg`` (a Write's or a Read's) names: its
    ``index``, checked against ``size``, or all of them (read.py reads with it too)."""
    if not msg.HasField("index"):
        return range(size)
    i = msg.index.index
    if i < 0:
        raise invalid(f"{where}: index {i} is negative")
    if i >= size:
        raise P4RTError(OUT_OF_RANGE, f"{where}: index {i} outside 0..{size - 1}")
    return [i]


def write_counter(sw: Switch, st: PipelineState, op: int, c: p4runtime_pb2.CounterEntry) -> None:
    if op != MODIFY:
        raise invalid("counter entries can only be modified (use MODIFY)")
    info = st.schema.extern(c.counter_id, "counter")
    if c.data.packet_count < 0 or c.data.byte_count < 0:
        raise invalid(f"counter '{info.name}': counts cannot be negative")
    indexes = cells_of(c, info.size, f"counter '{info.name}'")
    if not c.HasField("data"):
        return  # no data: the counters are not modified
    for i in indexes:
        switch_call(sw.counter_write, info.name, i, c.data.packet_count, c.data.byte_count)


def write_direct_counter(sw: Switch, st: PipelineState, op: int, c: p4runtime_pb2.DirectCounterEntry) -> None:
    if op != MODIFY:
        raise invalid("direct counter entries can only be modified (use MODIFY)")
    t = st.schema.table(c.table_entry.table_id)
    if t.direct_counter_id is None:
        raise invalid(f"table '{t.name}' has no direct counter")
    if c.data.packet_count < 0 or c.data.byte_count < 0:
        raise invalid(f"direct counter of '{t.name}': counts cannot be negative")
    match = decode_match(t, c.table_entry.match)
    priority = decode_priority(t, c.table_entry.priority)
    if not c.HasField("data"):
        require_entry(sw, t, match, priority)  # no data: nothing changes
        return
    switch_call(sw.direct_counter_write, t.name, match, c.data.packet_count, c.data.byte_count, priority=priority)


def write_register(sw: Switch, st: PipelineState, op: int, r: p4runtime_pb2.RegisterEntry) -> None:
    if op != MODIFY:
        raise invalid("register entries can only be modified (use MODIFY)")
    info = st.schema.extern(r.register_id, "register")
    if r.data.WhichOneof("data") != "bitstring":
        raise invalid(f"register '{info.name}': data must be a bitstring")
    value = bytestrings.decode(r.data.bitstring, info.bitwidth, f"register '{info.name}'")
    for i in cells_of(r, info.size, f"register '{info.name}'"):
        switch_call(sw.register_write, info.name, i, value)


def write_meter(sw: Switch, st: PipelineState, op: int, m: p4runtime_pb2.MeterEntry) -> None:
    if op != MODIFY:
        raise invalid("meter entries can only be modified (use MODIFY)")
    info = st.schema.extern(m.meter_id, "meter")
    if m.HasField("counter_data"):
        raise P4RTError(UNIMPLEMENTED, f"meter '{info.name}': per-colour meter counters are not supported")
    indexes = cells_of(m, info.size, f"meter '{info.name}'")
    if m.HasField("config"):
        cfg = meter_tuple(m.config)
        for i in indexes:
            switch_call(sw.meter_set, info.name, i, *cfg)
            st.meters[(info.name, i)] = m.config
    else:
        for i in indexes:
            switch_call(sw.meter_clear, info.name, i)
            st.meters.pop((info.name, i), None)


def write_direct_meter(sw: Switch, st: PipelineState, op: int, m: p4runtime_pb2.DirectMeterEntry) -> None:
    if op != MODIFY:
        raise invalid("direct meter entries can only be modified (use MODIFY)")
    t = st.schema.table(m.table_entry.table_id)
    if t.direct_meter_id is None:
        raise invalid(f"table '{t.name}' has no direct meter")
    if m.HasField("counter_data"):
        raise P4RTError(UNIMPLEMENTED, f"table '{t.name}': per-colour meter counters are not supported")
    match = decode_match(t, m.table_entry.match)
    priority = decode_priority(t, m.table_entry.priority)
    key = entry_key(t.name, match, priority)
    if m.HasField("config"):
        switch_call(sw.direct_meter_set, t.name, match, *meter_tuple(m.config), priority=priority)
        st.direct_meters[key] = m.config
    else:
        switch_call(sw.direct_meter_clear, t.name, match, priority=priority)
        st.direct_meters.pop(key, None)


# ---- packet replication engine --------------------------------------------------------


def _replicas(replicas, where: str) -> list[tuple[int, int]]:
    out = []
    seen = set()
    for r in replicas:
        kind = r.WhichOneof("port_kind")
        if kind == "port":
            port = decode_port(r.port, f"{where} replica port")
        elif kind == "egress_port":
            port = r.egress_port
        else:
            raise invalid(f"{where}: replica without a port")
        if len(r.backup_replicas):
            raise P4RTError(UNIMPLEMENTED, f"{where}: backup replicas are not supported")
        if r.instance > 0xFFFF:
            raise invalid(f"{where}: instance {r.instance} does not fit v1model's 16-bit egress_rid")
        for b in r.backup_replicas:
            if b.port == r.port:
                raise invalid(f"{where}: a backup replica repeats its replica's port")
        if (port, r.instance) in seen:
            raise invalid(f"{where}: replica (port {port}, instance {r.instance}) listed twice")
        seen.add((port, r.instance))
        out.append((port, r.instance))
    return out


def _check_presence(op: int, exists: bool, where: str) -> None:
    """INSERT needs the object absent, MODIFY and DELETE need it present."""
    if op == INSERT and exists:
        raise P4RTError(ALREADY_EXISTS, f"{where} already exists; use MODIFY")
    if op in (MODIFY, DELETE) and not exists:
        raise P4RTError(NOT_FOUND, f"{where} does not exist" + ("; use INSERT" if op == MODIFY else ""))


def write_pre(sw: Switch, st: PipelineState, op: int, p: p4runtime_pb2.PacketReplicationEngineEntry) -> None:
    which = p.WhichOneof("type")
    if which == "multicast_group_entry":
        g = p.multicast_group_entry
        where = f"multicast group {g.multicast_group_id}"
        if g.multicast_group_id == 0:
            raise invalid("multicast group id 0 is reserved (no multicast); use 1 or more")
        _check_presence(op, g.multicast_group_id in st.mc_groups, where)
        if op == DELETE:
            switch_call(sw.mc_group_delete, g.multicast_group_id)
            del st.mc_groups[g.multicast_group_id]
            return
        switch_call(sw.mc_group_set, g.multicast_group_id, _replicas(g.replicas, where))
        st.mc_groups[g.multicast_group_id] = p4runtime_pb2.MulticastGroupEntry()
        st.mc_groups[g.multicast_group_id].CopyFrom(g)
    elif which == "clone_session_entry":
        c = p.clone_session_entry
        where = f"clone session {c.session_id}"
        if c.session_id == 0:
            raise invalid("clone session id 0 is reserved; use 1 or more")
        _check_presence(op, c.session_id in st.clone_sessions, where)
        if op == DELETE:
            switch_call(sw.clone_session_delete, c.session_id)
            del st.clone_sessions[c.session_id]
            return
        if c.packet_length_bytes < 0:
            raise invalid(f"{where}: packet_length_bytes cannot be negative")
        switch_call(sw.clone_session_set, c.session_id, _replicas(c.replicas, where), truncate=c.packet_length_bytes)
        st.clone_sessions[c.session_id] = p4runtime_pb2.CloneSessionEntry()
        st.clone_sessions[c.session_id].CopyFrom(c)
    else:
        raise invalid("packet replication engine entry without a multicast group or clone session")


def write_digest(sw: Switch, st: PipelineState, op: int, d: p4runtime_pb2.DigestEntry) -> None:
    if d.digest_id not in st.schema.digests:
        raise invalid(f"digest id {d.digest_id} is not in the P4Info")
    _check_presence(op, d.digest_id in st.digest_configs, f"digest {d.digest_id} configuration")
    if op == DELETE:
        del st.digest_configs[d.digest_id]
        return
    cfg = p4runtime_pb2.DigestEntry.Config()
    cfg.CopyFrom(d.config)
    st.digest_configs[d.digest_id] = cfg


def write_value_set(sw: Switch, st: PipelineState, op: int, v: p4runtime_pb2.ValueSetEntry) -> None:
    """A parser value set's members, all replaced at once (P4Runtime 9.5: MODIFY only)."""
    if op != MODIFY:
        raise invalid("value set entries can only be modified (use MODIFY)")
    info = st.schema.value_sets.get(v.value_set_id)
    if info is None:
        raise invalid(f"value set id {v.value_set_id} is not in the P4Info")
    name = info.preamble.name
    fields = {f.id: f for f in info.match}
    members = []
    for m in v.members:
        given = {fm.field_id: fm for fm in m.match}
        unknown = sorted(set(given) - set(fields))
        if unknown:
            raise invalid(f"value set '{name}' has no match field {unknown[0]}")
        members.append([_value_set_field(f, given.get(f.id), name) for f in info.match])
    switch_call(sw.value_set_set, name, members)


def _value_set_field(f: p4info_pb2.MatchField, fm: p4runtime_pb2.FieldMatch | None, vs: str) -> Any:
    """One field of a value set member as a match value; a field left out matches anything
    (a ternary, range or optional one) and is refused for an exact or lpm one."""
    what = f"value set '{vs}' field {f.name or f.id}"
    full = (1 << f.bitwidth) - 1
    kind = fm.WhichOneof("field_match_type") if fm is not None else None
    if fm is None or kind is None:
        if f.match_type in (p4info_pb2.MatchField.EXACT, p4info_pb2.MatchField.LPM):
            raise invalid(f"{what} is {p4info_pb2.MatchField.MatchType.Name(f.match_type).lower()}: give it a value")
        return Range(0, full) if f.match_type == p4info_pb2.MatchField.RANGE else Ternary(0, 0)
    if kind == "exact":
        return Exact(bytestrings.decode(fm.exact.value, f.bitwidth, what))
    if kind == "ternary":
        return Ternary(bytestrings.decode(fm.ternary.value, f.bitwidth, what),
                       bytestrings.decode(fm.ternary.mask, f.bitwidth, what))
    if kind == "lpm":
        return Lpm(bytestrings.decode(fm.lpm.value, f.bitwidth, what), fm.lpm.prefix_len)
    if kind == "range":
        return Range(bytestrings.decode(fm.range.low, f.bitwidth, what),
                     bytestrings.decode(fm.range.high, f.bitwidth, what))
    if kind == "optional":
        return Optional(bytestrings.decode(fm.optional.value, f.bitwidth, what))
    raise invalid(f"{what}: a {kind} match is not supported")
