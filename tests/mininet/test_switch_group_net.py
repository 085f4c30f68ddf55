"""The fabric with its switches placed into shared processes (``p4target group``).

Two networks under private prefixes and run directories:

- the scale shape of CI, ``topologies/scale-ci.yaml`` (8 planes x (9 spines + 2
  leaves), one host per leaf: 90 P4 switches, 72 paths between the two hosts), one
  process per plane and one for the NICs: every switch is its own Mininet node with
  its own interfaces and P4Runtime address; a flow over every EV is counted on all
  72 paths at the spines; a cut link takes only its path's packets;
- a small fabric (2 planes x (2 leaves + 1 spine), 1 host per leaf) in which one
  process is killed: the network says which process, which switches and how it
  died; restarted, ``mrcctl install`` reconciles its switches and traffic flows.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
from pathlib import Path

import pytest

from fabric import plan as P
from fabric.topology import from_parameters, load_file
from tests.mininet.net_prefix import assert_nothing_left

pytestmark = pytest.mark.root
pytest.importorskip("mininet.net")

from topologies.fabric_net import programmed_network  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


def private_prefix() -> str:
    """``mrc`` + 2 random characters: a leaf's port 10 must fit in 15 characters."""
    import secrets

    return "mrc" + secrets.token_hex(1)


@pytest.fixture(autouse=True)
def _root() -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root (network namespaces, veths, Mininet): run `make test` as root")


def test_the_scale_shape_sprays_over_every_path_and_a_cut_takes_only_its_own(tmp_path: Path) -> None:
    from controller.cable_cuts import set_link
    from topologies import path_counts
    from topologies.mrc_flow import run_stream

    topo = load_file(REPO / "topologies" / "scale-ci.yaml")
    assert topo.planes * topo.spines == 72 and len(topo.hosts) == 2
    prefix = private_prefix()
    try:
        with programmed_network(topo, prefix=prefix, run_dir=tmp_path, switches_per_process="plane") as fn:
            sws = fn.p4_switches()
            assert len(sws) == 8 * (9 + 2) + 2
            pids = {sw.proc.pid for sw in sws}
            assert len(pids) == 8 + 1, "one process per plane and one for the NICs"
            assert len({sw.grpc_addr for sw in sws}) == len(sws), "every switch has its own P4Runtime address"
            leaf = fn.switch("p3-leaf1")
            assert sorted(leaf.port_interfaces()) == [1, *range(2, 2 + 9)]  # host port 1, spines 2..10
            assert all(i.startswith(leaf.name + "-eth") for i in leaf.port_interfaces().values())
            for sw in sws:  # every member's pid file names its process
                assert sw.pid_path.read_text().strip() == str(sw.proc.pid)
            src, dst = topo.hosts[0], topo.hosts[1]
            evs = [e.ev for e in P.nic_evs(topo, src, dst)]
            assert len(evs) == 72
            fn.ping(src.name, dst.name, count=1)
            before = path_counts.read_spines(topo, fn.inventory)
            got = run_stream(fn, src.name, dst.name, evs, 720, 2000, size=256)
            per_path = path_counts.path_packets(topo, before, path_counts.read_spines(topo, fn.inventory), src.leaf)
            assert got["received"] == 720
            assert len(per_path) == 72 and all(n >= 10 for n in per_path.values()), per_path  # 10 per EV
            cut = "p0-leaf0:p0-spine0"
            asyncio.run(set_link(topo, fn.inventory, cut, down=True))
            try:
                before = path_counts.read_spines(topo, fn.inventory)
                got = run_stream(fn, src.name, dst.name, evs, 720, 2000, size=256)
                per_path = path_counts.path_packets(topo, before, path_counts.read_spines(topo, fn.inventory),
                                                    src.leaf)
            finally:
                asyncio.run(set_link(topo, fn.inventory, cut, down=False))
            # a cut cable writes no table: the 10 packets sent on the one EV over it are lost
            assert got["received"] == 720 - 10
            assert per_path[(0, 0)] == 0, "the cut path carries nothing"
            assert all(n >= 10 for k, n in per_path.items() if k != (0, 0)), per_path
    finally:
        assert_nothing_left(prefix, tmp_path)


def test_a_killed_process_is_reported_and_mrcctl_install_reconciles_it(tmp_path: Path) -> None:
    from topologies.mrc_flow import run_stream
    from topologies.p4switch import SwitchError

    topo = from_parameters(planes=2, spines=1, leaves=2, hosts_per_leaf=1)
    prefix = private_prefix()
    try:
        with programmed_network(topo, prefix=prefix, run_dir=tmp_path, switches_per_process="plane") as fn:
            spine = fn.switch("p1-spine0")
            group = spine.group
            assert sorted(sw.mrc_name for sw in group.members) == ["p1-leaf0", "p1-leaf1", "p1-spine0"]
            old = spine.proc.pid
            os.kill(old, signal.SIGKILL)
            spine.proc.wait(timeout=10)
            with pytest.raises(SwitchError) as err:
                fn.check_switches()
            text = str(err.value)
            assert f"process {group.name} (pid {old}, 3 switches: p1-leaf0, p1-leaf1, p1-spine0)" in text
            assert "was killed by SIGKILL" in text and "mrcctl install" in text
            fn.switch("p0-leaf0").check()  # the other processes run on
            spine.restart()
            assert spine.proc.pid != old and all(sw.alive for sw in fn.p4_switches())
            mrcctl = [str(REPO / ".venv" / "bin" / "mrcctl"), "--state", str(fn.state_path)]
            res = subprocess.run([*mrcctl, "install"], capture_output=True, text=True, timeout=120)
            assert res.returncode == 0, res.stdout + res.stderr
            assert re.search(r"entries wanted, [1-9]\d* written", res.stdout), res.stdout  # the restarted ones
            res2 = subprocess.run([*mrcctl, "install"], capture_output=True, text=True, timeout=120)
            assert re.search(r"entries wanted, 0 written", res2.stdout), res2.stdout
            src, dst = topo.hosts[0], topo.hosts[1]
            evs = [e.ev for e in P.nic_evs(topo, src, dst) if e.plane == 1]
            got = run_stream(fn, src.name, dst.name, evs, 100, 1000, size=256)
            assert got["received"] == 100, "plane 1 forwards again"
    finally:
        assert_nothing_left(prefix, tmp_path)
