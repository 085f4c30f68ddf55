"""The Mininet fabric: time to a ready network, ping RTT and UDP throughput across it.

Starts the default fabric (4 planes x (2 leaves + 2 spines), 2 hosts per leaf: 20
embedded-target switches) under a private prefix and run directory, once per
placement (``FABRIC_NET_PLACEMENTS``, comma-separated): by default only as ``make
run`` places them (``cpu``: ``p4target group`` processes, the fabric in one per CPU
but one, the NICs in one); ``plane`` is one process per plane and one for the NICs,
``1`` one process per switch. With the controller installing every table, it
prints for each:

- seconds until every switch answers P4Runtime, and until every table is installed;
  memory (RSS) of the switch processes; their CPU while the network is idle;
- ping -6 RTT between two hosts on different leaves (NIC, leaf, spine, leaf, NIC: 5
  P4 switches each way);
- UDP throughput of one MRC flow between the same hosts, sent as fast as the sender
  can, on one plane (the EVs of plane 0 only) and sprayed over all planes (every
  EV): ``FABRIC_NET_ROUNDS`` rounds of each (default 5), interleaved (one-plane then
  sprayed, then sprayed then one-plane, ...) so that the machine's other load falls
  on both alike; the median rate of each with its spread, the ratio of the medians
  with the spread of the ratios of each round's pair, and the switch processes' CPU
  time per delivered packet (fabric and NIC processes apart), which depends less on
  the load than a rate does.

Needs root and Mininet. Prints only; never asserts.
"""

from __future__ import annotations

import os
import re
import secrets
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from topologies.mrc_flow import run_stream  # noqa: E402

PACKETS = 10000  # per flow: a few tenths of a second, within the NIC's host-port ring
ROUNDS = int(os.environ.get("FABRIC_NET_ROUNDS", "5"))
# make run's placement; ``cpu,plane,1`` adds one process per plane and one per switch (about
# 2-5 minutes each on a loaded 2-core machine: together more than the bench's limit)
PLACEMENTS = os.environ.get("FABRIC_NET_PLACEMENTS", "cpu")


def rss_mb(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            pass
    return total / 1024


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU time of the processes so far (every thread), to the nanosecond:
    the first field of each thread's /proc schedstat."""
    from bench._proc_stats import sched_of

    return sched_of(pids).cpu_ns / 1e9


@dataclass(frozen=True)
class Flow:
    """One UDP flow's figures: its rate and the switch processes' CPU per packet."""

    sent: int
    received: int
    pps: float
    mbps: float
    cpu_us: dict[str, float]  # process role ("fabric", "NICs") -> CPU microseconds per delivered packet


def udp_flow(fn, src: str, dst: str, evs: list[int], roles: dict[str, list[int]]) -> Flow:
    c0 = {role: cpu_seconds(pids) for role, pids in roles.items()}
    # the receiver waits half the timeout for frames that were lost: a round with losses costs that much
    got = run_stream(fn, src, dst, evs, PACKETS, 0, size=1024, timeout=30.0)
    used = {role: cpu_seconds(pids) - c0[role] for role, pids in roles.items()}
    secs = got["first_to_last_seconds"] or 1e-9
    n = max(got["received"], 1)
    return Flow(got["sent"], got["received"], got["received"] / secs, got["udp_payload_bytes"] * 8 / secs / 1e6,
                {role: s / n * 1e6 for role, s in used.items()})


def spread(values: list[float], fmt: str = ",.0f") -> str:
    return f"median {format(statistics.median(values), fmt)} ({format(min(values), fmt)}-{format(max(values), fmt)})"


def report_ready(fn, rep, ready: float, tag: str) -> list[int]:
    sws = fn.p4_switches()
    pids = sorted({sw.proc.pid for sw in sws})
    print(f"{tag}: default fabric ({len(sws)} P4 switches in {len(pids)} processes): switches answer after "
          f"{fn.switches_ready:.1f} s, every table ({rep.entries} entries) installed after {ready:.1f} s; "
          f"switch RSS {rss_mb(pids):.0f} MB in all, {rss_mb(pids) / len(sws):.1f} MB per switch")
    c0 = cpu_seconds(pids)
    time.sleep(5)
    idle = (cpu_seconds(pids) - c0) / 5 * 100
    print(f"{tag}: idle network: the {len(pids)} switch processes use {idle:.1f}% of one core together")
    return pids


def report_ping(fn, src: str, dst: str, tag: str) -> None:
    fn.ping(src, dst, count=3)  # neighbour discovery and warm caches
    out = fn.host(src).cmd(f"ping -6 -n -c 50 -i 0.02 {fn.address(dst)}")
    m = re.search(r"= ([\d.]+)/([\d.]+)/([\d.]+)/", out)
    if m:
        print(f"{tag}: ping -6 {src} -> {dst} (5 P4 switches each way): rtt min/avg/max "
              f"{m.group(1)}/{m.group(2)}/{m.group(3)} ms over 50 pings")


def report_flows(fn, topo, src: str, dst: str, tag: str) -> None:
    from fabric import plan as P

    roles: dict[str, list[int]] = {}
    for sw in fn.p4_switches():
        role = "NICs" if sw.program == "nic" else "fabric"
        if sw.proc.pid not in roles.setdefault(role, []):
            roles[role].append(sw.proc.pid)
    evs = P.nic_evs(topo, topo.host(src), topo.host(dst))
    one, spray = "one plane (plane 0's EVs)", f"sprayed over all {topo.planes} planes"
    chosen = {one: [e.ev for e in evs if e.plane == 0], spray: [e.ev for e in evs]}
    runs: dict[str, list[Flow]] = {one: [], spray: []}
    for k in range(ROUNDS):  # interleaved, the order swapped every round: the machine's other load varies
        for label in (one, spray) if k % 2 == 0 else (spray, one):
            runs[label].append(udp_flow(fn, src, dst, chosen[label], roles))
    for label, flows in runs.items():
        cpu = "; ".join(f"{role} {spread([f.cpu_us[role] for f in flows], '.1f')} us"
                        for role in roles)
        print(f"{tag}: UDP (MRC WRITE, 1024-byte payload) {src} -> {dst}, {label}, {ROUNDS} rounds: "
              f"{spread([f.pps for f in flows])} packets/s, {statistics.median([f.mbps for f in flows]):.1f} Mb/s; "
              f"delivered {min(f.received for f in flows)}-{max(f.received for f in flows)} of {PACKETS}; "
              f"switch CPU per packet: {cpu}")
    rate = {label: statistics.median([f.pps for f in flows]) for label, flows in runs.items()}
    pairs = [s.pps / max(o.pps, 1e-9) for o, s in zip(runs[one], runs[spray], strict=True)]
    cpu_total = {label: statistics.median([sum(f.cpu_us.values()) for f in flows]) for label, flows in runs.items()}
    print(f"{tag}: sprayed / one-plane rate: {rate[spray] / max(rate[one], 1e-9):.2f}x (ratio of the medians; "
          f"per round {min(pairs):.2f}-{max(pairs):.2f}x); switch CPU per packet, sprayed / one-plane: "
          f"{cpu_total[spray] / max(cpu_total[one], 1e-9):.2f}x ({cpu_total[spray]:.1f} / {cpu_total[one]:.1f} us)")


def measure(topo, placement) -> None:
    from topologies.fabric_net import fabric_network, install_tables

    prefix = "mrc" + secrets.token_hex(2)[:3]
    where = {"cpu": "fabric in one process per CPU but one, NICs in one",
             "plane": "one process per plane, NICs in one"}.get(placement, f"{placement} switch(es) per process")
    with tempfile.TemporaryDirectory(prefix="mrc-bench-") as tmp:
        t0 = time.monotonic()
        with fabric_network(topo, prefix=prefix, target="embedded", grpc_base=0, run_dir=Path(tmp),
                            switches_per_process=placement) as fn:
            rep = install_tables(fn)
            ready = time.monotonic() - t0
            tag = f"fabric_net [{where}]"
            report_ready(fn, rep, ready, tag)
            src, dst = "h1", "h3"  # leaf 0 to leaf 1: through a spine
            report_ping(fn, src, dst, tag)
            report_flows(fn, topo, src, dst, tag)
    print(f"{tag}: this placement took {time.monotonic() - t0:.0f} s in all (the bench's limit: 600 s for every placement)")


def main() -> int:
    if os.geteuid() != 0:
        print("fabric_net: needs root (Mininet); skipped")
        return 0
    from fabric.topology import default_topology
    from topologies.switch_group import parse_placement

    topo = default_topology()
    for placement in PLACEMENTS.split(","):
        measure(topo, parse_placement(placement))
    return 0


if __name__ == "__main__":
    sys.exit(main())
