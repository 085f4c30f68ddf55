"""MRC-lite sender and receiver packets/s on loopback, no fabric.

Runs ``mrc-recv`` and ``mrc-send`` as two processes on loopback (127.0.0.1 and
127.0.0.2), 1,000-byte payloads, 64 EVs, every byte verified, and prints packets/s
of each side from their JSON reports (sender: data packets sent / completion time;
receiver: packets placed / time from OPEN to the last byte) and the CPU each spent
per packet. Target: 50,000 packets/s each. The sender runs with its default, runs of
packets in one system call (``--gso``), and without (``--no-gso``), interleaved in
the same run, plus the state machines alone (no sockets) as the per-packet cost of
the transport's Python.

``.venv/bin/python bench/endpoints_loopback.py [PACKETS] [RUNS]`` (default 100000, 3:
the median of the runs is printed; the machine is shared, figures are noisy).
"""

from __future__ import annotations

import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from fabric.plan import EvPath  # noqa: E402
from endpoints.transport import Receiver, Sender, SenderConfig  # noqa: E402

TARGET = 50_000
MTU = 1000
BIN = Path(sys.executable).parent


def run_pair(packets: int, mode: str, port: int, tmp: Path) -> tuple[float, float, int, float, float]:
    """One transfer; (sender packets/s, receiver packets/s, retransmissions, sender and
    receiver CPU microseconds per packet)."""
    rrep, srep = tmp / "recv.json", tmp / "send.json"
    recv = subprocess.Popen([str(BIN / "mrc-recv"), "--listen", "127.0.0.1", "--port", str(port),
                             "--report", str(rrep), "--timeout", "120", "--linger", "0.2", "-q"])
    try:
        time.sleep(0.5)
        send = subprocess.run([str(BIN / "mrc-send"), "--to", "127.0.0.1", "--bind", "127.0.0.2", "--port", str(port),
                               "--bytes", str(packets * MTU), "--mtu", str(MTU), "--ev-list", "20000-20063",
                               mode, "--report", str(srep), "--timeout", "120", "-q"],
                              capture_output=True, text=True)
        code = recv.wait(timeout=130)
    finally:
        if recv.poll() is None:
            recv.kill()
    if send.returncode or code:
        raise RuntimeError(f"transfer failed (mrc-send exit {send.returncode}, mrc-recv exit {code}): "
                           f"{send.stderr.strip()}")
    s = json.loads(srep.read_text())
    r = json.loads(rrep.read_text())
    (c,) = r["connections"]
    return (s["packets_sent"] / s["completion_time_s"], c["counts"]["packets"] / c["completion_time_s"],
            s["retransmissions"]["total"], s["cpu_s"] / packets * 1e6, r["cpu_s"] / packets * 1e6)


def state_machines(packets: int) -> tuple[float, float]:
    """Microseconds per packet of the sender (send + its ACK) and of the receiver, no sockets."""
    data = random.Random(1).randbytes(packets * MTU)
    evs = [EvPath(20000 + k, k % 4, 0) for k in range(64)]
    s = Sender(data, evs, SenderConfig(), 0.0)
    r = Receiver()
    t = 0.0
    for tx in s.poll(t):
        for a in r.on_packet(tx.payload, t, "peer", tx.ev):
            s.on_packet(a.payload, t)
    ts = tr = 0.0
    n = 0
    clock = time.perf_counter
    while not s.finished:
        t += 1e-5
        a0 = clock()
        out = s.poll(t)
        a1 = clock()
        acks = [a for tx in out for a in r.on_packet(tx.payload, t, "peer", tx.ev)]
        a2 = clock()
        for a in acks:
            s.on_packet(a.payload, t)
        ts += (a1 - a0) + (clock() - a2)
        tr += a2 - a1
        n += len(out)
    return ts / n * 1e6, tr / n * 1e6


def main() -> int:
    packets = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    print(f"MRC-lite endpoints on loopback: {packets} packets of {MTU} bytes, 64 EVs, median of {runs} runs "
          f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)")
    us_s, us_r = state_machines(min(packets, 50_000))
    print(f"  state machines alone: sender {us_s:.2f} us/packet (send + ACK), receiver {us_r:.2f} us/packet "
          f"(place + ACK): at most {1e6 / us_s:,.0f} and {1e6 / us_r:,.0f} packets/s")
    modes = ["--gso", "--no-gso"]
    port = 20000 + os.getpid() % 10000 + 100
    ok = True
    with tempfile.TemporaryDirectory() as d:
        # Interleaved (--gso, --no-gso, --gso, ...): load from others hits both alike.
        figures: dict[str, list[tuple[float, float, int, float, float]]] = {m: [] for m in modes}
        for _ in range(runs):
            for m in modes:
                figures[m].append(run_pair(packets, m, port, Path(d)))
    for m in modes:
        snd, rcv, _, cpu_s, cpu_r = (statistics.median(f[i] for f in figures[m]) for i in range(5))
        met = snd >= TARGET and rcv >= TARGET
        ok = ok and met
        rtx = sum(f[2] for f in figures[m])
        print(f"  {m:8s}: sender {snd:,.0f} packets/s ({snd * MTU * 8 / 1e6:,.0f} Mb/s goodput, {cpu_s:.1f} us CPU "
              f"per packet), receiver {rcv:,.0f} packets/s ({cpu_r:.1f} us); target {TARGET:,} each: "
              f"{'met' if met else 'NOT met'}; {rtx} retransmissions in {runs} runs")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
