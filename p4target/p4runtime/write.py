"""Write: one P4Runtime update -> Switch API calls, all or nothing.

``apply_update`` validates an update completely against the schema, then makes the
Switch call(s); the Switch itself refuses (EntryError) without changing anything.
Where one update needs several Switch calls (a one-shot selector entry: members,
group, entry), the calls already made are undone before the error is reported, so
nothing of a refused update stays applied.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Callable, TypeVar

from finsy.proto.p4.v1 import p4runtime_pb2

from p4target.errors import EntryError
from p4target.p4runtime.errors import (
    RESOURCE_EXHAUSTED,
    PERMISSION_DENIED,
    UNIMPLEMENTED,
    P4RTError,
    from_entry_error,
    invalid,
)
from p4target.p4runtime.state import GroupRecord, OneShot, PipelineState, entry_key
from p4target.p4runtime.translate import (
    decode_action,
    decode_key,
    decode_port,
    decode_priority,
    match_of_key,
    table_action,
    table_args,
)
from p4target.p4runtime.write_resources import (
    meter_tuple,
    require_entry,
    switch_call,
    write_counter,
    write_digest,
    write_direct_counter,
    write_direct_meter,
    write_meter,
    write_pre,
    write_register,
    write_value_set,
)
from p4target.runtime.entries import Group, Member

if TYPE_CHECKING:  # pragma: no cover - typing only
    from p4target.runtime.switch import Switch

_T = TypeVar("_T")

log = logging.getLogger(__name__)

INSERT = p4runtime_pb2.Update.INSERT
MODIFY = p4runtime_pb2.Update.MODIFY
DELETE = p4runtime_pb2.Update.DELETE
_OPS = frozenset((INSERT, MODIFY, DELETE))


def apply_update(sw: Switch, st: PipelineState, update: p4runtime_pb2.Update) -> None:
    """Apply one update or raise P4RTError with nothing applied."""
    op = update.type
    if op not in _OPS:
        raise invalid("update type must be INSERT, MODIFY or DELETE")
    entity = update.entity
    which = entity.WhichOneof("entity")
    if which == "table_entry":  # most updates: no dispatch
        _write_table_entry(sw, st, op, entity.table_entry)
        return
    if which is None:
        raise invalid("update without an entity")
    handler = _HANDLERS.get(which)
    if handler is None:
        raise P4RTError(UNIMPLEMENTED, f"writing {which} is not supported")
    handler(sw, st, op, getattr(entity, which))


# ---- table entries ---------------------------------------------------------------------


def _check_direct_fields(t, e: p4runtime_pb2.TableEntry) -> bool:
    """Direct-resource and idle-timeout fields of a written TableEntry (spec 9.1.9,
    9.1.10); True when it carries a meter config or counter data."""
    if e.HasField("meter_counter_data"):
        raise P4RTError(UNIMPLEMENTED, f"table '{t.name}': per-colour meter counters are not supported")
    with_meter = e.HasField("meter_config")
    if with_meter:
        if t.direct_meter_id is None:
            raise invalid(f"table '{t.name}' has no direct meter; leave meter_config out")
        meter_tuple(e.meter_config)
    with_counter = e.HasField("counter_data")
    if with_counter:
        if t.direct_counter_id is None:
            raise invalid(f"table '{t.name}' has no direct counter; leave counter_data out")
        if e.counter_data.packet_count < 0 or e.counter_data.byte_count < 0:
            raise invalid(f"table '{t.name}': counter values cannot be negative")
    if e.HasField("time_since_last_hit"):
        raise invalid(f"table '{t.name}': time_since_last_hit is read-only; leave it out of writes")
    if e.idle_timeout_ns:
        if not t.model.supports_idle_timeout:
            raise invalid(f"table '{t.name}' does not support idle timeout; leave idle_timeout_ns at 0")
        raise P4RTError(UNIMPLEMENTED, f"table '{t.name}': idle timeout notifications are not implemented")
    return with_meter or with_counter


def _write_table_entry(sw: Switch, st: PipelineState, op: int, e: p4runtime_pb2.TableEntry) -> None:
    s = st.schema
    t = s.tables.get(e.table_id) or s.table(e.table_id)  # s.table raises INVALID_ARGUMENT
    if e.is_default_action:
        _write_default(sw, st, op, t, e)
        return
    direct = _check_direct_fields(t, e)
    runtime_key = decode_key(t, e.match)
    priority = decode_priority(t, e.priority) if e.priority or t.needs_priority else None
    action = e.action
    which = action.WhichOneof("type")
    if t.is_const and not (op == MODIFY and which is None):
        # only the direct resources of const entries may change (spec 9.1.5)
        raise P4RTError(PERMISSION_DENIED, f"table '{t.name}' has const entries; only their direct counters and "
                        "meters may be modified (MODIFY without an action)")
    if t.profile is None and _write_plain(sw, st, t, op, which, action, direct, runtime_key, priority):
        return
    match = match_of_key(t, runtime_key)
    key = entry_key(t.name, match, priority)
    if op == DELETE:
        switch_call(sw.table_delete, t.name, match, priority=priority)
        _drop_one_shot(sw, st, t, key)
        st.direct_meters.pop(key, None)
        return
    if which is None:
        if op == INSERT:
            raise invalid(f"table '{t.name}': an INSERT needs an action")
        _modify_direct_resources(sw, st, t, e, match, priority, key)
        return
    undo: list[Callable[[], None]] = []
    old_one_shot = st.one_shots.get(key) if op == MODIFY else None
    new_one_shot: OneShot | None = None
    try:
        target, params, new_one_shot = _entry_target(sw, st, t, e, which, undo)
        _set_entry(sw, t, e, op, match, target, params, priority, undo)
    except Exception:
        for fn in reversed(undo):
            try:
                fn()
            except Exception:  # pragma: no cover - undo of our own fresh objects
                log.exception("undo after a refused update failed")
        raise
    if e.HasField("meter_config"):
        st.direct_meters[key] = e.meter_config
    else:
        st.direct_meters.pop(key, None)
    if new_one_shot is not None:
        st.one_shots[key] = new_one_shot
    if old_one_shot is not None:
        if new_one_shot is None:
            st.one_shots.pop(key, None)
        _release_one_shot(sw, st, t, old_one_shot)


def _entry_target(sw: Switch, st: PipelineState, t, e: p4runtime_pb2.TableEntry, which: str,
                  undo: list[Callable[[], None]]) -> tuple[Any, dict[str, int] | None, OneShot | None]:
    """What an INSERT or MODIFY with an action makes the entry run: (the action's name,
    its arguments, None), a member, a group, or a one-shot action set's new group
    (made now, its removal put on ``undo``)."""
    if which == "action":
        if t.profile is not None:
            raise invalid(f"table '{t.name}' uses action profile '{t.profile.name}': give a member or group id")
        call = table_action(st.schema, t, e.action.action, default=False)
        return call.name, call.params, None
    if t.profile is None:
        raise invalid(f"table '{t.name}' has no action profile: give an action, not a {which}")
    if which == "action_profile_action_set":
        one_shot = _make_one_shot(sw, st, t, e.action.action_profile_action_set, undo)
        return Group(one_shot.group_id), None, one_shot
    if _uses_one_shots(st, t.profile.name):
        raise invalid(f"table '{t.name}': '{t.profile.name}' is programmed with one-shot action sets; "
                      "do not mix them with member/group ids")
    if which == "action_profile_member_id":
        if not e.action.action_profile_member_id:
            raise invalid(f"table '{t.name}': member id 0 is not valid")
        return Member(e.action.action_profile_member_id), None, None
    if not t.profile.with_selector:
        raise invalid(f"table '{t.name}': '{t.profile.name}' is an action profile without groups")
    if not e.action.action_profile_group_id:
        raise invalid(f"table '{t.name}': group id 0 is not valid")
    return Group(e.action.action_profile_group_id), None, None


def _set_entry(sw: Switch, t, e: p4runtime_pb2.TableEntry, op: int, match: Any, target: Any,
               params: dict[str, int] | None, priority: int | None, undo: list[Callable[[], None]]) -> None:
    """Add or modify the entry, then its direct meter and counter; an added entry's
    removal is put on ``undo``."""
    if op == INSERT:
        switch_call(sw.table_add, t.name, match, target, params, priority=priority)
        undo.append(lambda: sw.table_delete(t.name, match, priority=priority))
    else:
        switch_call(sw.table_modify, t.name, match, target, params, priority=priority)
    if e.HasField("meter_config"):
        switch_call(sw.direct_meter_set, t.name, match, *meter_tuple(e.meter_config), priority=priority)
    elif op == MODIFY and t.direct_meter_id is not None:
        switch_call(sw.direct_meter_clear, t.name, match, priority=priority)  # unset = back to all-GREEN
    if e.HasField("counter_data"):
        switch_call(sw.direct_counter_write, t.name, match, e.counter_data.packet_count,
              e.counter_data.byte_count, priority=priority)


def _write_plain(sw: Switch, st: PipelineState, t, op: int, which: str | None, action: p4runtime_pb2.TableAction,
                 direct: bool, runtime_key: tuple, priority: int | None) -> bool:
    """The plain cases of a table without an action profile, straight to the
    runtime's key form; False when the update is not one of them."""
    if op == INSERT and which == "action" and not direct:
        _insert_plain(sw, st, t, action.action, runtime_key, priority)
        return True
    if op == MODIFY and which == "action" and not direct and t.direct_meter_id is None:
        _modify_plain(sw, st, t, action.action, runtime_key, priority)
        return True
    if op == DELETE:
        _delete_plain(sw, st, t, runtime_key, priority)
        return True
    return False


def _insert_plain(sw: Switch, st: PipelineState, t, action: p4runtime_pb2.Action, runtime_key: tuple,
                  priority: int | None) -> None:
    """INSERT of an entry with a direct action and no direct-resource data: what
    installing a fabric is made of. The request is checked in full (decode_key,
    decode_priority, table_args); the table adds it as given."""
    info, args = table_args(st.schema, t, action, default=False)
    try:
        sw.tables[t.name].add_checked(runtime_key, priority, info.name, args)
    except EntryError as exc:
        raise from_entry_error(exc) from None
    _forget_meter(st, t, runtime_key, priority)  # a record left by an entry deleted behind the server's back


def _modify_plain(sw: Switch, st: PipelineState, t, action: p4runtime_pb2.Action, runtime_key: tuple,
                  priority: int | None) -> None:
    """MODIFY to a direct action, no direct-resource data, in a table without a direct
    meter (whose MODIFY resets the meter: the general path does that)."""
    info, args = table_args(st.schema, t, action, default=False)
    try:
        sw.tables[t.name].modify_checked(runtime_key, priority, info.name, args)
    except EntryError as exc:
        raise from_entry_error(exc) from None
    _forget_meter(st, t, runtime_key, priority)


def _delete_plain(sw: Switch, st: PipelineState, t, runtime_key: tuple, priority: int | None) -> None:
    """DELETE in a table without an action profile (so without one-shot groups to release)."""
    try:
        sw.tables[t.name].delete_checked(runtime_key, priority)
    except EntryError as exc:
        raise from_entry_error(exc) from None
    _forget_meter(st, t, runtime_key, priority)


def _forget_meter(st: PipelineState, t, runtime_key: tuple, priority: int | None) -> None:
    if st.direct_meters:
        st.direct_meters.pop(entry_key(t.name, match_of_key(t, runtime_key), priority), None)


def _modify_direct_resources(sw: Switch, st: PipelineState, t, e, match, priority, key) -> None:
    """MODIFY without an action: only the direct counter/meter given change."""
    if e.HasField("meter_config"):
        switch_call(sw.direct_meter_set, t.name, match, *meter_tuple(e.meter_config), priority=priority)
        st.direct_meters[key] = e.meter_config
    if e.HasField("counter_data"):
        switch_call(sw.direct_counter_write, t.name, match, e.counter_data.packet_count,
              e.counter_data.byte_count, priority=priority)
    if not e.HasField("meter_config") and not e.HasField("counter_data"):
        require_entry(sw, t, match, priority)  # a no-op, but only for an entry that exists


def _uses_one_shots(st: PipelineState, profile: str) -> bool:
    if not st.one_shots:
        return False
    return any(k[0] in st.schema_tables_of(profile) for k in st.one_shots)


def _make_one_shot(sw: Switch, st: PipelineState, t, aset, undo: list) -> OneShot:
    prof = t.profile
    assert prof is not None
    if not prof.with_selector:
        raise invalid(f"table '{t.name}': one-shot action sets need an action selector")
    if not aset.action_profile_actions:
        raise invalid(f"table '{t.name}': the action set is empty")
    if st.members.get(prof.name) or st.groups.get(prof.name):
        raise invalid(f"table '{t.name}': '{prof.name}' is programmed with members and groups; "
                      "do not mix them with one-shot action sets")
    total = sum(max(apa.weight, 0) for apa in aset.action_profile_actions)
    if prof.max_group_size and total > prof.max_group_size:
        raise invalid(f"table '{t.name}': the action set's weights add up to {total}, above the selector's "
                      f"max group size {prof.max_group_size}")
    calls = []
    for i, apa in enumerate(aset.action_profile_actions):
        call = table_action(st.schema, t, apa.action, default=False)
        if apa.weight <= 0:
            raise invalid(f"table '{t.name}': action set element {i} needs a weight >= 1")
        watch = _watch(apa, f"table '{t.name}' action set element {i}")
        calls.append((call, apa.weight, watch))
    member_ids = []
    for call, _, _ in calls:
        mid = st.allocate_one_shot_id()
        switch_call(sw.act_prof_add_member, prof.name, mid, call.name, call.params)
        undo.append(lambda mid=mid: sw.act_prof_delete_member(prof.name, mid))
        member_ids.append(mid)
    gid = st.allocate_one_shot_id()
    switch_call(sw.act_prof_add_group, prof.name, gid, members=[(m, w, p) for m, (_, w, p) in zip(member_ids, calls, strict=False)])
    undo.append(lambda: sw.act_prof_delete_group(prof.name, gid))  # undone before its members
    return OneShot(gid, member_ids, aset)


def _release_one_shot(sw: Switch, st: PipelineState, t, os_: OneShot) -> None:
    prof = t.profile
    try:
        sw.act_prof_delete_group(prof.name, os_.group_id)
        for mid in os_.member_ids:
            sw.act_prof_delete_member(prof.name, mid)
    except EntryError:
        log.exception("releasing one-shot group %d of %s", os_.group_id, t.name)


def _drop_one_shot(sw: Switch, st: PipelineState, t, key: tuple) -> None:
    os_ = st.one_shots.pop(key, None)
    if os_ is not None:
        _release_one_shot(sw, st, t, os_)


def _write_default(sw: Switch, st: PipelineState, op: int, t, e: p4runtime_pb2.TableEntry) -> None:
    if op != MODIFY:
        raise invalid(f"table '{t.name}': the default entry can only be modified (use MODIFY)")
    if len(e.match) or e.priority:
        raise invalid(f"table '{t.name}': the default entry has no match fields and no priority")
    if e.idle_timeout_ns or e.HasField("time_since_last_hit"):
        raise invalid(f"table '{t.name}': default entries have no idle timeout")
    if t.const_default:
        raise P4RTError(PERMISSION_DENIED, f"table '{t.name}' has a const default action")
    if t.profile is not None:
        raise P4RTError(PERMISSION_DENIED, f"table '{t.name}' uses action profile '{t.profile.name}': its default "
                        "entry is a constant NoAction (spec 9.1.4)")
    which = e.action.WhichOneof("type")
    if which is None:  # MODIFY without an action: back to the program's default
        switch_call(sw.table_reset_default, t.name)
        st.defaults.pop(t.name, None)
        return
    if which != "action":
        raise invalid(f"table '{t.name}': a default entry takes an action, not a {which}")
    call = table_action(st.schema, t, e.action.action, default=True)
    switch_call(sw.table_set_default, t.name, call.name, call.params)
    st.defaults[t.name] = call


# ---- action profiles -----------------------------------------------------------------


def _write_member(sw: Switch, st: PipelineState, op: int, m: p4runtime_pb2.ActionProfileMember) -> None:
    prof = st.schema.profile(m.action_profile_id)
    if m.member_id == 0:
        raise invalid(f"action profile '{prof.name}': member id 0 is not valid")
    if _uses_one_shots(st, prof.name):
        raise invalid(f"'{prof.name}' is programmed with one-shot action sets; do not mix them with members")
    if m.member_id >= 0xF000_0000:
        raise invalid(f"member id {m.member_id} is reserved for one-shot action sets; use ids below 0xF0000000")
    members = st.members.setdefault(prof.name, {})
    if op == DELETE:
        switch_call(sw.act_prof_delete_member, prof.name, m.member_id)
        members.pop(m.member_id, None)
        return
    call = decode_action(st.schema, m.action, f"action profile '{prof.name}' member {m.member_id}")
    allowed = set()
    for tid in prof.table_ids:
        allowed |= set(st.schema.tables[tid].actions) if tid in st.schema.tables else set()
    if allowed and m.action.action_id not in allowed:
        raise invalid(f"action '{call.name}' is not an action of the tables using '{prof.name}'")
    if op == INSERT:
        switch_call(sw.act_prof_add_member, prof.name, m.member_id, call.name, call.params)
    else:
        switch_call(sw.act_prof_modify_member, prof.name, m.member_id, call.name, call.params)
    members[m.member_id] = call


def _watch(msg, where: str) -> int | None:
    kind = msg.WhichOneof("watch_kind")
    if kind == "watch_port":
        return decode_port(msg.watch_port, f"{where} watch_port")
    if kind == "watch":
        if msg.watch < 0:
            raise invalid(f"{where}: watch port {msg.watch} is negative")
        return msg.watch
    return None


def _write_group(sw: Switch, st: PipelineState, op: int, g: p4runtime_pb2.ActionProfileGroup) -> None:
    prof = st.schema.profile(g.action_profile_id)
    if not prof.with_selector:
        raise invalid(f"'{prof.name}' is an action profile without a selector; it has no groups")
    if g.group_id == 0:
        raise invalid(f"action selector '{prof.name}': group id 0 is not valid")
    if g.group_id >= 0xF000_0000:
        raise invalid(f"group id {g.group_id} is reserved for one-shot action sets; use ids below 0xF0000000")
    if _uses_one_shots(st, prof.name):
        raise invalid(f"'{prof.name}' is programmed with one-shot action sets; do not mix them with groups")
    groups = st.groups.setdefault(prof.name, {})
    if op == DELETE:
        switch_call(sw.act_prof_delete_group, prof.name, g.group_id)
        groups.pop(g.group_id, None)
        return
    where = f"action selector '{prof.name}' group {g.group_id}"
    members = []
    for mem in g.members:
        if mem.weight <= 0:
            raise invalid(f"{where}: member {mem.member_id} needs a weight >= 1")
        members.append((mem.member_id, mem.weight, _watch(mem, f"{where} member {mem.member_id}")))
    # max_size rules (spec "Rules on Setting max_size"); sizes count weights (sum_of_weights)
    if g.max_size < 0:
        raise invalid(f"{where}: max_size cannot be negative")
    if prof.max_group_size and not 0 < g.max_size <= prof.max_group_size:
        raise invalid(f"{where}: max_size must be 1..{prof.max_group_size} (the selector's max group size)")
    old = groups.get(g.group_id)
    if op == MODIFY and old is not None and g.max_size != old.max_size:
        raise invalid(f"{where}: max_size {g.max_size} differs from the {old.max_size} it was inserted with")
    total = sum(w for _, w, _ in members)
    if g.max_size and total > g.max_size:
        raise P4RTError(RESOURCE_EXHAUSTED, f"{where}: member weights add up to {total}, above max_size {g.max_size}")
    if op == INSERT:
        switch_call(sw.act_prof_add_group, prof.name, g.group_id, members=members, max_size=g.max_size)
    else:
        switch_call(sw.act_prof_modify_group, prof.name, g.group_id, members=members, max_size=g.max_size)
    groups[g.group_id] = GroupRecord(members, g.max_size)


# ---- the dispatch (counters, registers, meters, PRE, digests, value sets: write_resources.py)


def _unsupported(what: str):
    def handler(sw, st, op, msg):
        raise P4RTError(UNIMPLEMENTED, f"writing {what} is not supported by the embedded target")

    return handler


_HANDLERS: dict[str, Callable[[Any, PipelineState, int, Any], None]] = {
    "table_entry": _write_table_entry,
    "action_profile_member": _write_member,
    "action_profile_group": _write_group,
    "counter_entry": write_counter,
    "direct_counter_entry": write_direct_counter,
    "register_entry": write_register,
    "meter_entry": write_meter,
    "direct_meter_entry": write_direct_meter,
    "packet_replication_engine_entry": write_pre,
    "digest_entry": write_digest,
    "value_set_entry": write_value_set,
    "extern_entry": _unsupported("extern entries"),
}
