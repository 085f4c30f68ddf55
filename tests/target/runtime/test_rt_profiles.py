"""Action profiles and selectors: members, groups, weights and watch-port failover."""

from __future__ import annotations

import pytest
from rt_helpers import model, state, table

from p4target.errors import EntryError
from p4target.model import Extern, KeyField
from p4target.runtime.entries import Group, Member
from p4target.runtime.hashes import HashEngine
from p4target.runtime.profiles import ActionProfile
from p4target.runtime.tables import TableRuntime

FWD = 0


def build(algorithm: str = "crc16"):
    down: set[int] = set()
    t0 = table("Ingress.spray", [("hdr.udp.sport", 16, "exact")], implementation="Ingress.sel")
    t0 = type(t0)(**{**t0.__dict__, "keys": t0.keys + (KeyField("hdr.ipv6.flow", 20, "selector"),)})
    ext = Extern("action_selector", "Ingress.sel", size=64, algorithm=algorithm, tables=("Ingress.spray",))
    m = model([t0], [ext])
    prof = ActionProfile(ext, m, HashEngine().function(algorithm), lambda p: p not in down)
    tbl = TableRuntime(t0, m, profile=prof)
    prof.table_refs = tbl._refs
    return prof, tbl, down


def ports_seen(tbl, flows) -> list[int]:
    return [tbl.apply(state(), (1,), (f,))[1][0] for f in flows]


def test_member_entries_follow_member_modify() -> None:
    prof, tbl, _ = build()
    prof.add_member(1, "Ingress.fwd", {"port": 5})
    tbl.add({"hdr.udp.sport": 1}, Member(1))
    assert tbl.apply(state(), (1,), (0,)) == (FWD, (5,), True)
    prof.modify_member(1, "Ingress.fwd", {"port": 6})
    assert tbl.apply(state(), (1,), (0,)) == (FWD, (6,), True)
    with pytest.raises(EntryError) as err:
        prof.delete_member(1)
    assert err.value.kind == "precondition"
    with pytest.raises(EntryError) as err:
        tbl.add({"hdr.udp.sport": 2}, "Ingress.fwd", {"port": 1})
    assert err.value.kind == "invalid"
    with pytest.raises(EntryError) as err:
        tbl.add({"hdr.udp.sport": 2}, Member(9))
    assert err.value.kind == "not_found"


def test_group_per_flow_is_stable_and_uses_every_member() -> None:
    prof, tbl, _ = build()
    for mid in range(4):
        prof.add_member(mid, "Ingress.fwd", {"port": 10 + mid})
    prof.add_group(7, [(mid, 1, 10 + mid) for mid in range(4)])
    tbl.add({"hdr.udp.sport": 1}, Group(7))
    flows = list(range(200))
    first = ports_seen(tbl, flows)
    assert first == ports_seen(tbl, flows)  # same flow, same member
    assert set(first) == {10, 11, 12, 13}


def test_watch_port_down_skips_member_and_up_restores_it() -> None:
    prof, tbl, down = build()
    for mid in range(4):
        prof.add_member(mid, "Ingress.fwd", {"port": 10 + mid})
    prof.add_group(7, [(mid, 1, 10 + mid) for mid in range(4)])
    tbl.add({"hdr.udp.sport": 1}, Group(7))
    flows = list(range(300))
    before = ports_seen(tbl, flows)
    down.add(12)
    prof.port_status_changed()
    during = ports_seen(tbl, flows)
    assert 12 not in during and set(during) == {10, 11, 13}
    down.discard(12)
    prof.port_status_changed()
    assert ports_seen(tbl, flows) == before
    down.update({10, 11, 12, 13})
    prof.port_status_changed()
    assert tbl.apply(state(), (1,), (3,))[2] is False  # nothing live: the default action


def test_weights_share_the_choice() -> None:
    prof, tbl, _ = build("crc16")
    prof.add_member(1, "Ingress.fwd", {"port": 1})
    prof.add_member(2, "Ingress.fwd", {"port": 2})
    prof.add_group(3, [(1, 3, None), (2, 1, None)])
    tbl.add({"hdr.udp.sport": 1}, Group(3))
    seen = ports_seen(tbl, range(4000))
    assert 2700 < seen.count(1) < 3300 and seen.count(1) + seen.count(2) == 4000


def test_per_packet_selection_with_random_algorithm() -> None:
    import random

    rng = random.Random(1)
    t0 = table("Ingress.spray", [("k", 8, "exact")], implementation="Ingress.sel")
    ext = Extern("action_selector", "Ingress.sel", size=8, algorithm="random", tables=("Ingress.spray",))
    m = model([t0], [ext])
    eng = HashEngine(random_fn=lambda: rng.getrandbits(32))
    prof = ActionProfile(ext, m, eng.function("random"), lambda p: True)
    tbl = TableRuntime(t0, m, profile=prof)
    for mid in range(3):
        prof.add_member(mid, "Ingress.fwd", {"port": mid})
    prof.add_group(1, [0, 1, 2])
    tbl.add({"k": 0}, Group(1))
    seen = {tbl.apply(state(), (0,), ())[1][0] for _ in range(100)}  # one flow, many packets
    assert seen == {0, 1, 2}


def test_group_checks() -> None:
    prof, tbl, _ = build()
    prof.add_member(1, "Ingress.fwd", {"port": 1})
    for members, kind in (([(9, 1, None)], "not_found"), ([(1, 0, None)], "invalid"),
                          ([(1, 1, None), (1, 1, None)], "invalid")):
        with pytest.raises(EntryError) as err:
            prof.add_group(2, members)
        assert err.value.kind == kind
    assert not prof.groups
    prof.add_member(4, "Ingress.fwd", {"port": 4})
    with pytest.raises(EntryError) as err:
        prof.add_group(2, [1, 4], max_size=1)
    assert err.value.kind == "full"
    prof.add_group(2, [(1, 1, None)], max_size=1)
    with pytest.raises(EntryError) as err:
        prof.modify_group(2, [1, 4])
    assert err.value.kind == "full" and prof.groups[2].members == [(1, 1, None)]
    with pytest.raises(EntryError) as err:
        prof.add_group(2, [])
    assert err.value.kind == "exists"
    tbl.add({"hdr.udp.sport": 1}, Group(2))
    with pytest.raises(EntryError) as err:
        prof.delete_group(2)
    assert err.value.kind == "precondition"
    tbl.delete({"hdr.udp.sport": 1})
    prof.delete_group(2)
    prof.delete_member(1)
    with pytest.raises(EntryError) as err:
        prof.add_member(3, "Ingress.nope", {})
    assert err.value.kind == "invalid"
