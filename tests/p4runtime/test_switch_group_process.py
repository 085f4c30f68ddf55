"""A running ``p4target group`` process: its collector mode and its loop report.

Two group processes on real veths in a private namespace (``p4t-gp-*``), one switch
each (rt_all.p4, ports 1 and 2), one with the group file's ``gc: off`` and one
without ``gc`` (p4target's default, ``freeze``). Each is asked with SIGUSR2 for its
report (one line in its log) before and after the test sends frames into port 1.

What is checked: the collector is as the file says in the running process (off:
disabled, not one collection since start-up, objects frozen; freeze: enabled, objects
frozen); the loop counts exactly the frames sent (the namespace has IPv6 off:
nothing else arrives), in at least one and at most that many ring batches.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from p4target.ports.loop_stats import ask_report
from p4target.ports.netio import open_interface_socket
from tests.p4runtime.conftest import RT_ALL, tframe
from tests.p4runtime.test_switch_group import free_port, wait_answering
from tests.p4runtime.test_veth_run import ip, stop

REPO = Path(__file__).resolve().parents[2]
FRAMES = 25
pytestmark = pytest.mark.root


def report_of(proc: subprocess.Popen[bytes], log: Path) -> dict[str, Any]:
    report = ask_report(proc.pid, log, timeout=10.0)
    assert report is not None, f"no report in {log}: {log.read_text()}"
    assert proc.poll() is None, f"the group exited on SIGUSR2: {log.read_text()}"
    return report


@dataclass
class Groups:
    ns: str
    by_mode: dict[str, tuple[subprocess.Popen[bytes], Path, str]]  # gc mode -> process, log, the test's port 1


@pytest.fixture(scope="module")
def groups(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Groups]:
    """A group process per gc mode ("off", "freeze"), one switch s-MODE each."""
    tmp = tmp_path_factory.mktemp("gp")
    tag = uuid.uuid4().hex[:4]
    ns = f"p4t-gp-{tag}"
    procs: list[subprocess.Popen[bytes]] = []
    out: dict[str, tuple[subprocess.Popen[bytes], Path, str]] = {}
    try:
        ip("netns", "add", ns)
        for knob in ("all", "default"):
            subprocess.run(["ip", "netns", "exec", ns, "sysctl", "-qw", f"net.ipv6.conf.{knob}.disable_ipv6=1"],
                           check=True)
        for k, mode in enumerate(("off", "freeze")):
            ends = [f"p4t{tag}{k}{c}" for c in "abxy"]
            for sw_end, test_end in ((ends[0], ends[2]), (ends[1], ends[3])):
                ip("-n", ns, "link", "add", sw_end, "type", "veth", "peer", "name", test_end)
                ip("-n", ns, "link", "set", sw_end, "up")
                ip("-n", ns, "link", "set", test_end, "up")
            addr = f"127.0.0.1:{free_port()}"
            spec: dict[str, Any] = {"switches": [{"name": f"s-{mode}", "program": str(RT_ALL), "device_id": 1,
                                                  "netns": ns, "grpc_addr": addr, "rx_ring_frames": 64,
                                                  "tx_ring_frames": 32, "ports": {1: ends[0], 2: ends[1]}}]}
            if mode != "freeze":
                spec["gc"] = mode
            path = tmp / f"g{k}.yaml"
            path.write_text(yaml.safe_dump(spec))
            log = tmp / f"g{k}.log"
            with open(log, "wb") as f:
                proc = subprocess.Popen([sys.executable, "-m", "p4target", "group", str(path)], cwd=REPO, stdout=f,
                                        stderr=subprocess.STDOUT)
            procs.append(proc)
            wait_answering(addr, 1, proc, log)
            out[mode] = (proc, log, ends[2])
        yield Groups(ns, out)
    finally:
        for proc in procs:
            stop(proc)
        ip("netns", "del", ns, check=False)


def test_the_collector_runs_as_the_group_file_says(groups: Groups) -> None:
    off = report_of(*groups.by_mode["off"][:2])["gc"]
    freeze = report_of(*groups.by_mode["freeze"][:2])["gc"]
    assert off["enabled"] is False and freeze["enabled"] is True
    assert off["frozen"] > 0 and freeze["frozen"] > 0
    assert off["collections"] == [0, 0, 0]  # disabled since start-up: not one collection


def _send_and_read(groups: Groups, frame: bytes) -> tuple[dict[str, Any], dict[str, Any]]:
    """The report before and after FRAMES copies of ``frame`` sent into the switch
    that freezes its heap, once it counted them in (or after 10 s)."""
    proc, log, port1 = groups.by_mode["freeze"]
    before = report_of(proc, log)
    tx: socket.socket = open_interface_socket(port1, groups.ns)
    try:
        for _ in range(FRAMES):
            tx.send(frame)
    finally:
        tx.close()
    deadline = time.monotonic() + 10
    while True:
        after = report_of(proc, log)
        if after["switches"]["s-freeze"]["rx"] - before["switches"]["s-freeze"]["rx"] >= FRAMES \
                or time.monotonic() > deadline:
            return before, after
        time.sleep(0.2)


def test_the_loop_counts_the_frames_it_read_and_its_batches(groups: Groups) -> None:
    proc = groups.by_mode["freeze"][0]
    before, after = _send_and_read(groups, tframe())
    sw0, sw1 = before["switches"]["s-freeze"], after["switches"]["s-freeze"]
    assert sw1["rx"] - sw0["rx"] == FRAMES
    assert 1 <= sw1["batches"] - sw0["batches"] <= FRAMES
    assert 1 <= sw1["largest_batch"] <= FRAMES
    assert after["passes"] > before["passes"] and after["pid"] == proc.pid
    # Frames with no test header (IPv4's EtherType) take rt_all.p4's compiled fast path,
    # every one: the frames above already bound it (the first frame a switch sees
    # takes the general path and binds it). The report counts them apart.
    before, after = _send_and_read(groups, tframe(ether_type=0x0800))
    sw0, sw1 = before["switches"]["s-freeze"], after["switches"]["s-freeze"]
    assert sw1["rx"] - sw0["rx"] == FRAMES
    assert sw1["fast"] - sw0["fast"] == FRAMES
