"""Entries as P4Runtime wire bytes, each encoded once, and write requests joined from them.

Why bytes: the install client shares the cores with the switches it writes (four
embedded-target servers on two cores in bench/controller_install.py), so each
microsecond it spends per entry is taken from them. Filling a upb message field by
field from Python costs about 0.1 us per field and sub-message, and the message is
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

from collections.abc import Callable, Iterable, Sequence

from finsy.proto.p4.v1 import p4runtime_pb2 as pb

from p4target.runtime.entries import Exact, Lpm, Ternary

_VARINT, _LEN = 0, 2
CACHE = 1 << 16  # match values / action calls remembered per shape (then forgotten at once)
_U32, _I32 = (1 << 32) - 1, (1 << 31)


def varint(n: int) -> bytes:
    """``n`` (0 <= n < 2**64) as a protobuf varint: 7 bits a byte, low first."""
    if n < 0x80:
        return bytes((n,))
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


_SMALL = [varint(n) for n in range(1 << 14)]  # every length of an entry, and most ids


def _vlen(n: int) -> bytes:
    return _SMALL[n] if n < 16384 else varint(n)


def _tag(message: type, field: str, wire: int) -> bytes:
    return varint(message.DESCRIPTOR.fields_by_name[field].number << 3 | wire)


def _sized(tag: bytes, body: bytes) -> bytes:
    return tag + _vlen(len(body)) + body


def canonical(value: int) -> bytes:
    """Canonical P4Runtime byte string: shortest big-endian form (P4Runtime 8.4)."""
    return value.to_bytes((value.bit_length() + 7) >> 3 or 1, "big")


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


def _field_maker(field_id: int, kind: type, width: int) -> Callable[[object], bytes | None]:
    """The ``match`` field of a TableEntry for one value of one field, or None when
    the value does not fit ``width`` bits (the caller then says why)."""
    head = _T_FIELD_ID + varint(field_id) + _T_KIND[kind]

    def exact(mv: Exact) -> bytes | None:
        v = mv.value
        if v < 0 or v >> width:
            return None
        return _sized(_T_MATCH, _sized(head, _sized(_T_EXACT_VALUE, canonical(v))))

    def lpm(mv: Lpm) -> bytes | None:
        v, plen = mv.value, mv.prefix_len
        if v < 0 or v >> width or not 0 < plen <= width:
            return None
        return _sized(_T_MATCH, _sized(head, _sized(_T_LPM_VALUE, canonical(v)) + _T_LPM_LEN + varint(plen)))

    def ternary(mv: Ternary) -> bytes | None:
        v, mask = mv.value, mv.mask
        if v < 0 or mask >> width or v & ~mask:
            return None
        return _sized(_T_MATCH, _sized(head, _sized(_T_TERN_VALUE, canonical(v)) + _sized(_T_TERN_MASK,
                                                                                            canonical(mask))))

    return {Exact: exact, Lpm: lpm, Ternary: ternary}[kind]  # type: ignore[return-value]


def _call_maker(action_id: int, params: Sequence[tuple[str, int, int]]) -> Callable[[tuple], bytes | None]:
    """An Action message (id, then parameters in the given order) for one set of
    parameter values, or None when their names or widths are not those of ``params``
    ((name, id, width) each)."""
    head = _T_ACTION_ID + varint(action_id)
    heads = [(name, _T_PARAM_ID + varint(pid) + _T_PARAM_VALUE, width) for name, pid, width in params]

    def make(values: tuple[tuple[str, int], ...]) -> bytes | None:
        if len(values) != len(heads):
            return None
        out = [head]
        for (pname, v), (name, phead, width) in zip(values, heads):
            if pname != name or v < 0 or v >> width:
                return None
            b = canonical(v)
            out.append(_sized(_T_PARAM, phead + _vlen(len(b)) + b))
        return b"".join(out)

    return make


class _Cache(dict):
    """Encoded bytes by value; emptied when full so memory stays bounded."""

    def put(self, key: object, value: bytes) -> None:
        if len(self) >= CACHE:
            self.clear()
        self[key] = value


# ---- entry shapes ------------------------------------------------------------------


class TableShape:
    """The encoder of the table entries of one shape: one table, one action (or a
    group of the table's selector), the same match field names and kinds in the same
    order, the same parameter names in the same order. ``encode`` gives an entry's
    Entity bytes, or None when the entry is not of this shape or a value does not
    fit (the codec then finds the shape, or the error, the slow way)."""

    __slots__ = ("_head", "_fields", "_grouped", "_call", "_calls", "_groups")

    def __init__(self, table_id: int, fields: Sequence[tuple[str, type, int, int]], action_id: int | None,
                 params: Sequence[tuple[str, int, int]]) -> None:
        """``fields``: (name, Exact/Lpm/Ternary, field id, width) in the entries' order;
        ``action_id`` None for group entries; ``params``: (name, id, width)."""
        self._head = _T_TABLE_ID + varint(table_id)
        self._fields = tuple((name, kind, _Cache(), _field_maker(fid, kind, width))
                             for name, kind, fid, width in fields)
        self._grouped = action_id is None
        self._call = None if action_id is None else _call_maker(action_id, params)
        self._calls: _Cache = _Cache()  # parameter values -> TableAction field
        self._groups: _Cache = _Cache()  # group id -> TableAction field

    def encode(self, e) -> bytes | None:  # noqa: ANN001 - a TableEntry
        match = e.match
        if len(match) != len(self._fields) or (e.group is not None) is not self._grouped:
            return None
        parts = [self._head]
        for (fname, mv), (name, kind, cache, make) in zip(match, self._fields):
            if fname != name or type(mv) is not kind:
                return None
            key = mv.value if kind is Exact else (mv.value, mv.prefix_len) if kind is Lpm else (mv.value, mv.mask)
            b = cache.get(key)
            if b is None:
                b = make(mv)
                if b is None:
                    return None
                cache.put(key, b)
            parts.append(b)
        if self._grouped:
            g = e.group
            b = self._groups.get(g)
            if b is None:
                if not 0 <= g <= _U32:
                    return None
                b = _sized(_T_ACTION, _T_GROUP_ID + varint(g))  # in a oneof: written even when 0
                self._groups.put(g, b)
        else:
            params = e.params
            b = self._calls.get(params)
            if b is None:
                call = self._call(params)  # type: ignore[misc]
                if call is None:
                    return None
                b = _sized(_T_ACTION, _sized(_T_CALL, call))
                self._calls.put(params, b)
        parts.append(b)
        p = e.priority
        if p:
            if not -_I32 <= p < _I32:
                return None
            parts.append(_T_PRIORITY + _int32(p))
        body = b"".join(parts)
        return _T_TABLE_ENTRY + _vlen(len(body)) + body


class MemberShape:
    """The encoder of the members of one action profile calling one action with the
    same parameter names in the same order (see TableShape)."""

    __slots__ = ("_head", "_call", "_calls")

    def __init__(self, profile_id: int, action_id: int, params: Sequence[tuple[str, int, int]]) -> None:
        self._head = _T_PROFILE_ID + varint(profile_id)
        self._call = _call_maker(action_id, params)
        self._calls: _Cache = _Cache()

    def encode(self, e) -> bytes | None:  # noqa: ANN001 - a MemberEntry
        mid = e.member_id
        if not 0 <= mid <= _U32:
            return None
        b = self._calls.get(e.params)
        if b is None:
            call = self._call(e.params)
            if call is None:
                return None
            b = _sized(_T_MEMBER_ACTION, call)
            self._calls.put(e.params, b)
        body = self._head + _uint(_T_MEMBER_ID, mid) + b
        return _T_MEMBER_ENTRY + _vlen(len(body)) + body


def group_entity(profile_id: int, e) -> bytes | None:  # noqa: ANN001 - a GroupEntry
    """A selector group's Entity bytes, or None when an id, weight or port is out of range."""
    if not 0 <= e.group_id <= _U32:
        return None
    parts = [_T_GROUP_PROFILE + varint(profile_id), _uint(_T_GROUP_GID, e.group_id)]
    for mid, weight, watch in e.members:
        if not (0 <= mid <= _U32 and -_I32 <= weight < _I32 and watch >= 0):
            return None
        w = _T_GM_WEIGHT + _int32(weight) if weight else b""
        parts.append(_sized(_T_GROUP_MEMBER, _uint(_T_GM_ID, mid) + w + _sized(_T_GM_WATCH, canonical(watch))))
    return _sized(_T_GROUP_ENTRY, b"".join(parts))


# ---- requests ----------------------------------------------------------------------


def updates(kind: str, entities: Iterable[bytes]) -> bytes:
    """The ``updates`` fields of a WriteRequest: one update of ``kind`` (insert,
    modify, delete) per Entity, in order."""
    t = _T_TYPE + varint(UPDATE_TYPES[kind]) + _T_ENTITY
    heads: dict[int, bytes] = {}  # entity length -> what goes before the entity
    parts = []
    add = parts.append
    for ent in entities:
        n = len(ent)
        h = heads.get(n)
        if h is None:
            inner = t + _vlen(n)
            h = heads[n] = _T_UPDATE + _vlen(len(inner) + n) + inner
        add(h)
        add(ent)
    return b"".join(parts)


def write_head(device_id: int, election_id: int) -> bytes:
    """A WriteRequest's fields before its updates: device id and election id."""
    election = _uint(_T_HIGH, election_id >> 64) + _uint(_T_LOW, election_id & ((1 << 64) - 1))
    return _uint(_T_DEVICE, device_id) + _sized(_T_ELECTION, election)


__all__ = ["MemberShape", "TableShape", "UPDATE_TYPES", "canonical", "group_entity", "updates", "varint",
           "write_head"]
