"""The default fabric on one machine and on a namespace cluster of three "servers", same run.

Starts the default fabric (4 planes x (2 leaves + 2 spines), 2 hosts per leaf: 20
embedded-target switches, placed into processes as ``make run`` places them) twice,
first all here, then with its planes on three servers of a namespace cluster
(tools/ns_cluster.py, made for the run when there is none; placement ``plane``: only
the NIC-to-leaf links cross servers, as VXLAN or GRE tunnels). For each it prints:

- seconds until every switch answers P4Runtime, and until every table is installed;
- ping -6 RTT h1 -> h3 (NIC, leaf, spine, leaf, NIC each way: on the cluster, two
  tunnel crossings each way);
- the UDP rate of one MRC flow h1 -> h3 sprayed over every EV, sent as fast as the
  sender can (best of two);
- on the cluster, the tunnel overhead per packet, measured: the bytes the local
  machine put on the underlay bridge for the flow, less the fabric frames its tunnel
  devices carried (their byte counters plus each frame's Ethernet header, which
  they leave out), per frame.

Needs root, Mininet and sshd. Prints only; never asserts.
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

PACKETS = 10000
ROUNDS = 2
# a VXLAN device's tx_bytes leaves out the Ethernet header of the frames it carries
# (here: an echo in a 1048-byte IPv6 packet counted 1048 bytes on it, 1112 on the bridge)
INNER_ETHERNET = 14


def _stat(intf: str, what: str) -> int:
    try:
        return int(Path(f"/sys/class/net/{intf}/statistics/{what}").read_text())
    except (OSError, ValueError):
        return 0


def _tunnels(fn) -> list[str]:
    """The local ends of the network's tunnels (links across servers)."""
    out = []
    for link in fn.net.links:
        if getattr(link, "tunnel", None):
            out += [i.name for i in (link.intf1, link.intf2) if not getattr(i.node, "isRemote", False)]
    return out


def measure(topo, label: str, cluster=None, bridge: str | None = None) -> None:
    from fabric import plan as P
    from topologies.fabric_net import fabric_network, install_tables
    from topologies.mrc_flow import run_stream

    prefix = "mrc" + secrets.token_hex(2)[:3]
    tag = f"cluster [{label}]"
    with tempfile.TemporaryDirectory(prefix="mrc-bench-") as tmp:
        t0 = time.monotonic()
        with fabric_network(topo, prefix=prefix, target="embedded", grpc_base=0, run_dir=Path(tmp),
                            switches_per_process="cpu", cluster=cluster) as fn:
            rep = install_tables(fn)
            ready = time.monotonic() - t0
            print(f"{tag}: default fabric ({len(fn.p4_switches())} P4 switches): switches answer after "
                  f"{fn.switches_ready:.1f} s, every table ({rep.entries} entries) installed after {ready:.1f} s",
                  flush=True)
            src, dst = "h1", "h3"
            fn.ping(src, dst, count=3)
            out = fn.host(src).cmd(f"ping -6 -n -c 50 -i 0.02 {fn.address(dst)}")
            m = re.search(r"= ([\d.]+)/([\d.]+)/([\d.]+)/", out)
            if m:
                print(f"{tag}: ping -6 {src} -> {dst}: rtt min/avg/max {m.group(1)}/{m.group(2)}/{m.group(3)} ms "
                      "over 50 pings", flush=True)
            evs = [e.ev for e in P.nic_evs(topo, topo.host(src), topo.host(dst))]
            tunnels = _tunnels(fn) if bridge else []
            best: dict | None = None
            overhead = None
            for _ in range(ROUNDS):
                outer0 = _stat(bridge, "tx_bytes") if bridge else 0
                inner0 = [(_stat(t, "tx_bytes"), _stat(t, "tx_packets")) for t in tunnels]
                got = run_stream(fn, src, dst, evs, PACKETS, 0, size=1024)
                if bridge and tunnels:
                    inner_bytes = sum(_stat(t, "tx_bytes") - b for t, (b, _) in zip(tunnels, inner0, strict=True))
                    inner_pkts = sum(_stat(t, "tx_packets") - p for t, (_, p) in zip(tunnels, inner0, strict=True))
                    if inner_pkts:
                        frames = inner_bytes + INNER_ETHERNET * inner_pkts
                        overhead = (_stat(bridge, "tx_bytes") - outer0 - frames) / inner_pkts
                secs = got["first_to_last_seconds"] or 1e-9
                r = {"sent": got["sent"], "received": got["received"], "pps": got["received"] / secs,
                     "mbps": got["udp_payload_bytes"] * 8 / secs / 1e6}
                if best is None or r["pps"] > best["pps"]:
                    best = r
            assert best is not None
            print(f"{tag}: UDP (MRC WRITE, 1024-byte payload) {src} -> {dst}, sprayed over every EV: "
                  f"{best['received']}/{best['sent']} delivered, {best['pps']:,.0f} packets/s, "
                  f"{best['mbps']:.1f} Mb/s (best of {ROUNDS})", flush=True)
            if overhead is not None:
                print(f"{tag}: tunnel overhead on the underlay: {overhead:.1f} bytes per fabric frame "
                      f"({cluster.tunnel}; {len(tunnels)} tunnels here)", flush=True)


def main() -> int:
    if os.geteuid() != 0:
        print("cluster: needs root (Mininet, namespaces); skipped")
        return 0
    from tools import ns_cluster

    if not Path(ns_cluster.SSHD).is_file():
        print("cluster: no sshd (apt-get install openssh-server); skipped")
        return 0
    from fabric.topology import default_topology
    from topologies.cluster import plan_cluster

    topo = default_topology()
    measure(topo, "one machine")
    with ns_cluster.servers(3) as servers:
        plan = plan_cluster(topo, servers, "plane")
        measure(topo, f"3 namespace servers, {plan.summary()}", plan, ns_cluster.BRIDGE)
    return 0


if __name__ == "__main__":
    sys.exit(main())
