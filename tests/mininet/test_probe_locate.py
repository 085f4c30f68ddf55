"""mrcctl probe, locate, events and guard end to end, on a small fabric with a cable
this test cuts itself.

The fabric: 2 planes x (3 leaves + 2 spines), 1 host per leaf, 4 EVs per NIC (13 P4
switches), in Mininet under a private prefix and run directory. h1 is on leaf0, h2 on
leaf1, h3 on leaf2; each NIC's EV k (0x1000 + k) goes over plane k mod 2, spine k // 2.
The cut cable is p0-leaf0:p0-spine0: the paths over it are EV 0x1000 between h1 and
each other host, both ways (4 of the 24); h2 <-> h3 over plane 0 spine 0 still works,
which clears the far ends (p0-leaf1:p0-spine0, p0-leaf2:p0-spine0), so the link is
named exactly.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from fabric.topology import from_parameters
from tests.mininet.net_prefix import assert_nothing_left, private_prefix
from topologies.fabric_net import FabricNetwork, programmed_network

pytestmark = pytest.mark.root

SHAPE = dict(planes=2, spines=2, leaves=3, hosts_per_leaf=1, evs_per_nic=4)
REPO = Path(__file__).resolve().parents[2]
MRCCTL = REPO / ".venv" / "bin" / "mrcctl"
CUT = "p0-leaf0:p0-spine0"


@pytest.fixture(scope="module")
def fabric(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FabricNetwork]:
    if os.geteuid() != 0:
        pytest.skip("needs root (network namespaces, veths, Mininet): run `make test` as root")
    prefix = private_prefix()
    run_dir = tmp_path_factory.mktemp("oploop-run")
    try:
        with programmed_network(from_parameters(**SHAPE), prefix=prefix, run_dir=run_dir, target="embedded") as fn:
            yield fn
    finally:
        assert_nothing_left(prefix, run_dir)


def mrcctl(fn: FabricNetwork, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MRC_P4_RUN_DIR": str(fn.run_dir), "COLUMNS": "200"}
    return subprocess.run([str(MRCCTL), "--state", str(fn.state_path), *args], capture_output=True, text=True,
                          timeout=timeout, env=env, cwd=REPO)


def lines(r: subprocess.CompletedProcess[str]) -> list[dict]:
    assert r.returncode == 0, r.stderr
    return [json.loads(x) for x in r.stdout.splitlines()]


def test_probe_gives_each_ev_its_path_and_rtt(fabric: FabricNetwork) -> None:
    got = lines(mrcctl(fabric, "probe", "h1", "h2", "--all", "--count", "3", "--json"))
    assert [(x["ev"], x["plane"], x["switches"]) for x in got] == [
        (0x1000, 0, ["p0-leaf0", "p0-spine0", "p0-leaf1"]), (0x1001, 1, ["p1-leaf0", "p1-spine0", "p1-leaf1"]),
        (0x1002, 0, ["p0-leaf0", "p0-spine1", "p0-leaf1"]), (0x1003, 1, ["p1-leaf0", "p1-spine1", "p1-leaf1"])]
    assert got[0]["links"] == ["nic1:p0-leaf0", "p0-leaf0:p0-spine0", "p0-leaf1:p0-spine0", "nic2:p0-leaf1"]
    for x in got:
        assert (x["sent"], x["answered"], x["loss"]) == (3, 3, 0.0)
        assert 0 < x["rtt_min_ms"] <= x["rtt_avg_ms"] <= x["rtt_max_ms"]


def test_a_probe_that_cannot_be_sent_is_one_error_line(fabric: FabricNetwork, tmp_path: Path) -> None:
    r = mrcctl(fabric, "probe", "h1", "h9")
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr.strip() == "mrcctl: error: no host 'h9' in topology 'default': hosts are h1..h3"
    r = mrcctl(fabric, "probe", "h1", "h2", "--ev", "0x2000")
    assert r.returncode == 1 and len(r.stderr.strip().splitlines()) == 1 and "no EV 0x2000" in r.stderr
    # no running network: the state file of none
    env = {**os.environ, "MRC_P4_RUN_DIR": str(tmp_path)}
    r = subprocess.run([str(MRCCTL), *sum(([f"--{k.replace('_', '-')}", str(v)] for k, v in SHAPE.items()), []),
                        "probe", "h1", "h2"], capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 1 and len(r.stderr.strip().splitlines()) == 1 and "no running network" in r.stderr


def test_a_cut_cable_is_probed_dead_and_located(fabric: FabricNetwork) -> None:
    assert mrcctl(fabric, "fail", CUT).returncode == 0
    try:
        got = lines(mrcctl(fabric, "probe", "h1", "h2", "--ev", "0x1000", "--ev", "0x1002", "--count", "3", "--json"))
        assert [(x["ev"], x["answered"], x["loss"]) for x in got] == [(0x1000, 0, 1.0), (0x1002, 3, 0.0)]
        [v] = lines(mrcctl(fabric, "locate", "--sweep", "--count", "2", "--json"))
        assert v["exact"] == CUT
        assert (v["failed_paths"], v["working_paths"]) == (4, 20)
        assert v["ranked"][0]["link"] == CUT and v["ranked"][0]["explains"] == 4
        assert v["ranked"][0]["contradicted"] == 0
        text = mrcctl(fabric, "locate", "--sweep", "--count", "2")
        assert text.returncode == 0 and f"broken: {CUT} (on 4 of 4 failed paths, on no working path" in text.stdout
    finally:
        assert mrcctl(fabric, "restore", CUT).returncode == 0


def test_events_of_a_transfer_then_the_guard_denies_and_gives_back(fabric: FabricNetwork, tmp_path: Path) -> None:
    from topologies.transfer import run_transfer

    twin = "p0-leaf1:p0-spine0"  # every path over CUT crosses it too (h1 is on leaf0, the peer h2 on leaf1)
    env = {**os.environ, "MRC_P4_RUN_DIR": str(fabric.run_dir)}
    guard = subprocess.Popen([str(MRCCTL), "--state", str(fabric.state_path), "guard", "--k", "1", "--min-hosts",
                              "1", "--hold", "1", "--window", "120", "--interval", "0.2", "--probe-every", "0.5",
                              "--duration", "120", "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, env=env, cwd=REPO)
    assert guard.stdout is not None
    try:
        assert mrcctl(fabric, "fail", CUT).returncode == 0
        # h1 -> h2: EV 0x1000 (plane 0, spine 0) crosses the cut cable; the sender retires it
        r = run_transfer(fabric, "h1", "h2", 1_000_000, tmp_path, send_args=["--rto-min", "0.2"],
                         recv_args=["--nack-delay", "0.05"], timeout=60)
        assert r.ok, r.summary()
        got = lines(mrcctl(fabric, "events", "--json", "--link", CUT, "--state", "ASSUMED_BAD"))
        assert got and {(x["host"], x["peer"], x["ev"], x["old"]) for x in got} == {("h1", "h2", 0x1000, "GOOD")}
        assert got[0]["links"] == ["nic1:p0-leaf0", CUT, twin, "nic2:p0-leaf1"]
        assert got[0]["transport"] == "mrc" and got[0]["dropped"] == 0
        # from the events alone (no counter sampled) the two cables of spine 0 tie
        [v] = lines(mrcctl(fabric, "locate", "--json", "--sample", "0"))
        assert set(v["tied"]) == {CUT, twin} and v["failed_paths"] == 1
        # the guard denied CUT on that report (and the twin too unless the counters told them apart)
        first = json.loads(guard.stdout.readline())
        assert (first["kind"], first["action"], first["link"] in (CUT, twin)) == ("guard", "deny", True)
        assert first["reports"] >= 1 and first["hosts"] == ["h1"]
        assert first["link"] in json.loads(fabric.state_path.read_text())["denied"]  # written before it is said
        # while the cable is down its probes fail: it stays denied; once back, it is given back
        assert mrcctl(fabric, "restore", CUT).returncode == 0
        actions = [first]
        while {a["link"] for a in actions if a["action"] == "deny"} != {a["link"] for a in actions
                                                                      if a["action"] == "undeny"}:
            actions.append(json.loads(guard.stdout.readline()))
        denied = {a["link"] for a in actions if a["action"] == "deny"}
        assert CUT in denied and denied <= {CUT, twin}
        back = [a for a in actions if a["action"] == "undeny"]
        assert all(a["answered_for_s"] >= 1 and a["answered"] == a["sent"] > 0 for a in back)
        assert json.loads(fabric.state_path.read_text())["denied"] == []
        logged = lines(mrcctl(fabric, "events", "--json", "--state", "undeny"))
        assert {x["link"] for x in logged} == denied
    finally:
        guard.terminate()
        guard.communicate(timeout=30)
        mrcctl(fabric, "restore", CUT)
        for link in (CUT, twin):
            mrcctl(fabric, "undeny", link)
