"""Table entries and crafted frames that drive p4src/fabric.p4 and p4src/nic.p4 down
their real paths (uN, uA, SRH End/End.X with and without PSP, transit, NIC EXPLICIT
and GENERATED encapsulation with and without SRH, per-packet and per-flow spraying
through the selector with watch ports, decapsulation, NDP and ping answers), for the
fast-path differential tests. Entries are written through the ``Switch`` API; frames
are built with scapy. Nothing here computes what the programs should do.
"""

from __future__ import annotations

import random

from scapy.layers.inet6 import (
    ICMPv6EchoRequest, ICMPv6ND_NS, ICMPv6NDOptSrcLLAddr, IPv6, IPv6ExtHdrSegmentRouting,
)
from scapy.layers.inet import UDP
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from p4target import Switch
from p4target.runtime.entries import Exact, Group, Lpm, Ternary

USID_BLOCK = "fcbb:bb00"
GW = "fd00:0:1:1::1"
HOST = "fd00:0:1:1::2"
NIC = "fd00:0:1:1::100"
PLANE_PORTS = (2, 3, 4, 5)


def usid(*ids: int) -> str:
    """A uSID carrier fcbb:bb00:<id>:<id>...:: as text."""
    return USID_BLOCK + ":" + ":".join(f"{i:x}" for i in ids) + "::"


def addr(text: str) -> int:
    import ipaddress

    return int(ipaddress.IPv6Address(text))


def mrc_data(psn: int, ev: int = 0xFFFF) -> bytes:
    """BTH (RDMA WRITE, opcode 0x0a, the EV in pkey) + RETH, then some payload."""
    return (bytes([0x0A, 0]) + ev.to_bytes(2, "big") + (7).to_bytes(4, "big") + psn.to_bytes(4, "big") + bytes(16)
            + bytes(24))


# ---- fabric.p4 ----------------------------------------------------------------------
def fabric_entries(sw: Switch) -> None:
    sw.table_add("FabricIngress.my_sid", {"hdr.ipv6.dst_addr": Lpm(addr(usid(0x100)), 48)},
                 "FabricIngress.usid_un")
    sw.table_add("FabricIngress.my_sid", {"hdr.ipv6.dst_addr": Lpm(addr(usid(0x101)), 48)},
                 "FabricIngress.usid_un_psp")
    sw.table_add("FabricIngress.my_sid", {"hdr.ipv6.dst_addr": Lpm(addr("fc00:0:1:1::"), 64)},
                 "FabricIngress.srv6_end")
    sw.table_add("FabricIngress.my_sid", {"hdr.ipv6.dst_addr": Lpm(addr("fc00:0:1:2::"), 64)},
                 "FabricIngress.srv6_end_psp")
    sw.table_add("FabricIngress.my_sid", {"hdr.ipv6.dst_addr": Lpm(addr("fc00:0:1:3::"), 64)},
                 "FabricIngress.srv6_end_x", {"port": 4, "dmac": 0x020000000B04})
    for i in range(2, 8):
        sw.table_add("FabricIngress.usid_fwd", {"hdr.ipv6.dst_addr": Lpm(addr(usid(0x100 + i)), 48)},
                     "FabricIngress.fwd", {"port": i, "dmac": 0x020000000B00 + i})
    sw.table_add("FabricIngress.usid_fwd", {"hdr.ipv6.dst_addr": Lpm(addr(usid(0xF001)), 48)},
                 "FabricIngress.usid_ua", {"port": 6, "dmac": 0x020000000B06})
    sw.table_add("FabricIngress.ipv6_route", {"hdr.ipv6.dst_addr": Lpm(addr("fd00:0:2::"), 48)},
                 "FabricIngress.fwd", {"port": 3, "dmac": 0x020000000C03})
    sw.table_add("FabricIngress.dscp_priority", {"hdr.ipv6.traffic_class": Ternary(0xB8, 0xFC)},
                 "FabricIngress.set_priority", {"prio": 7}, priority=10)
    for port in range(0, 8):
        sw.table_add("FabricEgress.port_mac", {"standard_metadata.egress_port": Exact(port)},
                     "FabricEgress.set_src_mac", {"mac": 0x020000000A00 + port})


def fabric_frames(rng: random.Random) -> list[bytes]:
    def eth(p) -> bytes:
        return bytes(Ether(src="02:00:00:00:00:99", dst="02:00:00:00:0a:01") / p)

    hl = rng.choice([64, 64, 2, 1, 0])
    tc = rng.choice([0, 0, 0xB8])
    inner = UDP(sport=rng.randrange(1, 65535), dport=4791) / Raw(mrc_data(rng.randrange(1 << 24)))
    segs = [usid(0x100 + rng.randrange(2, 8), 0xE001), usid(0x100), usid(0x103)]
    out = [
        # uN with more uSIDs, uN at the end of the carrier (SRH decides), uA
        eth(IPv6(src=HOST, dst=usid(0x100, 0x100 + rng.randrange(1, 9), 0xE001), hlim=hl, tc=tc) / inner),
        eth(IPv6(src=HOST, dst=usid(0x100), hlim=hl)
            / IPv6ExtHdrSegmentRouting(addresses=segs[:rng.randrange(1, 4)], segleft=rng.randrange(0, 3),
                                       nh=17) / inner),
        eth(IPv6(src=HOST, dst=usid(0x101), hlim=hl)
            / IPv6ExtHdrSegmentRouting(addresses=segs[:1], segleft=1, nh=41)
            / IPv6(src=HOST, dst="fd00:0:2:1::2") / inner),
        eth(IPv6(src=HOST, dst=usid(0x100, 0xF001, 0x104, 0xE001), hlim=hl) / inner),
        eth(IPv6(src=HOST, dst=usid(0x100, 0xF001), hlim=hl) / inner),
        # classic End / End PSP / End.X with an SRH
        eth(IPv6(src=HOST, dst=f"fc00:0:1:{rng.randrange(1, 4)}::", hlim=hl)
            / IPv6ExtHdrSegmentRouting(addresses=segs, segleft=rng.randrange(0, 4), nh=17) / inner),
        # plain routes, unknown uSIDs, not for me
        eth(IPv6(src=HOST, dst="fd00:0:2:7::9", hlim=hl, tc=tc) / inner),
        eth(IPv6(src=HOST, dst=usid(0x1FF, 0x102), hlim=hl) / inner),
        eth(IPv6(src=HOST, dst="2001:db8::1", hlim=hl) / inner),
    ]
    return out


# ---- nic.p4 --------------------------------------------------------------------------
def nic_entries(sw: Switch, rng: random.Random) -> None:
    sw.table_add("NicIngress.port_role", {"standard_metadata.ingress_port": Exact(1)},
                 "NicIngress.host_port", {"nic_addr": addr(NIC), "gw_addr": addr(GW),
                                          "gw_mac": 0x020000000C01})
    sw.table_add("NicEgress.egress_port", {"standard_metadata.egress_port": Exact(1)},
                 "NicEgress.to_host", {"src_mac": 0x020000000C01, "dst_mac": 0x020000000099})
    for plane, port in enumerate(PLANE_PORTS):
        sw.table_add("NicIngress.port_role", {"standard_metadata.ingress_port": Exact(port)},
                     "NicIngress.plane_port", {"plane": plane})
        sw.table_add("NicEgress.egress_port", {"standard_metadata.egress_port": Exact(port)},
                     "NicEgress.to_plane", {"plane": plane, "src_mac": 0x020000000D00 + port,
                                            "dst_mac": 0x020000000E00 + port})
        sw.table_add("NicIngress.gen_plane", {"meta.plane": Exact(plane)}, "NicIngress.gen_params",
                     {"port": port, "leaf_base": 0x100, "spine_base": 0x200, "leaf_count": 8,
                      "spine_count": 4, "my_leaf": 1})
    sw.table_add("NicIngress.ev_mode", {"hdr.ipv6.dst_addr": Lpm(addr("fd00:0:3::"), 48)},
                 "NicIngress.mode_generated")
    for ev in range(16):
        srh = ev % 3 == 0
        params = {"port": PLANE_PORTS[ev % 4], "plane": ev % 4, "carrier": addr(usid(0x101, 0x200 + ev, 0xE002))}
        if srh:
            params["next_carrier"] = addr(usid(0x103, 0xE003))
        sw.table_add("NicIngress.ev_table", {"hdr.ipv6.dst_addr": Lpm(addr("fd00:0:2::"), 48),
                                             "meta.ev": Exact(0x4000 + ev)},
                     "NicIngress.set_path_srh" if srh else "NicIngress.set_path", params)
    sw.table_add("NicIngress.spray_mode", {"meta.is_mrc": Ternary(0, 1),
                                           "hdr.ipv6.traffic_class": Ternary(0, 0),
                                           "hdr.ipv6.next_hdr": Ternary(17, 0xFF)},
                 "NicIngress.spray_per_packet", priority=5)
    members = []
    for m in range(16):
        port = PLANE_PORTS[m % 4]
        if m % 5 == 4:
            sw.act_prof_add_member("NicIngress.spray_selector", m, "NicIngress.set_generated",
                                   {"plane": m % 4, "spine": m % 4})
        else:
            sw.act_prof_add_member("NicIngress.spray_selector", m, "NicIngress.set_path",
                                   {"port": port, "plane": m % 4,
                                    "carrier": addr(usid(0x100 + m % 4, 0x200 + m, 0x102, 0xE001))})
        members.append((m, 1 + m % 2, port))
    sw.act_prof_add_group("NicIngress.spray_selector", 1, members)
    sw.table_add("NicIngress.spray", {"hdr.ipv6.dst_addr": Lpm(addr("fd00::"), 16)}, Group(1))
    for n in (1, 2):
        sw.table_add("NicIngress.my_sid", {"hdr.ipv6.dst_addr": Lpm(addr(usid(0xE000 + n)), 48)},
                     "NicIngress.decap_to_host", {"port": 1, "trim_dscp": 0x2E})


def nic_frames(rng: random.Random) -> list[bytes]:
    def host(p) -> bytes:
        return bytes(Ether(src="02:00:00:00:00:99", dst="02:00:00:00:0c:01") / p)

    def plane(p) -> bytes:
        return bytes(Ether(src="02:00:00:00:0e:02", dst="02:00:00:00:0d:02") / p)

    dst = rng.choice(["fd00:0:2:1::2", "fd00:0:3:2::2", "fd00:0:3:9::2", "fd00:0:2:1::7", "fd00:0:1:1::9"])
    ev = rng.choice([0x4000 + rng.randrange(20), (rng.randrange(8) << 13) | (rng.randrange(6) << 5)])
    mrc = UDP(sport=rng.randrange(1, 65535), dport=4791) / Raw(mrc_data(rng.randrange(1 << 24), ev))
    other = UDP(sport=rng.randrange(1024, 65535), dport=rng.choice([53, 5000])) / Raw(bytes(rng.randrange(40)))
    inner = IPv6(src="fd00:0:2:1::2", dst=HOST, tc=rng.choice([0, 0xB8])) / mrc
    out = [
        host(IPv6(src=HOST, dst=dst, tc=rng.choice([0, 0, 4])) / mrc),
        host(IPv6(src=HOST, dst=dst, tc=rng.choice([0, 4])) / other),
        host(IPv6(src=rng.choice([HOST, "fd00:0:9:9::1"]), dst=dst, nh=59)),
        host(IPv6(src=HOST, dst="ff02::1:ff00:1", hlim=255)
             / ICMPv6ND_NS(tgt=GW) / ICMPv6NDOptSrcLLAddr(lladdr="02:00:00:00:00:99")),
        host(IPv6(src=HOST, dst=GW) / ICMPv6EchoRequest(id=rng.randrange(65536), data=b"ping")),
        plane(IPv6(src="fd00:0:2:1::100", dst=usid(0xE000 + rng.randrange(1, 4)), tc=rng.choice([0, 0xB8]))
              / inner),
        plane(IPv6(src="fd00:0:2:1::100", dst=usid(0xE001))
              / IPv6ExtHdrSegmentRouting(addresses=[usid(0xE001)], segleft=rng.randrange(0, 2), nh=41)
              / inner),
        plane(IPv6(src="fd00:0:2:1::100", dst=usid(0x100, 0xE001)) / inner),
    ]
    return out
