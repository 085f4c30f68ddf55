"""Goodput of one unpaced MRC-lite transfer against one TCP flow and one UDP stream,
measured one after the other on ONE Mininet fabric (4 planes x (2 leaves + 2 spines),
2 hosts per leaf, embedded target), h1 -> h3, the same bytes each.

MRC-lite runs with its defaults (window only, no pacing) and payloads of the size of
TCP's segments here (``experiments/tcp.py``: 1380 bytes), sprayed over 8 paths; TCP
is the kernel's on one path (the NIC sprays non-MRC traffic per flow); the UDP stream
(``experiments/udp_stream.py``) sends the same bytes in datagrams of MRC-lite's
packet size as fast as the host takes them, on one path: what the fabric delivers of
traffic that never waits for feedback. The ratios MRC/TCP and MRC/UDP are printed
(targets: at least 1.0 and 0.8). With BMv2 on the PATH (``. /work/shared/bmv2/env.sh``
or a BMv2 install) the default transfer also runs on a BMv2 fabric and its
retransmissions are printed as a share of the data packets (target: under 5%).
Beside each rate it prints what one packet cost in CPU (microseconds per packet of the
transfer): the fabric's switch processes and the NICs' (every thread's schedstat, as
``bench/fabric_net.py`` reads it) and each flow's two ends (the ``cpu_s`` of their
reports), their sum, and the share of the machine's cores the flow kept busy: on 2
shared cores the sum bounds the rate, and a share well under 100% says the flow waited
for something other than the CPU (its window). A second MRC-lite transfer, not the
defaults, runs with a window that never limits it and fewer ACKs (``LARGE_WINDOW``):
the rate the CPU alone allows MRC-lite.
The switches are placed as ``make run`` places them (``GOODPUT_PLACEMENT``, default
``cpu``: the 16 fabric switches in one ``p4target group`` process, the 4 NICs in
another; ``1`` is one process per switch, as the experiments and their tests start
the fabric).
Needs root and Mininet; prints only, never asserts (the acceptance tests do).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

BYTES = 8_000_000
BMV2_BYTES = 2_000_000
PLACEMENT = os.environ.get("GOODPUT_PLACEMENT", "cpu")  # make run's
# Not the defaults: a window that never limits, and fewer ACKs. What MRC-lite gets when
# only the CPU bounds it (docs/performance.md, "Goodput").
LARGE_WINDOW = ["--window", "1024", "--initial-window", "512", "--ack-every", "16"]


def _switch_cpu(fn: Any) -> dict[str, list[int]]:
    """The switch processes by role: the fabric's and the NICs'."""
    roles: dict[str, list[int]] = {"fabric": [], "NICs": []}
    for sw in fn.p4_switches():
        pids = roles["NICs" if sw.program == "nic" else "fabric"]
        if sw.proc.pid not in pids:
            pids.append(sw.proc.pid)
    return roles


def _metered(fn: Any, packets: int, run: Callable[[], Any]) -> tuple[Any, dict[str, float]]:
    """``run()`` and the switch processes' CPU per packet of it, in microseconds by role."""
    from fabric_net import cpu_seconds

    roles = _switch_cpu(fn)
    before = {r: cpu_seconds(p) for r, p in roles.items()}
    out = run()
    return out, {r: (cpu_seconds(p) - before[r]) / packets * 1e6 for r, p in roles.items()}


def _in_all(switches: dict[str, float], ends_s: float, packets: int) -> float:
    """The CPU one packet cost in all, us: the switch processes' (per packet already)
    and the two ends' (``ends_s`` seconds over ``packets``)."""
    return sum(switches.values()) + ends_s / packets * 1e6


def _cost(switches: dict[str, float], ends_s: float, seconds: float, packets: int) -> str:
    """CPU per packet by role, and what share of the machine's cores the flow kept busy
    while it ran: (every process's CPU) / (its duration x cores)."""
    in_all = _in_all(switches, ends_s, packets)
    busy = 100 * in_all * packets / 1e6 / (seconds * (os.cpu_count() or 1)) if seconds else 0.0
    return (", ".join(f"{r} {us:.0f}" for r, us in switches.items())
            + f", ends {ends_s / packets * 1e6:.0f}; in all {in_all:.0f}, cores busy {busy:.0f}%")


def _mrc_line(label: str, res: Any, cost: dict[str, float], packets: int) -> tuple[float, str]:
    from experiments.common import mbps

    s = res.sender
    bps = s.get("goodput_bps") or 0.0
    sent = s.get("packets_sent") or 0
    retx = (s.get("retransmissions") or {}).get("total") or 0
    ends = _mrc_ends(res)
    line = (f"  {label} {mbps(bps):7.1f} Mb/s (verified {res.ok}, {retx} retransmissions of {sent} data packets, "
            f"window now {(s.get('window') or {}).get('now') or 0:.0f}, "
            f"{(s.get('control') or {}).get('acks_received')} ACKs)\n"
            f"      CPU per packet, us: {_cost(cost, ends, s.get('completion_time_s') or 0.0, packets)}")
    return bps, line


def _mrc_ends(res: Any) -> float:
    """An MRC-lite transfer's two ends' CPU, seconds (their reports' ``cpu_s``)."""
    return (res.sender.get("cpu_s") or 0.0) + (res.recv_report.get("cpu_s") or 0.0)


def _budget(mrc_switches: dict[str, float], mrc_ends: float, tcp_total: float, udp_total: float) -> str:
    """What the targets leave MRC-lite's two ends per packet: on 2 shared cores the
    rate is the cores' time over the CPU one packet costs, so at MRC-lite's cost in the
    fabric and the NICs (the large window's) and with the cores as busy, 1.0x TCP
    needs its ends to cost at most TCP's whole cost less that, and 0.8x the UDP
    stream at most 1/0.8 of the stream's less that."""
    switches = sum(mrc_switches.values())
    return (f"  the ends' budget, us per packet (MRC-lite's fabric and NICs cost {switches:.0f}): "
            f"1.0x TCP leaves them {tcp_total - switches:.0f}, 0.8x UDP {udp_total / 0.8 - switches:.0f}; "
            f"they cost {mrc_ends:.0f} (large window)")


def _ends(report: dict[str, Any]) -> float:
    """A comparison flow's two ends' CPU, seconds (experiments/tcp.py ``_flow``)."""
    return (report.get("cpu_s") or 0.0) + ((report.get("sender") or {}).get("cpu_s") or 0.0)


def embedded() -> None:
    from endpoints.wire import DATA_HDR_LEN
    from experiments import common as C
    from experiments import tcp
    from topologies.fabric_net import programmed_network
    from topologies.switch_group import parse_placement

    mbps = C.mbps
    placement = parse_placement(PLACEMENT)
    packets = -(-BYTES // tcp.MTU)
    datagrams = -(-BYTES // (tcp.MTU + DATA_HDR_LEN))  # the UDP stream's, a little larger
    mtu = ["--mtu", str(tcp.MTU)]
    with tempfile.TemporaryDirectory() as tmp, programmed_network(C.topology(), prefix=C.private_prefix(),
                                                                  run_dir=Path(tmp) / "run",
                                                                  switches_per_process=placement) as fn:
        mrc, m_cpu = _metered(fn, packets, lambda: C.run_transfer(fn, "h1", "h3", BYTES, Path(tmp) / "mrc",
                                                                  send_args=mtu))
        big, b_cpu = _metered(fn, packets, lambda: C.run_transfer(fn, "h1", "h3", BYTES, Path(tmp) / "big",
                                                                  send_args=[*mtu, *LARGE_WINDOW]))
        t, t_cpu = _metered(fn, packets, lambda: tcp.tcp_transfer(fn, "h1", "h3", BYTES))
        u, u_cpu = _metered(fn, datagrams, lambda: tcp.udp_stream(fn, "h1", "h3", BYTES, tcp.MTU + DATA_HDR_LEN))
    t_bps, u_bps = t.get("goodput_bps") or 0.0, u.get("delivered_bps") or 0.0
    m_bps, m_line = _mrc_line(f"MRC-lite, unpaced, {tcp.MTU} B, 8 paths:", mrc, m_cpu, packets)
    b_bps, b_line = _mrc_line(f"MRC-lite, {' '.join(LARGE_WINDOW)}:\n   ", big, b_cpu, packets)
    print(f"goodput, {BYTES} bytes h1 -> h3 on one embedded-target fabric (placement {placement}), "
          "one after the other:")
    print(m_line)
    print(b_line)
    print(f"  TCP, one flow, one path:            {mbps(t_bps):7.1f} Mb/s (verified {t.get('ok')})\n"
          f"      CPU per packet, us: {_cost(t_cpu, _ends(t), t.get('seconds') or 0.0, packets)}")
    print(f"  UDP stream, unpaced, one path:      {mbps(u_bps):7.1f} Mb/s delivered "
          f"({u.get('datagrams')} of {datagrams} datagrams)\n"
          f"      CPU per packet, us: {_cost(u_cpu, _ends(u), u.get('seconds') or 0.0, datagrams)}")
    print(_budget(b_cpu, _mrc_ends(big) / packets * 1e6, _in_all(t_cpu, _ends(t), packets),
                  _in_all(u_cpu, _ends(u), datagrams)))
    print(f"  MRC/TCP {m_bps / t_bps if t_bps else 0:.2f} (target >= 1.0), "
          f"MRC/UDP {m_bps / u_bps if u_bps else 0:.2f} (target >= 0.8); "
          f"with the larger window {b_bps / t_bps if t_bps else 0:.2f} and {b_bps / u_bps if u_bps else 0:.2f}")


def bmv2() -> None:
    from experiments import common as C
    from topologies.fabric_net import programmed_network

    with tempfile.TemporaryDirectory() as tmp, programmed_network(C.topology(), prefix=C.private_prefix(),
                                                                  run_dir=Path(tmp), target="bmv2") as fn:
        res = C.run_transfer(fn, "h1", "h3", BMV2_BYTES, Path(tmp) / "bmv2", timeout=120)
    s = res.sender
    sent = s.get("packets") or 0
    r = s.get("retransmissions") or {}
    share = 100 * (r.get("total") or 0) / sent if sent else 0.0
    print(f"BMv2, {BMV2_BYTES} bytes h1 -> h3, the transfer's defaults: verified {res.ok}, "
          f"goodput {C.mbps(s.get('goodput_bps'))} Mb/s, retransmissions {r.get('total')} of {sent} data packets "
          f"({share:.1f}%, target < 5%; timeout {r.get('timeout')}, NACK {r.get('nack')}, trim {r.get('trim_nack')}), "
          f"EVs retired {s.get('evs_retired')}")


def main() -> int:
    if os.geteuid() != 0:
        print("experiments_goodput: skipped (needs root: Mininet)")
        return 0
    embedded()
    if shutil.which("simple_switch_grpc") and shutil.which("p4c-bm2-ss"):
        bmv2()
    else:
        print("BMv2: skipped (no simple_switch_grpc / p4c-bm2-ss on the PATH)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
