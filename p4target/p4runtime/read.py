"""Read: P4Runtime entity filters -> entities, in the pushed P4Info's ids.

A zero id is a wildcard at every level (all tables, all counters, all indexes...),
as the spec defines. Table entries come from ``Switch.table_entries``; what the
Switch API does not report (profile members and groups, PRE entries, meter configs,
modified default entries) comes from the server's ``PipelineState``.
"""

from __future__ import annotations

from typing import Any, Callable, Iterator

from finsy.proto.p4.v1 import p4runtime_pb2

from p4target.errors import EntryError
from p4target.p4runtime import bytestrings, wire
from p4target.p4runtime.errors import NOT_FOUND, UNIMPLEMENTED, P4RTError, from_entry_error, invalid
from p4target.p4runtime.schema import TableInfo
from p4target.p4runtime.state import PipelineState, entry_key
from p4target.p4runtime.write_resources import cells_of
from p4target.p4runtime.translate import (
    ActionCall,
    decode_key,
    decode_match,
    decode_priority,
    encode_action,
    encode_match,
)


def read_entities(sw: Any, st: PipelineState, request: p4runtime_pb2.Entity) -> Iterator[p4runtime_pb2.Entity]:
    which = request.WhichOneof("entity")
    if which is None:
        raise invalid("read of an empty entity; set one entity kind (a wildcard of everything is not allowed)")
    reader = _READERS.get(which)
    if reader is None:
        raise P4RTError(UNIMPLEMENTED, f"reading {which or 'an empty entity'} is not supported")
    try:
        yield from reader(sw, st, getattr(request, which))
    except EntryError as exc:
        raise from_entry_error(exc) from None


def read_encoded(sw: Any, st: PipelineState, request: p4runtime_pb2.Entity) -> list[bytes]:
    """What ``read_entities`` yields, as ``ReadResponse.entities`` elements (``wire``).

    A read of whole tables (no match, priority, action or default-entry filter, no
    direct resources asked for) encodes each entry with a direct action from the
    runtime's values once and keeps the bytes with the entry for the next reads.
    """
    if request.WhichOneof("entity") == "table_entry":
        req = request.table_entry
        if _whole_tables(req):
            return _encoded_table_entries(sw, st, req.table_id)
    return [wire.entity_element(ent) for ent in read_entities(sw, st, request)]


def _whole_tables(req: p4runtime_pb2.TableEntry) -> bool:
    """A TableEntry read that asks for every entry of its tables, and no more."""
    if req.is_default_action or req.HasField("counter_data") or req.HasField("meter_config") or \
            req.HasField("meter_counter_data"):
        return False
    if not req.table_id:
        return True  # filters other than the table apply to one table only (_read_table_entries)
    return not len(req.match) and not req.priority and not (
        req.action.WhichOneof("type") == "action" and req.action.action.action_id)


def _encoded_table_entries(sw: Any, st: PipelineState, table_id: int) -> list[bytes]:
    out: list[bytes] = []
    add = out.append
    actions = st.schema.actions_by_name
    for t in _tables(st, table_id):
        table = sw.tables[t.name]
        for stored in table.records():
            element = stored.wire
            if element is None:
                if stored.action is not None:  # all it says is in the entry: keep it
                    element = stored.wire = wire.table_entry_element(
                        t, stored.spec, stored.priority, actions[stored.action], stored.args, stored.is_const)
                else:  # a member or group (one-shot action sets come from the server's records)
                    msg = table_entry_message(st, t, table.describe(stored), with_counters=False)
                    element = wire.entity_element(p4runtime_pb2.Entity(table_entry=msg))
            add(element)
    return out


def _tables(st: PipelineState, table_id: int) -> list[TableInfo]:
    if table_id == 0:
        return list(st.schema.tables.values())
    return [st.schema.table(table_id)]


def _default_call(sw: Any, t: TableInfo) -> ActionCall:
    name, params = sw.table_default(t.name)
    return ActionCall(name, params)


def table_entry_message(st: PipelineState, t: TableInfo, entry: Any, with_counters: bool,
                        with_meter: bool = False) -> p4runtime_pb2.TableEntry:
    """One Switch TableEntry as a P4Runtime TableEntry (direct resources only if asked)."""
    msg = p4runtime_pb2.TableEntry(table_id=t.id)
    msg.match.extend(encode_match(t, entry.match))
    if entry.priority is not None:
        msg.priority = entry.priority
    key = entry_key(t.name, entry.match, entry.priority) if (st.one_shots or (with_meter and st.direct_meters)) else None
    if entry.action is not None:
        msg.action.action.CopyFrom(encode_action(st.schema, entry.action, entry.params))
    elif entry.member is not None:
        msg.action.action_profile_member_id = entry.member
    elif entry.group is not None:
        one_shot = st.one_shots.get(key)  # type: ignore[arg-type]  # key is None only when there are none
        if one_shot is not None and one_shot.group_id == entry.group:
            msg.action.action_profile_action_set.CopyFrom(one_shot.action_set)
        else:
            msg.action.action_profile_group_id = entry.group
    if with_counters and t.direct_counter_id is not None and entry.counters is not None:
        msg.counter_data.packet_count, msg.counter_data.byte_count = entry.counters
    if with_meter and key in st.direct_meters:
        msg.meter_config.CopyFrom(st.direct_meters[key])
    if getattr(entry, "is_const", False):
        msg.is_const = True
    return msg


def _read_table_entries(sw: Any, st: PipelineState, req: p4runtime_pb2.TableEntry) -> Iterator[p4runtime_pb2.Entity]:
    """Entries matching the request's filters (spec "Wildcard Reads"): table, match,
    priority, action id, default entry."""
    if req.HasField("meter_counter_data"):
        raise P4RTError(UNIMPLEMENTED, "per-colour meter counters are not supported")
    with_counters = req.HasField("counter_data")
    with_meter = req.HasField("meter_config")
    for t in _tables(st, req.table_id):
        if req.is_default_action:
            call = _default_call(sw, t)
            msg = p4runtime_pb2.TableEntry(table_id=t.id, is_default_action=True)
            msg.action.action.CopyFrom(encode_action(st.schema, call.name, call.params))
            yield p4runtime_pb2.Entity(table_entry=msg)
            continue
        want_priority = want_action = None
        entries = None
        if req.table_id:
            if len(req.match):  # one entry: looked up, not searched for
                table = sw.tables[t.name]
                stored = table.find_record(decode_key(t, req.match), decode_priority(t, req.priority))
                entries = [table.describe(stored)] if stored is not None else []
            elif req.priority:
                want_priority = req.priority
            if req.action.WhichOneof("type") == "action" and req.action.action.action_id:
                want_action = st.schema.action(req.action.action.action_id).name
        for entry in sw.table_entries(t.name) if entries is None else entries:
            if want_priority is not None and entry.priority != want_priority:
                continue
            if want_action is not None and entry.action != want_action:
                continue
            yield p4runtime_pb2.Entity(table_entry=table_entry_message(st, t, entry, with_counters, with_meter))


def _read_members(sw: Any, st: PipelineState, req: p4runtime_pb2.ActionProfileMember):
    profiles = list(st.schema.profiles.values()) if req.action_profile_id == 0 else [st.schema.profile(req.action_profile_id)]
    for prof in profiles:
        for mid, call in sorted(st.members.get(prof.name, {}).items()):
            if req.member_id and mid != req.member_id:
                continue
            m = p4runtime_pb2.ActionProfileMember(action_profile_id=prof.id, member_id=mid)
            m.action.CopyFrom(encode_action(st.schema, call.name, call.params))
            yield p4runtime_pb2.Entity(action_profile_member=m)


def _read_groups(sw: Any, st: PipelineState, req: p4runtime_pb2.ActionProfileGroup):
    profiles = list(st.schema.profiles.values()) if req.action_profile_id == 0 else [st.schema.profile(req.action_profile_id)]
    for prof in profiles:
        for gid, rec in sorted(st.groups.get(prof.name, {}).items()):
            if req.group_id and gid != req.group_id:
                continue
            g = p4runtime_pb2.ActionProfileGroup(action_profile_id=prof.id, group_id=gid, max_size=rec.max_size)
            for mid, weight, watch in rec.members:
                mem = g.members.add(member_id=mid, weight=weight)
                if watch is not None:
                    mem.watch_port = bytestrings.encode(watch)
            yield p4runtime_pb2.Entity(action_profile_group=g)


def _externs(st: PipelineState, ident: int, kind: str):
    if ident == 0:
        return [e for e in st.schema.externs.values() if e.kind == kind]
    return [st.schema.extern(ident, kind)]


def _read_counters(sw: Any, st: PipelineState, req: p4runtime_pb2.CounterEntry):
    for info in _externs(st, req.counter_id, "counter"):
        for i in cells_of(req, info.size, f"'{info.name}'"):
            packets, nbytes = sw.counter_read(info.name, i)
            c = p4runtime_pb2.CounterEntry(counter_id=info.id)
            c.index.index = i
            c.data.packet_count = packets
            c.data.byte_count = nbytes
            yield p4runtime_pb2.Entity(counter_entry=c)


def _direct_entries(sw: Any, st: PipelineState, req_entry: p4runtime_pb2.TableEntry, what: str):
    """(table, entry, key) of every table entry a direct counter/meter read names.

    ``what`` is ``counter`` or ``meter``: only tables with that direct resource count.
    A read naming one entry that does not exist is NOT_FOUND.
    """
    attr = f"direct_{what}_id"
    tables = [t for t in _tables(st, req_entry.table_id) if getattr(t, attr) is not None]
    if req_entry.table_id and not tables:
        raise invalid(f"table id {req_entry.table_id} has no direct {what}")
    for t in tables:
        want = None
        if len(req_entry.match) or req_entry.priority:
            want = entry_key(t.name, decode_match(t, req_entry.match), decode_priority(t, req_entry.priority))
        found = False
        for entry in sw.table_entries(t.name):
            key = entry_key(t.name, entry.match, entry.priority)
            if want is not None and key != want:
                continue
            found = True
            yield t, entry, key
        if want is not None and not found:
            raise P4RTError(NOT_FOUND, f"table '{t.name}': no entry with this match for its direct {what}")


def _read_direct_counters(sw: Any, st: PipelineState, req: p4runtime_pb2.DirectCounterEntry):
    for t, entry, _ in _direct_entries(sw, st, req.table_entry, "counter"):
        d = p4runtime_pb2.DirectCounterEntry()
        d.table_entry.CopyFrom(table_entry_message(st, t, entry, False))
        packets, nbytes = entry.counters or (0, 0)
        d.data.packet_count = packets
        d.data.byte_count = nbytes
        yield p4runtime_pb2.Entity(direct_counter_entry=d)


def _read_registers(sw: Any, st: PipelineState, req: p4runtime_pb2.RegisterEntry):
    for info in _externs(st, req.register_id, "register"):
        for i in cells_of(req, info.size, f"'{info.name}'"):
            r = p4runtime_pb2.RegisterEntry(register_id=info.id)
            r.index.index = i
            r.data.bitstring = bytestrings.encode(sw.register_read(info.name, i))
            yield p4runtime_pb2.Entity(register_entry=r)


def _read_meters(sw: Any, st: PipelineState, req: p4runtime_pb2.MeterEntry):
    if req.HasField("counter_data"):
        raise P4RTError(UNIMPLEMENTED, "per-colour meter counters are not supported")
    for info in _externs(st, req.meter_id, "meter"):
        for i in cells_of(req, info.size, f"'{info.name}'"):
            m = p4runtime_pb2.MeterEntry(meter_id=info.id)
            m.index.index = i
            cfg = st.meters.get((info.name, i))
            if cfg is not None:
                m.config.CopyFrom(cfg)
            yield p4runtime_pb2.Entity(meter_entry=m)


def _read_direct_meters(sw: Any, st: PipelineState, req: p4runtime_pb2.DirectMeterEntry):
    if req.HasField("counter_data"):
        raise P4RTError(UNIMPLEMENTED, "per-colour meter counters are not supported")
    for t, entry, key in _direct_entries(sw, st, req.table_entry, "meter"):
        d = p4runtime_pb2.DirectMeterEntry()
        d.table_entry.CopyFrom(table_entry_message(st, t, entry, False))
        d.table_entry.ClearField("meter_config")
        if key in st.direct_meters:
            d.config.CopyFrom(st.direct_meters[key])
        yield p4runtime_pb2.Entity(direct_meter_entry=d)


def _read_pre(sw: Any, st: PipelineState, req: p4runtime_pb2.PacketReplicationEngineEntry):
    which = req.WhichOneof("type")
    if which in (None, "multicast_group_entry"):
        want = req.multicast_group_entry.multicast_group_id if which else 0
        for gid, g in sorted(st.mc_groups.items()):
            if want and gid != want:
                continue
            yield p4runtime_pb2.Entity(packet_replication_engine_entry=p4runtime_pb2.PacketReplicationEngineEntry(
                multicast_group_entry=g))
    if which in (None, "clone_session_entry"):
        want = req.clone_session_entry.session_id if which else 0
        for sid, c in sorted(st.clone_sessions.items()):
            if want and sid != want:
                continue
            yield p4runtime_pb2.Entity(packet_replication_engine_entry=p4runtime_pb2.PacketReplicationEngineEntry(
                clone_session_entry=c))


def _read_digests(sw: Any, st: PipelineState, req: p4runtime_pb2.DigestEntry):
    for did, cfg in sorted(st.digest_configs.items()):
        if req.digest_id and did != req.digest_id:
            continue
        d = p4runtime_pb2.DigestEntry(digest_id=did)
        d.config.CopyFrom(cfg)
        yield p4runtime_pb2.Entity(digest_entry=d)


_READERS: dict[str, Callable[..., Iterator[p4runtime_pb2.Entity]]] = {
    "table_entry": _read_table_entries,
    "action_profile_member": _read_members,
    "action_profile_group": _read_groups,
    "counter_entry": _read_counters,
    "direct_counter_entry": _read_direct_counters,
    "register_entry": _read_registers,
    "meter_entry": _read_meters,
    "direct_meter_entry": _read_direct_meters,
    "packet_replication_engine_entry": _read_pre,
    "digest_entry": _read_digests,
}
