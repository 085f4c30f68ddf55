"""Read results as protobuf wire bytes, built straight from the runtime's values.

A wildcard Read of a big table answers with every entry; building a message object per
entry and letting protobuf serialise it costs more than everything else in the read
path. So the server encodes each entry with a direct action once, the first time it
is read, straight from the runtime's values, and keeps the bytes with the entry as one
``ReadResponse.entities`` element (``ReadResponse`` is only ``repeated Entity
entities = 1``): a response is then the concatenation of its entries' elements, which
upb parses back into the ``ReadResponse`` gRPC sends.

The encoding is the canonical one the read path always returned (field ids and
parameter ids in ascending order, bytestrings in their shortest form, see
``bytestrings``); only the fields a plain table entry has are written here
(table_id, match, action, priority, is_const); anything else goes through the messages.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from p4target.p4runtime.bytestrings import encode

if TYPE_CHECKING:
    from finsy.proto.p4.v1 import p4runtime_pb2

    from p4target.p4runtime.schema import ActionInfo, TableInfo

_ONE_BYTE = [bytes((i,)) for i in range(0x80)]

# tags (field number << 3 | wire type) of the fields written here
_ENTITIES = b"\x0a"  # ReadResponse.entities
_TABLE_ENTRY = b"\x12"  # Entity.table_entry
_MATCH = b"\x12"  # TableEntry.match
_ACTION = b"\x1a"  # TableEntry.action
_PRIORITY = b"\x20"  # TableEntry.priority (varint)
_IS_CONST = b"\x68\x01"  # TableEntry.is_const = true
_ACTION_ACTION = b"\x0a"  # TableAction.action
_PARAMS = b"\x22"  # Action.params
_PARAM_VALUE = b"\x1a"  # Action.Param.value
_KIND_TAG = {"exact": b"\x12", "ternary": b"\x1a", "lpm": b"\x22", "range": b"\x32", "optional": b"\x3a"}
_FIRST = b"\x0a"  # Exact.value, LPM.value, Ternary.value, Range.low, Optional.value
_SECOND = b"\x12"  # Ternary.mask, Range.high
_PREFIX_LEN = b"\x10"  # LPM.prefix_len (varint)


def varint(n: int) -> bytes:
    """Base-128 varint of a non-negative integer."""
    if n < 0x80:
        return _ONE_BYTE[n]
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def id_field(number: int, value: int) -> bytes:
    """A varint field (an object id), encoded once per pipeline by the schema."""
    return varint(number << 3) + varint(value)


def _ld(tag: bytes, payload: bytes) -> bytes:
    n = len(payload)
    return tag + (_ONE_BYTE[n] if n < 0x80 else varint(n)) + payload


def _longest(bitwidth: int) -> int:
    return max(1, (bitwidth + 7) // 8)


def exact_heads(field_id: bytes, bitwidth: int) -> tuple[bytes, ...] | None:
    """What precedes the value bytes ``v`` in the ``TableEntry.match`` element of an
    exact field (``{field_id, exact {value: v}}``), per ``len(v)`` from 0 to the
    field's byte width: the element is ``heads[len(v)] + v``. None when a length
    would need a varint of more than one byte (fields of about 1,000 bits)."""
    if len(field_id) + 4 + _longest(bitwidth) >= 0x80:
        return None
    return tuple(_MATCH + _ONE_BYTE[len(field_id) + 4 + n] + field_id + _KIND_TAG["exact"] + _ONE_BYTE[n + 2]
                 + _FIRST + _ONE_BYTE[n] for n in range(_longest(bitwidth) + 1))


def param_heads(param_id: bytes, bitwidth: int) -> tuple[bytes, ...] | None:
    """As ``exact_heads``, for the ``Action.params`` element ``{param_id, value: v}``."""
    if len(param_id) + 2 + _longest(bitwidth) >= 0x80:
        return None
    return tuple(_PARAMS + _ONE_BYTE[len(param_id) + 2 + n] + param_id + _PARAM_VALUE + _ONE_BYTE[n]
                 for n in range(_longest(bitwidth) + 1))


def entity_element(entity: p4runtime_pb2.Entity) -> bytes:
    """One ``ReadResponse.entities`` element holding ``entity``."""
    return _ld(_ENTITIES, entity.SerializeToString())


def table_entry_element(t: TableInfo, key: tuple, priority: int | None, action: ActionInfo,
                        args: tuple[int, ...], is_const: bool = False) -> bytes:
    """The element of a table entry with a direct action, from the runtime's key (in
    ``TableRuntime.canon_match``'s form) and argument tuple (the action's parameter
    order in the program); wildcards are left out."""
    parts = [t.wire_id]
    wildcard = t.wildcard_key
    for fid, pos, kind, heads in t.wire_fields:
        item = key[pos]
        if heads is not None:  # exact, the common case: one concatenation
            v = item.to_bytes((item.bit_length() + 7) // 8 or 1, "big")
            parts.append(heads[len(v)])
            parts.append(v)
            continue
        if kind == "exact":
            body = _ld(_FIRST, encode(item))
        elif item == wildcard[pos]:
            continue
        elif kind == "lpm":
            body = _ld(_FIRST, encode(item[0])) + _PREFIX_LEN + varint(item[1])
        elif kind == "optional":
            body = _ld(_FIRST, encode(item))
        else:  # ternary (value, mask), range (low, high)
            body = _ld(_FIRST, encode(item[0])) + _ld(_SECOND, encode(item[1]))
        parts.append(_ld(_MATCH, fid + _ld(_KIND_TAG[kind], body)))
    act = [action.wire_id]
    for pid, pos, heads in action.wire_params:
        item = args[pos]
        v = item.to_bytes((item.bit_length() + 7) // 8 or 1, "big")
        if heads is not None:
            act.append(heads[len(v)])
            act.append(v)
        else:
            act.append(_ld(_PARAMS, pid + _ld(_PARAM_VALUE, v)))
    parts.append(_ld(_ACTION, _ld(_ACTION_ACTION, b"".join(act))))
    if priority:
        parts.append(_PRIORITY + varint(priority))
    if is_const:
        parts.append(_IS_CONST)
    return _ld(_ENTITIES, _ld(_TABLE_ENTRY, b"".join(parts)))
