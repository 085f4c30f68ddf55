"""Undo for ROLLBACK_ON_ERROR and DATAPLANE_ATOMIC batches.

Before an update is applied, ``inverse`` reads what it will change and returns the
updates that put it back (INSERT <-> DELETE, MODIFY -> MODIFY to the old value). If a
later update of the batch fails, the inverses of the applied ones run in reverse
order. The whole batch runs under the device lock, and frames are processed under the
same lock, so no packet ever sees a half-applied batch: that is what makes the batch
data-plane atomic as well.
"""

from __future__ import annotations

from typing import Any

from finsy.proto.p4.v1 import p4runtime_pb2

from p4target.p4runtime.read import read_entities
from p4target.p4runtime.state import PipelineState

INSERT = p4runtime_pb2.Update.INSERT
MODIFY = p4runtime_pb2.Update.MODIFY
DELETE = p4runtime_pb2.Update.DELETE


def _read_one(sw: Any, st: PipelineState, probe: p4runtime_pb2.Entity) -> list[p4runtime_pb2.Entity]:
    try:
        return list(read_entities(sw, st, probe))
    except Exception:  # an invalid update fails on its own; nothing to undo
        return []


def _upd(op: int, ent: p4runtime_pb2.Entity) -> p4runtime_pb2.Update:
    return p4runtime_pb2.Update(type=op, entity=ent)  # type: ignore[arg-type]  # an Update.Type number


def inverse(sw: Any, st: PipelineState, update: p4runtime_pb2.Update) -> list[p4runtime_pb2.Update]:  # noqa: C901 — one case per entity kind and operation
    """Updates that undo ``update`` once it has been applied (computed before applying)."""
    ent = update.entity
    which = ent.WhichOneof("entity")
    op = update.type
    if which == "table_entry":
        e = ent.table_entry
        probe = p4runtime_pb2.Entity()
        probe.table_entry.table_id = e.table_id
        probe.table_entry.match.extend(e.match)
        probe.table_entry.priority = e.priority
        probe.table_entry.is_default_action = e.is_default_action
        probe.table_entry.counter_data.SetInParent()
        probe.table_entry.meter_config.SetInParent()
        if e.is_default_action:
            old = _read_one(sw, st, probe)
            return [_upd(MODIFY, o) for o in old]
        if not len(e.match) and not e.priority:
            return []  # a keyless probe would read every entry; such an update is refused anyway
        old = _read_one(sw, st, probe)
        if op == INSERT:
            key = p4runtime_pb2.Entity()
            key.table_entry.table_id = e.table_id
            key.table_entry.match.extend(e.match)
            key.table_entry.priority = e.priority
            return [_upd(DELETE, key)] if not old else []
        return [_upd(INSERT if op == DELETE else MODIFY, o) for o in old]
    if which in ("action_profile_member", "action_profile_group"):
        probe = p4runtime_pb2.Entity()
        getattr(probe, which).CopyFrom(getattr(ent, which))
        msg = getattr(probe, which)
        if which == "action_profile_member":
            msg.ClearField("action")
            if not msg.member_id:
                return []
        else:
            msg.ClearField("members")
            if not msg.group_id:
                return []
        old = _read_one(sw, st, probe)
        if op == INSERT:
            return [_upd(DELETE, ent)] if not old else []
        return [_upd(INSERT if op == DELETE else MODIFY, o) for o in old]
    if which == "packet_replication_engine_entry":
        pre = ent.packet_replication_engine_entry
        kind = pre.WhichOneof("type")
        if kind is None:
            return []
        ident = (pre.multicast_group_entry.multicast_group_id if kind == "multicast_group_entry"
                 else pre.clone_session_entry.session_id)
        if not ident:
            return []
        probe = p4runtime_pb2.Entity()
        if kind == "multicast_group_entry":
            probe.packet_replication_engine_entry.multicast_group_entry.multicast_group_id = ident
        else:
            probe.packet_replication_engine_entry.clone_session_entry.session_id = ident
        old = _read_one(sw, st, probe)
        if op == INSERT:
            return [_upd(DELETE, probe)] if not old else []
        return [_upd(INSERT if op == DELETE else MODIFY, o) for o in old]
    if which == "digest_entry":
        probe = p4runtime_pb2.Entity()
        probe.digest_entry.digest_id = ent.digest_entry.digest_id
        if not probe.digest_entry.digest_id:
            return []
        old = _read_one(sw, st, probe)
        if op == INSERT:
            return [_upd(DELETE, probe)] if not old else []
        return [_upd(INSERT if op == DELETE else MODIFY, o) for o in old]
    if which in ("counter_entry", "register_entry", "meter_entry"):
        probe = p4runtime_pb2.Entity()
        getattr(probe, which).CopyFrom(getattr(ent, which))
        msg = getattr(probe, which)
        ident = msg.counter_id if which == "counter_entry" else (
            msg.register_id if which == "register_entry" else msg.meter_id)
        if not ident:
            return []
        msg.ClearField("data" if which != "meter_entry" else "config")
        return [_upd(MODIFY, o) for o in _read_one(sw, st, probe)]
    if which in ("direct_counter_entry", "direct_meter_entry"):
        probe = p4runtime_pb2.Entity()
        getattr(probe, which).table_entry.CopyFrom(getattr(ent, which).table_entry)
        if not len(getattr(probe, which).table_entry.match) and not getattr(probe, which).table_entry.priority:
            return []
        old = _read_one(sw, st, probe)
        out = []
        for o in old:
            m = getattr(o, which)
            m.table_entry.ClearField("action")
            out.append(_upd(MODIFY, o))
        return out
    return []
