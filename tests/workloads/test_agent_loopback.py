"""Two workload agents on loopback addresses of their own, as the runner drives them:
several transfers at once in both directions on one process per host, every one
verified by its receiver and matched to its sender by the SHA-256 both report.

On the MRC transport both ends share one socket on the MRC port (answers to the
senders by QP, the rest to the receiver); on the per-flow one each sender has its
own source port. No fabric: the EVs are only numbers here."""

from __future__ import annotations

import hashlib
import json
import random
import subprocess
import sys
import time
from typing import Any

import pytest

from endpoints.cli import pseudo_random

SHAPE = json.dumps({"planes": 2, "spines": 1, "leaves": 2, "hosts_per_leaf": 1})  # h1 on leaf 0, h2 on leaf 1


def agent(host: str, addr: str, transport: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "workloads.agent", host, addr, transport, "20", "0.05", "0.005",
                             "0.001", SHAPE], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, bufsize=1)


def events(p: subprocess.Popen[str], until: int, kinds: tuple[str, ...]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    assert p.stdout is not None
    while sum(e["ev"] in kinds for e in out) < until:
        line = p.stdout.readline()
        assert line, (out, p.stderr.read() if p.stderr else "")
        out.append(json.loads(line))
    return out


@pytest.mark.parametrize("transport", ["mrc", "perflow"])
def test_transfers_both_ways_at_once(transport: str) -> None:
    base = f"127.{random.randrange(1, 250)}.{random.randrange(1, 250)}"
    a_addr, b_addr = f"{base}.1", f"{base}.2"
    a, b = agent("h1", a_addr, transport), agent("h2", b_addr, transport)
    sizes = {1: 120_000, 2: 80_001, 3: 5}  # h1 -> h2
    try:
        assert events(a, 1, ("ready",))[0] == {"ev": "ready", "host": "h1"}
        assert events(b, 1, ("ready",))[0]["ev"] == "ready"
        assert a.stdin is not None and b.stdin is not None
        for flow, size in sizes.items():
            a.stdin.write(json.dumps({"op": "send", "flow": flow, "dst": "h2", "to": b_addr, "size": size}) + "\n")
        b.stdin.write(json.dumps({"op": "send", "flow": 9, "dst": "h1", "to": a_addr, "size": 50_000, "seed": 3}) + "\n")
        t0 = time.monotonic()
        got_a = events(a, 4, ("sent", "recv"))  # its 3 senders' ends and 1 arrival
        got_b = events(b, 4, ("sent", "recv"))
        assert time.monotonic() - t0 < 20
    finally:
        for p in (a, b):
            if p.stdin is not None:
                p.stdin.write('{"op": "quit"}\n')
                p.stdin.close()
            p.wait(timeout=10)
    assert a.returncode == 0 and b.returncode == 0
    started = {e["flow"]: e["sha256"] for e in got_a + got_b if e["ev"] == "start"}
    for flow, size in sizes.items():  # the data each sender announced is the flow's own
        assert started[flow] == hashlib.sha256(pseudo_random(flow, size)).hexdigest()
    assert started[9] == hashlib.sha256(pseudo_random(9 + (3 << 32), 50_000)).hexdigest()
    arrivals = {e["sha256"]: e for e in got_b if e["ev"] == "recv"}
    assert {arrivals[started[f]]["bytes"] for f in sizes} == set(sizes.values())
    assert all(e["verified"] and e["peer"] == a_addr for e in arrivals.values())
    (back,) = [e for e in got_a if e["ev"] == "recv"]
    assert back["sha256"] == started[9] and back["verified"] and back["bytes"] == 50_000 and back["peer"] == b_addr
    sent = [e for e in got_a + got_b if e["ev"] == "sent"]
    assert sorted(e["flow"] for e in sent) == [1, 2, 3, 9] and all(e["ok"] for e in sent)


def test_a_bad_command_is_an_error_event_and_the_agent_goes_on() -> None:
    base = f"127.{random.randrange(1, 250)}.{random.randrange(1, 250)}"
    a = agent("h1", f"{base}.1", "mrc")
    try:
        assert events(a, 1, ("ready",))[0]["ev"] == "ready"
        assert a.stdin is not None
        a.stdin.write('{"op": "send", "flow": "x"}\n')
        a.stdin.write('{"op": "send", "flow": 1, "dst": "h9", "to": "127.0.0.1", "size": 10}\n')
        errs = events(a, 2, ("error",))
    finally:
        if a.stdin is not None:
            a.stdin.write('{"op": "quit"}\n')
            a.stdin.close()
        a.wait(timeout=10)
    assert [e["ev"] for e in errs] == ["error", "error"] and "h9" in errs[1]["text"]
    assert a.returncode == 0
