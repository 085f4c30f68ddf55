"""The scheduling and collector settings of the Mininet fabric's switch processes.

A small fabric (1 plane x (2 leaves + 1 spine), 1 host per leaf) placed as ``make
run`` places it (``cpu``: the fabric in one ``p4target group`` process, the NICs in
another). What is checked in the running processes, from /proc and from the report
each one prints on SIGUSR2: with ``MRC_SWITCH_REALTIME=10`` every thread is SCHED_RR
at priority 10, the collector runs in ``freeze`` mode (enabled, objects frozen), and
the fabric still carries a flow. The environment variable that sets the priority is
checked without a network.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from fabric import plan as P
from fabric.topology import from_parameters
from tests.mininet.net_prefix import assert_nothing_left
from tests.p4runtime.test_switch_group_process import report_of

pytest.importorskip("mininet.net")


def test_the_priority_comes_from_the_environment_else_normal_scheduling() -> None:
    from topologies.p4switch import SwitchError
    from topologies.switch_group import realtime_priority

    assert realtime_priority({}) is None  # normal scheduling unless asked for
    assert realtime_priority({"MRC_SWITCH_REALTIME": "50"}) == 50
    assert realtime_priority({"MRC_SWITCH_REALTIME": " 0 "}) is None  # normal scheduling
    for bad in ("-1", "100", "high"):
        with pytest.raises(SwitchError, match="give a SCHED_RR priority 1..99"):
            realtime_priority({"MRC_SWITCH_REALTIME": bad})


@pytest.mark.root
def test_the_switch_processes_run_realtime_with_a_frozen_heap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root (network namespaces, veths, Mininet): run `make test` as root")
    import secrets

    from topologies.fabric_net import programmed_network
    from topologies.mrc_flow import run_stream

    monkeypatch.setenv("MRC_SWITCH_REALTIME", "10")
    topo = from_parameters(planes=1, spines=1, leaves=2, hosts_per_leaf=1)
    prefix = "mrc" + secrets.token_hex(1)
    try:
        with programmed_network(topo, prefix=prefix, run_dir=tmp_path, switches_per_process="cpu") as fn:
            groups = {sw.group.name: sw.group for sw in fn.p4_switches()}
            assert len(groups) == 2  # the fabric's, the NICs'
            for g in groups.values():
                pid = g.proc.pid
                for tid in os.listdir(f"/proc/{pid}/task"):
                    assert os.sched_getscheduler(int(tid)) == os.SCHED_RR, f"{g.name} thread {tid}"
                    assert os.sched_getparam(int(tid)).sched_priority == 10
                report = report_of(g.proc, g.log_path)
                assert report["sched"] == {"policy": "rr", "priority": 10}
                assert report["gc"]["enabled"] is True and report["gc"]["frozen"] > 0
                assert set(report["switches"]) == {sw.mrc_name for sw in g.members}
            src, dst = topo.hosts[0], topo.hosts[1]
            got = run_stream(fn, src.name, dst.name, [e.ev for e in P.nic_evs(topo, src, dst)], 100, 1000, size=256)
            assert got["received"] == 100
    finally:
        assert_nothing_left(prefix, tmp_path)
