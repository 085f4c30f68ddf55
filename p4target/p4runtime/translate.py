"""P4Runtime messages <-> Switch API values (match dicts, actions, params).

Everything a request can get wrong about the program (ids, widths, match kinds,
don't-care fields, priorities, action scopes) is checked here, before the Switch
is called, so a refused update never reaches the tables.
"""

from __future__ import annotations

from dataclasses import dataclass

from finsy.proto.p4.v1 import p4runtime_pb2

from p4target.p4runtime import bytestrings
from p4target.p4runtime.errors import PERMISSION_DENIED, P4RTError, invalid
from p4target.p4runtime.schema import ActionInfo, Schema, TableInfo
from p4target.runtime.entries import Exact, Lpm, MatchValue, Optional, Range, Ternary

PORT_BITS = 32  # ports travel as bytestrings; v1model ports are 9 bits but controllers may pad


@dataclass(frozen=True)
class ActionCall:
    name: str
    params: dict[str, int]


def decode_match(t: TableInfo, fms) -> dict[str, MatchValue]:
    """Match dict (model names) of a TableEntry's ``match``; wildcards left out."""
    out: dict[str, MatchValue] = {}
    seen: set[int] = set()
    for fm in fms:
        f = t.fields.get(fm.field_id)
        if f is None:
            raise invalid(f"table '{t.name}': match field id {fm.field_id} is not in the P4Info")
        if fm.field_id in seen:
            raise invalid(f"table '{t.name}': match field '{f.name}' given twice")
        seen.add(fm.field_id)
        which = fm.WhichOneof("field_match_type")
        where = f"table '{t.name}' field '{f.name}'"
        if which != f.match_kind:
            raise invalid(f"{where} is {f.match_kind}, the request gives {which or 'nothing'}")
        w = f.bitwidth
        if which == "exact":
            out[f.name] = Exact(bytestrings.decode(fm.exact.value, w, where))
        elif which == "lpm":
            plen = fm.lpm.prefix_len
            if plen <= 0 or plen > w:
                if plen == 0:
                    raise invalid(f"{where}: prefix length 0 is a don't-care; leave the field out")
                raise invalid(f"{where}: prefix length {plen} outside 1..{w}")
            value = bytestrings.decode(fm.lpm.value, w, where)
            if value & ((1 << (w - plen)) - 1):
                raise invalid(f"{where}: value has bits set beyond the /{plen} prefix; clear them")
            out[f.name] = Lpm(value, plen)
        elif which == "ternary":
            value = bytestrings.decode(fm.ternary.value, w, where)
            mask = bytestrings.decode(fm.ternary.mask, w, where + " mask")
            if mask == 0:
                raise invalid(f"{where}: all-zero mask is a don't-care; leave the field out")
            if value & ~mask:
                raise invalid(f"{where}: value has bits set outside the mask; clear them")
            out[f.name] = Ternary(value, mask)
        elif which == "range":
            low = bytestrings.decode(fm.range.low, w, where + " low")
            high = bytestrings.decode(fm.range.high, w, where + " high")
            if low > high:
                raise invalid(f"{where}: range low 0x{low:x} is above high 0x{high:x}")
            if low == 0 and high == (1 << w) - 1:
                raise invalid(f"{where}: range over the whole field is a don't-care; leave the field out")
            out[f.name] = Range(low, high)
        elif which == "optional":
            out[f.name] = Optional(bytestrings.decode(fm.optional.value, w, where))
        else:
            raise invalid(f"{where}: match kind '{f.match_kind}' is not supported")
    for f in t.fields.values():
        if f.match_kind == "exact" and f.id not in seen:
            raise invalid(f"table '{t.name}': exact field '{f.name}' is missing; exact fields are mandatory")
    return out


def encode_match(t: TableInfo, match: dict[str, MatchValue]) -> list[p4runtime_pb2.FieldMatch]:
    out = []
    for f in t.ordered_fields:
        m = match.get(f.name)
        if m is None:
            continue
        fm = p4runtime_pb2.FieldMatch(field_id=f.id)
        if isinstance(m, Exact):
            fm.exact.value = bytestrings.encode(m.value)
        elif isinstance(m, Lpm):
            fm.lpm.value = bytestrings.encode(m.value)
            fm.lpm.prefix_len = m.prefix_len
        elif isinstance(m, Ternary):
            fm.ternary.value = bytestrings.encode(m.value)
            fm.ternary.mask = bytestrings.encode(m.mask)
        elif isinstance(m, Range):
            fm.range.low = bytestrings.encode(m.low)
            fm.range.high = bytestrings.encode(m.high)
        elif isinstance(m, Optional):
            fm.optional.value = bytestrings.encode(m.value)
        out.append(fm)
    return out


def decode_priority(t: TableInfo, priority: int) -> int | None:
    if t.needs_priority:
        if priority <= 0:
            raise invalid(f"table '{t.name}' has ternary/range/optional fields: give a priority >= 1")
        return priority
    if priority != 0:
        raise invalid(f"table '{t.name}' has only exact/lpm fields: priority must be 0 (unset)")
    return None


def decode_action(schema: Schema, a: p4runtime_pb2.Action, where: str) -> ActionCall:
    info: ActionInfo = schema.action(a.action_id)
    params: dict[str, int] = {}
    seen: set[int] = set()
    for p in a.params:
        f = info.params.get(p.param_id)
        if f is None:
            raise invalid(f"{where}: action '{info.name}' has no parameter id {p.param_id}")
        if p.param_id in seen:
            raise invalid(f"{where}: action '{info.name}' parameter '{f.name}' given twice")
        seen.add(p.param_id)
        params[f.name] = bytestrings.decode(p.value, f.bitwidth, f"{where}: action '{info.name}' parameter '{f.name}'")
    missing = [f.name for pid, f in info.params.items() if pid not in seen]
    if missing:
        raise invalid(f"{where}: action '{info.name}' needs parameters {missing}")
    return ActionCall(info.name, params)


def table_action(schema: Schema, t: TableInfo, a: p4runtime_pb2.Action, default: bool) -> ActionCall:
    if a.action_id not in t.actions:
        raise invalid(f"table '{t.name}': action id {a.action_id} is not one of the table's actions")
    scope = t.actions[a.action_id]
    # a valid action used outside its scope is PERMISSION_DENIED (spec 9.1.3)
    if default and scope == "table_only":
        raise P4RTError(PERMISSION_DENIED, f"table '{t.name}': action '{schema.actions[a.action_id].name}' is "
                        "@tableonly; it cannot be the default action")
    if not default and scope == "default_only":
        raise P4RTError(PERMISSION_DENIED, f"table '{t.name}': action '{schema.actions[a.action_id].name}' is "
                        "@defaultonly; it cannot be used in entries")
    return decode_action(schema, a, f"table '{t.name}'")


def encode_action(schema: Schema, name: str, params: dict[str, int] | tuple[int, ...]) -> p4runtime_pb2.Action:
    aid = schema.id_of("action", name)
    info = schema.actions[aid]
    if isinstance(params, tuple):
        params = dict(zip([p.name for p in schema.model.action(name).params], params))
    return p4runtime_pb2.Action(action_id=aid, params=[
        p4runtime_pb2.Action.Param(param_id=f.id, value=bytestrings.encode(params.get(f.name, 0)))
        for f in info.ordered_params])


def decode_port(data: bytes, where: str) -> int:
    return bytestrings.decode(data, PORT_BITS, where)
