"""Entries as P4Runtime wire bytes, each encoded once, and write requests joined from them.

Why bytes: the install client shares the cores with the switches it writes (four
embedded-target servers on two cores in bench/controller_install.py), so each
microsecond it spends per entry is taken from them. Filling a upb message field by
field from Python costs a call per field and sub-message, and the message is
then copied into the request and serialised again; writing the bytes directly, with
the bytes of each match value and of each action call made once and reused for the
entries that repeat them (a destination is shared by all its EVs, a path by the EVs
that take it), costs a fraction of that, and checking an entry's values against
their widths is done by the same pass (only when a value is met for the first time).

The protobuf wire format makes this simple: a message is its fields one after
another, each a tag (field number << 3 | wire type) then a varint (integers) or a
length and the bytes (byte strings, sub-messages). A repeated field is the same
field once per element, so a WriteRequest is its head (device id, election id)
followed by one ``updates`` field per update, and each update can be made apart
and the request joined from them. Field numbers are read from the bindings'
descriptors, fields are written in field-number order as upb writes them, and
proto3 zeros are left out as upb leaves them out, so these bytes are the ones
``SerializeToString`` gives for the same message (tests/controller/test_wire.py
compares them with messages built field by field).
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, cast

from finsy.proto.p4.v1 import p4runtime_pb2 as pb

from fabric.entries import GroupEntry, MemberEntry, TableEntry
from fabric.match import Exact, Lpm, Ternary
from p4target.api import canonical_bytes as canonical  # the shortest big-endian form (P4Runtime 8.4)
from p4target.api import varint

_VARINT, _LEN = 0, 2
CACHE = 1 << 16  # match values / action calls remembered per shape (then forgotten at once)
_U32, _I32 = (1 << 32) - 1, (1 << 31)


_SMALL = [varint(n) for n in range(1 << 14)]  # every length of an entry, and most ids


def _vlen(n: int) -> bytes:
    return _SMALL[n] if n < 16384 else varint(n)


def _tag(message: Any, field: str, wire: int) -> bytes:  # a protobuf message class
    return varint(message.DESCRIPTOR.fields_by_name[field].number << 3 | wire)


def _sized(tag: bytes, body: bytes) -> bytes:
    return tag + _vlen(len(body)) + body


def _int32(n: int) -> bytes:
    """An int32 field: negative numbers are ten-byte varints (two's complement, 64 bits)."""
    return varint(n & ((1 << 64) - 1))


# Tags, by message and field name as p4runtime.proto names them.
_T_UPDATE = _tag(pb.WriteRequest, "updates", _LEN)
_T_DEVICE = _tag(pb.WriteRequest, "device_id", _VARINT)
_T_ELECTION = _tag(pb.WriteRequest, "election_id", _LEN)
_T_HIGH, _T_LOW = _tag(pb.Uint128, "high", _VARINT), _tag(pb.Uint128, "low", _VARINT)
_T_TYPE, _T_ENTITY = _tag(pb.Update, "type", _VARINT), _tag(pb.Update, "entity", _LEN)
_T_TABLE_ENTRY = _tag(pb.Entity, "table_entry", _LEN)
_T_MEMBER_ENTRY = _tag(pb.Entity, "action_profile_member", _LEN)
_T_GROUP_ENTRY = _tag(pb.Entity, "action_profile_group", _LEN)
_T_TABLE_ID, _T_MATCH = _tag(pb.TableEntry, "table_id", _VARINT), _tag(pb.TableEntry, "match", _LEN)
_T_ACTION, _T_PRIORITY = _tag(pb.TableEntry, "action", _LEN), _tag(pb.TableEntry, "priority", _VARINT)
_T_FIELD_ID = _tag(pb.FieldMatch, "field_id", _VARINT)
_T_KIND = {Exact: _tag(pb.FieldMatch, "exact", _LEN), Lpm: _tag(pb.FieldMatch, "lpm", _LEN),
           Ternary: _tag(pb.FieldMatch, "ternary", _LEN)}
_T_EXACT_VALUE = _tag(pb.FieldMatch.Exact, "value", _LEN)
_T_LPM_VALUE, _T_LPM_LEN = _tag(pb.FieldMatch.LPM, "value", _LEN), _tag(pb.FieldMatch.LPM, "prefix_len", _VARINT)
_T_TERN_VALUE, _T_TERN_MASK = _tag(pb.FieldMatch.Ternary, "value", _LEN), _tag(pb.FieldMatch.Ternary, "mask", _LEN)
_T_CALL, _T_GROUP_ID = _tag(pb.TableAction, "action", _LEN), _tag(pb.TableAction, "action_profile_group_id", _VARINT)
_T_ACTION_ID, _T_PARAM = _tag(pb.Action, "action_id", _VARINT), _tag(pb.Action, "params", _LEN)
_T_PARAM_ID, _T_PARAM_VALUE = _tag(pb.Action.Param, "param_id", _VARINT), _tag(pb.Action.Param, "value", _LEN)
_T_PROFILE_ID = _tag(pb.ActionProfileMember, "action_profile_id", _VARINT)
_T_MEMBER_ID = _tag(pb.ActionProfileMember, "member_id", _VARINT)
_T_MEMBER_ACTION = _tag(pb.ActionProfileMember, "action", _LEN)
_T_GROUP_PROFILE = _tag(pb.ActionProfileGroup, "action_profile_id", _VARINT)
_T_GROUP_GID = _tag(pb.ActionProfileGroup, "group_id", _VARINT)
_T_GROUP_MEMBER = _tag(pb.ActionProfileGroup, "members", _LEN)
_T_GM_ID, _T_GM_WEIGHT = _tag(pb.ActionProfileGroup.Member, "member_id", _VARINT), \
    _tag(pb.ActionProfileGroup.Member, "weight", _VARINT)
_T_GM_WATCH = _tag(pb.ActionProfileGroup.Member, "watch_port", _LEN)

UPDATE_TYPES = {"insert": pb.Update.INSERT, "modify": pb.Update.MODIFY, "delete": pb.Update.DELETE}


def _uint(tag: bytes, n: int) -> bytes:
    """A proto3 scalar outside a oneof: left out when zero."""
    return tag + varint(n) if n else b""


# ---- match fields and action calls -------------------------------------------------


def _field_maker(field_id: int, kind: type, width: int, before: bytes = b"") -> Callable[[object], bytes | None]:
    """The ``match`` field of a TableEntry for one value of one field (after
    ``before``), or None when the value does not fit ``width`` bits (the caller then
    says why)."""
    head = _T_FIELD_ID + varint(field_id) + _T_KIND[kind]

    def exact(mv: Exact) -> bytes | None:
        v = mv.value
        if v < 0 or v >> width:
            return None
        return before + _sized(_T_MATCH, _sized(head, _sized(_T_EXACT_VALUE, canonical(v))))

    def lpm(mv: Lpm) -> bytes | None:
        v, plen = mv.value, mv.prefix_len
        if v < 0 or v >> width or not 0 < plen <= width:
            return None
        return before + _sized(_T_MATCH, _sized(head, _sized(_T_LPM_VALUE, canonical(v)) + _T_LPM_LEN
                                                + varint(plen)))

    def ternary(mv: Ternary) -> bytes | None:
        v, mask = mv.value, mv.mask
        if v < 0 or mask >> width or v & ~mask:
            return None
        return before + _sized(_T_MATCH, _sized(head, _sized(_T_TERN_VALUE, canonical(v))
                                                + _sized(_T_TERN_MASK, canonical(mask))))

    # each maker takes its own match kind; the caller gives it only values of ``kind``
    return {Exact: exact, Lpm: lpm, Ternary: ternary}[kind]  # type: ignore[return-value]


def _call_maker(action_id: int, params: Sequence[tuple[str, int, int]]
                ) -> Callable[[tuple[tuple[str, int], ...]], bytes | None]:
    """An Action message (id, then parameters in the given order) for one set of
    parameter values, or None when their names or widths are not those of ``params``
    ((name, id, width) each). Each parameter's bytes are remembered by value: a new
    set of values often shares all but one with sets met before (the plane and port
    of a new path)."""
    head = _T_ACTION_ID + varint(action_id)
    heads = [(name, _T_PARAM_ID + varint(pid) + _T_PARAM_VALUE, width, _Cache()) for name, pid, width in params]

    def make(values: tuple[tuple[str, int], ...]) -> bytes | None:
        if len(values) != len(heads):
            return None
        out = [head]
        for (pname, v), (name, phead, width, cache) in zip(values, heads, strict=True):
            if pname != name:
                return None
            b = cache.get(v)
            if b is None:
                if v < 0 or v >> width:
                    return None
                value = canonical(v)
                b = _sized(_T_PARAM, phead + _vlen(len(value)) + value)
                cache.put(v, b)
            out.append(b)
        return b"".join(out)

    return make


class _Cache(dict[object, bytes]):
    """Encoded bytes by value; emptied when full so memory stays bounded."""

    def put(self, key: object, value: bytes) -> None:
        if len(self) >= CACHE:
            self.clear()
        self[key] = value


class _Heads(dict[int, bytes]):
    """For an entity kind (its tag in Entity), by the length of its message: the bytes
    that go before the message in the ``updates`` field of a WriteRequest inserting it
    (updates tag and length, the Update's type and entity tag and length, the entity
    kind's tag and length); made once per length. With ``tag`` empty: before a whole
    Entity message."""

    def __init__(self, tag: bytes) -> None:
        super().__init__()
        self.tag = tag

    def __missing__(self, n: int) -> bytes:
        entity = self.tag + _vlen(n) if self.tag else b""
        update = _T_TYPE + _INSERT + _T_ENTITY + _vlen(len(entity) + n) + entity
        h = self[n] = _T_UPDATE + _vlen(len(update) + n) + update
        return h


_INSERT = varint(UPDATE_TYPES["insert"])
assert all(t < 0x80 for t in UPDATE_TYPES.values())  # one byte each: retype swaps that byte
_TABLE_HEADS, _MEMBER_HEADS, _GROUP_HEADS = _Heads(_T_TABLE_ENTRY), _Heads(_T_MEMBER_ENTRY), _Heads(_T_GROUP_ENTRY)
_ENTITY_HEADS = _Heads(b"")


# ---- entry shapes ------------------------------------------------------------------

Encoder = Callable[[object], "bytes | None"]
RunEncoder = Callable[[Sequence[object], int, int, Callable[[bytes], None]], int]


class Encoders(NamedTuple):
    """The encoders of one entry shape: ``one(e)``, the ``updates`` field inserting
    ``e`` or None (not of this shape, or a value does not fit); and ``run(es, i, stop,
    add)`` (table entries only), which encodes ``es[i]``, ``es[i + 1]``, ... up to
    ``stop`` with ``add`` while they are of this shape and fit, and says where it
    stopped."""

    one: Encoder
    run: RunEncoder | None


_KEYS = {Exact: "v{k}.value", Lpm: "(v{k}.value, v{k}.prefix_len)", Ternary: "(v{k}.value, v{k}.mask)"}

# The code of a table entry, as templates: ``{fail}`` is what the code does with an
# entry that is not of the shape or does not fit.
_SHAPE = """\
match = e.match
if len(match) != {n} or e.group is {grouped}None:
    {fail}"""
_NAMES = """\
{unpack} = match
if {checks}:
    {fail}"""
# One match field: its bytes by value (C{k}), made (M{k}) and checked on a miss (the
# first field's bytes begin with the table id's). An LPM or ternary value is also
# compared by identity with the last one (LAST{k}: object, bytes): a run of entries
# often shares it (a destination's EVs share its prefix) and its key is a tuple, the
# dearest part of the lookup.
_FIELD = """\
b{k} = C{k}.get({key})
if b{k} is None:
    b{k} = M{k}(v{k})
    if b{k} is None:
        {fail}
    C{k}.put({key}, b{k})"""
_SHARED_FIELD = """\
if v{k} is LAST{k}[0]:
    b{k} = LAST{k}[1]
else:
""" + textwrap.indent(_FIELD, "    ") + """
    LAST{k}[0], LAST{k}[1] = v{k}, b{k}"""
_CALL = """\
a = CALLS.get(e.params)
if a is None:
    a = CALL(e.params)
    if a is None:
        {fail}
    a = sized(ACTION, sized(TA, a))
    CALLS.put(e.params, a)"""
_GROUP = """\
g = e.group
a = GROUPS.get(g)
if a is None:
    if not 0 <= g <= U32:
        {fail}
    a = sized(ACTION, GID + varint(g))  # in a oneof: written even when 0
    GROUPS.put(g, a)"""
_END = """\
body = {parts}a
p = e.priority
if p:
    if not -I32 <= p < I32:
        {fail}
    body += PRIORITY + int32(p)
{done}HEADS[len(body)] + body{close}"""
# One entry, and a run of entries: the same code in a loop that stops at an entry of
# another table or action (compared by identity first: entries share the strings).
_ONE = """\
def one(e):
{code}"""
_RUN = """\
def run(es, i, stop, add):
    for i in range(i, stop):
        e = es[i]
        if type(e) is not TableEntry or e.table != TABLE or e.action != ACTION_NAME:
            return i
{code}
    return stop"""


def table_encoder(table: str, table_id: int, fields: Sequence[tuple[str, type, int, int]],
                  action: str | None, action_id: int | None, params: Sequence[tuple[str, int, int]]) -> Encoders:
    """The encoders of the table entries of one shape: one table, one action (or, with
    ``action`` None, a group of the table's selector), the same match fields
    (``fields``: name, Exact/Lpm/Ternary, field id, width, in the entries' order), the
    same parameters (``params``: name, id, width, in the entries' order). They give
    an entry's ``updates`` field inserting it (see ``retype`` for the other kinds).

    Why generated: the encoder runs once per entry and is most of the client's work;
    written out for its shape (the fields unrolled, their names and kinds compared
    with constants), and looping over a run of entries itself, it saves the
    interpreter's work of a loop over the fields called per entry (figures:
    docs/performance.md, "The controller"). The bytes of each match value and of
    each set of parameter values are made once (checking their widths) and reused."""
    head = _T_TABLE_ID + varint(table_id)
    env: dict[str, object] = {"HEADS": _TABLE_HEADS, "PRIORITY": _T_PRIORITY, "int32": _int32, "I32": _I32,
                              "U32": _U32, "sized": _sized, "varint": varint, "ACTION": _T_ACTION, "HEAD": head,
                              "TableEntry": TableEntry, "TABLE": table, "ACTION_NAME": action}
    n = len(fields)
    parts = [_SHAPE.format(n=n, grouped="" if action_id is None else "not ", fail="{fail}")]
    if n:
        parts.append(_NAMES.format(unpack=", ".join(f"(n{k}, v{k})" for k in range(n)) + ",",
                                   checks=" or ".join(f"n{k} != N{k} or type(v{k}) is not K{k}" for k in range(n)),
                                   fail="{fail}"))
    for k, (name, kind, fid, width) in enumerate(fields):
        env |= {f"N{k}": name, f"K{k}": kind, f"C{k}": _Cache(), f"LAST{k}": [None, b""],
                f"M{k}": _field_maker(fid, kind, width, head if k == 0 else b"")}
        parts.append((_FIELD if kind is Exact else _SHARED_FIELD).format(k=k, key=_KEYS[kind].format(k=k),
                                                                         fail="{fail}"))
    if action_id is None:
        env |= {"GROUPS": _Cache(), "GID": _T_GROUP_ID}
        parts.append(_GROUP)
    else:
        env |= {"CALLS": _Cache(), "CALL": _call_maker(action_id, params), "TA": _T_CALL}
        parts.append(_CALL)
    parts.append(_END.replace("{parts}", "".join(f"b{k} + " for k in range(n)) if n else "HEAD + "))
    code = "\n".join(parts)
    one = code.replace("{fail}", "return None").replace("{done}", "return ").replace("{close}", "")
    run = code.replace("{fail}", "return i").replace("{done}", "add(").replace("{close}", ")")
    src = _ONE.format(code=textwrap.indent(one, "    ")) + "\n\n" + _RUN.format(code=textwrap.indent(run, " " * 8))
    exec(src, env)  # source made above from ids and names, not from input text
    return Encoders(env["one"], env["run"])  # type: ignore[arg-type]  # made by exec: typed by the template


def member_encoder(profile_id: int, action_id: int, params: Sequence[tuple[str, int, int]]) -> Encoders:
    """The encoder of the members of one action profile calling one action with the
    same parameters (see table_encoder; a member has no match to unroll)."""
    head = _T_PROFILE_ID + varint(profile_id)
    call = _call_maker(action_id, params)
    calls = _Cache()

    def encode(e: MemberEntry) -> bytes | None:
        mid = e.member_id
        if not 0 <= mid <= _U32:
            return None
        b = calls.get(e.params)
        if b is None:
            made = call(e.params)
            if made is None:
                return None
            b = _sized(_T_MEMBER_ACTION, made)
            calls.put(e.params, b)
        body = head + _uint(_T_MEMBER_ID, mid) + b
        return _MEMBER_HEADS[len(body)] + body

    return Encoders(cast(Encoder, encode), None)  # codec.py calls it with this profile's members only


def group_update(profile_id: int, e: GroupEntry) -> bytes | None:
    """The ``updates`` field inserting a selector group, or None when an id, weight or
    port is out of range (groups are few, of any size: no shape)."""
    if not 0 <= e.group_id <= _U32:
        return None
    parts = [_T_GROUP_PROFILE + varint(profile_id), _uint(_T_GROUP_GID, e.group_id)]
    for mid, weight, watch in e.members:
        if not (0 <= mid <= _U32 and -_I32 <= weight < _I32 and watch >= 0):
            return None
        w = _T_GM_WEIGHT + _int32(weight) if weight else b""
        parts.append(_sized(_T_GROUP_MEMBER, _uint(_T_GM_ID, mid) + w + _sized(_T_GM_WATCH, canonical(watch))))
    body = b"".join(parts)
    return _GROUP_HEADS[len(body)] + body


# ---- updates and requests ----------------------------------------------------------


def _type_at(update: bytes) -> int:
    """Where the Update's type byte is in an ``updates`` field: after the field's tag,
    its length (a varint) and the type's tag."""
    i = 1
    while update[i] & 0x80:
        i += 1
    return i + 2


def retype(update: bytes, kind: str) -> bytes:
    """An ``updates`` field (as the encoders give, inserting) as an update of ``kind``
    (insert, modify, delete): the same bytes but the type, which is one byte."""
    if kind == "insert":
        return update
    i = _type_at(update)
    return update[:i] + bytes((UPDATE_TYPES[kind],)) + update[i + 1:]


def entity(update: bytes) -> bytes:
    """The Entity message inside an ``updates`` field."""
    i = _type_at(update) + 2  # the type's value, then the entity's tag
    while update[i] & 0x80:  # the entity's length
        i += 1
    return update[i + 1:]


def insert_of(entity: bytes) -> bytes:
    """The ``updates`` field inserting an Entity message (as a switch reads it back):
    the encoders' form, so what a switch holds compares with what is wanted as bytes."""
    return _ENTITY_HEADS[len(entity)] + entity


_READ_ENTITY = pb.ReadResponse.DESCRIPTOR.fields_by_name["entities"].number << 3 | _LEN


def entities_of(response: bytes) -> list[bytes]:
    """The Entity messages of a ReadResponse's bytes, as bytes (its only field is the
    repeated ``entities``; another field is skipped by its wire type)."""
    out: list[bytes] = []
    add = out.append
    i, n = 0, len(response)
    while i < n:
        tag = response[i]
        if tag == _READ_ENTITY:  # the usual case, inline: one-byte tag, length of one or two bytes
            size = response[i + 1]
            if size < 0x80:
                i += 2
            elif response[i + 2] < 0x80:
                size = (size & 0x7F) | response[i + 2] << 7
                i += 3
            else:
                size, i = _read_varint(response, i + 1)
            add(response[i:i + size])
            i += size
            continue
        tag, i = _read_varint(response, i)
        wire_type = tag & 7
        if wire_type == _VARINT:
            _, i = _read_varint(response, i)
        elif wire_type == _LEN:
            size, i = _read_varint(response, i)
            if tag == _READ_ENTITY:
                add(response[i:i + size])
            i += size
        elif wire_type in (1, 5):  # fixed 64 / 32 bits
            i += 8 if wire_type == 1 else 4
        else:
            raise ValueError(f"ReadResponse: field {tag >> 3} has wire type {wire_type}, which protobuf 3 does not use")
    return out


def _read_varint(data: bytes, i: int) -> tuple[int, int]:
    """The varint at ``data[i]`` and the index after it."""
    value = shift = 0
    while True:
        b = data[i]
        i += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, i
        shift += 7


def write_head(device_id: int, election_id: int) -> bytes:
    """A WriteRequest's fields before its updates: device id and election id (a
    WriteRequest is these bytes followed by ``updates`` fields, joined)."""
    election = _uint(_T_HIGH, election_id >> 64) + _uint(_T_LOW, election_id & ((1 << 64) - 1))
    return _uint(_T_DEVICE, device_id) + _sized(_T_ELECTION, election)


__all__ = ["CACHE", "Encoder", "Encoders", "RunEncoder", "UPDATE_TYPES", "canonical", "entities_of", "entity",
           "group_update", "insert_of", "member_encoder", "retype",
           "table_encoder", "varint", "write_head"]
