"""Goodput of MRC-lite against the RoCEv2 baseline and TCP, each transport's bytes
h1 -> h3 on the same hosts, in one run, on two Mininet fabrics (4 planes x (2 leaves
+ 2 spines), 2 hosts per leaf, embedded target).

The quiet fabric (the default, placed as ``make run`` places it): ``ROUNDS``
alternating rounds of one unpaced MRC-lite transfer (its defaults, payloads of
TCP's segment size here, ``experiments/tcp.py``: 1380 bytes, sprayed over 8 paths),
the same with its window held at 128 (``FIXED_WINDOW``) and with the window's start-up
(``STARTUP``), and one RoCE baseline transfer of the same bytes (``--transport roce``: one QP, one
path, DCQCN starting at a line rate above what the host reaches). Target: MRC-lite's
median at least 0.95x the baseline's (spraying must cost nothing). Then, once each,
MRC-lite with a window that never limits it (``LARGE_WINDOW``: the rate the CPU alone
allows it), the kernel's TCP on one path (the NIC hashes non-MRC traffic per flow)
and a UDP stream (``experiments/udp_stream.py``) of the same bytes.

The link-bound fabric (one process per switch, so that a switch can be restarted
with options): every uplink of the source leaf limited to ``LINK_RATE`` packets/s
with the switches' ``--queue-rate`` (``experiments/ecmp.py``'s ``shape``), far below
what the switches forward, so the links bound the rate. ``LINK_ROUNDS`` alternating
rounds of MRC-lite and the baseline (paced at its one path's capacity, its best
case), then TCP once. Targets: MRC-lite at least 0.9 of the sum of its paths'
capacities (the limited uplinks' packets/s times the payload), and at least 3x the
baseline.

Beside each rate it prints what one packet cost in CPU (microseconds per packet of
the transfer): the fabric's switch processes and the NICs' (every thread's schedstat,
as ``bench/fabric_net.py`` reads it) and each flow's two ends (the ``cpu_s`` of their
reports), their sum, and the share of the machine's cores the flow kept busy. Target:
the two ends of MRC-lite and of the baseline within 10% of each other per packet
(the quiet rounds' medians). At the end: the three transports side by side, and the
ratios against their targets.
With BMv2 on the PATH (``. /work/shared/bmv2/env.sh`` or a BMv2 install) the default
MRC-lite transfer also runs on a BMv2 fabric, then one with the window's start-up
(``STARTUP``), and their retransmissions are printed as a share of the data packets
(target: under 5%).
``GOODPUT_PLACEMENT`` places the quiet fabric's switches (default ``cpu``: the 16
fabric switches in one ``p4target group`` process, the 4 NICs in another; ``1``: one
process per switch).
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
ROUNDS = int(os.environ.get("GOODPUT_ROUNDS", "3"))  # quiet fabric: MRC-lite and the baseline, alternating
# MRC-lite's window held at the baseline's (128 packets, ``--min-window`` too): the
# two transports with the same window and the same ACK requests (every 16th packet),
# so that what differs is the spraying
FIXED_WINDOW = ["--window", "128", "--initial-window", "128", "--min-window", "128"]
# MRC-lite with the window's start-up (docs/transport.md, "Congestion control"): doubling
# until a round trip is delayed past 4 targets (or a mark, trim or queue's loss); not the
# default, as on BMv2 it resends more
STARTUP = ["--cc-startup-delay", "4"]
LINK_RATE = 250.0  # packets/s on each limited uplink: 8 x 250 is far below what the switches forward
LINK_BYTES = 5_000_000  # about 2 s at the 8 paths' 22.1 Mb/s, long beside a transfer's start and end; 15 s on one path
LINK_ROUNDS = 2


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


def _ends(report: dict[str, Any]) -> float:
    """A comparison flow's two ends' CPU, seconds (experiments/tcp.py ``_flow``)."""
    return (report.get("cpu_s") or 0.0) + ((report.get("sender") or {}).get("cpu_s") or 0.0)


def _transfers(fn: Any, nbytes: int, packets: int, send: list[str], recv: list[str]) -> Callable[[Path], Any]:
    """One metered transfer h1 -> h3 into a work directory, as a ``Run``."""
    from _goodput_rounds import transfer_run
    from experiments import common as C

    def run(workdir: Path) -> Any:
        res, cpu = _metered(fn, packets, lambda: C.run_transfer(fn, "h1", "h3", nbytes, workdir,
                                                                send_args=send, recv_args=recv))
        return transfer_run(res, cpu, packets)

    return run


def _tcp(fn: Any, nbytes: int, packets: int) -> tuple[dict[str, Any], dict[str, float]]:
    from experiments import tcp

    return _metered(fn, packets, lambda: tcp.tcp_transfer(fn, "h1", "h3", nbytes))


def quiet(tmp: Path) -> dict[str, Any]:
    """The default fabric: MRC-lite and the baseline in alternating rounds, then the
    large window, TCP and the UDP stream once each."""
    from _goodput_rounds import QUIET_LINE_MBPS, ROCE, Series, alternate, mrc_text, roce_text, rounds_lines
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
    mrc = Series(f"MRC-lite, unpaced, {tcp.MTU} B, 8 paths")
    fixed = Series(f"MRC-lite, {' '.join(FIXED_WINDOW)}")
    start = Series(f"MRC-lite, {' '.join(STARTUP)}")
    roce = Series(f"RoCE baseline, one QP, DCQCN from {QUIET_LINE_MBPS:g} Mb/s")
    with programmed_network(C.topology(), prefix=C.private_prefix(), run_dir=tmp / "run",
                            switches_per_process=placement) as fn:
        alternate(ROUNDS, [(mrc, _transfers(fn, BYTES, packets, mtu, [])),
                           (fixed, _transfers(fn, BYTES, packets, [*mtu, *FIXED_WINDOW], [])),
                           (start, _transfers(fn, BYTES, packets, [*mtu, *STARTUP], [])),
                           (roce, _transfers(fn, BYTES, packets, [*mtu, *ROCE, "--line-rate", f"{QUIET_LINE_MBPS:g}"],
                                             ROCE))], tmp)
        big = Series(f"MRC-lite, {' '.join(LARGE_WINDOW)}")
        alternate(1, [(big, _transfers(fn, BYTES, packets, [*mtu, *LARGE_WINDOW], []))], tmp)
        t, t_cpu = _tcp(fn, BYTES, packets)
        u, u_cpu = _metered(fn, datagrams, lambda: tcp.udp_stream(fn, "h1", "h3", BYTES, tcp.MTU + DATA_HDR_LEN))
    u_bps = u.get("delivered_bps") or 0.0
    print(f"goodput, {BYTES} bytes h1 -> h3 on the quiet embedded-target fabric (placement {placement}), "
          f"{ROUNDS} alternating rounds of MRC-lite and the RoCE baseline, then the rest once:")
    for line in [*rounds_lines(mrc, mbps, mrc_text), *rounds_lines(fixed, mbps, mrc_text),
                 *rounds_lines(start, mbps, mrc_text), *rounds_lines(roce, mbps, roce_text),
                 *rounds_lines(big, mbps, mrc_text)]:
        print(line)
    print(f"  TCP, one flow, one path:            {mbps(t.get('goodput_bps')):7.1f} Mb/s (verified {t.get('ok')})\n"
          f"      CPU per packet, us: {_cost(t_cpu, _ends(t), t.get('seconds') or 0.0, packets)}")
    print(f"  UDP stream, unpaced, one path:      {mbps(u_bps):7.1f} Mb/s delivered "
          f"({u.get('datagrams')} of {datagrams} datagrams)\n"
          f"      CPU per packet, us: {_cost(u_cpu, _ends(u), u.get('seconds') or 0.0, datagrams)}")
    return {"mrc": mrc, "fixed": fixed, "start": start, "roce": roce, "big": big, "tcp_bps": t.get("goodput_bps") or 0.0,
            "tcp_ends_us": _ends(t) / packets * 1e6, "udp_bps": u_bps}


def link_bound(tmp: Path) -> dict[str, Any]:
    """The fabric whose source leaf's uplinks carry ``LINK_RATE`` packets/s each:
    MRC-lite and the baseline (paced at one uplink's rate) alternating, then TCP."""
    from _goodput_rounds import ROCE, Series, alternate, line_rate_mbps, mrc_text, roce_text, rounds_lines
    from experiments import common as C
    from experiments import ecmp, tcp
    from topologies.fabric_net import programmed_network

    packets = -(-LINK_BYTES // tcp.MTU)
    mtu = ["--mtu", str(tcp.MTU)]
    line = line_rate_mbps(LINK_RATE, tcp.MTU)
    mrc = Series(f"MRC-lite, unpaced, {tcp.MTU} B, 8 paths")
    fixed = Series(f"MRC-lite, {' '.join(FIXED_WINDOW)}")
    start = Series(f"MRC-lite, {' '.join(STARTUP)}")
    roce = Series(f"RoCE baseline, one QP, DCQCN from {line:.2f} Mb/s (one uplink's rate)")
    # the receivers wait out a limited uplink's full queue before a NACK (experiments/ecmp.py)
    nack = ["--nack-delay", str(ecmp.NACK_DELAY)]
    with programmed_network(C.topology(), prefix=C.private_prefix(), run_dir=tmp / "run-limited",
                            switches_per_process=1) as fn:
        ecmp.shape(fn, LINK_RATE)
        links = sum(len(ports) for ports in ecmp.uplinks(fn).values())
        rto = ["--rto-min", str(ecmp.RTO_MIN)]
        alternate(LINK_ROUNDS, [(mrc, _transfers(fn, LINK_BYTES, packets, [*mtu, *rto], nack)),
                                (fixed, _transfers(fn, LINK_BYTES, packets, [*mtu, *rto, *FIXED_WINDOW], nack)),
                                (start, _transfers(fn, LINK_BYTES, packets, [*mtu, *rto, *STARTUP], nack)),
                                (roce, _transfers(fn, LINK_BYTES, packets, [*mtu, *ROCE, "--line-rate", f"{line:g}"],
                                                  ROCE))], tmp / "limited")
        t, _ = _tcp(fn, LINK_BYTES, packets)
    capacity = links * LINK_RATE * tcp.MTU * 8
    print(f"goodput, {LINK_BYTES} bytes h1 -> h3 on the link-bound fabric (one process per switch; {links} uplinks "
          f"of leaf 0 at {LINK_RATE:g} packets/s each: {C.mbps(capacity):.1f} Mb/s of payload in all, "
          f"{C.mbps(capacity / links):.2f} per path), {LINK_ROUNDS} alternating rounds:")
    for ln in [*rounds_lines(mrc, C.mbps, mrc_text), *rounds_lines(fixed, C.mbps, mrc_text),
               *rounds_lines(start, C.mbps, mrc_text), *rounds_lines(roce, C.mbps, roce_text)]:
        print(ln)
    print(f"  TCP, one flow, one path:            {C.mbps(t.get('goodput_bps')):7.2f} Mb/s (verified {t.get('ok')})")
    return {"mrc": mrc, "fixed": fixed, "start": start, "roce": roce, "tcp_bps": t.get("goodput_bps") or 0.0,
            "capacity_bps": capacity, "links": links}


def summary(q: dict[str, Any], lb: dict[str, Any]) -> None:
    """The three transports side by side, and the ratios against their targets: for
    MRC-lite's defaults and for its window held at the baseline's."""
    from _goodput_rounds import ratio, table
    from experiments.common import mbps

    roce = q["roce"]
    rows = [(name, f"{mbps(q[k].bps):.1f} Mb/s", f"{mbps(lb[k].bps):.2f} Mb/s", f"{q[k].ends_us:.1f}")
            for name, k in (("MRC-lite (8 paths, defaults)", "mrc"), ("MRC-lite (window 128 held)", "fixed"),
                            ("MRC-lite (start-up)", "start"), ("RoCE baseline (one QP)", "roce"))]
    rows.append(("TCP (kernel, one flow)", f"{mbps(q['tcp_bps']):.1f} Mb/s", f"{mbps(lb['tcp_bps']):.2f} Mb/s",
                 f"{q['tcp_ends_us']:.1f}"))
    print("side by side (medians of the rounds):")
    for line in table(rows):
        print(line)
    for k, name in (("mrc", "defaults"), ("fixed", "window 128 held"), ("start", " ".join(STARTUP))):
        m = q[k]
        per_round = ", ".join(f"{ratio(a.bps, r.bps):.2f}" for a, r in zip(m.runs, roce.runs, strict=True))
        print(f"  MRC-lite, {name}:\n"
              f"    quiet: MRC/RoCE {ratio(m.bps, roce.bps):.2f} (target >= 0.95; per round {per_round}), "
              f"MRC/TCP {ratio(m.bps, q['tcp_bps']):.2f}, MRC/UDP {ratio(m.bps, q['udp_bps']):.2f}\n"
              f"    link-bound: MRC/capacity {ratio(lb[k].bps, lb['capacity_bps']):.2f} (target >= 0.9), "
              f"MRC/RoCE {ratio(lb[k].bps, lb['roce'].bps):.2f} (target >= 3)\n"
              f"    ends' CPU per packet, quiet: {m.ends_us:.1f} us against RoCE's {roce.ends_us:.1f}: "
              f"{ratio(m.ends_us, roce.ends_us):.2f} (target 0.90-1.10); in all (switches too) "
              f"{m.in_all:.0f} against {roce.in_all:.0f} us")
    print(f"  large window/RoCE, quiet: {ratio(q['big'].bps, roce.bps):.2f}; RoCE/its one path's capacity, "
          f"link-bound: {ratio(lb['roce'].bps, lb['capacity_bps'] / lb['links']):.2f}")


def embedded() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        q = quiet(Path(tmp))
        lb = link_bound(Path(tmp))
    summary(q, lb)


def _bmv2_line(what: str, res: Any) -> str:
    """One BMv2 transfer: verdict, goodput, retransmissions against the data packets."""
    from experiments import common as C

    s = res.sender
    sent = s.get("packets") or 0
    r = s.get("retransmissions") or {}
    share = 100 * (r.get("total") or 0) / sent if sent else 0.0
    return (f"BMv2, {BMV2_BYTES} bytes h1 -> h3, {what}: verified {res.ok}, "
            f"goodput {C.mbps(s.get('goodput_bps'))} Mb/s, retransmissions {r.get('total')} of {sent} data packets "
            f"({share:.1f}%, target < 5%; timeout {r.get('timeout')}, NACK {r.get('nack')}, trim {r.get('trim_nack')}), "
            f"EVs retired {s.get('evs_retired')}")


def bmv2() -> None:
    """The default transfer on a BMv2 fabric, then one with the start-up (``STARTUP``)."""
    from experiments import common as C
    from topologies.fabric_net import programmed_network

    with tempfile.TemporaryDirectory() as tmp, programmed_network(C.topology(), prefix=C.private_prefix(),
                                                                  run_dir=Path(tmp), target="bmv2") as fn:
        runs = [(what, C.run_transfer(fn, "h1", "h3", BMV2_BYTES, Path(tmp) / f"bmv2-{k}", send_args=args,
                                      timeout=120))
                for k, (what, args) in enumerate((("the transfer's defaults", []), (" ".join(STARTUP), STARTUP)))]
    for what, res in runs:
        print(_bmv2_line(what, res))


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
