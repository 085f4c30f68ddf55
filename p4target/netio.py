"""Packet I/O for a ``Device`` on Linux interfaces: raw sockets with PACKET_MMAP rings.

``p4target run -i 1@eth1 -i 2@eth2`` makes each interface a switch port, as
``simple_switch -i 1@eth1`` does. Frames are read with ``AF_PACKET`` sockets (the
interface is put in promiscuous mode for as long as the socket lives, so nothing
stays set when the process ends), run through the device, and the outputs written
on the output port's interface. Frames the socket sees because we sent them
(``PACKET_OUTGOING``) are ignored.

A system call per frame each way costs more than the rest of the I/O, so each port
has a receive ring and a transmit ring (``p4target.packet_ring``): frames are
copied out of shared memory with no call into the kernel, handed to the device in
batches, and its outputs written into the output ports' transmit rings, flushed with
one ``send`` per batch. Frames larger than a ring slot (a host's GSO super-frames)
still arrive whole (the kernel queues them on the socket and marks their slot);
frames that do not go in a transmit ring (longer than a slot, the ring full of
frames still in flight, or sent by another thread, e.g. a packet-out) are sent
with a plain ``send`` after what the ring holds. What the kernel drops because a
ring is full is counted per port (``rx_dropped``). ``rings=False`` (``--no-rings``)
keeps one ``recv`` and one ``send`` per frame, for comparison; a port whose rings
cannot be set up works that way by itself.

Link state matters to the dataplane (action-selector watch ports), so netio follows
it: rtnetlink link notifications (RTM_NEWLINK/RTM_DELLINK) tell the device at once
when an interface loses its carrier or goes administratively down, and a slow poll of
the interface flags backs them up. An interface that is deleted and created again
under the same name is reopened.

Hosts on the other end of a veth offload their TCP/UDP checksums: the frames they
send carry only a partial sum that a NIC would finish. The sockets ask the kernel for
the virtio-net header of every frame (PACKET_VNET_HDR) and netio finishes such sums,
as a NIC would, before the pipeline sees the frame; frames that a sender's
segmentation offload (TCP TSO, UDP GSO) left as one super-frame are cut into the
frames a NIC would have sent (other GSO kinds are dropped and counted, with a hint to
turn the offload off: ``ethtool -K IFACE tso off gso off``).

Optionally each port's traffic is written to pcap files (``<DIR>/<iface>_in.pcap``
and ``_out.pcap``, as BMv2's ``--pcap`` does), in the classic libpcap format.

Everything runs in one thread (``run()``; the rings, and epoll over the sockets,
the netlink socket and a wake-up pipe), because the pipeline is Python and a thread
per port would only contend for the GIL (and on a VM a hand-over between threads on
two cores costs tens of microseconds). The loop sleeps in epoll only when no ring
had a frame in the last round. ``stop()`` may be called from a signal handler or
another thread.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import logging
import os
import select
import socket
import struct
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, TypeVar

from p4target.errors import P4Error
from p4target.packet_ring import (TX_DATA_OFFSET, RxRing, TxRing, kernel_drops, ring_layout,
                                  rx_slot_size)

log = logging.getLogger(__name__)

T = TypeVar("T")

# Linux constants (linux/if_packet.h, linux/if.h, linux/rtnetlink.h, linux/sockios.h)
ETH_P_ALL = 0x0003
SOL_PACKET = 263
PACKET_ADD_MEMBERSHIP = 1
PACKET_MR_PROMISC = 1
PACKET_OUTGOING = 4
PACKET_IGNORE_OUTGOING = 23
PACKET_VNET_HDR = 15
VNET_HDR_LEN = 10  # struct virtio_net_hdr: flags, gso_type, hdr_len, gso_size, csum_start, csum_offset
VNET_F_NEEDS_CSUM = 1
VNET_GSO_TCPV4 = 1
VNET_GSO_TCPV6 = 4
VNET_GSO_UDP_L4 = 5
VNET_GSO_ECN = 0x80
SIOCGIFFLAGS = 0x8913
SIOCGIFINDEX = 0x8933
SIOCGIFMTU = 0x8921
IFF_UP = 0x1
IFF_RUNNING = 0x40
NETLINK_ROUTE = 0
RTMGRP_LINK = 0x1
RTM_NEWLINK = 16
RTM_DELLINK = 17
IFLA_IFNAME = 3
IFLA_MTU = 4
CLONE_NEWNET = 0x40000000

MAX_FRAME = 65535
ETH_HLEN = 14
_BATCH = 64  # frames handed to the device at once (it holds its lock meanwhile)
_RING_BATCH = 256  # frames taken from one receive ring before looking at the others
RX_RING_FRAMES = 4096  # slots per port (2 KB each at MTU 1500: 8 MB of kernel memory): a burst the
# switch cannot take at once waits here, as in the 4 MB socket buffer of the plain path
# (a 5,000-frame burst of 1 KB frames: 1,024 slots let 1,088 through, 4,096 let 4,408)
TX_RING_FRAMES = 256
RX_RING_BYTES = 8 << 20  # at most, per port (fewer slots for jumbo MTUs)


# ------------------------------------------------------------------------------ pcap


class PcapWriter:
    """Writes frames to a classic pcap file (microsecond timestamps, Ethernet).

    The format is a 24-byte global header (magic 0xa1b2c3d4, version 2.4, snaplen,
    link type 1 = Ethernet) and, per frame, a 16-byte record header (seconds,
    microseconds, captured length, original length) followed by the bytes; all in
    this machine's byte order, which readers detect from the magic.
    """

    MAGIC = 0xA1B2C3D4
    LINKTYPE_ETHERNET = 1

    def __init__(self, path: Path | str, snaplen: int = MAX_FRAME) -> None:
        self.path = Path(path)
        self.snaplen = snaplen
        self._f = open(self.path, "wb")  # noqa: SIM115 - closed by close()
        self._f.write(struct.pack("=IHHiIII", self.MAGIC, 2, 4, 0, 0, snaplen,
                                  self.LINKTYPE_ETHERNET))
        self.count = 0
        self.dirty = False

    def write(self, frame: bytes, timestamp: float | None = None) -> None:
        ts = time.time() if timestamp is None else timestamp
        sec = int(ts)
        usec = int(round((ts - sec) * 1e6))
        if usec >= 1_000_000:
            sec, usec = sec + 1, usec - 1_000_000
        cap = frame[: self.snaplen]
        self._f.write(struct.pack("=IIII", sec, usec, len(cap), len(frame)))
        self._f.write(cap)
        self.count += 1
        self.dirty = True

    def flush(self) -> None:
        if self.dirty and not self._f.closed:
            self._f.flush()
            self.dirty = False

    def close(self) -> None:
        if not self._f.closed:
            self._f.close()


def read_pcap(path: Path | str) -> list[tuple[float, bytes]]:
    """Read a classic pcap file (either byte order, usec or nsec) -> [(time, frame)]."""
    data = Path(path).read_bytes()
    if len(data) < 24:
        raise P4Error("not a pcap file (shorter than its header)", str(path))
    for endian in ("<", ">"):
        magic = struct.unpack(endian + "I", data[:4])[0]
        if magic in (0xA1B2C3D4, 0xA1B23C4D):
            scale = 1e-6 if magic == 0xA1B2C3D4 else 1e-9
            break
    else:
        raise P4Error("not a pcap file (bad magic number)", str(path))
    out: list[tuple[float, bytes]] = []
    off = 24
    while off + 16 <= len(data):
        sec, frac, caplen, _ = struct.unpack(endian + "IIII", data[off: off + 16])
        off += 16
        out.append((sec + frac * scale, data[off: off + caplen]))
        off += caplen
    return out


# -------------------------------------------------------------- namespaces, interfaces


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
        except BaseException as e:  # noqa: BLE001 - handed to the caller
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


def interface_index(ctl: socket.socket, name: str) -> int | None:
    """ifindex of ``name`` in the namespace of socket ``ctl``, None if it does not exist."""
    try:
        res = fcntl.ioctl(ctl.fileno(), SIOCGIFINDEX, _ifreq(name))
    except OSError as e:
        if e.errno in (errno.ENODEV, errno.ENXIO):
            return None
        raise
    return struct.unpack("i", res[16:20])[0]


def interface_up(ctl: socket.socket, name: str) -> bool | None:
    """True if ``name`` is administratively up and has its link (IFF_UP and
    IFF_RUNNING), False if not, None if it does not exist."""
    try:
        res = fcntl.ioctl(ctl.fileno(), SIOCGIFFLAGS, _ifreq(name))
    except OSError as e:
        if e.errno in (errno.ENODEV, errno.ENXIO):
            return None
        raise
    flags = struct.unpack("H", res[16:18])[0]
    return bool(flags & IFF_UP) and bool(flags & IFF_RUNNING)


def interface_mtu(ctl: socket.socket, name: str) -> int | None:
    """MTU of ``name`` in the namespace of socket ``ctl``, None if it does not exist."""
    try:
        res = fcntl.ioctl(ctl.fileno(), SIOCGIFMTU, _ifreq(name))
    except OSError as e:
        if e.errno in (errno.ENODEV, errno.ENXIO):
            return None
        raise
    return struct.unpack("i", res[16:20])[0]


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


def ignores_outgoing(sock: socket.socket) -> bool:
    """True if the kernel keeps our own transmissions off this socket
    (PACKET_IGNORE_OUTGOING took effect), so frames need no per-frame check."""
    try:
        return sock.getsockopt(SOL_PACKET, PACKET_IGNORE_OUTGOING) == 1
    except OSError:
        return False


# ------------------------------------------------------------------------------ NetIO


@dataclass
class PortStats:
    rx: int = 0
    tx: int = 0
    tx_errors: int = 0
    ignored: int = 0
    # frames that arrived but never reached the pipeline: the kernel found the
    # receive ring (or queue) full, or a frame was larger than a ring slot and could
    # not be queued whole (PACKET_STATISTICS, read every poll interval and at close)
    rx_dropped: int = 0


class _Port:
    def __init__(self, number: int, name: str) -> None:
        self.number = number
        self.name = name
        self.ifindex: int | None = None
        self.sock: socket.socket | None = None
        self.up = False
        self.stats = PortStats()
        self.pcap_in: PcapWriter | None = None
        self.pcap_out: PcapWriter | None = None
        self.kernel_filters_outgoing = False
        self.gso_dropped = 0
        self.gso_segmented = 0
        self.vnet = False
        self.mtu = 1500
        # Frames the loop thread sends go into tx_ring (flushed with one send per
        # batch); the others (other threads, frames too long for a slot, a ring slot
        # still in flight) through tx_sock. With a virtio-net header on the receive
        # socket, tx_sock is a second socket without it, which saves the kernel
        # parsing one per frame.
        self.tx_sock: socket.socket | None = None
        self.rx_ring: RxRing | None = None
        self.tx_ring: TxRing | None = None
        self.ring_sock: socket.socket | None = None
        self.offloaded: Callable[[bytes, bytes], list[bytes]] = lambda hdr, frame: []


class NetIO:
    """Connects a ``Device`` to Linux interfaces (see the module docstring).

    ``rings=False`` reads and writes with one system call per frame instead of
    PACKET_MMAP rings (``p4target run --no-rings``): for comparison, and the way a
    port goes by itself if its rings cannot be set up. ``rx_ring_frames`` is the
    number of slots of each receive ring (``--rx-ring-frames``), rounded up to fill
    whole blocks; None: RX_RING_FRAMES, fewer for jumbo MTUs so that a ring stays
    within RX_RING_BYTES.
    """

    def __init__(self, device: Any, ports: dict[int, str], pcap_dir: Path | str | None = None,
                 netns: str | None = None, poll_interval: float = 1.0,
                 promisc: bool = True, finish_checksums: bool = True,
                 rings: bool = True, rx_ring_frames: int | None = None,
                 tx_ring_frames: int = TX_RING_FRAMES) -> None:
        if not ports:
            raise P4Error("no ports: give at least one -i PORT@IFACE")
        names = list(ports.values())
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            raise P4Error(f"interface {sorted(dup)[0]} is given for more than one port; "
                          "give each interface once")
        if rx_ring_frames is not None and rx_ring_frames < 1:
            raise P4Error(f"rx_ring_frames {rx_ring_frames}: a receive ring needs at least one slot")
        self.device = device
        self.netns = netns
        self.poll_interval = poll_interval
        self.promisc = promisc
        self.finish_checksums = finish_checksums
        self.rings = rings
        self.rx_ring_frames = rx_ring_frames
        self.tx_ring_frames = tx_ring_frames
        self.ports = {n: _Port(n, name) for n, name in sorted(ports.items())}
        self.by_name = {p.name: p for p in self.ports.values()}
        self.pcap_dir = Path(pcap_dir) if pcap_dir else None
        self._ctl: socket.socket | None = None
        self._nl: socket.socket | None = None
        self._epoll: select.epoll | None = None
        self._by_fd: dict[int, _Port] = {}
        self._ring_ports: list[_Port] = []  # ports read through a receive ring
        self._tx_ports: list[_Port] = []  # ports with a transmit ring
        self._tx_rings: dict[int, TxRing] = {}  # port -> ring, for _transmit (no pcap)
        self._loop_thread: int | None = None  # the thread that may use the rings
        self._wake_r, self._wake_w = -1, -1
        self._stopping = False
        self._thread: threading.Thread | None = None
        self._opened = False
        # how often the loop's thread slept (its voluntary context switches, read
        # when run() ends): under load it should hardly ever wait for frames
        self.sleeps: int | None = None

    # -- setup
    def open(self) -> None:
        """Open every port (in ``netns`` if given); raises ``P4Error`` naming the first
        interface that cannot be used, with nothing left open."""
        if self._opened:
            return
        try:
            in_netns(self.netns, self._open_all)
        except BaseException:
            self.close()
            raise
        self._opened = True
        dev = self.device
        dev.ports = {n: p.name for n, p in self.ports.items()}
        dev.output_sink = self.send
        for p in self.ports.values():
            dev.set_port_status(p.number, p.up)
        log.info("device %d: ports %s", getattr(dev, "device_id", 0),
                 ", ".join(f"{n}@{p.name}{'' if p.up else ' (down)'}"
                           + (f" (PACKET_MMAP rings, {p.rx_ring.layout.frame_nr} receive slots)"
                              if p.rx_ring else " (one system call per frame)")
                           for n, p in self.ports.items()))

    def _open_all(self) -> None:
        self._ctl = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._epoll = select.epoll()
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        self._epoll.register(self._wake_r, select.EPOLLIN)
        try:
            nl = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_ROUTE)
            nl.bind((0, RTMGRP_LINK))
            nl.setblocking(False)
            self._nl = nl
            self._epoll.register(nl.fileno(), select.EPOLLIN)
        except OSError as e:  # no rtnetlink: the poll still follows the links
            log.warning("link notifications unavailable (%s); polling link state", e)
            self._nl = None
        if self.pcap_dir is not None:
            try:
                self.pcap_dir.mkdir(parents=True, exist_ok=True)
            except OSError as e:
                raise P4Error(f"cannot create pcap directory: {e.strerror}",
                              str(self.pcap_dir)) from None
        for p in self.ports.values():
            idx = interface_index(self._ctl, p.name)
            if idx is None:
                where = f" in namespace {self.netns}" if self.netns else ""
                raise P4Error(f"port {p.number}: interface {p.name!r} does not exist{where}; "
                              "create it first or fix -i PORT@IFACE")
            self._open_port(p, idx)
            if self.pcap_dir is not None:
                try:
                    p.pcap_in = PcapWriter(self.pcap_dir / f"{p.name}_in.pcap")
                    p.pcap_out = PcapWriter(self.pcap_dir / f"{p.name}_out.pcap")
                except OSError as e:
                    raise P4Error(f"cannot write pcap file: {e.strerror}",
                                  str(self.pcap_dir)) from None
        self._index_rings()  # ports with pcap files go through send(), which writes them

    def _open_port(self, p: _Port, ifindex: int) -> None:
        assert self._ctl is not None
        try:
            p.mtu = interface_mtu(self._ctl, p.name) or 1500
            p.ifindex = ifindex
            p.vnet = self.finish_checksums
            p.offloaded = lambda hdr, frame, p=p: self._offloaded(p, hdr, frame)
            if self.rings:
                self._open_with_rings(p)
            else:
                p.sock = open_packet_socket(p.name, ifindex, promisc=self.promisc,
                                            vnet_hdr=p.vnet)
            p.kernel_filters_outgoing = ignores_outgoing(p.sock)
            p.tx_sock = open_transmit_socket(p.name) if p.vnet else p.sock
        except PermissionError:
            self._close_port(p)
            raise P4Error(f"port {p.number}: no permission to open a raw socket on "
                          f"{p.name}; run as root (or with CAP_NET_RAW)") from None
        except OSError as e:
            self._close_port(p)
            raise P4Error(f"port {p.number}: cannot open {p.name}: {e.strerror}") from None
        self._by_fd[p.sock.fileno()] = p
        assert self._epoll is not None
        self._epoll.register(p.sock.fileno(), select.EPOLLIN)
        self._index_rings()
        p.up = bool(interface_up(self._ctl, p.name))

    def _open_with_rings(self, p: _Port) -> None:
        """The port's socket with a receive ring (made before the bind, so every
        frame goes into it) and a transmit ring on a socket of its own. If the kernel
        refuses a ring (no memory for it, a kernel without them), the port uses
        plain sockets, with one line in the log."""
        assert p.ifindex is not None
        ring_error: list[OSError] = []

        def add_rx_ring(sock: socket.socket) -> None:
            slot = rx_slot_size(p.mtu)
            frames = self.rx_ring_frames
            if frames is None:  # the default: at most RX_RING_BYTES (fewer slots for jumbo MTUs)
                frames = max(64, min(RX_RING_FRAMES, RX_RING_BYTES // slot))
            try:
                p.rx_ring = RxRing(sock, ring_layout(slot, frames), vnet=p.vnet,
                                   filter_outgoing=not ignores_outgoing(sock))
            except OSError as e:
                ring_error.append(e)
                raise

        try:
            p.sock = open_packet_socket(p.name, p.ifindex, promisc=self.promisc,
                                        vnet_hdr=p.vnet, before_bind=add_rx_ring)
        except OSError as e:
            self._close_rings(p)
            if not ring_error:
                raise  # not the ring: the interface itself (the caller says which)
            self._no_rings(p, e)
            p.sock = open_packet_socket(p.name, p.ifindex, promisc=self.promisc,
                                        vnet_hdr=p.vnet)
            return
        try:
            p.ring_sock = open_transmit_socket(p.name)
            try:  # room in the send buffer for every frame of the ring in flight
                p.ring_sock.setsockopt(socket.SOL_SOCKET, 32, 4 << 20)  # SO_SNDBUFFORCE (root)
            except OSError:
                pass
            # a flush that must wait for room waits this long at most (see _flush)
            p.ring_sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO,
                                   struct.pack("ll", 0, 50_000))
            p.tx_ring = TxRing(p.ring_sock, ring_layout(
                TX_DATA_OFFSET + VNET_HDR_LEN + p.mtu + ETH_HLEN + 8, self.tx_ring_frames))
            self._set_mtu(p, p.mtu)  # longer frames go the plain way: the kernel says why
        except OSError as e:
            self._no_rings(p, e)
            p.sock.close()
            p.sock = open_packet_socket(p.name, p.ifindex, promisc=self.promisc,
                                        vnet_hdr=p.vnet)

    def _no_rings(self, p: _Port, e: OSError) -> None:
        log.warning("port %d (%s): no PACKET_MMAP rings (%s); one system call per frame",
                    p.number, p.name, e.strerror)
        self._close_rings(p)

    def _close_rings(self, p: _Port) -> None:
        for ring in (p.rx_ring, p.tx_ring):
            if ring is not None:
                ring.close()
        p.rx_ring = p.tx_ring = None
        if p.ring_sock is not None:
            p.ring_sock.close()
            p.ring_sock = None
        self._index_rings()

    def _index_rings(self) -> None:
        ports = self.ports.values()
        self._ring_ports = [q for q in ports if q.rx_ring is not None]
        self._tx_ports = [q for q in ports if q.tx_ring is not None]
        self._tx_rings = {q.number: q.tx_ring for q in self._tx_ports
                          if q.tx_ring is not None and q.pcap_out is None}

    def _close_port(self, p: _Port) -> None:
        self._account(p)
        self._close_rings(p)
        if p.sock is not None:
            fd = p.sock.fileno()
            self._by_fd.pop(fd, None)
            if self._epoll is not None:
                try:
                    self._epoll.unregister(fd)
                except (OSError, ValueError):
                    pass
            p.sock.close()
            p.sock = None
        if p.tx_sock is not None:
            p.tx_sock.close()  # a no-op when it was the receive socket
            p.tx_sock = None
        p.ifindex = None

    def _account(self, p: _Port) -> None:
        """Move the kernel's and the rings' drop counts into the port's stats."""
        st = p.stats
        if p.sock is not None:
            st.rx_dropped += kernel_drops(p.sock)
        ring = p.rx_ring
        if ring is not None:
            st.rx_dropped += ring.truncated
            st.ignored += ring.ignored
            ring.truncated = ring.ignored = 0

    # -- sending (the device's output sink)
    def send(self, port: int, frame: bytes) -> None:
        p = self.ports.get(port)
        if p is None:
            log.debug("device %d: output to port %d dropped: no such port",
                      getattr(self.device, "device_id", 0), port)
            return
        ring = p.tx_ring
        if ring is not None and threading.get_ident() == self._loop_thread:
            queued = ring.put(frame)
            if not queued:
                # the next slot is still in flight, or the frame does not go in a ring
                # (the kernel will say why it cannot be sent): send what waits first
                self._flush(p)
                queued = ring.put(frame)
            if queued:
                if p.pcap_out is not None:
                    p.pcap_out.write(frame)
                return
        sock = p.tx_sock
        if sock is None:
            p.stats.tx_errors += 1
            return
        try:
            sock.send(frame)
        except OSError as e:
            p.stats.tx_errors += 1
            self._log_tx_error(p, e)
            return
        p.stats.tx += 1
        if p.pcap_out is not None:
            p.pcap_out.write(frame)

    def _log_tx_error(self, p: _Port, e: OSError) -> None:
        if p.stats.tx_errors == 1 or p.stats.tx_errors % 1000 == 0:
            log.warning("device %d: port %d (%s): send failed: %s (%d failures)",
                        getattr(self.device, "device_id", 0), p.number, p.name,
                        e.strerror, p.stats.tx_errors)

    def _flush(self, p: _Port) -> None:
        """Have the kernel send what is in ``p``'s transmit ring. Frames it cannot
        take (the link is down, or still no room in the send buffer after a wait of
        at most 50 ms) are dropped and counted as transmit errors."""
        ring = p.tx_ring
        if ring is None or not ring.pending:
            return
        sent, err = ring.flush()
        if ring.pending and (err is None or err.errno == errno.EAGAIN):
            more, err = ring.flush(wait=True)  # the send buffer is full: wait for room
            sent += more
        p.stats.tx += sent
        if ring.pending:
            p.stats.tx_errors += ring.discard()
            self._log_tx_error(p, err or OSError(errno.EAGAIN, "no room to send"))

    def _flush_all(self) -> None:
        for p in self._tx_ports:
            ring = p.tx_ring
            if ring is not None and ring.pending:
                self._flush(p)

    def _transmit(self, outputs: list[tuple[int, bytes]]) -> None:
        """Send the device's outputs from the loop thread: into the ports' transmit
        rings (flushed by the caller), the rest through ``send``."""
        rings = self._tx_rings
        n = len(outputs)
        i = 0
        while i < n:
            port, frame = outputs[i]
            ring = rings.get(port)
            if ring is not None:
                j = ring.put_run(outputs, i, port)
                if j > i:
                    i = j
                    continue
            self.send(port, frame)  # no ring, or no room in it: the general way
            i += 1

    # -- the loop
    def run(self) -> None:
        """Forward until ``stop()``. Opens the ports first if needed.

        Ports with rings are read at the top of every round, with no system call; the
        loop waits in epoll (the rings' sockets are in it, readable when a frame is in
        the ring) only after a round in which no ring had anything, and otherwise
        looks at epoll without waiting, for the netlink socket, the wake-up pipe and
        the ports on plain sockets. Frames put in transmit rings are flushed after
        each port's batch, so a frame waits at most one batch.
        """
        self.open()
        assert self._epoll is not None
        self._loop_thread = threading.get_ident()
        dev = self.device
        next_poll = time.monotonic() + self.poll_interval
        next_flush = time.monotonic() + 0.2
        dev_poll = getattr(dev, "poll", None)
        queue_wait: float | None = None
        poll = self._epoll.poll
        drain_ring = self._drain_ring
        try:
            while not self._stopping:
                busy = False
                for p in self._ring_ports:
                    if drain_ring(p, dev):
                        busy = True
                if dev_poll is not None:
                    queue_wait = dev_poll()
                    self._flush_all()
                if busy:
                    timeout = 0.0
                else:
                    wake = min(next_poll, next_flush)
                    timeout = max(0.0, wake - time.monotonic())
                    if queue_wait is not None:
                        timeout = min(timeout, queue_wait)
                try:
                    events = poll(timeout)
                except InterruptedError:  # pragma: no cover - PEP 475 retries
                    continue
                for fd, _ in events:
                    p = self._by_fd.get(fd)
                    if p is not None:
                        sock = p.sock
                        if sock is None or p.rx_ring is not None:
                            continue  # a ring: read at the top of the next round
                        self._drain(p, sock, dev)
                        self._flush_all()
                    elif self._nl is not None and fd == self._nl.fileno():
                        self._read_netlink()
                    elif fd == self._wake_r:
                        try:
                            os.read(self._wake_r, 4096)
                        except BlockingIOError:
                            pass
                now = time.monotonic()
                if now >= next_poll:
                    next_poll = now + self.poll_interval
                    self._poll_links()
                if now >= next_flush:
                    next_flush = now + 0.2
                    for p in self.ports.values():
                        if p.pcap_in is not None:
                            p.pcap_in.flush()
                        if p.pcap_out is not None:
                            p.pcap_out.flush()
        finally:
            self._flush_all()
            self._loop_thread = None
            self.sleeps = _voluntary_switches()
        self.close()

    def _deliver_in(self, p: _Port, frames: list[bytes], dev: Any) -> None:
        """Hand frames that arrived on ``p`` to the device, all at once if it can
        take batches (``process_batch``, whose outputs go into the transmit rings,
        or ``receive_batch``), in chunks of _BATCH so the device lock is never held
        long (cut super-frames can make many); else one by one (``receive``)."""
        p.stats.rx += len(frames)
        pcap = p.pcap_in
        if pcap is not None:
            for frame in frames:
                pcap.write(frame)
        number = p.number
        process = getattr(dev, "process_batch", None)
        batch = getattr(dev, "receive_batch", None)
        if process is not None or batch is not None:
            for i in range(0, len(frames), _BATCH):
                chunk = frames if len(frames) <= _BATCH else frames[i:i + _BATCH]
                if process is not None:
                    self._transmit(process(number, chunk))
                    self._flush_all()
                else:
                    batch(number, chunk)
            return
        receive = dev.receive
        for frame in frames:
            receive(number, frame)

    def _drain_ring(self, p: _Port, dev: Any) -> bool:
        """Take up to _RING_BATCH frames from ``p``'s receive ring, run them through
        the device and flush what they made; False if the ring was empty."""
        ring = p.rx_ring
        if ring is None:
            return False
        frames: list[bytes] = []
        if not ring.read(frames, _RING_BATCH, p.offloaded):
            return False
        if frames:
            self._deliver_in(p, frames, dev)
        self._flush_all()
        return True

    def _drain(self, p: _Port, sock: socket.socket, dev: Any) -> None:
        """Read up to _BATCH frames from a port on a plain socket (until it is empty)
        and run them through the device."""
        frames: list[bytes] = []
        add = frames.append
        flags = socket.MSG_DONTWAIT
        fast = p.kernel_filters_outgoing
        vnet = p.vnet
        size = MAX_FRAME + VNET_HDR_LEN
        ignored = 0
        for _ in range(_BATCH):
            try:
                if fast:
                    data = sock.recv(size, flags)
                else:
                    data, addr = sock.recvfrom(size, flags)
                    if addr[2] == PACKET_OUTGOING:
                        ignored += 1
                        continue
            except BlockingIOError:
                break
            except OSError as e:
                if e.errno != errno.ENETDOWN:
                    log.warning("port %d (%s): receive failed: %s", p.number, p.name, e.strerror)
                break
            if vnet:
                if data[0] or data[1]:  # checksum to finish, or a GSO super-frame
                    frames.extend(self._offloaded(p, data[:VNET_HDR_LEN], data[VNET_HDR_LEN:]))
                    continue
                data = data[VNET_HDR_LEN:]
            add(data)
        p.stats.ignored += ignored
        if frames:
            self._deliver_in(p, frames, dev)

    def _offloaded(self, p: _Port, hdr: bytes, frame: bytes) -> list[bytes]:
        """A frame whose sender left work to the NIC (its virtio-net header ``hdr``
        says what): finish its checksum, or cut a TCP/UDP segmentation-offload
        super-frame into the frames a NIC would have sent. What cannot be cut (other
        GSO kinds) is dropped and counted."""
        flags, gso_type, _hdr_len, gso_size, start, offset = struct.unpack_from("=BBHHHH", hdr)
        if gso_type:
            frames = segment_gso(frame, gso_type & ~VNET_GSO_ECN, gso_size, start)
            if frames is not None:
                p.gso_segmented += 1
                return frames
            p.gso_dropped += 1
            if p.gso_dropped == 1 or p.gso_dropped % 1000 == 0:
                log.warning("device %d: port %d (%s): dropped %d GSO frame(s) of %d bytes "
                            "(type %d, segments of %d) that cannot be segmented here; turn "
                            "segmentation offload off on the sending interface: "
                            "ethtool -K IFACE tso off gso off",
                            getattr(self.device, "device_id", 0), p.number, p.name,
                            p.gso_dropped, len(frame), gso_type, gso_size)
            return []
        if flags & VNET_F_NEEDS_CSUM:
            frame = complete_checksum(frame, start, offset)
        return [frame]

    def start(self) -> None:
        """Open the ports and forward in a background thread."""
        self.open()
        self._thread = threading.Thread(target=self.run, name="p4target-netio", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Ask the loop to end (safe from signal handlers and other threads)."""
        self._stopping = True
        if self._wake_w >= 0:
            try:
                os.write(self._wake_w, b"x")
            except OSError:
                pass

    def join(self, timeout: float | None = None) -> None:
        if self._thread is not None:
            self._thread.join(timeout)

    def close(self) -> None:
        for p in self.ports.values():
            self._close_port(p)
            for w in (p.pcap_in, p.pcap_out):
                if w is not None:
                    w.close()
        for s in (self._nl, self._ctl):
            if s is not None:
                s.close()
        self._nl = self._ctl = None
        if self._epoll is not None:
            self._epoll.close()
            self._epoll = None
        for fd in (self._wake_r, self._wake_w):
            if fd >= 0:
                os.close(fd)
        self._wake_r = self._wake_w = -1

    # -- link state
    def _set_up(self, p: _Port, up: bool) -> None:
        if p.up != up:
            p.up = up
            self.device.set_port_status(p.number, up)

    def _poll_links(self) -> None:
        if self._ctl is None:
            return
        for p in self.ports.values():
            self._account(p)
            try:
                idx = interface_index(self._ctl, p.name)
                state = interface_up(self._ctl, p.name) if idx is not None else None
                if idx is not None and idx == p.ifindex:
                    self._set_mtu(p, interface_mtu(self._ctl, p.name) or p.mtu)
            except OSError:
                continue
            self._follow(p, idx, bool(state))

    def _set_mtu(self, p: _Port, mtu: int) -> None:
        p.mtu = mtu
        if p.tx_ring is not None:
            p.tx_ring.max_len = min(p.tx_ring.room, mtu + ETH_HLEN)

    def _follow(self, p: _Port, ifindex: int | None, up: bool) -> None:
        """Bring port ``p`` in line with its interface: reopen it if the interface was
        re-created, mark it down if it is gone."""
        if ifindex is None:
            if p.sock is not None:
                log.warning("port %d: interface %s disappeared", p.number, p.name)
                self._close_port(p)
            self._set_up(p, False)
            return
        if ifindex != p.ifindex:
            self._close_port(p)
            try:
                in_netns(self.netns, lambda: self._open_port(p, ifindex))
                log.info("port %d: interface %s reopened", p.number, p.name)
            except P4Error as e:
                log.warning("%s", e)
                self._set_up(p, False)
                return
        self._set_up(p, up)

    def _read_netlink(self) -> None:
        assert self._nl is not None
        while True:
            try:
                data = self._nl.recv(65536)
            except BlockingIOError:
                return
            except OSError as e:
                if e.errno == errno.ENOBUFS:  # lost notifications: look at every link
                    self._poll_links()
                    continue
                return
            off = 0
            while off + 16 <= len(data):
                length, mtype = struct.unpack_from("=IH", data, off)
                if length < 16:
                    break
                if mtype in (RTM_NEWLINK, RTM_DELLINK) and length >= 32:
                    _fam, _pad, _type, ifindex, flags, _change = struct.unpack_from(
                        "=BBHiII", data, off + 16)
                    name = _rtattr_string(data, off + 32, off + length, IFLA_IFNAME)
                    p = self.by_name.get(name or "")
                    if p is None:
                        for cand in self.ports.values():
                            if cand.ifindex == ifindex:
                                p = cand
                    if p is not None:
                        if mtype == RTM_DELLINK:
                            if p.ifindex == ifindex:
                                self._follow(p, None, False)
                        else:
                            up = bool(flags & IFF_UP) and bool(flags & IFF_RUNNING)
                            self._follow(p, ifindex, up)
                            mtu = _rtattr(data, off + 32, off + length, IFLA_MTU)
                            if mtu is not None and len(mtu) >= 4 and p.ifindex == ifindex:
                                self._set_mtu(p, struct.unpack_from("=I", mtu)[0])
                off += (length + 3) & ~3

    def stats(self) -> dict[int, PortStats]:
        return {n: p.stats for n, p in self.ports.items()}


def _voluntary_switches() -> int | None:
    """How many times the calling thread gave up the CPU to wait (Linux)."""
    try:
        for line in Path("/proc/thread-self/status").read_text().splitlines():
            if line.startswith("voluntary_ctxt_switches:"):
                return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return None


def _rtattr(data: bytes, off: int, end: int, want: int) -> bytes | None:
    """The payload of attribute ``want`` among the rtattrs in ``data[off:end]``."""
    while off + 4 <= end:
        alen, atype = struct.unpack_from("=HH", data, off)
        if alen < 4:
            return None
        if atype == want:
            return data[off + 4: off + alen]
        off += (alen + 3) & ~3
    return None


def _rtattr_string(data: bytes, off: int, end: int, want: int) -> str | None:
    raw = _rtattr(data, off, end, want)
    return None if raw is None else raw.split(b"\0", 1)[0].decode(errors="replace")
