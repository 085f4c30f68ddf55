"""mrcctl itself, as a user runs it: output and exit status of every documented command.

The computing commands (``plan``, ``links``, ``paths``, ``entries``) run without a
network against a small fabric given as parameters (2 planes x 2 leaves x 1 spine,
1 host per leaf, 4 EVs per NIC); their expected values are worked out by hand from
docs/addressing.md and the sizing rules of docs/fabric.md. The commands that talk to
switches (``install --dry-run``, ``--election-id``, ``counters``, ``watch --once``)
run against that fabric as real ``p4target run`` switches on veths
(tests/controller/fabric_lab.py), with frames sent from the hosts' interfaces.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Ether

from controller.targets import default_targets
from fabric.topology import from_parameters
from tests.controller.fabric_lab import REPO, FabricLab
from tests.dataplane.packets import mrc_write
from tests.target.cli.p4t_netlab import recv_frames

MRCCTL = REPO / ".venv" / "bin" / "mrcctl"
SHAPE = {"planes": 2, "leaves": 2, "spines": 1, "hosts_per_leaf": 1, "evs_per_nic": 4}
SHAPE_ARGS = ["--planes", "2", "--leaves", "2", "--spines", "1", "--hosts-per-leaf", "1", "--evs-per-nic", "4"]
TOPO = from_parameters(**SHAPE)


def mrcctl(*args: str, run_dir: Path, timeout: float = 120, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """mrcctl with its run directory (where a running network's state file would be) empty."""
    env = {**os.environ, "MRC_P4_RUN_DIR": str(run_dir), "COLUMNS": "200"}
    return subprocess.run([str(MRCCTL), *args], capture_output=True, text=True, timeout=timeout, env=env, cwd=cwd)


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    d = tmp_path / "run"
    d.mkdir()
    return d


# ---- without a network ------------------------------------------------------

def test_links_lists_every_cable_with_its_ports(run_dir: Path) -> None:
    r = mrcctl(*SHAPE_ARGS, "links", "--json", run_dir=run_dir)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    got = {(x["link"], x["kind"], x["plane"], x["a_port"], x["b_port"], x["up"]) for x in json.loads(r.stdout)}
    # leaf uplink to spine 0: port H + 1 + 0 = 2 (H = 1 host); spine port to leaf i: 1 + i;
    # NIC port in plane p: 1 + p, facing leaf port 1 (its host's port)
    assert got == {
        ("p0-leaf0:p0-spine0", "fabric", 0, 2, 1, True), ("p0-leaf1:p0-spine0", "fabric", 0, 2, 2, True),
        ("nic1:p0-leaf0", "nic", 0, 1, 1, True), ("nic2:p0-leaf1", "nic", 0, 1, 1, True),
        ("p1-leaf0:p1-spine0", "fabric", 1, 2, 1, True), ("p1-leaf1:p1-spine0", "fabric", 1, 2, 2, True),
        ("nic1:p1-leaf0", "nic", 1, 2, 1, True), ("nic2:p1-leaf1", "nic", 1, 2, 1, True),
    }
    table = mrcctl(*SHAPE_ARGS, "links", run_dir=run_dir)
    assert table.returncode == 0
    assert "8 links (0 down, 0 denied)" in table.stdout and "p1-leaf1:p1-spine0" in table.stdout


def test_paths_gives_each_ev_its_plane_and_carrier(run_dir: Path) -> None:
    r = mrcctl(*SHAPE_ARGS, "paths", "h1", "h2", "--json", run_dir=run_dir)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    got = [(x["ev"], x["plane"], x["carrier"], x["hops"], x["up"]) for x in json.loads(r.stdout)]
    # EXPLICIT EVs 0x1000 + k, plane k mod 2; h1 on leaf 0 to h2 on leaf 1 port 1 via spine 0:
    # plane 0: leaf 0x100, spine 0x300, leaf 0x101; plane 1: leaf 0x400, spine 0x600, leaf 0x401
    c0, c1 = "fcbb:bb00:100:300:101:e001::", "fcbb:bb00:400:600:401:e001::"
    hops = lambda p: ["nic1", f"p{p}-leaf0", f"p{p}-spine0", f"p{p}-leaf1", "nic2"]  # noqa: E731
    assert got == [(0x1000, 0, c0, hops(0), True), (0x1001, 1, c1, hops(1), True),
                   (0x1002, 0, c0, hops(0), True), (0x1003, 1, c1, hops(1), True)]
    table = mrcctl(*SHAPE_ARGS, "paths", "h1", "h2", run_dir=run_dir)
    assert table.returncode == 0 and "h1 -> h2: 4 EVs (explicit), 4 up" in table.stdout


def test_entries_of_a_leaf_are_its_locator_ports_and_neighbours(run_dir: Path) -> None:
    r = mrcctl(*SHAPE_ARGS, "entries", "p0-leaf0", "--json", run_dir=run_dir)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    data = json.loads(r.stdout)
    assert (data["switch"], data["program"]) == ("p0-leaf0", "fabric")
    got = {(e["table"].split(".")[1], tuple(e["match"].values()), e["action"].split(".")[1],
            tuple(sorted(e["params"].items()))) for e in data["entries"]}
    spine_mac = "02:02:00:00:00:01"  # plane 0, tier 2 (spine), index 0, port 1 (towards leaf 0)
    nic_mac = "02:03:00:00:00:01"  # plane 0, tier 3 (NIC), host 0, port 1 (its plane-0 port)
    assert got == {
        ("my_sid", ("fcbb:bb00:100::/48",), "usid_un", ()),
        ("dscp_priority", ("0xf8 &&& 0xfc",), "set_priority", (("prio", "7"),)),
        ("trim_class", ("0x0 &&& 0xfc",), "set_trimmable", ()),  # MRC-lite's DSCP 0
        ("trim_class", ("0xf8 &&& 0xfc",), "set_trimmable", ()),  # the trim mark, DSCP 62
        ("port_mac", ("1",), "set_src_mac", (("mac", "02:01:00:00:00:01"),)),
        ("port_mac", ("2",), "set_src_mac", (("mac", "02:01:00:00:00:02"),)),
        ("trim_config", ("1",), "set_trim", (("dscp", "62"), ("threshold", "32"))),
        ("trim_config", ("2",), "set_trim", (("dscp", "62"), ("threshold", "32"))),
        ("ecn_config", ("1",), "set_ecn", (("threshold", "16"),)),  # a host port
        ("ecn_config", ("2",), "set_ecn", (("threshold", "8"),)),  # a fabric port (the uplink)
        ("usid_fwd", ("fcbb:bb00:300::/48",), "fwd", (("dmac", spine_mac), ("port", "2"))),
        ("usid_fwd", ("fcbb:bb00:f002::/48",), "usid_ua", (("dmac", spine_mac), ("port", "2"))),
        ("usid_fwd", ("fcbb:bb00:e001::/48",), "fwd", (("dmac", nic_mac), ("port", "1"))),
    }
    table = mrcctl(*SHAPE_ARGS, "entries", "p0-leaf0", run_dir=run_dir)
    assert table.returncode == 0 and "p0-leaf0 (fabric.p4): 13 entries" in table.stdout


def test_plan_sizes_the_default_cluster(run_dir: Path) -> None:
    r = mrcctl("plan", "--json", run_dir=run_dir)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    data = json.loads(r.stdout)
    # 131,072 GPUs, 8 planes of 512-port 100G switches: a leaf has 256 ports down and 256
    # up, so 131,072 / 256 = 512 leaves and 512 * 256 / 512 = 256 spines per plane
    assert data["multiplane"] == {"tiers": 2, "switches": 8 * (512 + 256), "switches_per_tier": [512, 256],
                                  "fabric_links": 8 * 512 * 256, "host_links": 8 * 131072,
                                  "transceivers": 8 * 512 * 256 * 2 // 8}  # an 800G module holds 8 lanes
    # one plane of 64-port 800G switches: 32 down per switch, 4 tiers (3 hold 65,536 at most);
    # 4,096 switches in each of the lower three, 4,096 * 32 / 64 = 2,048 at the top
    assert data["single_plane"] == {"tiers": 4, "switches": 3 * 4096 + 2048,
                                    "switches_per_tier": [4096, 4096, 4096, 2048],
                                    "fabric_links": 3 * 131072, "host_links": 131072, "transceivers": 2 * 3 * 131072}
    # 1 - 6,144 / 14,336; 1 - 262,144 / 786,432; worst-case hops 3 against 7
    assert data["savings"] == {"switches": 57.1, "transceivers": 66.7, "switch_hops": 57.1}
    table = mrcctl("plan", run_dir=run_dir)
    assert table.returncode == 0 and "131,072 GPUs, 800G NICs" in table.stdout and "57.1%" in table.stdout


@pytest.mark.parametrize("args,status,message", [
    (["paths", "h1", "h9"], 1, "mrcctl: error: no host 'h9' in topology 'default': hosts are h1..h2"),
    (["entries", "p2-leaf0"], 1, "mrcctl: error: no switch 'p2-leaf0'"),
    (["links", "--bogus"], 2, "No such option: --bogus"),
    # refused before any switch is asked (0 had install wait for every switch in turn)
    (["install", "--parallel", "0"], 2, "Invalid value for '--parallel': Input should be greater than or equal to 1"),
    (["install", "--parallel", "-1"], 2, "Invalid value for '--parallel': Input should be greater than or equal to 1"),
    (["install", "--election-id", "-1"], 2,
     "Invalid value for '--election-id': Input should be greater than or equal to 0"),
    (["counters", "--election-id", str(1 << 128)], 2,
     "Invalid value for '--election-id': Input should be less than or equal to 340282366920938463463374607431768211455"),
    (["watch", "--interval", "-1"], 2,
     "Invalid value for '--interval': -1: give a number of seconds more than 0 and at most 86400 (a day)"),
    (["watch", "--once", "--interval", "nan"], 2,
     "Invalid value for '--interval': nan: give a number of seconds more than 0 and at most 86400 (a day)"),
])
def test_mistakes_exit_with_one_message(run_dir: Path, args: list[str], status: int, message: str) -> None:
    r = mrcctl(*SHAPE_ARGS, *args, run_dir=run_dir)
    assert r.returncode == status, r.stdout + r.stderr
    assert message in r.stderr and r.stdout == ""
    assert "Traceback" not in r.stderr
    assert r.stderr.count("\n") == 1, r.stderr  # one line, no framed panel
    if status == 2:  # a usage mistake says where the help is
        assert r.stderr.startswith("error: ") and r.stderr.rstrip().endswith("--help)"), r.stderr


@pytest.mark.parametrize("command", ["fail", "restore"])
def test_fail_without_a_running_network_is_refused_and_writes_nothing(run_dir: Path, command: str) -> None:
    r = mrcctl(*SHAPE_ARGS, command, "p0-leaf0:p0-spine0", run_dir=run_dir)
    assert r.returncode == 1 and r.stdout == ""
    way = "down" if command == "fail" else "up"
    assert r.stderr == (f"mrcctl: error: no running network ({run_dir / 'network.json'}): there is no cable to take "
                        f"{way}; start one (make run) or give its state file with --state; nothing written\n")
    assert list(run_dir.iterdir()) == []  # no state file: no later command is told a network of this one runs


def test_certs_into_an_empty_directory_name_is_refused(run_dir: Path, tmp_path: Path) -> None:
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    r = mrcctl("certs", "", "--server", "s1=127.0.0.1", run_dir=run_dir, cwd=cwd)
    assert (r.returncode, r.stdout) == (1, "")
    assert r.stderr == "mrcctl: error: DIR is empty: give the directory to write the CA and keys into (. for this one)\n"
    assert list(cwd.iterdir()) == []


def _state(tmp_path: Path, where: tuple[str, ...], value: Any) -> Path:
    """A state file of the small fabric (every switch at its default address) with
    the field at ``where`` set to ``value``."""
    data: dict[str, Any] = {"topology": {"parameters": dict(SHAPE)},
                            "switches": {k: dataclasses.asdict(t) for k, t in default_targets(TOPO).items()},
                            "links": {}, "down": [], "denied": []}
    place = data
    for key in where[:-1]:
        place = place[key]
    place[where[-1]] = value
    path = tmp_path / "network.json"
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize("where,value,args,why", [
    (("denied",), [5], ["paths", "h1", "h2"], "denied.0: Input should be a valid string"),
    (("denied",), [5], ["entries", "nic1"], "denied.0: Input should be a valid string"),
    (("switches", "p0-leaf0", "device_id"), "x", ["counters", "p0-leaf0"],
     "switches.p0-leaf0.device_id: Input should be a valid integer, unable to parse string as an integer"),
    (("switches", "p0-leaf0", "device_id"), -1, ["counters", "p0-leaf0"],
     "switches.p0-leaf0.device_id: Input should be greater than or equal to 0"),
    (("down",), ["nosuch"], ["paths", "h1", "h2"], "down: no link 'nosuch' in topology 'default'"),
    (("denied",), ["p0-leaf0:p9-spine0"], ["links"], "denied: no link 'p0-leaf0:p9-spine0' in topology 'default'"),
    (("topology", "parameters", "planes"), 99, ["links"],
     "topology.parameters: --planes: 99 is more than the limit 8; give at most 8"),
])
def test_a_damaged_state_file_names_the_file_and_the_field(run_dir: Path, tmp_path: Path, where: tuple[str, ...],
                                                            value: Any, args: list[str], why: str) -> None:
    state = _state(tmp_path, where, value)
    r = mrcctl("--state", str(state), *args, run_dir=run_dir, timeout=30)
    assert (r.returncode, r.stdout) == (1, "")
    assert r.stderr == f"mrcctl: error: {state}: damaged network state file ({why}); restart the network or delete the file\n"


# ---- against running switches ------------------------------------------------


@pytest.fixture(scope="module")
def lab() -> Iterator[FabricLab]:
    # the state file names the shape, so mrcctl --state sees the same fabric
    with FabricLab(TOPO, tag="cli", source={"parameters": SHAPE}) as lab:
        yield lab


@pytest.fixture
def state(lab: FabricLab, tmp_path: Path) -> Path:
    path = tmp_path / "network.json"
    lab.inventory.path = path
    lab.inventory.save()
    return path


def host_frame(src: str, dst: str, ev: int) -> bytes:
    from fabric import plan as P

    a = next(h for h in TOPO.hosts if h.name == src)
    b = next(h for h in TOPO.hosts if h.name == dst)
    return bytes(Ether(src=P.mac_text(P.host_mac(a)), dst=P.mac_text(P.nic_gateway_mac(a)))
                 / IPv6(src=P.ip(P.host_addr(a.leaf, a.port)), dst=P.ip(P.host_addr(b.leaf, b.port)))
                 / mrc_write(ev, 1, b"mrcctl-cli" * 6))


@pytest.mark.root
def test_dry_run_writes_nothing_then_install_writes_it_all(lab: FabricLab, state: Path, run_dir: Path) -> None:
    dry = mrcctl("--state", str(state), "install", "--dry-run", "--json", run_dir=run_dir)
    assert dry.returncode == 0, dry.stderr
    planned = json.loads(dry.stdout)
    assert len(planned["switches"]) == 8 and all(not s["pipeline_pushed"] for s in planned["switches"])
    real = mrcctl("--state", str(state), "install", "--json", run_dir=run_dir)
    assert real.returncode == 0, real.stderr
    done = json.loads(real.stdout)
    # the switches were still empty: every pipeline pushed now, every entry inserted now
    assert all(s["pipeline_pushed"] for s in done["switches"]), done
    assert done["writes"] == sum(s["inserted"] for s in done["switches"]) > 0
    assert {s["name"]: s["inserted"] for s in planned["switches"]} == {s["name"]: s["inserted"] for s in done["switches"]}
    again = mrcctl("--state", str(state), "install", "--dry-run", "--json", run_dir=run_dir)
    assert again.returncode == 0 and json.loads(again.stdout)["writes"] == 0
    table = mrcctl("--state", str(state), "install", "--dry-run", run_dir=run_dir)
    assert table.returncode == 0 and table.stdout.startswith("dry run: 8 switches"), table.stdout


def _counters(state: Path, run_dir: Path, switch: str) -> dict:
    r = mrcctl("--state", str(state), "counters", switch, "--json", run_dir=run_dir)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)[switch]


@pytest.mark.root
def test_counters_count_the_frames_sent(lab: FabricLab, state: Path, run_dir: Path) -> None:
    assert mrcctl("--state", str(state), "install", run_dir=run_dir).returncode == 0
    tx = lab.net.socket(lab.host_if["h1"])
    rx = lab.net.socket(lab.host_if["h2"])
    before = {n: _counters(state, run_dir, n) for n in ("nic1", "p1-leaf0", "p1-spine0")}
    for _ in range(7):
        tx.send(host_frame("h1", "h2", 0x1001))  # EV 0x1001: plane 1
    assert len(recv_frames(rx, timeout=5.0, want=7)) == 7
    after = {n: _counters(state, run_dir, n) for n in ("nic1", "p1-leaf0", "p1-spine0")}

    def moved(name: str, key: str, field: str) -> dict:
        old = {r[key]: r[field] for r in before[name]["ports"]}
        return {r[key]: r[field] - old.get(r[key], 0) for r in after[name]["ports"] if r[field] != old.get(r[key], 0)}

    assert moved("nic1", "plane", "tx_packets") == {1: 7}
    assert moved("p1-leaf0", "port", "rx_packets") == {1: 7}  # from the NIC
    assert moved("p1-leaf0", "port", "tx_packets") == {2: 7}  # up to spine 0
    assert moved("p1-spine0", "port", "tx_packets") == {2: 7}  # down to leaf 1
    assert after["p1-leaf0"]["drops"] == before["p1-leaf0"]["drops"]
    table = mrcctl("--state", str(state), "counters", "p1-leaf0", run_dir=run_dir)
    assert table.returncode == 0 and "p1-leaf0 (" in table.stdout
    wrong = mrcctl("--state", str(state), "counters", "p7-leaf0", run_dir=run_dir)
    assert wrong.returncode == 1 and "no switch 'p7-leaf0'" in wrong.stderr


@pytest.mark.root
def test_watch_once_shows_the_load_where_the_traffic_goes(lab: FabricLab, state: Path, run_dir: Path) -> None:
    assert mrcctl("--state", str(state), "install", run_dir=run_dir).returncode == 0
    tx = lab.net.socket(lab.host_if["h2"])
    stop = threading.Event()
    sent = [0]

    def send() -> None:  # h2 -> h1 over plane 0 (EV 0x1000) until the sample is taken
        while not stop.is_set():
            tx.send(host_frame("h2", "h1", 0x1000))
            sent[0] += 1
            time.sleep(0.005)

    sender = threading.Thread(target=send)
    sender.start()
    try:
        r = mrcctl("--state", str(state), "watch", "--once", "--interval", "2", "--json", run_dir=run_dir)
    finally:
        stop.set()
        sender.join(10)
    assert r.returncode == 0, r.stderr
    # 2 planes x (2 leaves + 1 spine) and 2 NICs
    assert "mrcctl watch: first counters read from 8 switches; sampling for 2 s\n" in r.stderr, r.stderr
    data = json.loads(r.stdout)
    assert data["interval"] >= 2.0
    assert data["planes"]["1"] == 0 and data["planes"]["0"] > 0, data["planes"]
    loads = {x["link"]: (x["up_pps"], x["down_pps"]) for x in data["links"]}
    # up: from the NIC / the leaf towards the spine; down: the other way
    busy = {"nic2:p0-leaf1": "up", "p0-leaf1:p0-spine0": "up", "p0-leaf0:p0-spine0": "down", "nic1:p0-leaf0": "down"}
    for link, (up, down) in loads.items():
        if link in busy:
            assert (up if busy[link] == "up" else down) > 0, (link, up, down)
            assert (down if busy[link] == "up" else up) == 0, (link, up, down)
        else:
            assert (up, down) == (0, 0), (link, up, down)
    # no more than what was sent in all
    assert data["planes"]["0"] * data["interval"] <= sent[0] + 1


@pytest.mark.root
def test_a_lower_election_id_is_refused_as_primary(lab: FabricLab, state: Path, run_dir: Path) -> None:
    # last of the module: the switches keep the highest election id they have seen
    env = {**os.environ, "MRC_P4_RUN_DIR": str(run_dir)}
    holder = subprocess.Popen([str(MRCCTL), "--state", str(state), "install", "--watch", "--election-id", "10"],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    try:
        for line in holder.stdout:  # type: ignore[union-attr]
            if line.startswith("watch: keeping"):
                break
        else:
            pytest.fail(f"install --watch ended: {holder.wait(10)}")
        low = mrcctl("--state", str(state), "install", "--election-id", "5", run_dir=run_dir)
        assert low.returncode == 1, low.stdout + low.stderr
        assert "not primary" in low.stderr and "--election-id" in low.stderr, low.stderr
        assert "mrcctl: nothing was written" in low.stderr
        high = mrcctl("--state", str(state), "install", "--election-id", "11", run_dir=run_dir)
        assert high.returncode == 0, high.stderr
    finally:
        holder.terminate()
        holder.wait(timeout=10)
