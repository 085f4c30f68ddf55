"""Benchmark scenarios of the project's own programs (p4src/fabric.p4, p4src/nic.p4).

Each scenario is a switch with the table entries one kind of packet needs, written
through the ``p4target.Switch`` API (no controller, no test scaffolding), the ingress
port and the frame. bench/target_api.py injects the frame over and over and prints
the rate against router6.p4's of the same run.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parent.parent
FABRIC = ROOT / "p4src" / "fabric.p4"
NIC = ROOT / "p4src" / "nic.p4"

HOST_MAC = 0x02_00_00_00_00_99
NIC_ADDR = 0xFD00_0000_0001_0001_0000_0000_0000_0100   # fd00:0:1:1::100
GW_ADDR = 0xFD00_0000_0001_0001_0000_0000_0000_0001    # fd00:0:1:1::1
HOST_SRC = 0xFD00_0000_0001_0001_0000_0000_0000_0002   # fd00:0:1:1::2
REMOTE_HOST = 0xFD00_0000_0002_0001_0000_0000_0000_0002  # leaf 2, port 1
PLANE_PORTS = (2, 3, 4, 5)


def usid(*ids: int) -> int:
    """A uSID carrier: block fcbb:bb00, then 16-bit uSIDs, zero-filled."""
    value = 0xFCBBBB00
    for i in ids:
        value = (value << 16) | i
    return value << (128 - 32 - 16 * len(ids))


def ipv6(src: int, dst: int, next_hdr: int, payload: bytes, hop_limit: int = 64, tc: int = 0) -> bytes:
    return ((6 << 28) | (tc << 20)).to_bytes(4, "big") + len(payload).to_bytes(2, "big") \
        + bytes([next_hdr, hop_limit]) + src.to_bytes(16, "big") + dst.to_bytes(16, "big") + payload


def udp(sport: int, dport: int, payload: bytes) -> bytes:
    return sport.to_bytes(2, "big") + dport.to_bytes(2, "big") + (8 + len(payload)).to_bytes(2, "big") \
        + b"\0\0" + payload


def srh(next_hdr: int, segments: list[int], segments_left: int) -> bytes:
    body = b"".join(s.to_bytes(16, "big") for s in segments)
    return bytes([next_hdr, 2 * len(segments), 4, segments_left, len(segments) - 1, 0, 0, 0]) + body


def ether(dst: int, payload: bytes, src: int = HOST_MAC) -> bytes:
    return dst.to_bytes(6, "big") + src.to_bytes(6, "big") + b"\x86\xdd" + payload


def bth_write(psn: int = 1, ev: int = 0xFFFF) -> bytes:
    """BTH (opcode 0x0a, RDMA WRITE) + RETH: MRC-lite data; the EV is the BTH's pkey."""
    return bytes([0x0A, 0]) + ev.to_bytes(2, "big") + (1).to_bytes(4, "big") + psn.to_bytes(4, "big") + bytes(16)


@dataclass
class Scenario:
    name: str
    build: Callable[[], tuple[object, int, bytes]]  # -> (switch, ingress port, frame)
    target: float | None = None  # acceptance ratio to router6.p4, if any


def _fabric():
    from p4target import Switch
    from p4target.runtime.entries import Exact, Lpm

    sw = Switch.load(FABRIC, seed=1)
    sw.table_add("FabricIngress.my_sid", {"hdr.ipv6.dst_addr": Lpm(usid(0x0100), 48)},
                 "FabricIngress.usid_un")
    for i in range(1, 64):  # the other leaves and spines
        sw.table_add("FabricIngress.usid_fwd", {"hdr.ipv6.dst_addr": Lpm(usid(0x0100 + i), 48)},
                     "FabricIngress.fwd", {"port": 1 + i % 8, "dmac": 0x02_00_00_00_0B_00 + i})
    for port in range(1, 9):
        sw.table_add("FabricEgress.port_mac", {"standard_metadata.egress_port": Exact(port)},
                     "FabricEgress.set_src_mac", {"mac": 0x02_00_00_00_0A_00 + port})
    return sw


def fabric_un():
    """uN: DA fcbb:bb00:100:102:e001:: -> shifted to fcbb:bb00:102:e001::, port 3."""
    sw = _fabric()
    frame = ether(0x02_00_00_00_0A_01, ipv6(HOST_SRC, usid(0x0100, 0x0102, 0xE001), 17,
                                            udp(0x1234, 4791, bth_write())))
    return sw, 1, frame


def fabric_srh_end():
    """End of a carrier with an SRH: the next carrier comes from the segment list."""
    sw = _fabric()
    inner = udp(0x1234, 4791, bth_write())
    frame = ether(0x02_00_00_00_0A_01, ipv6(HOST_SRC, usid(0x0100), 43,
                                            srh(17, [usid(0x0103, 0xE001), usid(0x0100)], 1) + inner))
    return sw, 1, frame


def _nic():
    from p4target import Switch
    from p4target.runtime.entries import Exact

    sw = Switch.load(NIC, seed=1)
    sw.table_add("NicIngress.port_role", {"standard_metadata.ingress_port": Exact(1)},
                 "NicIngress.host_port", {"nic_addr": NIC_ADDR, "gw_addr": GW_ADDR,
                                          "gw_mac": 0x02_00_00_00_0C_01})
    sw.table_add("NicEgress.egress_port", {"standard_metadata.egress_port": Exact(1)},
                 "NicEgress.to_host", {"src_mac": 0x02_00_00_00_0C_01, "dst_mac": HOST_MAC})
    for plane, port in enumerate(PLANE_PORTS):
        sw.table_add("NicIngress.port_role", {"standard_metadata.ingress_port": Exact(port)},
                     "NicIngress.plane_port", {"plane": plane})
        sw.table_add("NicEgress.egress_port", {"standard_metadata.egress_port": Exact(port)},
                     "NicEgress.to_plane", {"plane": plane, "src_mac": 0x02_00_00_00_0D_00 + port,
                                            "dst_mac": 0x02_00_00_00_0E_00 + port})
    return sw


def nic_spray():
    """Host -> fabric, non-MRC UDP: per-packet spraying over 16 members (4 plane ports)."""
    from p4target.runtime.entries import Group, Lpm, Ternary

    sw = _nic()
    sw.table_add("NicIngress.spray_mode", {"meta.is_mrc": Ternary(0, 0),
                                           "hdr.ipv6.traffic_class": Ternary(0, 0),
                                           "hdr.ipv6.next_hdr": Ternary(0, 0)},
                 "NicIngress.spray_per_packet", priority=1)
    members = []
    for m in range(16):
        port = PLANE_PORTS[m % 4]
        sw.act_prof_add_member("NicIngress.spray_selector", m, "NicIngress.set_path",
                               {"port": port, "plane": m % 4,
                                "carrier": usid(0x0100 + m % 4, 0x0200 + m // 4, 0x0102, 0xE001)})
        members.append((m, 1, port))
    sw.act_prof_add_group("NicIngress.spray_selector", 1, members)
    sw.table_add("NicIngress.spray", {"hdr.ipv6.dst_addr": Lpm(0xFD00 << 112, 16)}, Group(1))
    frame = ether(0x02_00_00_00_0C_01, ipv6(HOST_SRC, REMOTE_HOST, 17, udp(40000, 5000, bytes(32))))
    return sw, 1, frame


def nic_explicit():
    """Host -> fabric, MRC data, EXPLICIT EV: ev_table gives the carrier."""
    from p4target.runtime.entries import Exact, Lpm

    sw = _nic()
    sw.table_add("NicIngress.ev_table", {"hdr.ipv6.dst_addr": Lpm(REMOTE_HOST >> 64 << 64, 64),
                                         "meta.ev": Exact(0x1234)},
                 "NicIngress.set_path", {"port": 3, "plane": 1,
                                         "carrier": usid(0x0101, 0x0201, 0x0102, 0xE001)})
    frame = ether(0x02_00_00_00_0C_01, ipv6(HOST_SRC, REMOTE_HOST, 17, udp(0x1234, 4791, bth_write(ev=0x1234))))
    return sw, 1, frame


def nic_generated():
    """Host -> fabric, MRC data, GENERATED EV: the carrier is computed from EV bits."""
    from p4target.runtime.entries import Exact, Lpm

    sw = _nic()
    sw.table_add("NicIngress.ev_mode", {"hdr.ipv6.dst_addr": Lpm(0xFD00 << 112, 16)},
                 "NicIngress.mode_generated")
    for plane, port in enumerate(PLANE_PORTS):
        sw.table_add("NicIngress.gen_plane", {"meta.plane": Exact(plane)}, "NicIngress.gen_params",
                     {"port": port, "leaf_base": 0x0100, "spine_base": 0x0200, "leaf_count": 8,
                      "spine_count": 4, "my_leaf": 1})
    ev = (2 << 13) | (3 << 5)  # plane 2, spine 3
    frame = ether(0x02_00_00_00_0C_01, ipv6(HOST_SRC, REMOTE_HOST, 17, udp(ev, 4791, bth_write(ev=ev))))
    return sw, 1, frame


def nic_decap():
    """Fabric -> host: my local uSID at the end of the carrier, decapsulate, deliver."""
    from p4target.runtime.entries import Lpm

    sw = _nic()
    sw.table_add("NicIngress.my_sid", {"hdr.ipv6.dst_addr": Lpm(usid(0xE001), 48)},
                 "NicIngress.decap_to_host", {"port": 1, "trim_dscp": 0x2E})
    inner = ipv6(REMOTE_HOST, HOST_SRC, 17, udp(0x1234, 4791, bth_write()))
    frame = ether(0x02_00_00_00_0D_02, ipv6(NIC_ADDR + 1, usid(0xE001), 41, inner))
    return sw, 2, frame


SCENARIOS = [
    Scenario("fabric.p4 uN forwarding", fabric_un, 0.8),
    Scenario("fabric.p4 SRH End", fabric_srh_end),
    Scenario("nic.p4 encap, per-packet spray over 16 members", nic_spray, 0.6),
    Scenario("nic.p4 encap, EXPLICIT EV", nic_explicit),
    Scenario("nic.p4 encap, GENERATED EV", nic_generated),
    Scenario("nic.p4 decap to host", nic_decap),
]
