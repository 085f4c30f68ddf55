"""Packets per second through ``p4target run`` between two veths, against the ceiling.

In one run: the plain-Python raw-socket forwarding ceiling (as veth_ceiling.py), then
``p4target run`` on the same veths with
- bench/p4/router6.p4 (the program of bench/target_api.py): Ethernet/IPv6/UDP parse,
  exact my_mac, exact host_routes (a miss), LPM over 1,000 routes, exact port_mac,
  MAC rewrite, hop-limit decrement, a counter;
- p4src/fabric.p4, uN forwarding: a uSID carrier through my_sid + usid_fwd + port_mac
  and the port counters (target: at least half the ceiling);
- p4src/nic.p4, host-to-fabric MRC encapsulation with an EXPLICIT EV (ev_table), the
  outer IPv6 header added;
and each one's ratio to the ceiling. The machine is shared and its load changes
within a run, so the ceiling is measured again between the programs and each
program's ratio is to the mean of the ceilings just before and after it; ROUNDS
rounds of that (default 2) give each ratio's range. Each line also gives the
forwarder's CPU time per packet, and each ratio comes with the ratio of CPU time
per packet (the ceiling's over the target's): with other work on the cores the
packets/s follow the share of a core each forwarder gets, the CPU time much less.
Each program runs twice between the same ceilings (which goes first alternates),
so the two are compared under the same load: with its compiled fast path (the
default of ``p4target run``: p4target/accel/native.py; built into the cache
first, so it takes every frame) and with the interpreted one
(``P4TARGET_NATIVE=0``). With ``--no-rings-too`` each program also runs with
``p4target run --no-rings`` (one recv and one send system call per frame, as
before PACKET_MMAP rings). Prints only; run as root:
``.venv/bin/python bench/target_veth.py [SECONDS] [ROUNDS] [--no-rings-too]``.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _vethlab import PYTHON, REPO, VethLab, require_root, stop

from p4target.compiler import compile_file
from p4target.accel.native import ENV_SWITCH

ROUTER6 = REPO / "bench" / "p4" / "router6.p4"
FABRIC = REPO / "p4src" / "fabric.p4"
NIC = REPO / "p4src" / "nic.p4"
EXTRA_ROUTES = 1000
# What the benchmark frame (to 02:00:00:00:00:02, fcbb:bb00:100::1) needs, as STF
# control commands for ``p4target run --commands``.
ROUTER6_ENTRIES = """\
add my_mac ingress_port:1 hdr.eth.dst:0x020000000002 accept_frame()
add routes hdr.ipv6.dst_addr:0xfcbbbb00010000000000000000000000/48 route(port:2, next_mac:0x020000000b02)
add port_mac egress_port:2 set_src(mac:0x020000000a02)
"""
# uN: my uSID 0x100, the next one 0x102 leaves on port 2
FABRIC_ENTRIES = """\
add my_sid hdr.ipv6.dst_addr:0xfcbbbb00010000000000000000000000/48 usid_un()
add usid_fwd hdr.ipv6.dst_addr:0xfcbbbb00010200000000000000000000/48 fwd(port:2, dmac:0x020000000b02)
add port_mac standard_metadata.egress_port:2 set_src_mac(mac:0x020000000a02)
"""
# host port 1 (fd00:0:1:1::/64, gateway ::1), EV 0x4000 to fd00:0:2::/48 on plane port 2
NIC_ENTRIES = """\
add port_role standard_metadata.ingress_port:1 host_port(nic_addr:0xfd000000000100010000000000000100, gw_addr:0xfd000000000100010000000000000001, gw_mac:0x020000000c01)
add ev_table hdr.ipv6.dst_addr:0xfd000000000200000000000000000000/48 meta.ev:0x4000 set_path(port:2, plane:0, carrier:0xfcbbbb000100020101020000e0010000)
add egress_port standard_metadata.egress_port:2 to_plane(plane:0, src_mac:0x020000000d02, dst_mac:0x020000000e02)
"""


def router6_commands(directory: Path) -> Path:
    """The entries plus EXTRA_ROUTES /64 routes that the traffic never hits."""
    lines = [ROUTER6_ENTRIES]
    for i in range(EXTRA_ROUTES):
        prefix = (0x2001_0DB8 << 96) | (i << 64)
        lines.append(f"add routes hdr.ipv6.dst_addr:{prefix:#034x}/64 "
                     f"route(port:1, next_mac:0x0200000{i:05x})")
    path = directory / "router6.stf"
    path.write_text("\n".join(lines) + "\n")
    return path


def fabric_frame() -> bytes:
    from scapy.layers.inet import UDP
    from scapy.layers.inet6 import IPv6
    from scapy.layers.l2 import Ether

    pkt = (Ether(src="02:00:00:00:00:01", dst="02:00:00:00:0a:01")
           / IPv6(src="fd00:0:1:1::2", dst="fcbb:bb00:100:102:e001::", hlim=64)
           / UDP(sport=49152, dport=4791))
    return bytes(pkt / (b"\0" * (96 - len(pkt))))


def nic_frame() -> bytes:
    from scapy.layers.inet import UDP
    from scapy.layers.inet6 import IPv6
    from scapy.layers.l2 import Ether

    pkt = (Ether(src="02:00:00:00:00:99", dst="02:00:00:00:0c:01")
           / IPv6(src="fd00:0:1:1::2", dst="fd00:0:2:1::2", hlim=64)
           / UDP(sport=0x4000, dport=4791))
    # MRC-lite data: BTH (RDMA WRITE, the EV 0x4000 in its pkey, as nic.p4 reads it) + RETH
    bth = bytes([0x0A, 0, 0x40, 0x00]) + (1).to_bytes(4, "big") + (1).to_bytes(4, "big") + bytes(16)
    return bytes(pkt / (bth + b"\0" * (96 - len(pkt) - len(bth))))


def main() -> int:
    if not require_root():
        return 0
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    both = "--no-rings-too" in sys.argv[1:]
    seconds = float(args[0]) if args else 5.0
    rounds = int(args[1]) if len(args) > 1 else 2
    # (name suffix, command prefix, options)
    variants: list[tuple[str, tuple[str, ...], tuple[str, ...]]] = [
        ("", (), ()), (", interpreted", ("env", f"{ENV_SWITCH}=0"), ())]
    if both:
        variants.append((", --no-rings", (), ("--no-rings",)))
    for program in (ROUTER6, FABRIC, NIC):  # built now (once), so every frame takes it
        fast = compile_file(program).native_fast_path()
        if fast is None or fast.get() is None:
            print(f"{program.name}: no compiled fast path ({fast.error if fast else 'off'}); "
                  "the plain runs below use the interpreted one too")
    with tempfile.TemporaryDirectory(prefix="p4t-bench-") as tmp, VethLab() as lab:
        d = Path(tmp)
        (d / "fabric.stf").write_text(FABRIC_ENTRIES)
        (d / "nic.stf").write_text(NIC_ENTRIES)
        runs = [("router6.p4", ROUTER6, router6_commands(d), None),
                ("fabric.p4 uN", FABRIC, d / "fabric.stf", fabric_frame()),
                ("nic.p4 encap", NIC, d / "nic.stf", nic_frame())]
        lines: list[str] = []
        ratios: dict[str, list[float]] = {name + v: [] for name, *_ in runs for v, *_ in variants}
        cpu_ratios: dict[str, list[float]] = {k: [] for k in ratios}
        for rnd in range(rounds):
            before = lab.measure_ceiling(seconds)
            lines.append(f"round {rnd + 1}: {before.line()}")
            for name, program, commands, frame in runs:
                results = []
                # the order alternates between rounds, so neither variant always goes first
                for variant, prefix, extra in (variants if rnd % 2 == 0 else variants[::-1]):
                    log = d / f"{program.stem}.log"
                    target = lab.spawn(*prefix, PYTHON, "-m", "p4target", "run", str(program),
                                       "-i", "1@p4tin", "-i", "2@p4tout", "--no-grpc",
                                       "--commands", str(commands), *extra, log=log)
                    try:
                        if not lab.wait_forwarding(timeout=60, frame_bytes=frame):
                            print(f"p4target run {program.name} did not forward; its log:")
                            print(log.read_text())
                            return 1
                        results.append((name + variant, lab.measure(
                            f"p4target run ({name}{variant})", seconds, frame_bytes=frame,
                            forwarder=target)))
                    finally:
                        stop(target)
                after = lab.measure_ceiling(seconds)
                ceiling = (before.pps + after.pps) / 2
                cpu_ceiling = [m.cpu_us for m in (before, after) if m.cpu_us]
                for key, r in results:
                    ratio = r.pps / ceiling if ceiling else 0.0
                    ratios[key].append(ratio)
                    target_text = (" (target >= 0.50)" if ("router6" in key or "fabric" in key)
                                   and key == name else "")
                    cpu_text = ""
                    if cpu_ceiling and r.cpu_us:
                        cpu_ratio = sum(cpu_ceiling) / len(cpu_ceiling) / r.cpu_us
                        cpu_ratios[key].append(cpu_ratio)
                        cpu_text = f", CPU per packet ratio {cpu_ratio:.2f}"
                    lines.append(f"round {rnd + 1}: {r.line()}")
                    lines.append(f"round {rnd + 1}:     ratio {ratio:.2f}{target_text}{cpu_text}")
                lines.append(f"round {rnd + 1}: {after.line()}")
                before = after
    print("veth forwarding, 96-byte IPv6/UDP frames, one sender, one forwarder process;")
    print("each ratio is to the mean of the ceilings measured just before and after it;")
    print("the CPU per packet ratio is the ceiling forwarder's CPU time per packet over")
    print("the target's (what the packets/s ratio would be with a core each)")
    for line in lines:
        print(line)
    for name, rs in ratios.items():
        cs = cpu_ratios[name]
        cpu = f", CPU per packet {min(cs):.2f}-{max(cs):.2f}" if cs else ""
        print(f"{name}: ratio to the ceiling {min(rs):.2f}-{max(rs):.2f}{cpu} "
              f"over {len(rs)} round(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
