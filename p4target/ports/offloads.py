"""The work a sender left to the NIC, done as the NIC would: for frames from host stacks.

Hosts on the other end of a veth offload their TCP/UDP checksums and segmentation:
what they send carries only a partial checksum, or is one super-frame of many
segments, and the virtio-net header the kernel gives with each frame
(``PACKET_VNET_HDR``) says what is left to do. A switch port must finish it before
the pipeline sees the frames, or the receiving host drops them. Pure computation on
bytes.
"""

from __future__ import annotations

# struct virtio_net_hdr (linux/virtio_net.h): flags, gso_type, hdr_len, gso_size,
# csum_start, csum_offset
VNET_HDR_LEN = 10
VNET_F_NEEDS_CSUM = 1
VNET_GSO_TCPV4 = 1
VNET_GSO_TCPV6 = 4
VNET_GSO_UDP_L4 = 5
VNET_GSO_ECN = 0x80


def complete_checksum(frame: bytes, csum_start: int, csum_offset: int) -> bytes:
    """Finish a checksum the sender's kernel left to the NIC (CHECKSUM_PARTIAL).

    A host stack sending on a veth offloads its TCP/UDP checksum: the frame leaves
    with only the pseudo-header sum in the checksum field, and the virtio-net header
    says where the sum starts and where it goes. A real NIC would finish it; frames
    the switch forwards must carry the finished sum or the receiving host drops
    them. Ones'-complement sum from ``csum_start`` to the end, folded, inverted
    (0 is sent as 0xffff, which TCP and UDP receivers both accept)."""
    end = len(frame)
    where = csum_start + csum_offset
    if csum_start >= end or where + 2 > end:
        return frame
    region = frame[csum_start:]
    if len(region) % 2:
        region += b"\0"
    total = int.from_bytes(region, "big")
    # fold the big number 16 bits at a time: sum of 16-bit words modulo 0xffff
    total = total % 0xFFFF if total else 0
    csum = (~total) & 0xFFFF
    if csum == 0:
        csum = 0xFFFF
    return frame[:where] + csum.to_bytes(2, "big") + frame[where + 2:]


def _csum(data: bytes) -> int:
    """Internet checksum (ones' complement of the ones'-complement sum of 16-bit
    words); a zero result is given as 0xffff, which TCP and UDP both accept."""
    if len(data) % 2:
        data += b"\0"
    total = int.from_bytes(data, "big") % 0xFFFF if data else 0
    return ((~total) & 0xFFFF) or 0xFFFF


def segment_gso(frame: bytes, gso_type: int, gso_size: int, l4: int) -> list[bytes] | None:
    """Cut a TCP (TSO) or UDP (USO) super-frame into frames of ``gso_size`` payload
    bytes each, as the sending NIC would: lengths, IPv4 ids and header checksums,
    TCP sequence numbers and flags (FIN/PSH on the last segment only, CWR on the
    first only) and full TCP/UDP checksums. None if the frame is not one of these
    (it is then dropped by the caller)."""
    if gso_size <= 0 or gso_type not in (VNET_GSO_TCPV4, VNET_GSO_TCPV6, VNET_GSO_UDP_L4):
        return None
    l3 = 14
    etype = int.from_bytes(frame[12:14], "big")
    while etype in (0x8100, 0x88A8) and len(frame) >= l3 + 4:  # VLAN tags in the frame
        etype = int.from_bytes(frame[l3 + 2: l3 + 4], "big")
        l3 += 4
    if etype == 0x0800 and len(frame) >= l3 + 20:
        v4 = True
        src_dst = frame[l3 + 12: l3 + 20]
    elif etype == 0x86DD and len(frame) >= l3 + 40:
        v4 = False
        src_dst = frame[l3 + 8: l3 + 40]
    else:
        return None
    tcp = gso_type != VNET_GSO_UDP_L4
    proto = 6 if tcp else 17
    if tcp:
        if len(frame) < l4 + 20:
            return None
        l4_len = (frame[l4 + 12] >> 4) * 4
    else:
        l4_len = 8
    if l4_len < (20 if tcp else 8) or len(frame) < l4 + l4_len or l4 < l3:
        return None
    head = frame[:l4]
    l4_hdr = frame[l4: l4 + l4_len]
    payload = frame[l4 + l4_len:]
    seq = int.from_bytes(l4_hdr[4:8], "big") if tcp else 0
    ip_id = int.from_bytes(head[l3 + 4: l3 + 6], "big") if v4 else 0
    out: list[bytes] = []
    n = (len(payload) + gso_size - 1) // gso_size or 1
    for i in range(n):
        chunk = payload[i * gso_size: (i + 1) * gso_size]
        seg_l4_len = l4_len + len(chunk)
        h = bytearray(head)
        if v4:
            h[l3 + 2: l3 + 4] = (l4 - l3 + seg_l4_len).to_bytes(2, "big")
            h[l3 + 4: l3 + 6] = ((ip_id + i) & 0xFFFF).to_bytes(2, "big")
            ihl = (h[l3] & 0x0F) * 4
            h[l3 + 10: l3 + 12] = b"\0\0"
            h[l3 + 10: l3 + 12] = _csum(bytes(h[l3: l3 + ihl])).to_bytes(2, "big")
            pseudo = src_dst + bytes((0, proto)) + seg_l4_len.to_bytes(2, "big")
        else:
            h[l3 + 4: l3 + 6] = (l4 - l3 - 40 + seg_l4_len).to_bytes(2, "big")
            pseudo = src_dst + seg_l4_len.to_bytes(4, "big") + bytes((0, 0, 0, proto))
        t = bytearray(l4_hdr)
        if tcp:
            t[4:8] = ((seq + i * gso_size) & 0xFFFFFFFF).to_bytes(4, "big")
            if i < n - 1:
                t[13] &= ~0x09 & 0xFF  # FIN, PSH only on the last segment
            if i > 0:
                t[13] &= ~0x80 & 0xFF  # CWR only on the first
            t[16:18] = b"\0\0"
            t[16:18] = _csum(pseudo + bytes(t) + chunk).to_bytes(2, "big")
        else:
            t[4:6] = seg_l4_len.to_bytes(2, "big")
            t[6:8] = b"\0\0"
            t[6:8] = _csum(pseudo + bytes(t) + chunk).to_bytes(2, "big")
        out.append(bytes(h) + bytes(t) + chunk)
    return out
