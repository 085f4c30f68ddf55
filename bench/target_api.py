"""Benchmark of the embedded target through its Python API (``p4target.Switch``).

Prints figures only, no assertions (the speed targets live here, never in timed
tests):
- packets/s (best of REPEAT runs) through bench/p4/router6.p4 (parse Ethernet/IPv6/UDP, exact my_mac,
  exact host_routes (miss), LPM routes with 10,000 prefixes, exact port_mac,
  rewrites, deparse), one ``inject`` per frame and in batches of ``send`` +
  ``run_until_idle``;
- peak memory (RSS) of a whole process holding 100,000 exact entries;
- load + compile time of bench/p4/router6.p4 and p4src/fabric.p4 (if present);
- packets/s of the project's own programs through ``inject``, and the ratio to the
  router6.p4 rate of the same run: p4src/fabric.p4 uN forwarding (a uSID carrier
  through my_sid + usid_fwd + port_mac + counters; acceptance >= 0.8x) and SRH End,
  p4src/nic.p4 host-to-fabric encapsulation with per-packet spraying over 16
  selector members (acceptance >= 0.6x), EXPLICIT and GENERATED EV paths, and the
  fabric-to-host decapsulation. The fraction of frames that took the fused fast
  path (``Switch.fast_packets``) is printed with each figure. The rates are measured
  with the compiled fast path (the default) and again with the interpreted one.

Run: ``.venv/bin/python bench/target_api.py [--packets N]``.
"""

from __future__ import annotations

import argparse
import logging
import os
import random
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from p4target.accel.native import ENV_SWITCH  # noqa: E402

ROUTER = ROOT / "bench" / "p4" / "router6.p4"
FABRIC = ROOT / "p4src" / "fabric.p4"
MY_MAC = 0x02_00_00_00_00_01
PREFIXES = 10_000
REPEAT = 3  # inject rates are the best of this many runs of --packets frames
HOSTS = 100_000

log = logging.getLogger("bench.target_api")


def frame(dst: int, src: int = 0xFD00_0000_0000_0000_0000_0000_0000_0001) -> bytes:
    """Ethernet/IPv6/UDP with 64 bytes of payload, built by hand (scapy costs more
    than the switch and is not what is measured)."""
    payload = bytes(64)
    udp = (4791).to_bytes(2, "big") + (4791).to_bytes(2, "big") + (8 + len(payload)).to_bytes(2, "big") + b"\0\0"
    ipv6 = (
        (6 << 28).to_bytes(4, "big")
        + (8 + len(payload)).to_bytes(2, "big")
        + bytes([17, 64])
        + src.to_bytes(16, "big")
        + dst.to_bytes(16, "big")
    )
    eth = MY_MAC.to_bytes(6, "big") + (0x02_00_00_00_00_99).to_bytes(6, "big") + (0x86DD).to_bytes(2, "big")
    return eth + ipv6 + udp + payload


def fill_router(sw, rng: random.Random) -> list[int]:
    from p4target.runtime.entries import Lpm

    for port in range(16):
        sw.table_add("RIngress.my_mac", {"sm.ingress_port": port, "hdr.eth.dst": MY_MAC},
                     "RIngress.accept_frame")
        sw.table_add("REgress.port_mac", {"sm.egress_port": port}, "REgress.set_src",
                     {"mac": 0x02_00_00_00_01_00 | port})
    dsts = []
    seen = set()
    while len(seen) < PREFIXES:
        plen = rng.choice((48, 56, 64))
        prefix = (0xFD00 << 112) | (rng.getrandbits(plen - 16) << (128 - plen))
        if (prefix, plen) in seen:
            continue
        seen.add((prefix, plen))
        sw.table_add("RIngress.routes", {"hdr.ipv6.dst_addr": Lpm(prefix, plen)}, "RIngress.route",
                     {"port": rng.randrange(16), "next_mac": rng.getrandbits(48)})
        dsts.append(prefix | rng.getrandbits(128 - plen))
    return dsts


def key_names(sw) -> None:
    """Fail early with the real key names if the model names differ from ours."""
    for t in ("RIngress.my_mac", "RIngress.routes", "REgress.port_mac", "RIngress.host_routes"):
        log.info("%s keys: %s", t, [k.name for k in sw.model.table(t).keys])


def bench_pps(n: int) -> float:
    from p4target import Switch

    rng = random.Random(1)
    t0 = time.perf_counter()
    sw = Switch.load(ROUTER, seed=1)
    t1 = time.perf_counter()
    key_names(sw)
    dsts = fill_router(sw, rng)
    t2 = time.perf_counter()
    frames = [frame(rng.choice(dsts)) for _ in range(min(n, 5000))]
    out = sw.inject(1, frames[0])
    if len(out) != 1:
        print(f"warning: a routed frame gave {len(out)} outputs (drops: {dict(sw.drops)})")
    sw.bind_fast_path(wait_native=True)
    print(f"router6.p4 load+compile: {t1 - t0:.3f} s; {PREFIXES} routes installed in {t2 - t1:.3f} s "
          f"({PREFIXES / (t2 - t1):,.0f} entries/s); fast path: {sw.fast_kind}")
    inject = sw.inject
    best = float("inf")
    for _ in range(REPEAT):  # the best of a few: the machine is shared
        start = time.perf_counter()
        for i in range(n):
            inject(1, frames[i % len(frames)])
        best = min(best, time.perf_counter() - start)
    elapsed = best
    inject_pps = n / elapsed
    print(f"inject, one frame per call: {inject_pps:,.0f} packets/s ({n} packets, {elapsed:.2f} s)")
    batch = 256
    start = time.perf_counter()
    sent = 0
    while sent < n:
        for i in range(batch):
            sw.send(1, frames[(sent + i) % len(frames)])
        sw.run_until_idle()
        sent += batch
    elapsed = time.perf_counter() - start
    print(f"send x{batch} + run_until_idle: {sent / elapsed:,.0f} packets/s")
    print(f"drops during the run: {sw.drop_count}")
    return inject_pps


def bench_memory_child() -> None:
    from p4target import Switch
    from p4target.runtime.entries import Exact

    sw = Switch.load(ROUTER, seed=1)
    base = 0xFD00_0000_0000_0001 << 64
    start = time.perf_counter()
    for i in range(HOSTS):
        sw.table_add("RIngress.host_routes", {"hdr.ipv6.dst_addr": Exact(base | i)}, "RIngress.route",
                     {"port": i % 16, "next_mac": 0x02_00_00_00_00_00 | i})
    elapsed = time.perf_counter() - start
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{HOSTS:,} exact entries: installed in {elapsed:.2f} s ({HOSTS / elapsed:,.0f} entries/s); "
          f"peak RSS of the whole process {rss_mb:.0f} MB")


def bench_fabric() -> None:
    if not FABRIC.exists():
        print("p4src/fabric.p4: not present")
        return
    from p4target.compiler import compile_file

    start = time.perf_counter()
    program = compile_file(FABRIC)
    mid = time.perf_counter()
    from p4target import Switch

    Switch(program)
    end = time.perf_counter()
    print(f"p4src/fabric.p4: compile {mid - start:.3f} s, instantiate {end - mid:.3f} s")


def bench_scenario(scenario, n: int, router_pps: float) -> None:
    """One project-program scenario: ``n`` injects of its frame, rate and ratio."""
    sw, port, frame_bytes = scenario.build()
    out = sw.inject(port, frame_bytes)
    if len(out) != 1:
        print(f"warning: {scenario.name}: the frame gave {len(out)} outputs (drops: {dict(sw.drops)})")
    sw.bind_fast_path(wait_native=True)
    fast0 = sw.fast_packets
    inject = sw.inject
    best = float("inf")
    for _ in range(REPEAT):
        start = time.perf_counter()
        for _ in range(n):
            inject(port, frame_bytes)
        best = min(best, time.perf_counter() - start)
    pps = n / best
    fast = (sw.fast_packets - fast0) / (n * REPEAT)
    target = f" (target >= {scenario.target:.1f})" if scenario.target else ""
    print(f"{scenario.name}: {pps:,.0f} packets/s, {pps / router_pps:.2f}x router6.p4{target}, "
          f"fast path ({sw.fast_kind}) {fast:.0%}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--packets", type=int, default=50_000)
    ap.add_argument("--memory-child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)
    if args.memory_child:
        bench_memory_child()
        return 0
    bench_fabric()
    from _mrc_scenarios import SCENARIOS

    # each figure twice: with the compiled fast path (the default; p4target/compiler/
    # native.py) and with the interpreted one, each ratio to router6.p4's of its kind
    for kind, switch in (("compiled", "1"), ("interpreted", "0")):
        print(f"-- {kind} fast path ({ENV_SWITCH}={switch})")
        os.environ[ENV_SWITCH] = switch
        router_pps = bench_pps(args.packets)
        for scenario in SCENARIOS:
            bench_scenario(scenario, args.packets, router_pps)
    del os.environ[ENV_SWITCH]
    # memory in a fresh process, so the figure is that of a process doing only this
    subprocess.run([sys.executable, str(Path(__file__).resolve()), "--memory-child"], check=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
