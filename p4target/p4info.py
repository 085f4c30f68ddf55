"""P4Info generation from a ``ProgramModel``, with p4c's id and alias scheme.

Controllers written for BMv2 keep working against the embedded target only if both
describe a program with the same ids. p4c assigns every P4Runtime object an id made
of an 8-bit kind prefix (``p4.config.v1.P4Ids.Prefix``) and 24 bits taken from the
Jenkins one-at-a-time hash of the object's fully qualified name; within one kind the
names are hashed in sorted order and a collision moves on to the next hash value
(linear probing), ids set with ``@id`` are reserved first. Aliases are the shortest
dot-separated suffix of the name that no other P4Runtime object shares. This module
reproduces that scheme so the P4Info built here matches ``p4c --p4runtime-files``.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from typing import Any, Callable

from finsy.proto.p4.config.v1 import p4info_pb2
from google.protobuf import text_format

from p4target.errors import P4Error
from p4target.model import Action, ControllerHeader, Digest, Extern, Field, ProgramModel, Table, ValueSet

log = logging.getLogger(__name__)

# Kind prefixes, as p4info.proto's P4Ids.Prefix defines them.
PREFIX_ACTION = 0x01
PREFIX_TABLE = 0x02
PREFIX_VALUE_SET = 0x03
PREFIX_CONTROLLER_HEADER = 0x04
PREFIX_ACTION_PROFILE = 0x11
PREFIX_COUNTER = 0x12
PREFIX_DIRECT_COUNTER = 0x13
PREFIX_METER = 0x14
PREFIX_DIRECT_METER = 0x15
PREFIX_REGISTER = 0x16
PREFIX_DIGEST = 0x17

EXTERN_PREFIX = {
    "counter": PREFIX_COUNTER,
    "direct_counter": PREFIX_DIRECT_COUNTER,
    "meter": PREFIX_METER,
    "direct_meter": PREFIX_DIRECT_METER,
    "register": PREFIX_REGISTER,
    "action_profile": PREFIX_ACTION_PROFILE,
    "action_selector": PREFIX_ACTION_PROFILE,
}

# Annotations that P4Info carries elsewhere (name, id, documentation) and so never
# prints among a preamble's annotations.
_HIDDEN_ANNOTATIONS = frozenset({"name", "id", "brief", "description"})

_MATCH_TYPE = {
    "exact": p4info_pb2.MatchField.EXACT,
    "lpm": p4info_pb2.MatchField.LPM,
    "ternary": p4info_pb2.MatchField.TERNARY,
    "range": p4info_pb2.MatchField.RANGE,
    "optional": p4info_pb2.MatchField.OPTIONAL,
}

_SCOPE = {
    "all": p4info_pb2.ActionRef.TABLE_AND_DEFAULT,
    "table_only": p4info_pb2.ActionRef.TABLE_ONLY,
    "default_only": p4info_pb2.ActionRef.DEFAULT_ONLY,
}

_COUNTER_UNIT = {
    "packets": p4info_pb2.CounterSpec.PACKETS,
    "bytes": p4info_pb2.CounterSpec.BYTES,
    "packets_and_bytes": p4info_pb2.CounterSpec.BOTH,
}

_METER_UNIT = {
    "packets": p4info_pb2.MeterSpec.PACKETS,
    "bytes": p4info_pb2.MeterSpec.BYTES,
}

P4INFO_TEXT_HEADER = "# proto-file: p4/config/v1/p4info.proto\n# proto-message: p4.config.v1.P4Info\n\n"


def jenkins_one_at_a_time(data: bytes) -> int:
    """Bob Jenkins' one-at-a-time hash on 32 bits, the hash p4c uses for ids."""
    h = 0
    for b in data:
        h = (h + b) & 0xFFFFFFFF
        h = (h + (h << 10)) & 0xFFFFFFFF
        h ^= h >> 6
    h = (h + (h << 3)) & 0xFFFFFFFF
    h ^= h >> 11
    h = (h + (h << 15)) & 0xFFFFFFFF
    return h


def _int_annotation(annotations: dict[str, str], key: str) -> int | None:
    raw = annotations.get(key)
    if raw is None:
        return None
    text = raw.strip()
    try:
        return int(text, 0)
    except ValueError:
        return None


def _string_annotation(annotations: dict[str, str], key: str) -> str | None:
    raw = annotations.get(key)
    if raw is None:
        return None
    text = raw.strip()
    if len(text) >= 2 and text[0] == '"' and text[-1] == '"':
        return bytes(text[1:-1], "utf-8").decode("unicode_escape")
    return text


_RAW_BODY = re.compile(r"""^(?:[0-9][0-9a-fA-FxXwWsS_]*|[A-Z][A-Z0-9_]*|.*[(),=+\-*/<>&|"'\[\]{}].*)$""")


def format_annotation(name: str, body: str) -> str:
    """One annotation as p4c prints it in P4Info: ``@name`` or ``@name(body)``.

    The compiler gives a single string-literal body without its quotes (``@noWarn("unused")``
    arrives as ``unused``), so a body that is not a number, an upper-case constant or
    an expression/list is printed as the string literal it was.
    """
    body = body.strip()
    if not body:
        return f"@{name}"
    if _RAW_BODY.match(body):
        return f"@{name}({body})"
    return f"@{name}(\"{body}\")"


@dataclass
class IdAllocator:
    """p4c's id assignment: @id values first, then hashed names in sorted order."""

    assigned: set[int] = field(default_factory=set)

    def assign(self, prefix: int, names: list[tuple[str, int | None]]) -> dict[str, int]:
        """Ids for the (name, @id or None) pairs of one kind."""
        out: dict[str, int] = {}
        top = prefix << 24
        for name, explicit in names:
            if explicit is None or name in out:
                continue
            if explicit >> 24 not in (0, prefix):
                raise P4Error(
                    f"@id 0x{explicit:08x} of '{name}' has the wrong 8-bit prefix; "
                    f"use 0x{prefix:02x} in the top byte or give only the low 24 bits"
                )
            ident = explicit | top
            if ident in self.assigned:
                raise P4Error(f"@id 0x{ident:08x} of '{name}' is assigned to more than one object; make it unique")
            self.assigned.add(ident)
            out[name] = ident
        for name in sorted({n for n, _ in names if n not in out}, key=lambda s: s.encode()):
            start = jenkins_one_at_a_time(name.encode())
            value = start
            while True:
                ident = top | (value & 0xFFFFFF)
                if ident not in self.assigned:
                    break
                value = (value + 1) & 0xFFFFFFFF
                if value == start:
                    raise P4Error(f"no P4Runtime id left for '{name}'")
            self.assigned.add(ident)
            out[name] = ident
        return out


class SuffixSet:
    """Shortest unique dot-separated suffix of each name: p4c's default alias."""

    def __init__(self, names: list[str]) -> None:
        self.counts: dict[tuple[str, ...], int] = {}
        for name in set(names):
            parts = tuple(name.split("."))
            for i in range(1, len(parts) + 1):
                suffix = parts[-i:]
                self.counts[suffix] = self.counts.get(suffix, 0) + 1

    def alias(self, name: str) -> str:
        parts = tuple(name.split("."))
        for i in range(1, len(parts) + 1):
            if self.counts.get(parts[-i:], 0) < 2:
                return ".".join(parts[-i:])
        return name


@dataclass(frozen=True)
class _Symbol:
    prefix: int
    name: str
    annotations: dict[str, str]


def _symbols(model: ProgramModel) -> list[_Symbol]:
    syms: list[_Symbol] = []
    for a in model.actions:
        syms.append(_Symbol(PREFIX_ACTION, a.name, a.annotations))
    for t in model.tables:
        syms.append(_Symbol(PREFIX_TABLE, t.name, t.annotations))
    for e in model.externs:
        if e.kind not in EXTERN_PREFIX:
            raise P4Error(f"extern '{e.name}' has kind '{e.kind}' that P4Info cannot describe")
        syms.append(_Symbol(EXTERN_PREFIX[e.kind], e.name, e.annotations))
    for h in model.controller_headers:
        syms.append(_Symbol(PREFIX_CONTROLLER_HEADER, h.name, {}))
    for d in model.digests:
        syms.append(_Symbol(PREFIX_DIGEST, d.name, {}))
    for v in model.value_sets:
        syms.append(_Symbol(PREFIX_VALUE_SET, v.name, {}))
    return syms


def assign_ids(model: ProgramModel) -> dict[tuple[int, str], int]:
    """The P4Runtime id of every object, keyed by (kind prefix, name)."""
    syms = _symbols(model)
    alloc = IdAllocator()
    out: dict[tuple[int, str], int] = {}
    by_prefix: dict[int, list[tuple[str, int | None]]] = {}
    for s in syms:
        by_prefix.setdefault(s.prefix, []).append((s.name, _int_annotation(s.annotations, "id")))
    # Explicit ids of every kind are reserved before any name is hashed, as in p4c.
    explicit_first: dict[int, dict[str, int]] = {}
    for prefix in sorted(by_prefix):
        explicit_first[prefix] = alloc.assign(prefix, [(n, i) for n, i in by_prefix[prefix] if i is not None])
    for prefix in sorted(by_prefix):
        hashed = alloc.assign(prefix, [(n, None) for n, i in by_prefix[prefix] if n not in explicit_first[prefix]])
        for name, ident in {**explicit_first[prefix], **hashed}.items():
            out[(prefix, name)] = ident
    return out


def _preamble(pre: p4info_pb2.Preamble, ident: int, name: str, alias: str, annotations: dict[str, str]) -> None:
    pre.id = ident
    pre.name = name
    pre.alias = alias
    _field_annotations(pre, annotations)


def _field_annotations(msg, annotations: dict[str, str]) -> None:
    """Annotations and @brief/@description docs of a preamble, match field or param."""
    for key, body in annotations.items():
        if key in _HIDDEN_ANNOTATIONS:
            continue
        msg.annotations.append(format_annotation(key, body))
    brief = _string_annotation(annotations, "brief")
    desc = _string_annotation(annotations, "description")
    if brief is not None:
        msg.doc.brief = brief
    if desc is not None:
        msg.doc.description = desc


def _numbered(fields: tuple[Field, ...] | tuple, what: str, owner: str) -> list[int]:
    """Ids 1..n, or the fields' own @id annotations when every one is unique."""
    ids: list[int] = []
    for i, f in enumerate(fields, start=1):
        explicit = _int_annotation(f.annotations, "id")
        ids.append(explicit if explicit is not None else i)
    if len(set(ids)) != len(ids):
        raise P4Error(f"{what} ids of '{owner}' are not unique (check their @id annotations)")
    return ids


# The id p4c assigns to the object of a kind (its id prefix) and a name.
_Pid = Callable[[int, str], int]


def build_p4info(model: ProgramModel) -> p4info_pb2.P4Info:
    """The P4Info of ``model``, with ids and aliases as p4c would assign them."""
    ids = assign_ids(model)
    suffixes = SuffixSet([s.name for s in _symbols(model)])
    info = p4info_pb2.P4Info()
    info.pkg_info.arch = model.arch

    def pid(prefix: int, name: str) -> int:
        return ids[(prefix, name)]

    for t in model.tables:
        _add_table(info, model, t, pid, suffixes)
    for a in model.actions:
        _add_action(info, a, pid, suffixes)
    for e in model.externs:
        _add_extern(info, model, e, ids, suffixes)
    for h in model.controller_headers:
        _add_controller_header(info, h, pid, suffixes)
    for v in model.value_sets:
        _add_value_set(info, v, pid, suffixes)
    for d in model.digests:
        _add_digest(info, d, pid, suffixes)
    return info


def _add_table(info: p4info_pb2.P4Info, model: ProgramModel, t: Table, pid: _Pid, suffixes: SuffixSet) -> None:
    msg = info.tables.add()
    _preamble(msg.preamble, pid(PREFIX_TABLE, t.name), t.name, suffixes.alias(t.name), t.annotations)
    keys = t.match_keys
    for kid, k in zip(_numbered(keys, "match field", t.name), keys, strict=False):
        mf = msg.match_fields.add()
        mf.id = kid
        mf.name = k.name
        mf.bitwidth = k.bitwidth
        if k.match_kind in _MATCH_TYPE:
            mf.match_type = _MATCH_TYPE[k.match_kind]
        else:
            mf.other_match_type = k.match_kind
        _field_annotations(mf, k.annotations)
    for ref in t.actions:
        try:
            model.action(ref.name)
        except KeyError:
            raise P4Error(f"table '{t.name}' lists action '{ref.name}' that the program does not declare") from None
        ar = msg.action_refs.add()
        ar.id = pid(PREFIX_ACTION, ref.name)
        ar.scope = _SCOPE.get(ref.scope, p4info_pb2.ActionRef.TABLE_AND_DEFAULT)
        ref_annotations = dict(ref.annotations)
        # p4c marks scoped action references with the annotation that scoped them
        # (also for the NoAction it adds itself as a default-only action).
        scope_annotation = {"default_only": "defaultonly", "table_only": "tableonly"}.get(ref.scope)
        if scope_annotation and scope_annotation not in ref_annotations:
            ref_annotations[scope_annotation] = ""
        for key, body in ref_annotations.items():
            if key not in _HIDDEN_ANNOTATIONS:
                ar.annotations.append(format_annotation(key, body))
    if t.default_is_const:
        msg.const_default_action_id = pid(PREFIX_ACTION, t.default_action)
    _initial_default_action(msg.initial_default_action, model, t, pid(PREFIX_ACTION, t.default_action))
    if t.implementation:
        msg.implementation_id = pid(PREFIX_ACTION_PROFILE, t.implementation)
    if t.direct_counter:
        msg.direct_resource_ids.append(pid(PREFIX_DIRECT_COUNTER, t.direct_counter))
    if t.direct_meter:
        msg.direct_resource_ids.append(pid(PREFIX_DIRECT_METER, t.direct_meter))
    msg.size = t.size
    msg.idle_timeout_behavior = (
        p4info_pb2.Table.NOTIFY_CONTROL if t.supports_idle_timeout else p4info_pb2.Table.NO_TIMEOUT
    )
    if t.const_entries is not None:
        msg.is_const_table = True
        msg.has_initial_entries = True


def _add_action(info: p4info_pb2.P4Info, a: Action, pid: _Pid, suffixes: SuffixSet) -> None:
    msg = info.actions.add()
    _preamble(msg.preamble, pid(PREFIX_ACTION, a.name), a.name, suffixes.alias(a.name), a.annotations)
    for pid_, p in zip(_numbered(a.params, "parameter", a.name), a.params, strict=False):
        par = msg.params.add()
        par.id = pid_
        par.name = p.name
        par.bitwidth = p.bitwidth
        _field_annotations(par, p.annotations)


def _add_controller_header(info: p4info_pb2.P4Info, h: ControllerHeader, pid: _Pid, suffixes: SuffixSet) -> None:
    msg = info.controller_packet_metadata.add()
    _preamble(
        msg.preamble,
        pid(PREFIX_CONTROLLER_HEADER, h.name),
        h.name,
        suffixes.alias(h.name),
        {"controller_header": f'"{h.name}"'},
    )
    for mid, f in zip(_numbered(h.fields, "metadata", h.name), h.fields, strict=False):
        md = msg.metadata.add()
        md.id = mid
        md.name = f.name
        md.bitwidth = f.bitwidth
        _field_annotations(md, f.annotations)


def _add_value_set(info: p4info_pb2.P4Info, v: ValueSet, pid: _Pid, suffixes: SuffixSet) -> None:
    msg = info.value_sets.add()
    _preamble(msg.preamble, pid(PREFIX_VALUE_SET, v.name), v.name, suffixes.alias(v.name), {})
    for mid, f in zip(_numbered(v.fields, "match field", v.name), v.fields, strict=False):
        mf = msg.match.add()
        mf.id = mid
        mf.name = f.name
        mf.bitwidth = f.bitwidth
        kind = f.annotations.get("match", "exact").strip() or "exact"
        mf.match_type = _MATCH_TYPE.get(kind, p4info_pb2.MatchField.EXACT)
    msg.size = v.size


def _add_digest(info: p4info_pb2.P4Info, d: Digest, pid: _Pid, suffixes: SuffixSet) -> None:
    msg = info.digests.add()
    _preamble(msg.preamble, pid(PREFIX_DIGEST, d.name), d.name, suffixes.alias(d.name), {})
    if d.tuple_type:  # a digest of a list: its members by position, as p4c writes them
        for f in d.fields:
            msg.type_spec.tuple.members.add().bitstring.bit.bitwidth = f.bitwidth
        return
    msg.type_spec.struct.name = d.name
    st = info.type_info.structs[d.name]
    for f in d.fields:
        mem = st.members.add()
        mem.name = f.name
        mem.type_spec.bitstring.bit.bitwidth = f.bitwidth


def _initial_default_action(call: p4info_pb2.TableActionCall, model: ProgramModel, t: Table,
                            action_id: int) -> None:
    """P4Runtime 1.4's ``initial_default_action``: p4c fills it for every table (its
    front end gives a table without ``default_action`` an implicit ``NoAction()``), each
    argument on the parameter's full width in bytes (10 on bit<32>: 00 00 00 0a)."""
    call.action_id = action_id
    try:
        params = model.action(t.default_action).params
    except KeyError:
        raise P4Error(f"table '{t.name}' has default action '{t.default_action}' that the "
                      "program does not declare") from None
    if len(params) != len(t.default_args):
        raise P4Error(f"default action of table '{t.name}' has {len(t.default_args)} argument(s); "
                      f"'{t.default_action}' takes {len(params)}")
    for param_id, p, value in zip(_numbered(params, "parameter", t.default_action), params, t.default_args, strict=False):
        arg = call.arguments.add()
        arg.param_id = param_id
        arg.value = value.to_bytes((p.bitwidth + 7) // 8, "big")


def _add_extern(
    info: p4info_pb2.P4Info,
    model: ProgramModel,
    e: Extern,
    ids: dict[tuple[int, str], int],
    suffixes: SuffixSet,
) -> None:
    prefix = EXTERN_PREFIX[e.kind]
    ident = ids[(prefix, e.name)]
    alias = suffixes.alias(e.name)
    msg: Any  # the P4Info message class of this kind of extern

    def table_id(name: str) -> int:
        try:
            return ids[(PREFIX_TABLE, name)]
        except KeyError:
            raise P4Error(f"extern '{e.name}' names table '{name}' that the program does not declare") from None

    if e.kind in ("counter", "direct_counter"):
        msg = info.counters.add() if e.kind == "counter" else info.direct_counters.add()
        _preamble(msg.preamble, ident, e.name, alias, e.annotations)
        msg.spec.unit = _COUNTER_UNIT.get(e.unit, p4info_pb2.CounterSpec.BOTH)
        if e.kind == "counter":
            msg.size = e.size
        elif e.tables:
            msg.direct_table_id = table_id(e.tables[0])
    elif e.kind in ("meter", "direct_meter"):
        msg = info.meters.add() if e.kind == "meter" else info.direct_meters.add()
        _preamble(msg.preamble, ident, e.name, alias, e.annotations)
        msg.spec.unit = _METER_UNIT.get(e.unit, p4info_pb2.MeterSpec.BYTES)
        if e.kind == "meter":
            msg.size = e.size
        elif e.tables:
            msg.direct_table_id = table_id(e.tables[0])
    elif e.kind == "register":
        msg = info.registers.add()
        _preamble(msg.preamble, ident, e.name, alias, e.annotations)
        msg.type_spec.bitstring.bit.bitwidth = e.bitwidth
        msg.size = e.size
    else:  # action_profile / action_selector
        msg = info.action_profiles.add()
        _preamble(msg.preamble, ident, e.name, alias, e.annotations)
        for t in e.tables:
            msg.table_ids.append(table_id(t))
        msg.with_selector = e.kind == "action_selector"
        msg.size = e.size
        max_group = _int_annotation(e.annotations, "max_group_size")
        if max_group is not None:
            msg.max_group_size = max_group
        if e.kind == "action_selector":
            semantics = _string_annotation(e.annotations, "selector_size_semantics")
            if semantics is not None and semantics.strip().lower() == "sum_of_members":
                msg.sum_of_members.SetInParent()
            elif semantics is not None:
                msg.sum_of_weights.SetInParent()


def p4info_text(model: ProgramModel) -> str:
    """P4Info in protobuf text format, as ``p4c --p4runtime-files x.txt`` writes it."""
    return P4INFO_TEXT_HEADER + text_format.MessageToString(build_p4info(model))


def parse_p4info_text(text: str) -> p4info_pb2.P4Info:
    """Read a text-format P4Info (comments allowed); raises P4Error on bad text."""
    info = p4info_pb2.P4Info()
    try:
        text_format.Parse(text, info)
    except text_format.ParseError as exc:
        raise P4Error(f"P4Info text does not parse: {exc}; write it with p4info_text() or p4c") from None
    return info
