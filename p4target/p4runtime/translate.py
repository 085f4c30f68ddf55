"""P4Runtime messages <-> Switch API values (match dicts, actions, params).

Everything a request can get wrong about the program (ids, widths, match kinds,
don't-care fields, priorities, action scopes) is checked here, before the Switch
is called, so a refused update never reaches the tables.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NoReturn

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


def _int(data: bytes, bitwidth: int, t: TableInfo, f, suffix: str = "") -> int:
    """``bytestrings.decode`` for key field ``f``, the message built only on failure."""
    if data:
        value = int.from_bytes(data, "big")
        if not value >> bitwidth:
            return value
    return bytestrings.decode(data, bitwidth, _field(t, f, suffix))  # raises, saying why


def _field(t: TableInfo, f, suffix: str = "") -> str:
    return f"table '{t.name}' field '{f.name}'{suffix}"


def decode_key(t: TableInfo, fms) -> tuple:  # noqa: C901 — one loop over the key fields, a case per match kind: on the write path, a helper per field would cost a call each
    """The runtime's form of a TableEntry's ``match`` (``TableRuntime.canon_match``'s
    spec: one item per key field in the program's order, wildcards filled in).

    Every check of the spec is here: known and unrepeated field ids, the field's match
    kind, widths, prefix lengths and masks with no stray bits, low <= high, no match
    that is really a don't-care (it must be left out), exact fields present.
    """
    key = list(t.wildcard_key)
    slots = t.key_slots
    given = 0  # bit i: key field i was given
    for fm in fms:
        fid = fm.field_id
        slot = slots.get(fid)
        if slot is None:
            raise invalid(f"table '{t.name}': match field id {fid} is not in the P4Info")
        pos, f = slot
        bit = 1 << pos
        if given & bit:
            raise invalid(f"table '{t.name}': match field '{f.name}' given twice")
        given |= bit
        w = f.bitwidth
        if f.match_kind == "exact":  # the common case, inline: a valid exact match has a value
            data = fm.exact.value  # b"" when the oneof holds another kind: checked below
            if data:
                value = int.from_bytes(data, "big")
                if not value >> w:
                    key[pos] = value
                    continue
        which = fm.WhichOneof("field_match_type")
        if which != f.match_kind:
            raise invalid(f"{_field(t, f)} is {f.match_kind}, the request gives {which or 'nothing'}")
        if which == "exact":
            key[pos] = _int(fm.exact.value, w, t, f)  # raises: the value is empty or too wide
        elif which == "lpm":
            plen = fm.lpm.prefix_len
            if plen <= 0 or plen > w:
                if plen == 0:
                    raise invalid(f"{_field(t, f)}: prefix length 0 is a don't-care; leave the field out")
                raise invalid(f"{_field(t, f)}: prefix length {plen} outside 1..{w}")
            value = _int(fm.lpm.value, w, t, f)
            if value & ((1 << (w - plen)) - 1):
                raise invalid(f"{_field(t, f)}: value has bits set beyond the /{plen} prefix; clear them")
            key[pos] = (value, plen)
        elif which == "ternary":
            value = _int(fm.ternary.value, w, t, f)
            mask = _int(fm.ternary.mask, w, t, f, " mask")
            if mask == 0:
                raise invalid(f"{_field(t, f)}: all-zero mask is a don't-care; leave the field out")
            if value & ~mask:
                raise invalid(f"{_field(t, f)}: value has bits set outside the mask; clear them")
            key[pos] = (value, mask)
        elif which == "range":
            low = _int(fm.range.low, w, t, f, " low")
            high = _int(fm.range.high, w, t, f, " high")
            if low > high:
                raise invalid(f"{_field(t, f)}: range low 0x{low:x} is above high 0x{high:x}")
            if low == 0 and high == (1 << w) - 1:
                raise invalid(f"{_field(t, f)}: range over the whole field is a don't-care; leave the field out")
            key[pos] = (low, high)
        elif which == "optional":
            key[pos] = _int(fm.optional.value, w, t, f)
        else:
            raise invalid(f"{_field(t, f)}: match kind '{f.match_kind}' is not supported")
    if t.exact_bits & ~given:
        for f in t.fields.values():
            if f.match_kind == "exact" and not given & (1 << t.key_slots[f.id][0]):
                raise invalid(f"table '{t.name}': exact field '{f.name}' is missing; exact fields are mandatory")
    return tuple(key)


def match_of_key(t: TableInfo, key: tuple) -> dict[str, MatchValue]:
    """The Switch API's match dict (model names, wildcards left out) of a decoded key."""
    out: dict[str, MatchValue] = {}
    wildcard = t.wildcard_key
    for f in t.ordered_fields:
        pos = t.key_slots[f.id][0]
        item = key[pos]
        if f.match_kind != "exact" and item == wildcard[pos]:
            continue
        kind = f.match_kind
        if kind == "exact":
            out[f.name] = Exact(item)
        elif kind == "lpm":
            out[f.name] = Lpm(*item)
        elif kind == "ternary":
            out[f.name] = Ternary(*item)
        elif kind == "range":
            out[f.name] = Range(*item)
        elif kind == "optional":
            out[f.name] = Optional(item)
    return out


def decode_match(t: TableInfo, fms) -> dict[str, MatchValue]:
    """Match dict (model names) of a TableEntry's ``match``; wildcards left out."""
    return match_of_key(t, decode_key(t, fms))


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


def decode_args(schema: Schema, a: p4runtime_pb2.Action, where: str) -> tuple[ActionInfo, tuple[int, ...]]:
    """The action and its argument tuple (program's parameter order), every parameter
    given once and fitting its width."""
    return _args(schema.action(a.action_id), a, where)


def _args(info: ActionInfo, a: p4runtime_pb2.Action, place: str | TableInfo) -> tuple[ActionInfo, tuple[int, ...]]:
    """decode_args for a known action; ``place`` (text, or the table) says where in messages.

    One pass that only notices a problem; ``_refuse_args`` walks again to say which.
    """
    slots = info.arg_slots
    args: list[int | None] = [None] * len(slots)
    for p in a.params:
        slot = slots.get(p.param_id)
        if slot is None:
            _refuse_args(info, a, place)
        pos, f = slot
        data = p.value
        value = int.from_bytes(data, "big")
        if not data or value >> f.bitwidth or args[pos] is not None:
            _refuse_args(info, a, place)
        args[pos] = value
    if None in args:
        _refuse_args(info, a, place)
    return info, tuple(args)  # type: ignore[arg-type]  # no None left: refused just above


def _refuse_args(info: ActionInfo, a: p4runtime_pb2.Action, place: str | TableInfo) -> NoReturn:
    """Raise the first problem of ``a``'s parameters, in the order they were given."""
    where = place if isinstance(place, str) else f"table '{place.name}'"
    seen: set[int] = set()
    for p in a.params:
        pid = p.param_id
        slot = info.arg_slots.get(pid)
        if slot is None:
            raise invalid(f"{where}: action '{info.name}' has no parameter id {pid}")
        f = slot[1]
        if pid in seen:
            raise invalid(f"{where}: action '{info.name}' parameter '{f.name}' given twice")
        seen.add(pid)
        bytestrings.decode(p.value, f.bitwidth, f"{where}: action '{info.name}' parameter '{f.name}'")
    missing = [f.name for pid, f in info.params.items() if pid not in seen]
    if missing:
        raise invalid(f"{where}: action '{info.name}' needs parameters {missing}")
    raise AssertionError(f"{where}: action '{info.name}': parameters refused without a reason")


def decode_action(schema: Schema, a: p4runtime_pb2.Action, where: str) -> ActionCall:
    info, args = decode_args(schema, a, where)
    return ActionCall(info.name, dict(zip(info.arg_order, args, strict=False)))


def table_args(schema: Schema, t: TableInfo, a: p4runtime_pb2.Action, default: bool
               ) -> tuple[ActionInfo, tuple[int, ...]]:
    """``decode_args`` for an action of table ``t``, with its scope checked."""
    aid = a.action_id
    scope = t.actions.get(aid)
    if scope is None:
        raise invalid(f"table '{t.name}': action id {aid} is not one of the table's actions")
    # a valid action used outside its scope is PERMISSION_DENIED (spec 9.1.3)
    if default and scope == "table_only":
        raise P4RTError(PERMISSION_DENIED, f"table '{t.name}': action '{schema.actions[a.action_id].name}' is "
                        "@tableonly; it cannot be the default action")
    if not default and scope == "default_only":
        raise P4RTError(PERMISSION_DENIED, f"table '{t.name}': action '{schema.actions[a.action_id].name}' is "
                        "@defaultonly; it cannot be used in entries")
    return _args(schema.actions[aid], a, t)  # the schema has every action of a table


def table_action(schema: Schema, t: TableInfo, a: p4runtime_pb2.Action, default: bool) -> ActionCall:
    info, args = table_args(schema, t, a, default)
    return ActionCall(info.name, dict(zip(info.arg_order, args, strict=False)))


def encode_action(schema: Schema, name: str, params: dict[str, int] | tuple[int, ...]) -> p4runtime_pb2.Action:
    aid = schema.id_of("action", name)
    info = schema.actions[aid]
    if isinstance(params, tuple):
        params = dict(zip([p.name for p in schema.model.action(name).params], params, strict=False))
    return p4runtime_pb2.Action(action_id=aid, params=[
        p4runtime_pb2.Action.Param(param_id=f.id, value=bytestrings.encode(params.get(f.name, 0)))
        for f in info.ordered_params])


def decode_port(data: bytes, where: str) -> int:
    return bytestrings.decode(data, PORT_BITS, where)
