"""Counters, registers and meters as the generated code and the control plane use them."""

from __future__ import annotations

import pytest
from rt_helpers import state

from p4target.errors import EntryError
from p4target.model import Extern
from p4target.runtime.externs import GREEN, RED, YELLOW, Counter, Meter, Register
from p4target.runtime.pre import ReplicationEngine


def test_counter_counts_packets_and_bytes_and_ignores_bad_index() -> None:
    c = Counter(Extern("counter", "Ingress.c", size=4, unit="packets_and_bytes"))
    c.count(state(64), 1)
    c.count(state(100), 1)
    c.count(state(100), 4)  # out of range: no-op, as BMv2
    c.count(state(100), -1)
    assert c.read(1) == (2, 164)
    assert c.read(0) == (0, 0)
    c.write(1, 5, 6)
    assert c.read(1) == (5, 6)
    with pytest.raises(EntryError) as err:
        c.read(4)
    assert err.value.kind == "out_of_range"


def test_register_truncates_and_reads_zero_out_of_range() -> None:
    r = Register(Extern("register", "Ingress.r", size=2, bitwidth=8))
    r.write(None, 0, 0x1FF)
    assert r.read(None, 0) == 0xFF
    r.write(None, 5, 1)
    assert r.read(None, 5) == 0
    r.cp_write(1, 7)
    assert r.cp_read(1) == 7
    with pytest.raises(EntryError) as err:
        r.cp_write(1, 256)
    assert err.value.kind == "invalid"


def test_meter_two_rate_three_colour_bytes() -> None:
    now = [0]
    m = Meter(Extern("meter", "Ingress.m", size=2, unit="bytes"), lambda: now[0])
    assert m.execute_meter(state(1000), 0) == GREEN  # unconfigured
    # committed 1000 B/s burst 1500 B; peak 2000 B/s burst 3000 B
    m.set(0, 1000, 1500, 2000, 3000)
    colours = [m.execute_meter(state(1000), 0) for _ in range(4)]
    assert colours == [GREEN, YELLOW, YELLOW, RED]
    now[0] = 250_000  # +500 peak tokens: still short of 1000
    assert m.execute_meter(state(1000), 0) == RED
    now[0] = 500_000  # peak 1000, committed 500 + 500 (it was not charged for YELLOW/RED)
    assert m.execute_meter(state(1000), 0) == GREEN
    assert m.execute_meter(state(1000), 0) == RED
    now[0] = 10_000_000
    assert m.execute_meter(state(1000), 0) == GREEN
    assert m.get(0) == (1000, 1500, 2000, 3000)
    with pytest.raises(EntryError) as err:
        m.set(0, 2000, 1, 1000, 1)
    assert err.value.kind == "invalid"
    with pytest.raises(EntryError) as err:
        m.set(2, 1, 1, 1, 1)
    assert err.value.kind == "out_of_range"


def test_replication_engine_validates() -> None:
    pre = ReplicationEngine()
    pre.mc_group_set(1, [(1, 0), (2, 5)])
    assert pre.replicas(1) == ((1, 0), (2, 5))
    for call in (lambda: pre.mc_group_set(0, []), lambda: pre.mc_group_set(2, [(511, 0)]),
                 lambda: pre.mc_group_set(2, [(1, 0), (1, 0)]), lambda: pre.clone_session_set(1, [(1, 0)], -1)):
        with pytest.raises(EntryError) as err:
            call()
        assert err.value.kind == "invalid"
    assert 2 not in pre.groups
    with pytest.raises(EntryError) as err:
        pre.mc_group_delete(3)
    assert err.value.kind == "not_found"
    pre.clone_session_set(5, [(3, 0)], truncate=64)
    assert pre.session(5).truncate == 64
