"""Linux plumbing for switch ports: network namespaces, interfaces, raw sockets.

What netio and its ports need of the kernel besides the frames themselves: running
a call inside a network namespace without moving the process, an interface's
index, link state and MTU (ioctl), raw ``AF_PACKET`` sockets set up as switch ports
and as transmit-only sockets, and the attributes of rtnetlink link messages.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import os
import socket
import struct
import threading
from typing import Any, Callable, TypeVar

from p4target.errors import P4Error

T = TypeVar("T")

# Linux constants (linux/if_packet.h, linux/if.h, linux/sockios.h, linux/sched.h)
ETH_P_ALL = 0x0003
SOL_PACKET = 263
PACKET_ADD_MEMBERSHIP = 1
PACKET_MR_PROMISC = 1
PACKET_IGNORE_OUTGOING = 23
PACKET_VNET_HDR = 15
SIOCGIFFLAGS = 0x8913
SIOCGIFINDEX = 0x8933
SIOCGIFMTU = 0x8921
IFF_UP = 0x1
IFF_RUNNING = 0x40
CLONE_NEWNET = 0x40000000


def in_netns(netns: str | None, fn: Callable[[], T]) -> T:
    """Call ``fn`` with the calling thread inside network namespace ``netns``
    (``/run/netns/NAME`` as ``ip netns add`` makes it, or a path).

    Sockets keep the namespace they were created in, so a program (or a test) can
    open sockets in a namespace without running in it: the switch to the namespace
    happens in a short-lived thread, so the caller's own namespace never changes.
    """
    if not netns:
        return fn()
    path = netns if "/" in netns else f"/run/netns/{netns}"
    box: dict[str, Any] = {}

    def worker() -> None:
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            fd = os.open(path, os.O_RDONLY)
            try:
                if libc.setns(fd, CLONE_NEWNET) != 0:
                    err = ctypes.get_errno()
                    raise OSError(err, f"setns({path}): {os.strerror(err)}")
            finally:
                os.close(fd)
            box["value"] = fn()
        except BaseException as e:  # handed to the caller
            box["error"] = e

    t = threading.Thread(target=worker, name=f"netns-{netns}")
    t.start()
    t.join()
    if "error" in box:
        err = box["error"]
        if isinstance(err, FileNotFoundError) and err.filename == path:
            raise P4Error(f"network namespace {netns!r} does not exist ({path})") from None
        raise err
    return box["value"]


def _ifreq(name: str, payload: bytes = b"") -> bytes:
    return struct.pack("16s", name.encode()) + payload.ljust(24, b"\0")


def _interface_ioctl(ctl: socket.socket, request: int, name: str) -> bytes | None:
    """The ifreq the ioctl ``request`` gives back for ``name`` in the namespace of
    socket ``ctl``, None if the interface does not exist."""
    try:
        return fcntl.ioctl(ctl.fileno(), request, _ifreq(name))
    except OSError as e:
        if e.errno in (errno.ENODEV, errno.ENXIO):
            return None
        raise


def interface_index(ctl: socket.socket, name: str) -> int | None:
    """ifindex of ``name`` in the namespace of socket ``ctl``, None if it does not exist."""
    res = _interface_ioctl(ctl, SIOCGIFINDEX, name)
    return None if res is None else struct.unpack("i", res[16:20])[0]


def interface_up(ctl: socket.socket, name: str) -> bool | None:
    """True if ``name`` is administratively up and has its link (IFF_UP and
    IFF_RUNNING), False if not, None if it does not exist."""
    res = _interface_ioctl(ctl, SIOCGIFFLAGS, name)
    if res is None:
        return None
    flags = struct.unpack("H", res[16:18])[0]
    return bool(flags & IFF_UP) and bool(flags & IFF_RUNNING)


def interface_mtu(ctl: socket.socket, name: str) -> int | None:
    """MTU of ``name`` in the namespace of socket ``ctl``, None if it does not exist."""
    res = _interface_ioctl(ctl, SIOCGIFMTU, name)
    return None if res is None else struct.unpack("i", res[16:20])[0]


def open_packet_socket(name: str, ifindex: int, promisc: bool = True,
                       rcvbuf: int = 4 << 20, vnet_hdr: bool = False,
                       before_bind: Callable[[socket.socket], None] | None = None) -> socket.socket:
    """A raw socket for every frame on one interface (bound, promiscuous, deaf to its
    own transmissions). With ``vnet_hdr`` every frame read or written carries a
    10-byte virtio-net header first (see ``complete_checksum``). ``before_bind`` is
    called with the socket set up but not bound (a receive ring goes on there).

    The socket is made with protocol 0, which receives nothing, and only the bind
    to the interface starts the frames: none from other interfaces lands in its
    queue in between, and with a ring every frame goes into the ring."""
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
    try:
        if vnet_hdr:
            s.setsockopt(SOL_PACKET, PACKET_VNET_HDR, 1)
        try:
            s.setsockopt(socket.SOL_SOCKET, 33, rcvbuf)  # SO_RCVBUFFORCE (root)
        except OSError:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        try:
            s.setsockopt(SOL_PACKET, PACKET_IGNORE_OUTGOING, 1)
        except OSError:
            pass  # kernels before 4.20: outgoing frames are filtered by pkttype below
        if before_bind is not None:
            before_bind(s)
        s.bind((name, ETH_P_ALL))
        if promisc:
            mreq = struct.pack("iHH8s", ifindex, PACKET_MR_PROMISC, 0, b"")
            s.setsockopt(SOL_PACKET, PACKET_ADD_MEMBERSHIP, mreq)
    except BaseException:
        s.close()
        raise
    return s


def open_transmit_socket(name: str) -> socket.socket:
    """A raw socket that only sends on interface ``name`` (protocol 0: it receives
    nothing), without a virtio-net header."""
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
    try:
        s.bind((name, 0))
    except BaseException:
        s.close()
        raise
    return s


def open_interface_socket(name: str, netns: str | None = None, promisc: bool = True,
                          rcvbuf: int = 1 << 20) -> socket.socket:
    """A raw socket on interface ``name`` of network namespace ``netns`` (None: ours).

    For tools and tests that send and watch frames on a switch's links: resolves the
    interface index inside the namespace, then opens it like a switch port.
    """

    def opener() -> socket.socket:
        ctl = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            idx = interface_index(ctl, name)
        finally:
            ctl.close()
        if idx is None:
            raise P4Error(f"interface {name!r} does not exist in namespace {netns or 'of this process'}")
        return open_packet_socket(name, idx, promisc=promisc, rcvbuf=rcvbuf)

    return in_netns(netns, opener)


def ignores_outgoing(sock: socket.socket) -> bool:
    """True if the kernel keeps our own transmissions off this socket
    (PACKET_IGNORE_OUTGOING took effect), so frames need no per-frame check."""
    try:
        return sock.getsockopt(SOL_PACKET, PACKET_IGNORE_OUTGOING) == 1
    except OSError:
        return False


def rtattr(data: bytes, off: int, end: int, want: int) -> bytes | None:
    """The payload of attribute ``want`` among the rtattrs in ``data[off:end]``."""
    while off + 4 <= end:
        alen, atype = struct.unpack_from("=HH", data, off)
        if alen < 4:
            return None
        if atype == want:
            return data[off + 4: off + alen]
        off += (alen + 3) & ~3
    return None


def rtattr_string(data: bytes, off: int, end: int, want: int) -> str | None:
    raw = rtattr(data, off, end, want)
    return None if raw is None else raw.split(b"\0", 1)[0].decode(errors="replace")
