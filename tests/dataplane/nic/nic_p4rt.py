"""nic_plan's writes as P4Runtime updates, for tests that program a NIC over gRPC.

Why: the controller will program NICs over P4Runtime; tests that go that way use the
same entries as the Switch-API tests, translated here (model names -> P4Info ids,
canonical bytestrings) with the P4Runtime test client's helpers.
"""

from __future__ import annotations

from typing import Any

from p4target.runtime.entries import Lpm, Ternary
from tests.dataplane.nic.nic_plan import GroupWrite, MemberWrite, Write


def to_updates(writes: list[Write], names) -> list:
    """nic_plan's writes as P4Runtime updates (model names -> P4Info ids)."""
    from finsy.proto.p4.v1 import p4runtime_pb2

    from tests.p4runtime.p4rt_client import enc, ins, update

    out = []
    for w in writes:
        if isinstance(w, MemberWrite):
            mem = p4runtime_pb2.ActionProfileMember(
                action_profile_id=names.id_of("action_profiles", w.profile), member_id=w.member_id)
            mem.action.CopyFrom(names.act(w.action, **w.params))
            out.append(update("m", action_profile_member=mem))
        elif isinstance(w, GroupWrite):
            g = p4runtime_pb2.ActionProfileGroup(
                action_profile_id=names.id_of("action_profiles", w.profile), group_id=w.group_id)
            for mid, weight, watch in w.members:
                g.members.add(member_id=mid, weight=weight, watch_port=enc(watch))
            out.append(update("g", action_profile_group=g))
        else:
            m: dict[str, Any] = {}
            for fname, v in w.match.items():
                if isinstance(v, Lpm):
                    m[fname] = ("lpm", v.value, v.prefix_len)
                elif isinstance(v, Ternary):
                    m[fname] = ("ternary", v.value, v.mask)
                else:
                    m[fname] = v.value
            if w.group is not None:
                e = names.entry(w.table, m, priority=w.priority or 0)
                e.action.action_profile_group_id = w.group
            else:
                e = names.entry(w.table, m, w.action, priority=w.priority or 0, **w.params)
            out.append(ins(e))
    return out
