"""STF files run through the embedded target on real .p4 programs."""

from __future__ import annotations

from pathlib import Path

import pytest

from p4target.errors import P4Error
from p4target.stf import StfRunner, parse_stf_text, run_stf, run_stf_program

HERE = Path(__file__).parent
P4 = HERE / "p4"


@pytest.fixture(scope="module")
def l3_switch_factory():
    from p4target import Switch
    from p4target.compiler import compile_file

    compiled = compile_file(P4 / "l3_acl.p4")
    return lambda: Switch(compiled)


@pytest.fixture(scope="module")
def mcast_switch_factory():
    from p4target import Switch
    from p4target.compiler import compile_file

    compiled = compile_file(P4 / "mcast_clone.p4")
    return lambda: Switch(compiled)


def test_l3_acl_stf_passes(l3_switch_factory):
    res = run_stf(l3_switch_factory(), HERE / "l3_acl.stf")
    assert res.failures == []
    assert res.packets_sent == 6
    assert sorted(res.received) == [2, 3, 4]
    # every counter check ran (and was logged), not skipped
    assert sum("port_in" in line for line in res.log) == 4


def test_mcast_clone_stf_passes(mcast_switch_factory):
    res = run_stf(mcast_switch_factory(), HERE / "mcast_clone.stf")
    assert res.failures == []
    assert {p: len(v) for p, v in res.received.items()} == {1: 3, 2: 3, 3: 1, 4: 1}


def test_ordered_comparison_sees_the_order(mcast_switch_factory):
    """Port 1 gets rid 10 before rid 20 (node order); the STF expects the other order
    first, which only the ordered comparison rejects."""
    res = run_stf(mcast_switch_factory(), HERE / "mcast_clone.stf", ordered=True)
    assert len(res.failures) == 2
    assert all("port 1: differs at nibble 18" in f for f in res.failures)


def test_wrong_expectation_fails(mcast_switch_factory):
    res = run_stf(mcast_switch_factory(), HERE / "fails.stf")
    assert not res.passed
    text = "\n".join(res.failures)
    assert "port 2: expected 0 packet(s), received 1" in text
    assert "port 3: expected 1 packet(s), received 0" in text


def test_failed_counter_check_is_reported(l3_switch_factory, tmp_path):
    stf = tmp_path / "c.stf"
    stf.write_text("packet 1 000000000002 000000000001 0800 00\n"
                   "check_counter port_in(1) packets == 2\n"
                   "check_counter port_in(1) packets < 2\n")
    res = run_stf(l3_switch_factory(), stf)
    assert res.failures == [f"{stf}:2:1: MyIngress.port_in(1) packets is 1, expected == 2"]


@pytest.mark.parametrize("line,where,what", [
    ("add nosuch k:1 a()", ":1:1", "no table named 'nosuch'"),
    ("add ipv6_lpm dst_addr:1/8 route(port:1)", ":1:27", "needs dmac"),
    ("add ipv6_lpm dst_addr:1/8 nosuch()", ":1:27", "no action of table MyIngress.ipv6_lpm named"),
    ("add ipv6_lpm dst_addr:0x1/129 drop()", ":1:14", "prefix length 129 is longer"),
    ("add ipv6_lpm dst_addr:1/8 route(port:0x200, dmac:1)", ":1:33", "does not fit in 9 bits"),
    ("add acl 1 hdr.foo:1 deny()", ":1:11", "no key of table MyIngress.acl named 'hdr.foo'"),
    ("check_counter acl_hits($Z)", ":1:1", "no entry named 'Z'"),
    ("check_counter nosuch(1)", ":1:1", "no counter/direct_counter named 'nosuch'"),
])
def test_bad_commands_name_the_place(l3_switch_factory, line, where, what):
    runner = StfRunner(l3_switch_factory(), "x.stf")
    with pytest.raises(P4Error) as e:
        for c in parse_stf_text(line + "\n", "x.stf"):
            runner.execute(c)
    assert e.value.location == "x.stf" + where
    assert what in e.value.message


def test_run_stf_program_compiles_and_runs():
    res = run_stf_program(P4 / "mcast_clone.p4", HERE / "mcast_clone.stf")
    assert res.passed


def test_priority_zero_and_order(l3_switch_factory, tmp_path):
    """p4c's STF files use priority 0; a higher number still wins over a lower one."""
    stf = tmp_path / "p.stf"
    pkt = ("packet 1 000000000002 000000000001 86dd 6001234500101140 "
           "fd000000000000000000000000000001 fcbb0001000000000000000000000001 "
           "1234000900100000 4142434445464748\n")
    stf.write_text("add ipv6_lpm dst_addr:0xfcbb0000000000000000000000000000/16 "
                   "route(port:2, dmac:0x0000000000b2)\n"
                   "add acl 0 dst_port:0x0009 deny() = D\n"
                   "add acl 1 src_addr:0xfd00**************************** permit() = P\n"
                   + pkt + "expect 2\n"
                   "check_counter acl_hits($P) packets == 1\n"
                   "check_counter acl_hits($D) packets == 0\n")
    res = run_stf(l3_switch_factory(), stf)
    assert res.failures == []
    assert len(res.received[2]) == 1
