"""The rtnetlink link notifications NetIO follows, read from datagrams built here
byte by byte after linux/netlink.h, linux/rtnetlink.h and linux/if_link.h:

    nlmsghdr  = u32 length, u16 type, u16 flags, u32 seq, u32 pid      (16 bytes)
    ifinfomsg = u8 family, u8 pad, u16 type, i32 index, u32 flags, u32 change (16)
    rtattr    = u16 length (header included), u16 type, payload padded to 4

with RTM_NEWLINK 16, RTM_DELLINK 17, IFLA_IFNAME 3, IFLA_MTU 4, IFF_UP 0x1 and
IFF_RUNNING 0x40. The real kernel's notifications are followed in test_netio.py."""

from __future__ import annotations

import struct

from p4target.ports.link_notices import LinkNotice, link_notices


def attr(kind: int, payload: bytes) -> bytes:
    raw = struct.pack("=HH", 4 + len(payload), kind) + payload
    return raw + b"\0" * (-len(raw) % 4)


def message(mtype: int, index: int, flags: int, *attrs: bytes) -> bytes:
    body = struct.pack("=BBHiII", 10, 0, 1, index, flags, 0xFFFFFFFF) + b"".join(attrs)
    return struct.pack("=IHHII", 16 + len(body), mtype, 0, 0, 0) + body


def test_new_and_deleted_links_with_name_state_and_mtu() -> None:
    up_running = message(16, 7, 0x1 | 0x40, attr(3, b"veth1\0"), attr(4, struct.pack("=I", 9000)))
    up_no_carrier = message(16, 8, 0x1, attr(3, b"veth2\0"))
    gone = message(17, 9, 0, attr(3, b"veth3\0"))
    other = struct.pack("=IHHII", 20, 20, 0, 0, 0) + b"\0" * 4  # RTM_NEWADDR: skipped
    got = list(link_notices(up_running + other + up_no_carrier + gone))
    assert got == [LinkNotice(7, "veth1", False, True, 9000), LinkNotice(8, "veth2", False, False, None),
                   LinkNotice(9, "veth3", True, False, None)]


def test_a_malformed_datagram_ends_the_reading_and_nothing_after_it_is_believed() -> None:
    good = message(16, 7, 0x41, attr(3, b"veth1\0"))
    claims_more = bytearray(message(16, 8, 0x41, attr(3, b"veth2\0")))
    struct.pack_into("=I", claims_more, 0, len(claims_more) + 64)  # longer than the datagram
    assert [n.ifindex for n in link_notices(good + bytes(claims_more))] == [7]
    too_short = struct.pack("=IHHII", 8, 16, 0, 0, 0)  # a length below the header's own
    assert [n.ifindex for n in link_notices(good + too_short + good)] == [7]
    assert list(link_notices(good[:20])) == []  # cut inside the message
    bad_attr = message(16, 7, 0x41, struct.pack("=HH", 2, 3))  # an rtattr shorter than its header
    assert list(link_notices(bad_attr)) == [LinkNotice(7, None, False, True, None)]
    short_mtu = message(16, 7, 0x41, attr(4, b"\x01\x02"))  # IFLA_MTU of 2 bytes
    assert list(link_notices(short_mtu)) == [LinkNotice(7, None, False, True, None)]
