"""rtnetlink link notifications (RTM_NEWLINK / RTM_DELLINK, linux/rtnetlink.h and
linux/if_link.h) read from a datagram: which interface, whether it was deleted or is
up and running, its MTU when the message gives one. Pure: ``p4target/ports/netio.py``
owns the socket; a truncated or malformed message ends the reading of its datagram
and nothing after it is believed."""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass

from p4target.ports.linux_net import IFF_RUNNING, IFF_UP, rtattr, rtattr_string

NETLINK_ROUTE = 0
RTMGRP_LINK = 0x1
RTM_NEWLINK = 16
RTM_DELLINK = 17
IFLA_IFNAME = 3
IFLA_MTU = 4
NLMSG_HEADER = 16  # struct nlmsghdr
IFINFO = 16  # struct ifinfomsg, after the header


@dataclass(frozen=True)
class LinkNotice:
    """One interface's news: ``deleted``, else ``up`` (IFF_UP and IFF_RUNNING)."""

    ifindex: int
    name: str | None
    deleted: bool
    up: bool
    mtu: int | None


def link_notices(data: bytes) -> Iterator[LinkNotice]:
    """The link notifications of one netlink datagram, in order; other messages are
    skipped."""
    off = 0
    while off + NLMSG_HEADER <= len(data):
        length, mtype = struct.unpack_from("=IH", data, off)
        end = off + length
        if length < NLMSG_HEADER or end > len(data):
            return
        if mtype in (RTM_NEWLINK, RTM_DELLINK) and length >= NLMSG_HEADER + IFINFO:
            _fam, _pad, _type, ifindex, flags, _change = struct.unpack_from("=BBHiII", data, off + NLMSG_HEADER)
            attrs = off + NLMSG_HEADER + IFINFO
            mtu = rtattr(data, attrs, end, IFLA_MTU)
            yield LinkNotice(ifindex, rtattr_string(data, attrs, end, IFLA_IFNAME), mtype == RTM_DELLINK,
                             bool(flags & IFF_UP) and bool(flags & IFF_RUNNING),
                             struct.unpack_from("=I", mtu)[0] if mtu is not None and len(mtu) >= 4 else None)
        off += (length + 3) & ~3
