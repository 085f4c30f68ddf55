"""Faults while traffic runs, on a small fabric (2 planes x (2 leaves + 1 spine), a host
or two per leaf): each checked by what the test reads itself.

- One switch-group process (a plane's switches) killed (SIGKILL) in the middle of an
  MRC-lite transfer h1 -> h3: the other processes keep forwarding (a stream the test
  sends h2 -> h4 over plane 0 arrives whole meanwhile), the killed one is restarted
  and reconciled (``mrcctl install``),
  its switches' tables then exactly what they were before (read by the test), and the
  transfer completes with every byte verified.
- The controller killed in the middle of an install: a second install converges, and
  every table of every switch is then exactly what a clean install wrote (read by the
  test before the switches were emptied), nothing extra, nothing missing.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from fabric import plan as P
from fabric.topology import from_parameters
from tests.mininet.net_prefix import assert_nothing_left
from tests.observe import entries, kill_once_written, read_tables

pytestmark = pytest.mark.root
pytest.importorskip("mininet.net")

from topologies.fabric_net import programmed_network  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
MRCCTL = REPO / ".venv" / "bin" / "mrcctl"
SHAPE = {"planes": 2, "spines": 1, "leaves": 2, "hosts_per_leaf": 1}


def _prefix() -> str:
    import secrets

    return "mrc" + secrets.token_hex(1)


def test_a_switch_process_killed_during_a_transfer(tmp_path: Path) -> None:
    from topologies.mrc_flow import run_stream
    from topologies.transfer import Transfer

    topo = from_parameters(**{**SHAPE, "hosts_per_leaf": 2})
    prefix = _prefix()
    try:
        with programmed_network(topo, prefix=prefix, run_dir=tmp_path / "run", switches_per_process="plane") as fn:
            before = read_tables(fn.inventory.switches)
            spine = fn.switch("p1-spine0")
            plane1 = sorted(sw.mrc_name for sw in spine.group.members)
            assert plane1 == ["p1-leaf0", "p1-leaf1", "p1-spine0"]
            src, dst = topo.host("h1"), topo.host("h3")
            other_src, other_dst = topo.host("h2"), topo.host("h4")  # leaf 0 to leaf 1 as well
            # 3,000 packets at 1,000/s: 3 s, the kill comes after about 0.7 s
            tr = Transfer(fn, src.name, dst.name, 3_000_000, tmp_path / "t", ["--rate", "1000"],
                          ["--nack-delay", "0.1"]).start()
            time.sleep(0.7)
            assert tr.senders[0].poll() is None, "the transfer ended before the kill"
            old = spine.proc.pid
            os.kill(old, signal.SIGKILL)
            spine.proc.wait(timeout=10)
            # the other processes forward on: plane 0's EVs, 200 packets, all arrive
            evs = [e.ev for e in P.nic_evs(topo, other_src, other_dst) if e.plane == 0]
            got = run_stream(fn, other_src.name, other_dst.name, evs, 200, 1000, size=256)
            assert got["received"] == 200, got
            spine.restart()
            assert spine.proc.pid != old
            first = subprocess.run([str(MRCCTL), "--state", str(fn.state_path), "install"], capture_output=True,
                                   text=True, timeout=120)
            assert first.returncode == 0, first.stdout + first.stderr
            assert re.search(r"entries wanted, [1-9]\d* written", first.stdout), first.stdout
            res = tr.wait()
            assert res.ok, res.summary()  # every byte verified by the receiver (SHA-256)
            assert res.recv_report.get("bytes") in (None, 3_000_000), res.recv_report
            after = read_tables(fn.inventory.switches)
            assert entries(before) > 0 and after == before, sorted(s for s in before if before[s] != after.get(s))
            # plane 1 forwards again
            evs1 = [e.ev for e in P.nic_evs(topo, other_src, other_dst) if e.plane == 1]
            assert run_stream(fn, other_src.name, other_dst.name, evs1, 100, 1000, size=256)["received"] == 100
    finally:
        assert_nothing_left(prefix, tmp_path / "run")


def _install_killed_midway(state: Path, fn) -> int:
    """``mrcctl install --parallel 1`` (one switch after the other) killed (SIGKILL) as
    soon as the test sees an entry on any switch; how many entries every switch then
    holds, as the test reads them."""
    proc = subprocess.Popen([str(MRCCTL), "--state", str(state), "install", "--parallel", "1"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        kill_once_written(proc, fn.inventory.switches)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
    return entries(read_tables(fn.inventory.switches))


def test_the_controller_killed_during_an_install(tmp_path: Path) -> None:
    topo = from_parameters(**SHAPE)
    prefix = _prefix()
    try:
        with programmed_network(topo, prefix=prefix, run_dir=tmp_path / "run") as fn:
            clean = read_tables(fn.inventory.switches)  # what one uninterrupted install wrote
            total = entries(clean)
            assert total > 0
            for _ in range(3):  # until the kill lands inside the install (the first try, mostly)
                for sw in fn.p4_switches():  # empty every switch: a restarted switch holds no entry
                    sw.restart()
                assert entries(read_tables(fn.inventory.switches)) == 0
                partial = _install_killed_midway(fn.state_path, fn)
                if 0 < partial < total:
                    break
            assert 0 < partial < total, (partial, total)
            again = subprocess.run([str(MRCCTL), "--state", str(fn.state_path), "install"], capture_output=True,
                                   text=True, timeout=120)
            assert again.returncode == 0, again.stdout + again.stderr
            got = read_tables(fn.inventory.switches)
            extra = {s: sorted(set(got[s]) - set(clean[s])) for s in clean if set(got[s]) - set(clean[s])}
            missing = {s: sorted(set(clean[s]) - set(got[s])) for s in clean if set(clean[s]) - set(got[s])}
            assert not extra and not missing, (extra, missing)
            assert got == clean
    finally:
        assert_nothing_left(prefix, tmp_path / "run")
