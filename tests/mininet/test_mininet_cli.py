"""Mininet as its users know it: the nodes carry the controller's names, and Mininet's
CLI commands work on them over IPv6; a killed network without a prefix is cleaned up.

Why in a private network namespace: without a node prefix every network's interfaces
are called the same (``p0-leaf0-eth1``), so each run here is ``unshare --net`` of
``python -m topologies.run`` (its own loopback, its own ``/sys`` for the gRPC ports, its own interface
names): nothing it creates can meet another network on the machine, and when the
namespace's last process ends its veths go with it. The CLI is fed a script
(``--cli-script``: Mininet's ``source``).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.root

REPO = Path(__file__).resolve().parents[2]
SHAPE = ["--planes", "1", "--spines", "1", "--leaves", "2", "--hosts-per-leaf", "1"]


def _in_private_netns(script: str, timeout: float) -> subprocess.CompletedProcess[str]:
    if shutil.which("unshare") is None:
        pytest.fail("unshare (util-linux) is missing: it is part of every Debian system")
    # --mount: a /sys of the new namespace (libpcap, which BMv2 opens its ports with,
    # reads the interfaces from /sys/class/net)
    return subprocess.run(["unshare", "--net", "--mount", "bash", "-c",
                           "mount -t sysfs sysfs /sys && ip link set lo up\n" + script], cwd=REPO,
                          capture_output=True, text=True, timeout=timeout,
                          env={**{k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL")},
                               # the CLI's own lines and its commands' (sh, mrcctl) in the order they happen
                               "PYTHONUNBUFFERED": "1"})


@pytest.mark.parametrize("target", ["embedded", pytest.param("bmv2", marks=pytest.mark.bmv2)])
def test_cli_commands_use_the_controllers_names_over_ipv6(target: str, tmp_path: Path) -> None:
    cli = tmp_path / "script"
    cli.write_text(textwrap.dedent(f"""\
        h1 ping -c 2 h2
        pingall
        iperf h1 h2
        h2 mrc-recv --listen h2 --timeout 30 --quiet > {tmp_path}/recv.out 2>&1 &
        h1 mrc-send --to h2 --bind h1 --bytes 100000 --rate 2000 {' '.join(SHAPE)}
        paths h1 h2
        p0-leaf0 ip -o link show p0-leaf0-eth1
        """))
    r = _in_private_netns(f"exec {sys.executable} -m topologies.run {' '.join(SHAPE)} --target {target} "
                          f"--no-demo --grpc-base 0 --run-dir {tmp_path / 'run'} --cli-script {cli}", timeout=200)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert "2 packets transmitted, 2 received" in out and "fd00:0:1:1::1" in out, out  # h2's address for "h2"
    assert out.count("*** Ping: testing ping reachability") == 1, "every Mininet message once"
    assert "h1 -> h2 \nh2 -> h1 \n*** Results: 0% dropped (2/2 received)" in out, out
    assert "Level 25" not in out
    assert "*** Iperf: testing TCP bandwidth between h1 and h2 (IPv6)" in out
    assert "Mbits/sec" in out.split("*** Iperf")[1].splitlines()[1], out
    assert "sent 100000 bytes in 100 packets of 1000 bytes over 64 EVs: verified by the receiver" in out, out
    assert "plane 0: nic1 -> p0-leaf0 -> p0-spine0 -> p0-leaf1 -> nic2  up  64 EVs" in out, out
    assert ": p0-leaf0-eth1@" in out, out  # the leaf's port 1 is named after the leaf
    assert not (tmp_path / "run" / "nodes.json").exists(), "the node record goes with the network"


@pytest.mark.parametrize("placement", [1, "plane"])
def test_cleanup_finds_a_killed_network_without_a_prefix_by_its_node_record(placement: int | str,
                                                                            tmp_path: Path) -> None:
    """One process per switch, and switches placed into processes: the runner killed,
    its switch processes (a group's too) and links are found and removed."""
    run = tmp_path / "run"
    code = ("import time; from pathlib import Path; from fabric.topology import from_parameters; "
            "from topologies.fabric_net import fabric_network\n"
            "with fabric_network(from_parameters(planes=1, spines=1, leaves=2, hosts_per_leaf=1), target='embedded', "
            f"grpc_base=0, run_dir=Path({str(run)!r}), switches_per_process={placement!r}):\n    time.sleep(300)\n")
    cleanup = f"{sys.executable} tools/cleanup.py --run-dir {run} --prefix none-of-ours"
    script = textwrap.dedent(f"""\
        {sys.executable} -c {shlex.quote(code)} >{tmp_path}/runner.out 2>&1 &
        runner=$!
        for i in $(seq 300); do [ -f {run}/network.json ] && break; sleep 0.2; done
        kill -9 $runner; wait $runner 2>/dev/null
        pid=$(cat {run}/p0-leaf0.pid)
        collector=$(pgrep -fx ".*python.* -m controller.events {run}")
        echo "== check"; {cleanup} --check; echo "check exit $?"
        echo "== clean"; {cleanup}; echo "clean exit $?"
        echo "== again"; {cleanup} --check; echo "again exit $?"
        echo "== links"; ip -o link show | grep -c -- '-eth' || true
        # gone, or a zombie its new parent has not reaped yet (the runner that started it was killed)
        echo "== switch process"; state=$(sed 's/.*) //' /proc/$pid/stat 2>/dev/null | cut -d' ' -f1)
        [ -z "$state" ] || [ "$state" = Z ] && echo gone || echo "alive ($state)"
        echo "== collector $collector"; state=$(sed 's/.*) //' /proc/$collector/stat 2>/dev/null | cut -d' ' -f1)
        [ -z "$state" ] || [ "$state" = Z ] && echo gone || echo "alive ($state)"
        """)
    r = _in_private_netns(script, timeout=120)
    out = r.stdout + r.stderr
    check, clean, again = out.split("== check")[1].split("== clean")[0], out.split("== clean")[1], \
        out.split("== again")[1]
    assert "check exit 1" in check and "p0-leaf0-eth1" in check and "p0-spine0-eth2" in check, out
    assert "nodes.json" in check and ".pid" in check, out
    assert "clean exit 0" in clean and "cleanup: removed" in clean, out
    assert "again exit 0" in again and "leftovers: nothing" in again, out
    assert out.split("== links")[1].split()[0] == "0", out
    assert out.split("== switch process")[1].split()[0] == "gone", out
    collector = out.split("== collector")[1].split("\n", 1)
    assert collector[0].strip().isdigit(), out  # the event collector ran ...
    assert collector[1].split()[0] == "gone", out  # ... and went with the rest
    if placement != 1:  # the leaf's process is the plane's group, named as such
        assert "grp0" in check, out


def _counters(out: str, switch: str) -> dict[int, tuple[int, int]]:
    """The CLI's `counters` line for ``switch``: port -> (rx, tx) packets."""
    line = next(ln for ln in out.splitlines() if ln.startswith(f"{switch}: port "))
    return {int(p): (int(rx), int(tx)) for p, rx, tx in re.findall(r"port (\d+): rx (\d+) tx (\d+)", line)}


def test_fail_restore_counters_watch_and_mrcctl_through_the_cli(tmp_path: Path) -> None:
    """The project's CLI commands on one small network (1 plane, 1 spine, 2 leaves, a host
    on each): the only path between h1 and h2 crosses p0-leaf0:p0-spine0. Sections are
    marked with `sh echo` so each command's output is read alone."""
    link = "p0-leaf0:p0-spine0"
    # with one host per leaf, a leaf's uplink to spine 0 is port 2; the spine's port to leaf 0 is 1
    leaf_end, spine_end = "p0-leaf0-eth2", "p0-spine0-eth1"
    cli = tmp_path / "script"
    tables = f"{sys.executable} -m tests.observe {tmp_path / 'run' / 'network.json'} {tmp_path}/tables"
    cli.write_text(textwrap.dedent(f"""\
        h1 ping -c 2 h2
        sh {tables}-before.json
        sh echo "== before"
        counters p0-leaf0 p0-spine0
        h1 ping -c 10 -i 0.2 h2
        sh echo "== after"
        counters p0-leaf0 p0-spine0
        sh echo "== fail"
        fail {link}
        sh ip -o link show {leaf_end}; ip -o link show {spine_end}
        mrcctl links
        mrcctl install --dry-run
        h1 ping -c 2 -W 1 h2
        sh {tables}-during.json; ip -o link show {leaf_end} > {tmp_path}/during-link
        sh echo "== restore"
        restore {link}
        sh ip -o link show {leaf_end}; ip -o link show {spine_end}
        sh {tables}-after.json
        mrcctl links
        h1 ping -c 2 h2
        sh echo "== watch"
        h1 ping -c 40 -i 0.05 h2 > /dev/null 2>&1 &
        watch 1
        sh echo "== end"
        """))
    r = _in_private_netns(f"exec {sys.executable} -m topologies.run {' '.join(SHAPE)} --target embedded "
                          f"--no-demo --grpc-base 0 --run-dir {tmp_path / 'run'} --cli-script {cli}", timeout=200)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    # the nodes' commands print to stderr, the CLI and sh/mrcctl to stdout
    pings = [(int(a), int(b)) for a, b in re.findall(r"(\d+) packets transmitted, (\d+) received", r.stderr)]
    assert pings == [(2, 2), (10, 10), (2, 0), (2, 2)], out  # the cut cable is h1's only way to h2
    section = {name: r.stdout.split(f"== {name}\n")[1].split("\n== ")[0] for name in
               ("before", "after", "fail", "restore", "watch")}

    # counters: 10 echo requests leave h1 and 10 replies come back, each crossing both switches
    for switch in ("p0-leaf0", "p0-spine0"):
        before, after = _counters(section["before"], switch), _counters(section["after"], switch)
        assert sorted(after) == [1, 2], section["after"]
        assert {p: (after[p][0] - before[p][0], after[p][1] - before[p][1]) for p in after} == \
            {1: (10, 10), 2: (10, 10)}, (section["before"], section["after"])

    # fail: both ends of the cable down, the state file says so, and no switch's table changed
    fail = section["fail"]
    assert f"{link} down: {leaf_end} and {spine_end} down; no table written\n" in fail, fail
    states = re.findall(r"^\d+: (\S+)@\S+: <([^>]*)>.* state (\w+)", fail, re.M)
    assert [(n, "UP" in f.split(","), s) for n, f, s in states] == [(leaf_end, False, "DOWN"),
                                                                   (spine_end, False, "DOWN")], fail
    assert "default: 4 links (1 down, 0 denied)" in fail and re.search(rf"│ {link} .*│ down +│", fail), fail
    assert "dry run: 5 switches, " in fail and " 0 written (0 inserted, 0 modified, 0 deleted)" in fail, fail
    assert ": nothing to change" in fail, fail
    # the test's own reads of every table of every switch (tests/observe.py): the same
    # before the cut, while it was down (the leaf's end still down after the read) and after
    read = {when: json.loads((tmp_path / f"tables-{when}.json").read_text()) for when in ("before", "during", "after")}
    assert sorted(read["before"]) == ["nic1", "nic2", "p0-leaf0", "p0-leaf1", "p0-spine0"]
    assert all(read["before"].values()), read["before"]
    assert "state DOWN" in (tmp_path / "during-link").read_text()
    assert read["during"] == read["before"] and read["after"] == read["before"]

    # restore: both ends up again, nothing down
    back = section["restore"]
    assert f"{link} up: {leaf_end} and {spine_end} up; no table written\n" in back, back
    states = re.findall(r"^\d+: (\S+)@\S+: <([^>]*)>.* state (\w+)", back, re.M)
    assert [(n, "UP" in f.split(","), s) for n, f, s in states] == [(leaf_end, True, "UP"),
                                                                   (spine_end, True, "UP")], back
    assert "default: 4 links (0 down, 0 denied)" in back and re.search(rf"│ {link} .*│ up +│", back), back

    # watch 1: one sample of the NICs' packets into the only plane while h1 pings h2
    # (40 requests and their 40 replies at most, all in plane 0)
    lines = section["watch"].splitlines()
    assert len(lines) == 1, section["watch"]
    m = re.fullmatch(r"plane 0: (\d+) \(100%\) \(per second\)", lines[0])
    assert m and 0 < int(m[1]) <= 80, lines


def test_a_killed_switch_process_is_reported_once_and_restart_then_install_brings_it_back(tmp_path: Path) -> None:
    """The default placement puts the leaves and the spine into one process: killed,
    the CLI says so once (naming the process, the signal, its switches and what to do),
    not once per switch; `restart` starts it again with empty tables, `install` fills
    them and h1 reaches h2 again."""
    run = tmp_path / "run"
    cli = tmp_path / "script"
    cli.write_text(textwrap.dedent(f"""\
        h1 ping -c 2 h2
        sh echo "== kill"; kill -9 $(cat {run}/p0-leaf0.pid)
        h1 ping -c 1 -W 1 h2
        sh echo "== again"
        sh echo "== restart"
        restart p0-leaf0
        h1 ping -c 1 -W 1 h2
        install
        h1 ping -c 2 h2
        sh echo "== end"
        """))
    r = _in_private_netns(f"exec {sys.executable} -m topologies.run {' '.join(SHAPE)} --target embedded "
                          f"--switches-per-process cpu --no-demo --grpc-base 0 --run-dir {run} --cli-script {cli}",
                          timeout=200)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    pings = [(int(a), int(b)) for a, b in re.findall(r"(\d+) packets transmitted, (\d+) received", r.stderr)]
    # before the kill; the process dead; back but its tables empty; installed again
    assert pings == [(2, 2), (1, 0), (1, 0), (2, 2)], out
    warnings = [ln for ln in r.stdout.splitlines() if ln.startswith("warning:")]
    assert len(warnings) == 1, out  # one process died: one warning, whatever the number of its switches
    w = warnings[0]
    assert re.search(r"process \S*grp\d \(pid \d+, 3 switches: p0-leaf0, p0-leaf1, p0-spine0\)", w), w
    assert "was killed by SIGKILL while running, taking all its switches down" in w, w
    assert "`restart p0-leaf0`" in w and "`mrcctl install`" in w, w
    restart = r.stdout.split("== restart\n")[1]
    assert re.search(r"p0-leaf0 \(.*process \S*grp\d\) answers again; run install", restart), restart
    assert re.search(r"^5 switches, \d+ entries wanted, [1-9]\d* written", restart, re.M), restart
