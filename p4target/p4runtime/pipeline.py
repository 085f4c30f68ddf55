"""SetForwardingPipelineConfig: verify a pushed config; carry entries across a change.

``verify`` compiles the device config (a P4 source bundle, see
``p4target.device_config``) and checks the pushed P4Info describes that program.
``snapshot`` reads every entity of the running pipeline; ``remap`` renames one to
another P4Info by object names (the p4c id scheme makes unchanged names keep their
ids, but a P4Info with other ids still reconciles); ``replay`` writes them into the
new pipeline, dropping the ones that no longer fit, for RECONCILE_AND_COMMIT.
"""

from __future__ import annotations

import logging
from typing import Any, Callable

from finsy.proto.p4.v1 import p4runtime_pb2

from p4target.device_config import load_device_config
from p4target.errors import P4Error
from p4target.p4runtime.errors import P4RTError, invalid
from p4target.p4runtime.read import read_entities
from p4target.p4runtime.schema import Schema, build_schema
from p4target.p4runtime.state import ONE_SHOT_BASE, PipelineState
from p4target.p4runtime.write import apply_update as plain_apply_update

log = logging.getLogger(__name__)


def verify(config: p4runtime_pb2.ForwardingPipelineConfig) -> tuple[Any, Schema]:
    """Compile and cross-check a pushed config; P4RTError(INVALID_ARGUMENT) if bad."""
    if not config.p4_device_config:
        raise invalid("ForwardingPipelineConfig has no p4_device_config; send the P4 source bundle "
                      "(p4target.device_config.device_config_from_file)")
    try:
        compiled = load_device_config(bytes(config.p4_device_config))
    except P4Error as exc:
        raise invalid(f"device config rejected: {exc}") from None
    pushed = config.p4info if config.HasField("p4info") else None
    return compiled, build_schema(compiled.model, pushed)


def new_state(compiled: Any, schema: Schema, config: p4runtime_pb2.ForwardingPipelineConfig) -> PipelineState:
    return PipelineState(
        schema=schema,
        compiled=compiled,
        device_config=bytes(config.p4_device_config),
        cookie=config.cookie.cookie if config.HasField("cookie") else 0,
    )


_SNAPSHOT_KINDS = (
    ("action_profile_member", p4runtime_pb2.Update.INSERT),
    ("action_profile_group", p4runtime_pb2.Update.INSERT),
    ("packet_replication_engine_entry", p4runtime_pb2.Update.INSERT),
    ("digest_entry", p4runtime_pb2.Update.INSERT),
    ("table_entry", p4runtime_pb2.Update.INSERT),
    ("counter_entry", p4runtime_pb2.Update.MODIFY),
    ("register_entry", p4runtime_pb2.Update.MODIFY),
    ("meter_entry", p4runtime_pb2.Update.MODIFY),
)


def snapshot(sw: Any, st: PipelineState) -> list[p4runtime_pb2.Update]:
    """Every entity of the running pipeline, as the updates that would recreate it."""
    out: list[p4runtime_pb2.Update] = []
    for kind, op in _SNAPSHOT_KINDS:
        req = p4runtime_pb2.Entity()
        getattr(req, kind).SetInParent()
        if kind == "table_entry":
            req.table_entry.counter_data.SetInParent()
            req.table_entry.meter_config.SetInParent()
        for ent in read_entities(sw, st, req):
            if kind == "table_entry" and ent.table_entry.is_const:
                continue
            if kind == "action_profile_member" and ent.action_profile_member.member_id >= ONE_SHOT_BASE:
                continue
            out.append(p4runtime_pb2.Update(type=op, entity=ent))
    for t in st.schema.tables.values():
        if t.name in st.defaults:
            req = p4runtime_pb2.Entity()
            req.table_entry.table_id = t.id
            req.table_entry.is_default_action = True
            for ent in read_entities(sw, st, req):
                out.append(p4runtime_pb2.Update(type=p4runtime_pb2.Update.MODIFY, entity=ent))
    return out


class _Missing(Exception):
    pass


def _map_id(old: Schema, new: Schema, kind: str, ident: int) -> int:
    if kind == "table":
        name = old.tables[ident].name if ident in old.tables else None
    elif kind == "action":
        name = old.actions[ident].name if ident in old.actions else None
    elif kind == "action_profile":
        name = old.profiles[ident].name if ident in old.profiles else None
    elif kind == "digest":
        name = old.digests.get(ident)
    else:
        e = old.externs.get(ident)
        name = e.name if e else None
    if name is None or (kind, name) not in new.names:
        raise _Missing()
    return new.names[(kind, name)]


def _remap_action(old: Schema, new: Schema, a: p4runtime_pb2.Action) -> None:
    oa = old.actions[a.action_id]
    a.action_id = _map_id(old, new, "action", a.action_id)
    na = new.actions[a.action_id]
    by_name = {f.name: f.id for f in na.params.values()}
    for p in a.params:
        name = oa.params[p.param_id].name
        if name not in by_name:
            raise _Missing()
        p.param_id = by_name[name]


def _remap_table_entry(old: Schema, new: Schema, e: p4runtime_pb2.TableEntry) -> None:
    ot = old.tables[e.table_id]
    e.table_id = _map_id(old, new, "table", e.table_id)
    nt = new.tables[e.table_id]
    by_name = {f.name: f.id for f in nt.fields.values()}
    for fm in e.match:
        name = ot.fields[fm.field_id].name
        if name not in by_name:
            raise _Missing()
        fm.field_id = by_name[name]
    which = e.action.WhichOneof("type")
    if which == "action":
        _remap_action(old, new, e.action.action)
    elif which == "action_profile_action_set":
        for apa in e.action.action_profile_action_set.action_profile_actions:
            _remap_action(old, new, apa.action)


def remap(update: p4runtime_pb2.Update, old: Schema, new: Schema) -> p4runtime_pb2.Update | None:
    """``update`` in ``new``'s ids, or None when an object it names is gone."""
    u = p4runtime_pb2.Update()
    u.CopyFrom(update)
    ent = u.entity
    which = ent.WhichOneof("entity")
    try:
        if which == "table_entry":
            _remap_table_entry(old, new, ent.table_entry)
        elif which == "action_profile_member":
            m = ent.action_profile_member
            m.action_profile_id = _map_id(old, new, "action_profile", m.action_profile_id)
            _remap_action(old, new, m.action)
        elif which == "action_profile_group":
            g = ent.action_profile_group
            g.action_profile_id = _map_id(old, new, "action_profile", g.action_profile_id)
        elif which == "counter_entry":
            ent.counter_entry.counter_id = _map_id(old, new, "counter", ent.counter_entry.counter_id)
        elif which == "register_entry":
            ent.register_entry.register_id = _map_id(old, new, "register", ent.register_entry.register_id)
        elif which == "meter_entry":
            ent.meter_entry.meter_id = _map_id(old, new, "meter", ent.meter_entry.meter_id)
        elif which == "digest_entry":
            ent.digest_entry.digest_id = _map_id(old, new, "digest", ent.digest_entry.digest_id)
    except (_Missing, KeyError):
        return None
    return u


def replay(sw: Any, st: PipelineState, updates: list[p4runtime_pb2.Update], old: Schema | None,
           apply_update: Callable[..., Any] = plain_apply_update) -> tuple[int, int]:
    """Apply ``updates`` (remapped from ``old`` when given) with ``apply_update`` (the
    server's choice, ``write_choice``); returns (kept, dropped)."""
    kept = dropped = 0
    for u in updates:
        v = remap(u, old, st.schema) if old is not None else u
        if v is None:
            dropped += 1
            continue
        try:
            apply_update(sw, st, v)
            kept += 1
        except P4RTError as exc:
            dropped += 1
            log.info("reconcile drops %s: %s", v.entity.WhichOneof("entity"), exc.message)
    return kept, dropped
