"""The default fabric on both targets, in one run: the embedded target against BMv2.

Starts the default fabric (4 planes x (2 leaves + 2 spines), 2 hosts per leaf: 20 P4
switch processes) once per target under a private prefix and run directory, has the
controller install every table, and prints one row per target:

- seconds until every switch answers P4Runtime and until every table is installed;
- memory (RSS) of the 20 switch processes;
- ping -6 RTT h1 -> h3 (NIC, leaf, spine, leaf, NIC each way);
- UDP packets/s of one MRC flow h1 -> h3 sent flat out (5,000 WRITEs of 1,024
  bytes), on one plane (plane 0's EVs) and sprayed over every EV;
- MRC-lite goodput: one 2 MB transfer h1 -> h3 (mrc-send/mrc-recv, window only).

BMv2's row is skipped, with the reason, when simple_switch_grpc and p4c-bm2-ss are not
on the PATH. Needs root and Mininet. Prints only; never asserts.
"""

from __future__ import annotations

import os
import re
import secrets
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.fabric_net import rss_mb  # noqa: E402

TRANSFER_BYTES = 2_000_000
UDP_PACKETS = 5000


def udp_burst(fn, src: str, dst: str, evs: list[int]) -> dict[str, float]:
    """``UDP_PACKETS`` MRC WRITEs of 1,024 bytes flat out on ``evs``: sent, received,
    packets/s and Mb/s from the first to the last packet received."""
    from topologies.mrc_flow import run_stream

    got = run_stream(fn, src, dst, evs, UDP_PACKETS, 0, size=1024, timeout=30.0)
    secs = got["first_to_last_seconds"] or 1e-9
    return {"sent": got["sent"], "received": got["received"], "pps": got["received"] / secs,
            "mbps": got["udp_payload_bytes"] * 8 / secs / 1e6}


def measure(target: str) -> dict[str, object]:
    from fabric import plan as P
    from fabric.topology import default_topology
    from topologies.fabric_net import fabric_network, install_tables
    from topologies.transfer import run_transfer

    topo = default_topology()
    prefix = "mrc" + secrets.token_hex(2)[:3]
    row: dict[str, object] = {"target": target}
    with tempfile.TemporaryDirectory(prefix="mrc-bench-") as tmp:
        t0 = time.monotonic()
        with fabric_network(topo, prefix=prefix, target=target, grpc_base=0, run_dir=Path(tmp)) as fn:
            rep = install_tables(fn)
            row["answer_s"], row["ready_s"] = fn.switches_ready, time.monotonic() - t0
            row["install_ok"] = not rep.failed
            pids = [sw.proc.pid for sw in fn.p4_switches()]
            row["rss_mb"] = rss_mb(pids)
            src, dst = "h1", "h3"
            fn.ping(src, dst, count=3)  # neighbour discovery, warm caches
            out = fn.host(src).cmd(f"ping -6 -n -c 50 -i 0.02 {fn.address(dst)}")
            m = re.search(r"= ([\d.]+)/([\d.]+)/([\d.]+)/", out)
            row["rtt_ms"] = (float(m.group(1)), float(m.group(2))) if m else None
            evs = P.nic_evs(topo, topo.host(src), topo.host(dst))
            for key, chosen in (("one_plane", [e.ev for e in evs if e.plane == 0]), ("sprayed", [e.ev for e in evs])):
                row[key] = udp_burst(fn, src, dst, chosen)
            res = run_transfer(fn, src, dst, TRANSFER_BYTES, Path(tmp) / "transfer", timeout=120)
            s = res.sender
            row["mrc"] = {"ok": res.ok, "goodput_mbps": (s.get("goodput_bps") or 0) / 1e6,
                          "retx": (s.get("retransmissions") or {}).get("total"),
                          "seconds": s.get("completion_time_s")}
    return row


def show(row: dict[str, object]) -> None:
    t = row["target"]
    print(f"targets_compare: {t}: switches answer after {row['answer_s']:.1f} s, every table installed after "
          f"{row['ready_s']:.1f} s (install {'ok' if row['install_ok'] else 'FAILED'}); "
          f"switch RSS {row['rss_mb']:.0f} MB total ({row['rss_mb'] / 20:.0f} MB each)")
    rtt = row["rtt_ms"]
    print(f"targets_compare: {t}: ping -6 h1 -> h3 rtt min/avg " + (f"{rtt[0]}/{rtt[1]} ms" if rtt else "n/a"))
    for key, label in (("one_plane", "one plane"), ("sprayed", "sprayed over 4 planes")):
        r = row[key]
        print(f"targets_compare: {t}: UDP 1024 B flat out, {label}: {r['received']}/{r['sent']} delivered, "
              f"{r['pps']:,.0f} packets/s ({r['mbps']:.1f} Mb/s)")
    m = row["mrc"]
    print(f"targets_compare: {t}: MRC-lite {TRANSFER_BYTES:,} bytes h1 -> h3: verified={m['ok']}, "
          f"goodput {m['goodput_mbps']:.1f} Mb/s, {m['retx']} retransmissions"
          + (f", {m['seconds']:.2f} s" if isinstance(m["seconds"], (int, float)) else ""))


def main() -> int:
    if os.geteuid() != 0:
        print("targets_compare: needs root (Mininet); skipped")
        return 0
    from topologies.p4switch import BMV2_TOOLS, bmv2_available

    targets = ["embedded"]
    if bmv2_available():
        targets.append("bmv2")
    else:
        print(f"targets_compare: bmv2: skipped ({', '.join(BMV2_TOOLS)} not on the PATH)")
    for target in targets:
        show(measure(target))
    return 0


if __name__ == "__main__":
    sys.exit(main())
