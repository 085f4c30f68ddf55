"""Table match engines and their control-plane checks, driven through TableRuntime."""

from __future__ import annotations

import pytest
from rt_helpers import model, state, table

from p4target.errors import EntryError
from p4target.model import ActionRef, ConstEntry, Extern, KeyMatch
from p4target.runtime.entries import Exact, Lpm, Optional, Range, Ternary
from p4target.runtime.externs import DirectMeter
from p4target.runtime.tables import TableRuntime

FWD, SET_MAC, DROP, NOACTION = 0, 1, 2, 3


def make(keys, **kw) -> TableRuntime:
    t = table("Ingress.t", keys, **kw)
    return TableRuntime(t, model([t]), has_direct_counter=kw.get("direct_counter") is not None)


def test_exact_hit_miss_and_default() -> None:
    t = make([("hdr.eth.dst", 48, "exact"), ("meta.vrf", 8, "exact")])
    t.add({"hdr.eth.dst": Exact(0xAABB), "meta.vrf": 3}, "Ingress.fwd", {"port": 7})
    st = state()
    assert t.apply(st, (0xAABB, 3), None) == (FWD, (7,), True)
    assert t.apply(st, (0xAABB, 4), None) == (NOACTION, (), False)
    t.set_default("Ingress.fwd", {"port": 9})
    assert t.apply(st, (1, 1), None) == (FWD, (9,), False)
    t.modify({"hdr.eth.dst": 0xAABB, "meta.vrf": 3}, "Ingress.set_mac", {"mac": 5, "port": 1})
    assert t.apply(st, (0xAABB, 3), None) == (SET_MAC, (5, 1), True)
    t.delete({"hdr.eth.dst": 0xAABB, "meta.vrf": 3})
    assert t.apply(st, (0xAABB, 3), None)[2] is False
    assert t.engine == "exact"


def test_lpm_longest_prefix_wins_and_follows_deletes() -> None:
    t = make([("hdr.ipv6.dst", 128, "lpm")])
    base = 0xFCBB_BB00 << 96
    t.add({"hdr.ipv6.dst": Lpm(base, 32)}, "Ingress.fwd", {"port": 1})
    t.add({"hdr.ipv6.dst": Lpm(base | (0x0100 << 80), 48)}, "Ingress.fwd", {"port": 2})
    t.add({}, "Ingress.fwd", {"port": 3})  # /0: the catch-all route
    st = state()
    assert t.apply(st, (base | (0x0100 << 80) | 5,), None) == (FWD, (2,), True)
    assert t.apply(st, (base | (0x0200 << 80),), None) == (FWD, (1,), True)
    assert t.apply(st, (1,), None) == (FWD, (3,), True)
    t.delete({"hdr.ipv6.dst": Lpm(base | (0x0100 << 80), 48)})
    assert t.apply(st, (base | (0x0100 << 80) | 5,), None) == (FWD, (1,), True)
    assert t.engine == "lpm"
    assert sorted(e.match.get("hdr.ipv6.dst", Lpm(0, 0)).prefix_len for e in t.entries()) == [0, 32]


def test_lpm_with_exact_part() -> None:
    t = make([("meta.vrf", 8, "exact"), ("hdr.ipv4.dst", 32, "lpm")])
    t.add({"meta.vrf": 1, "hdr.ipv4.dst": Lpm(0x0A000000, 8)}, "Ingress.fwd", {"port": 1})
    t.add({"meta.vrf": 2, "hdr.ipv4.dst": Lpm(0x0A010000, 16)}, "Ingress.fwd", {"port": 2})
    st = state()
    assert t.apply(st, (1, 0x0A010203), None) == (FWD, (1,), True)
    assert t.apply(st, (2, 0x0A010203), None) == (FWD, (2,), True)
    assert t.apply(st, (2, 0x0A020203), None)[2] is False


def test_ternary_priority_higher_value_wins_then_insertion_order() -> None:
    t = make([("hdr.ipv6.next_hdr", 8, "ternary"), ("meta.port", 9, "exact")])
    t.add({"hdr.ipv6.next_hdr": Ternary(0x11, 0xFF), "meta.port": 1}, "Ingress.fwd", {"port": 1}, priority=10)
    t.add({"meta.port": 1}, "Ingress.fwd", {"port": 2}, priority=5)
    t.add({"hdr.ipv6.next_hdr": Ternary(0x10, 0xF0), "meta.port": 1}, "Ingress.fwd", {"port": 3}, priority=20)
    st = state()
    assert t.apply(st, (0x11, 1), None) == (FWD, (3,), True)
    assert t.apply(st, (0x06, 1), None) == (FWD, (2,), True)
    t.delete({"hdr.ipv6.next_hdr": Ternary(0x10, 0xF0), "meta.port": 1}, priority=20)
    assert t.apply(st, (0x11, 1), None) == (FWD, (1,), True)
    # same match, another priority: a different entry
    t.add({"meta.port": 1}, "Ingress.drop", {}, priority=7)
    assert t.apply(st, (0x06, 1), None) == (DROP, (), True)
    # equal priorities: the first installed wins
    t.add({"meta.port": 2}, "Ingress.fwd", {"port": 8}, priority=3)
    t.add({"hdr.ipv6.next_hdr": Ternary(6, 0xFF), "meta.port": 2}, "Ingress.fwd", {"port": 9}, priority=3)
    assert t.apply(st, (6, 2), None) == (FWD, (8,), True)
    assert [e.priority for e in t.entries()] == [10, 7, 5, 3, 3]


def test_range_and_optional() -> None:
    t = make([("hdr.udp.dport", 16, "range"), ("hdr.eth.type", 16, "optional")])
    t.add({"hdr.udp.dport": Range(4791, 4791), "hdr.eth.type": Optional(0x86DD)}, "Ingress.fwd", {"port": 1}, 9)
    t.add({"hdr.udp.dport": Range(1000, 5000)}, "Ingress.fwd", {"port": 2}, 5)
    st = state()
    assert t.apply(st, (4791, 0x86DD), None) == (FWD, (1,), True)
    assert t.apply(st, (4791, 0x0800), None) == (FWD, (2,), True)
    assert t.apply(st, (999, 0x86DD), None)[2] is False
    assert t.apply(st, (5000, 0), None) == (FWD, (2,), True)
    listed = {e.priority: e.match for e in t.entries()}
    assert listed[5] == {"hdr.udp.dport": Range(1000, 5000)}


@pytest.mark.parametrize(
    "call, kind",
    [
        (lambda t: t.add({"nope": 1}, "Ingress.fwd", {"port": 1}), "invalid"),
        (lambda t: t.add({"k": Lpm(0x0A, 8)}, "Ingress.fwd", {"port": 1}), "invalid"),
        (lambda t: t.add({"k": 1 << 16}, "Ingress.fwd", {"port": 1}), "invalid"),
        (lambda t: t.add({"k": 1}, "Ingress.fwd", {"port": 512}), "invalid"),
        (lambda t: t.add({"k": 1}, "Ingress.fwd", {}), "invalid"),
        (lambda t: t.add({"k": 1}, "Ingress.fwd", {"port": 1, "x": 2}), "invalid"),
        (lambda t: t.add({"k": 1}, "Ingress.nope", {}), "invalid"),
        (lambda t: t.add({"k": 1}, "Ingress.fwd", {"port": 1}, priority=3), "invalid"),
        (lambda t: t.add({"k": 1}, "Ingress.only_default", {}), "invalid"),
        (lambda t: t.set_default("Ingress.only_table", {}), "invalid"),
        (lambda t: t.add({}, "Ingress.fwd", {"port": 1}), "invalid"),
        (lambda t: t.delete({"k": 99}), "not_found"),
        (lambda t: t.modify({"k": 99}, "NoAction", {}), "not_found"),
    ],
)
def test_bad_requests_are_refused_with_their_kind(call, kind) -> None:
    from p4target.model import Action, ProgramModel

    t0 = table("Ingress.t", [("k", 16, "exact")], actions=(
        ActionRef("Ingress.fwd"), ActionRef("NoAction"),
        ActionRef("Ingress.only_default", "default_only"), ActionRef("Ingress.only_table", "table_only"),
    ))
    m = model([t0])
    m = ProgramModel(m.source, m.arch, m.tables, m.actions + (
        Action("Ingress.only_default", ()), Action("Ingress.only_table", ())), m.externs)
    t = TableRuntime(t0, m)
    with pytest.raises(EntryError) as err:
        call(t)
    assert err.value.kind == kind
    assert "Ingress.t" in str(err.value)
    assert len(t) == 0


def test_priority_rules_and_exists_and_full() -> None:
    t = make([("k", 8, "ternary")], size=2)
    with pytest.raises(EntryError) as err:
        t.add({"k": Ternary(1, 0xFF)}, "Ingress.fwd", {"port": 1})
    assert err.value.kind == "invalid" and "priority" in str(err.value)
    with pytest.raises(EntryError) as err:
        t.add({"k": Ternary(3, 1)}, "Ingress.fwd", {"port": 1}, priority=1)
    assert err.value.kind == "invalid" and "outside mask" in str(err.value)
    t.add({"k": Ternary(1, 0xFF)}, "Ingress.fwd", {"port": 1}, priority=1)
    with pytest.raises(EntryError) as err:
        t.add({"k": Ternary(1, 0xFF)}, "Ingress.fwd", {"port": 2}, priority=1)
    assert err.value.kind == "exists"
    t.add({"k": Ternary(2, 0xFF)}, "Ingress.fwd", {"port": 1}, priority=1)
    with pytest.raises(EntryError) as err:
        t.add({"k": Ternary(3, 0xFF)}, "Ingress.fwd", {"port": 1}, priority=1)
    assert err.value.kind == "full"
    assert len(t) == 2


def test_failed_modify_leaves_the_entry_as_it_was() -> None:
    t = make([("k", 8, "exact")])
    t.add({"k": 1}, "Ingress.fwd", {"port": 4})
    with pytest.raises(EntryError):
        t.modify({"k": 1}, "Ingress.set_mac", {"mac": 1 << 48, "port": 1})
    assert t.apply(state(), (1,), None) == (FWD, (4,), True)
    assert t.entries()[0].params == {"port": 4}


def test_const_entries_and_const_default() -> None:
    ces = (
        ConstEntry((KeyMatch("ternary", 0x11, 0xFF),), "Ingress.fwd", (1,)),
        ConstEntry((KeyMatch("dontcare"),), "Ingress.fwd", (2,)),
    )
    t0 = table("Ingress.c", [("k", 8, "ternary")], const_entries=ces, default_is_const=True,
               default_action="Ingress.drop")
    t = TableRuntime(t0, model([t0]))
    st = state()
    assert t.apply(st, (0x11,), None) == (FWD, (1,), True)  # the first const entry wins
    assert t.apply(st, (0x12,), None) == (FWD, (2,), True)
    for call in (lambda: t.add({"k": Ternary(1, 1)}, "Ingress.fwd", {"port": 1}, 1),
                 lambda: t.clear(), lambda: t.set_default("NoAction")):
        with pytest.raises(EntryError) as err:
            call()
        assert err.value.kind == "const"
    assert all(e.is_const for e in t.entries())


def test_direct_counter_and_direct_meter_on_hit() -> None:
    now = [0]
    dm_ext = Extern("direct_meter", "Ingress.dm", unit="packets", tables=("Ingress.t",))
    dm = DirectMeter(dm_ext, lambda: now[0])
    t0 = table("Ingress.t", [("k", 8, "exact")], direct_counter="Ingress.dc", direct_meter="Ingress.dm")
    t = TableRuntime(t0, model([t0], [dm_ext]), direct_meter=dm, has_direct_counter=True)
    t.add({"k": 1}, "Ingress.fwd", {"port": 1})
    st = state(packet_length=60)
    for _ in range(3):
        t.apply(st, (1,), None)
    t.apply(st, (2,), None)  # a miss counts nothing
    assert t.direct_counter({"k": 1}) == (3, 180)
    # 1 packet/s committed, burst 1; 2 packets/s peak, burst 2
    t.set_direct_meter({"k": 1}, None, (1.0, 1, 2.0, 2))
    colours = []
    for _ in range(4):
        st = state()
        t.apply(st, (1,), None)
        colours.append(dm.read(st))
    assert colours == [0, 1, 2, 2]
    assert dm.read(state()) == 0  # another packet: not metered by this table
    now[0] = 1_000_000  # one second later: buckets refilled
    st = state()
    t.apply(st, (1,), None)
    assert dm.read(st) == 0
    assert t.entries()[0].counters == (8, 180 + 5 * 100)
