"""Mutated Write requests: every update gets a canonical code, never INTERNAL, and the
table holds exactly the entries the server said OK to."""

from __future__ import annotations

import random

from finsy.proto.google.rpc import code_pb2
from finsy.proto.p4.v1 import p4runtime_pb2

from tests.p4runtime.p4rt_client import entity, ins


def _mutate(rng: random.Random, u: p4runtime_pb2.Update, names) -> p4runtime_pb2.Update:
    v = p4runtime_pb2.Update()
    v.CopyFrom(u)
    te = v.entity.table_entry
    choice = rng.randrange(10)
    if choice == 0:
        te.table_id = rng.choice([0, 1, te.table_id + 1, 0x02000000, rng.getrandbits(32)])
    elif choice == 1 and te.match:
        te.match[0].field_id = rng.choice([0, 2, 99])
    elif choice == 2 and te.match:
        te.match[0].exact.value = rng.randbytes(rng.randrange(0, 10))
    elif choice == 3:
        te.priority = rng.choice([-1, 1, 2 ** 31 - 1])
    elif choice == 4:
        te.action.action.action_id = rng.choice([0, names.action_id("set_out"), rng.getrandbits(32)])
    elif choice == 5 and te.action.action.params:
        te.action.action.params[0].value = rng.randbytes(rng.randrange(0, 4))
    elif choice == 6:
        te.action.action.params.add(param_id=rng.randrange(0, 4), value=b"\x01")
    elif choice == 7:
        te.is_default_action = True
    elif choice == 8:
        v.type = rng.choice([0, 1, 2, 3, 7])
    else:
        te.action.action_profile_member_id = rng.randrange(0, 5)
    return v


def test_mutated_writes_get_codes_and_leave_exactly_the_accepted_entries(client, names, rig) -> None:
    rng = random.Random(4791)
    accepted: set[bytes] = set()
    for _batch in range(20):
        batch = []
        for _ in range(100):
            base = ins(names.entry("exact_t", {"hdr.eth.dst_addr": rng.randrange(1, 300)}, "fwd", port=rng.randrange(0, 8)))
            batch.append(_mutate(rng, base, names) if rng.random() < 0.8 else base)
        codes = client.write_codes(*batch)
        assert code_pb2.INTERNAL not in codes and code_pb2.UNKNOWN not in codes
        for u, code in zip(batch, codes, strict=False):
            te = u.entity.table_entry
            if code == code_pb2.OK and te.table_id == names.table_id("exact_t") and not te.is_default_action:
                key = te.match[0].exact.value.lstrip(b"\x00") or b"\x00"
                if u.type == p4runtime_pb2.Update.INSERT:
                    accepted.add(key)
                elif u.type == p4runtime_pb2.Update.DELETE:
                    accepted.discard(key)
    got = client.read(entity(table_entry=p4runtime_pb2.TableEntry(table_id=names.table_id("exact_t"))))
    assert {e.table_entry.match[0].exact.value for e in got} == accepted
    assert client.stub.Capabilities(p4runtime_pb2.CapabilitiesRequest()).p4runtime_api_version


# ---- writes the P4Runtime specification says must be refused ----------------------

OK, INVALID, OUT_OF_RANGE, NOT_FOUND, EXISTS, DENIED = (
    code_pb2.OK, code_pb2.INVALID_ARGUMENT, code_pb2.OUT_OF_RANGE, code_pb2.NOT_FOUND, code_pb2.ALREADY_EXISTS,
    code_pb2.PERMISSION_DENIED)
MAC = "hdr.eth.dst_addr"  # exact_t's key, bit<48>


def _exact(names, **changes) -> p4runtime_pb2.Update:
    """An INSERT of exact_t (dst 0x0A, fwd port 1) with one thing changed."""
    e = names.entry("exact_t", {MAC: 0x0A}, "fwd", port=1)
    if "value" in changes:
        e.match[0].exact.value = changes["value"]
    if "priority" in changes:
        e.priority = changes["priority"]
    if "param" in changes:
        e.action.action.params[0].value = changes["param"]
    return ins(e)


def _acl(names, match: dict, priority: int = 1) -> p4runtime_pb2.Update:
    return ins(names.entry("acl_t", match, "set_out", priority=priority, v=1))


def _twice_the_field(names) -> p4runtime_pb2.Update:
    u = _exact(names)
    u.entity.table_entry.match.add().CopyFrom(u.entity.table_entry.match[0])
    return u


def _ternary_kind_on_exact(names) -> p4runtime_pb2.Update:
    e = names.entry("exact_t", {MAC: ("ternary", 0x0A, 0xFF)}, "fwd", port=1)
    return ins(e)


def _missing_param(names) -> p4runtime_pb2.Update:
    u = _exact(names)
    del u.entity.table_entry.action.action.params[:]
    return u


def _no_match(names) -> p4runtime_pb2.Update:
    u = _exact(names)
    del u.entity.table_entry.match[:]
    return u


def _default_with_match(names) -> p4runtime_pb2.Update:
    e = names.entry("exact_t", {MAC: 0x0A}, "drop")
    e.is_default_action = True
    return ins(e, "MODIFY")


def _unspecified_type(names) -> p4runtime_pb2.Update:
    u = _exact(names)
    u.type = p4runtime_pb2.Update.UNSPECIFIED
    return u


# (what, the update, the code): written from the P4Runtime specification, not from the
# server: "Bytestrings" (a string of zero bytes or a value wider than its field:
# OUT_OF_RANGE), "Table Entry" (match kinds, don't-care fields omitted, priority only with
# ternary/range/optional keys, action parameters: INVALID_ARGUMENT; an action outside its
# scope: PERMISSION_DENIED), "Constant Tables" (PERMISSION_DENIED), "Default Entry" and
# the Write updates (NOT_FOUND for a missing entry, ALREADY_EXISTS for a second INSERT)
REFUSED = [
    ("an exact value of zero bytes", lambda n: _exact(n, value=b""), OUT_OF_RANGE),
    ("an exact value wider than the field (49 bits)", lambda n: _exact(n, value=b"\x01" + bytes(6)), OUT_OF_RANGE),
    ("an action parameter wider than bit<9>", lambda n: _exact(n, param=b"\x02\x00"), OUT_OF_RANGE),
    ("a priority on a table without ternary/range/optional keys", lambda n: _exact(n, priority=5), INVALID),
    ("no priority on a ternary table", lambda n: _acl(n, {"hdr.t.k16": ("ternary", 0x12, 0xFF)}, priority=0), INVALID),
    ("ternary value bits outside the mask", lambda n: _acl(n, {"hdr.t.k16": ("ternary", 0x13, 0xF0)}), INVALID),
    ("a ternary don't-care given (mask 0)", lambda n: _acl(n, {"hdr.t.k16": ("ternary", 0, 0)}), INVALID),
    ("a range with low above high", lambda n: _acl(n, {"hdr.t.k8": ("range", 9, 5)}), INVALID),
    ("a full range given (don't care)", lambda n: _acl(n, {"hdr.t.k8": ("range", 0, 255)}), INVALID),
    ("lpm bits past the prefix", lambda n: ins(n.entry("lpm_t", {"hdr.t.key32": ("lpm", 0x0A000001, 8)}, "lpm_hit", v=1)),
     INVALID),
    ("an lpm prefix of 0 given (don't care)", lambda n: ins(n.entry("lpm_t", {"hdr.t.key32": ("lpm", 0, 0)}, "lpm_hit", v=1)),
     INVALID),
    ("an lpm prefix longer than the field", lambda n: ins(n.entry("lpm_t", {"hdr.t.key32": ("lpm", 0x0A000000, 33)},
                                                                    "lpm_hit", v=1)), INVALID),
    ("the same match field twice", _twice_the_field, INVALID),
    ("a ternary match on an exact field", _ternary_kind_on_exact, INVALID),
    ("no match on an exact table", _no_match, INVALID),
    ("an action parameter left out", _missing_param, INVALID),
    ("an action the table does not have", lambda n: ins(n.entry("exact_t", {MAC: 0x0A}, "set_out", v=1)), INVALID),
    ("a default-only action in an entry", lambda n: ins(n.entry("lpm_t", {"hdr.t.key32": ("lpm", 0x0A000000, 8)},
                                                                 "NoAction")), DENIED),
    ("a default action with a match", _default_with_match, INVALID),
    ("an entry in a table with const entries", lambda n: ins(n.entry("const_t", {"hdr.t.k8": 1}, "set_out", v=1)),
     DENIED),
    ("an update of type UNSPECIFIED", _unspecified_type, INVALID),
    ("a MODIFY of a missing entry", lambda n: ins(n.entry("exact_t", {MAC: 0x0B}, "fwd", port=1), "MODIFY"), NOT_FOUND),
    ("a DELETE of a missing entry", lambda n: ins(n.entry("exact_t", {MAC: 0x0B}), "DELETE"), NOT_FOUND),
]


def test_writes_the_specification_refuses_get_their_codes_and_change_nothing(client, names) -> None:
    got = {what: client.write_codes(make(names))[0] for what, make, _ in REFUSED}
    assert got == {what: code for what, _, code in REFUSED}
    for table in ("exact_t", "acl_t", "lpm_t"):
        assert client.read(entity(table_entry=p4runtime_pb2.TableEntry(table_id=names.table_id(table)))) == [], table
    # the same entry, well formed, is accepted; then a second INSERT of it exists already
    assert client.write_codes(_exact(names)) == [OK]
    assert client.write_codes(_exact(names)) == [EXISTS]
