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
    for batch_no in range(20):
        batch = []
        for i in range(100):
            base = ins(names.entry("exact_t", {"hdr.eth.dst_addr": rng.randrange(1, 300)}, "fwd", port=rng.randrange(0, 8)))
            batch.append(_mutate(rng, base, names) if rng.random() < 0.8 else base)
        codes = client.write_codes(*batch)
        assert code_pb2.INTERNAL not in codes and code_pb2.UNKNOWN not in codes
        for u, code in zip(batch, codes):
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
