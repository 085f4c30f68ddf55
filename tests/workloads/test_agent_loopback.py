"""Two workload agents on loopback addresses of their own, as the runner drives them:
several transfers at once in both directions on one process per host, every one
verified by its receiver and matched to its sender by the SHA-256 both report.

On the MRC transport both ends share one socket on the MRC port (answers to the
senders by QP, the rest to the receiver); on the per-flow one and on RoCE each sender
has its own source port (a QP's: on the EV its 4-tuple hashes onto, recomputed here).
No fabric: the EVs are only numbers here."""

from __future__ import annotations

import hashlib
import ipaddress
import json
import random
import signal
import subprocess
import sys
import time
import zlib
from typing import Any

import pytest

from endpoints.cli import pseudo_random

SHAPE = json.dumps({"planes": 2, "spines": 1, "leaves": 2, "hosts_per_leaf": 1})  # h1 on leaf 0, h2 on leaf 1


EVS = {"h1": list(range(4096, 4096 + 64)), "h2": list(range(4096, 4096 + 64))}  # the plan's 64 EVs of each NIC, in order


def agent(host: str, addr: str, transport: str, timeout: float = 20) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "workloads.agent", host, addr, transport, f"{timeout:g}", "0.05",
                             "0.005", "0.001", SHAPE], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, bufsize=1)


def hashed_ev(src: str, dst: str, sport: int, evs: list[int]) -> int:
    """ECMP's choice written out: CRC-32 of source and destination address, source and
    destination port (4791), modulo the number of EVs."""
    key = ipaddress.ip_address(src).packed + ipaddress.ip_address(dst).packed + sport.to_bytes(2, "big") + \
        (4791).to_bytes(2, "big")
    return evs[zlib.crc32(key) % len(evs)]


def events(p: subprocess.Popen[str], until: int, kinds: tuple[str, ...]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    assert p.stdout is not None
    while sum(e["ev"] in kinds for e in out) < until:
        line = p.stdout.readline()
        assert line, (out, p.stderr.read() if p.stderr else "")
        out.append(json.loads(line))
    return out


@pytest.mark.parametrize("transport", ["mrc", "perflow", "roce"])
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
    if transport == "roce":  # one QP each, from its own source port in the dynamic range, on its hashed EV
        by_flow = {e["flow"]: e for e in sent}
        for flow, sha in started.items():
            e, arrival = by_flow[flow], (back if flow == 9 else arrivals[sha])
            src, dst = (b_addr, a_addr) if flow == 9 else (a_addr, b_addr)
            port = arrival["peer_port"]  # where the QP's packets came from, as the receiving socket saw them
            assert 49152 <= port <= 65535 and e["source_port"] == port
            assert e["qp_ev"] == hashed_ev(src, dst, port, EVS["h1"])
            assert e["evs_retired"] == [] and e["qp_state"] == "complete"
        assert len({by_flow[f]["source_port"] for f in sizes}) == 3


def test_a_queue_pair_whose_receiver_dies_ends_failed_and_the_agent_goes_on() -> None:
    """RoCE: the receiving agent killed mid-transfer; the QP runs out of retries (its
    local ACK timeout, 8 times: 1 + 7 retries), its flow ends failed with the QP's
    reason, and the sending agent still answers commands."""
    base = f"127.{random.randrange(1, 250)}.{random.randrange(1, 250)}"
    a_addr, b_addr = f"{base}.1", f"{base}.2"
    a, b = agent("h1", a_addr, "roce", timeout=30), agent("h2", b_addr, "roce")
    try:
        events(a, 1, ("ready",))
        events(b, 1, ("ready",))
        assert a.stdin is not None
        a.stdin.write(json.dumps({"op": "send", "flow": 1, "dst": "h2", "to": b_addr, "size": 20_000_000}) + "\n")
        events(a, 1, ("start",))
        time.sleep(0.5)
        b.send_signal(signal.SIGKILL)
        t0 = time.monotonic()
        (sent,) = [e for e in events(a, 1, ("sent",)) if e["ev"] == "sent"]
        assert time.monotonic() - t0 < 15
        a.stdin.write('{"op": "send", "flow": 2, "dst": "h9", "to": "127.0.0.1", "size": 10}\n')
        (err,) = [e for e in events(a, 1, ("error",)) if e["ev"] == "error"]
    finally:
        for p in (a, b):
            if p.stdin is not None and p.poll() is None:
                p.stdin.write('{"op": "quit"}\n')
                p.stdin.close()
            p.wait(timeout=10)
    assert sent["flow"] == 1 and not sent["ok"] and sent["qp_state"] == "error"
    assert sent["error"].startswith("retry count exceeded") and sent["timeouts"] == 8
    assert "h9" in err["text"] and a.returncode == 0


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
