"""PACKET_MMAP rings (TPACKET_V2) on AF_PACKET sockets: frames without a syscall each.

A plain raw socket costs one ``recv`` and one ``send`` system call per frame, and in
a Python switch that is most of the cost around the pipeline. With a receive ring
the kernel writes every frame into a slot of memory shared with us (``mmap``) and
marks the slot ours; we copy the frame out and hand the slot back by writing its
status word, with no call into the kernel. With a transmit ring we write frames
into slots, mark them "send", and one ``send`` asks the kernel to transmit all of
them. Everything here is the stdlib (socket, mmap, struct); the layout is
``struct tpacket2_hdr`` of linux/if_packet.h and Documentation/networking/
packet_mmap.rst.

Version 2 (not 3) because its slots are owned one by one: a frame is ours as soon
as the kernel wrote it, where TPACKET_V3 hands over whole blocks (a quiet port's
frame would wait for the block's timeout), and because only V2 can hand over a
frame larger than a slot: with ``PACKET_COPY_THRESH`` the kernel puts such a frame
(a host's GSO super-frame of up to 64 KB) whole on the socket's ordinary receive
queue and marks its slot ``TP_STATUS_COPY``; ``RxRing.read`` then takes it with
``recv``, in order.

The virtio-net header (``PACKET_VNET_HDR``, set on the socket before the ring)
works with a V2 receive ring (checked by the tests on this project's kernel, 6.x):
the kernel writes its 10 bytes just before the frame in the slot. ``RxRing.read``
passes frames that need nothing on as they are and hands the others, header first,
to a callback (netio finishes their checksums and cuts GSO frames). Which ones
need something the slot's status already says (the skb's checksum state and TCP
GSO), so the header is read only for them: in practice the frames of host stacks.

On the transmit ring every frame goes after a virtio-net header that asks the
kernel to copy it whole into the packet it builds (``TxRing``), which saves a veth
a page allocation and copy per frame.

A ring is fixed memory of the kernel's, locked while the socket lives: netio's
sizes keep it to about 2.5 MB per port at MTU 1500 (8 MB with a 9000-byte MTU).
"""

from __future__ import annotations

import array
import errno
import logging
import mmap
import socket
import struct
from dataclasses import dataclass
from itertools import islice
from typing import Callable

log = logging.getLogger(__name__)

SOL_PACKET = 263
PACKET_RX_RING = 5
PACKET_STATISTICS = 6
PACKET_COPY_THRESH = 7
PACKET_VERSION = 10
PACKET_TX_RING = 13
PACKET_VNET_HDR = 15
PACKET_LOSS = 14
TPACKET_V2 = 1

# tpacket2_hdr.tp_status bits (receive ring)
TP_STATUS_USER = 1
TP_STATUS_COPY = 2
TP_STATUS_CSUMNOTREADY = 8  # the skb is CHECKSUM_PARTIAL (every GSO frame from a host)
TP_STATUS_CSUM_VALID = 128  # CHECKSUM_UNNECESSARY (the header then says DATA_VALID)
TP_STATUS_GSO_TCP = 256
# with the virtio-net header, a slot whose status has none of these but USER holds a
# frame whose header is all zero (virtio_net_hdr_from_skb writes flags only for
# CHECKSUM_PARTIAL and CHECKSUM_UNNECESSARY skbs, a GSO type only for GSO ones, and a
# GSO skb is one of the two): such frames, all but those of host stacks, are taken
# without reading the header
_PLAIN_VNET = (TP_STATUS_USER | TP_STATUS_COPY | TP_STATUS_CSUMNOTREADY | TP_STATUS_CSUM_VALID
               | TP_STATUS_GSO_TCP)
# ... and on the transmit ring
TP_STATUS_AVAILABLE = 0
TP_STATUS_SEND_REQUEST = 1

# struct tpacket2_hdr: status, len, snaplen (u32), mac, net (u16), sec, nsec (u32),
# vlan tci, vlan tpid (u16), 4 bytes of padding: 32 bytes; struct sockaddr_ll
# follows it, its sll_pkttype at offset 10.
_HDR = struct.Struct("=IIIHH")
TPACKET2_HDR_SIZE = 32
SLL_PKTTYPE_OFFSET = TPACKET2_HDR_SIZE + 10
# Where a transmitted frame starts in its slot: tp_hdrlen (TPACKET_ALIGN(32) + the
# 20-byte sockaddr_ll) minus the sockaddr_ll, as the kernel reads it without
# PACKET_TX_HAS_OFF.
TX_DATA_OFFSET = TPACKET2_HDR_SIZE
VNET_HDR_LEN = 10
# a transmitted frame up to this long is copied whole into the kernel's packet (TxRing)
LINEAR_MAX = 2048
ETH_HLEN = 14
PACKET_OUTGOING = 4
MAX_FRAME = 65535

PAGE = mmap.PAGESIZE


@dataclass(frozen=True)
class RingLayout:
    """``struct tpacket_req``: frames of ``frame_size`` bytes, ``frames_per_block``
    to a block of ``block_size`` (a whole number of pages; a frame never straddles
    two blocks), ``block_nr`` blocks. Frame ``i`` is at ``i * frame_size`` in the
    mapping because every block is full."""

    frame_size: int
    frame_nr: int
    block_size: int

    @property
    def block_nr(self) -> int:
        return self.frame_nr * self.frame_size // self.block_size

    @property
    def size(self) -> int:
        return self.frame_nr * self.frame_size

    def req(self) -> bytes:
        return struct.pack("=IIII", self.block_size, self.block_nr, self.frame_size,
                           self.frame_nr)


def ring_layout(min_frame: int, frames: int, block_size: int = 1 << 16) -> RingLayout:
    """A layout with slots of at least ``min_frame`` bytes (rounded up to a power of
    two, at least 2048) and about ``frames`` of them (rounded up to fill blocks)."""
    fs = 2048
    while fs < min_frame:
        fs *= 2
    bs = max(block_size, fs, PAGE)
    per_block = bs // fs
    nr = max(per_block, (frames + per_block - 1) // per_block * per_block)
    return RingLayout(fs, nr, bs)


def rx_slot_size(mtu: int) -> int:
    """Slot size for receiving frames of an interface with this MTU without the copy
    path: the 32-byte header, the sockaddr_ll, the kernel's alignment (the frame's
    network header is put on a 16-byte boundary after at least 16 bytes of link
    header), the virtio-net header, an Ethernet header with two VLAN tags."""
    return 32 + 20 + 16 + 16 + VNET_HDR_LEN + 14 + 8 + mtu


def kernel_drops(sock: socket.socket) -> int:
    """Frames the kernel dropped on this socket since the last call (ring or queue
    full): ``PACKET_STATISTICS`` reads and resets ``tp_drops``."""
    try:
        _packets, drops = struct.unpack("=II", sock.getsockopt(SOL_PACKET, PACKET_STATISTICS, 8))
    except OSError:
        return 0
    return drops


class RxRing:
    """A receive ring on ``sock`` (a bound AF_PACKET socket; any PACKET_VNET_HDR
    must already be set). ``read`` takes what the kernel has put there."""

    def __init__(self, sock: socket.socket, layout: RingLayout, vnet: bool = False,
                 filter_outgoing: bool = False) -> None:
        self.sock = sock
        self.layout = layout
        self.vnet = vnet
        self.filter_outgoing = filter_outgoing
        sock.setsockopt(SOL_PACKET, PACKET_VERSION, TPACKET_V2)
        # a frame larger than a slot goes whole onto the receive queue (TP_STATUS_COPY)
        sock.setsockopt(SOL_PACKET, PACKET_COPY_THRESH, 1)
        sock.setsockopt(SOL_PACKET, PACKET_RX_RING, layout.req())
        self.map = mmap.mmap(sock.fileno(), layout.size, mmap.MAP_SHARED,
                             mmap.PROT_READ | mmap.PROT_WRITE)
        self._words = memoryview(self.map).cast("I")
        # a slot: tp_status, tp_len, tp_snaplen, tp_mac, then padding to the next slot
        self._slot = struct.Struct(f"=IIIH{layout.frame_size - 14}x")
        self._view = memoryview(self.map)
        self._zeros = memoryview(array.array("I", bytes(4 * layout.frame_nr)))
        self._step = layout.frame_size >> 2  # from one slot's status word to the next's
        self._next = 0
        self.truncated = 0  # frames larger than a slot the kernel could not queue whole
        self.ignored = 0  # our own transmissions (kernels without PACKET_IGNORE_OUTGOING)

    def read(self, out: list[bytes], limit: int,
             offloaded: Callable[[bytes, bytes], list[bytes]] | None = None) -> int:
        """Append up to ``limit`` frames to ``out`` in arrival order; returns how many
        slots were taken (frames appended, ignored, or given to ``offloaded``). A call
        stops at the end of the ring (the next one goes on from its start), so it
        may return fewer than are ready.

        With the virtio-net header on, a frame whose header is not all "nothing to
        do" (flags or GSO type set) is not appended but given to
        ``offloaded(header, frame)``, and the frames it returns are appended.
        """
        start = self._next
        if not self._words[start * self._step] & TP_STATUS_USER:
            return 0  # the next slot is still the kernel's: nothing yet (a group loop asks every ring each pass)
        mm = self.map
        fs = self.layout.frame_size
        nr = self.layout.frame_nr
        end = min(nr, start + limit)  # a call stops at the end of the ring
        mask = _PLAIN_VNET if self.vnet else TP_STATUS_USER | TP_STATUS_COPY
        outgoing = self.filter_outgoing
        add = out.append
        off = (start - 1) * fs
        # the headers of the slots start..end, unpacked in one C loop (the slot's
        # other bytes are the format's padding)
        for status, length, snap, mac in self._slot.iter_unpack(self._view[start * fs: end * fs]):
            off += fs
            if status & mask != TP_STATUS_USER:  # not ours yet, or not a plain frame
                if not status & TP_STATUS_USER:
                    end = off // fs
                    break
                self._special(off, status, out, offloaded)
            elif outgoing and mm[off + SLL_PKTTYPE_OFFSET] == PACKET_OUTGOING:
                self.ignored += 1
            elif snap == length:
                mac += off
                add(mm[mac: mac + snap])
            else:  # larger than a slot and not queued whole: lost
                self.truncated += 1
        if end > start:  # TP_STATUS_KERNEL: the slots are the kernel's again, in one copy
            step = self._step
            self._words[start * step: end * step: step] = self._zeros[:end - start]
        self._next = 0 if end == nr else end
        return end - start

    def _special(self, off: int, status: int, out: list[bytes],
                 offloaded: Callable[[bytes, bytes], list[bytes]] | None) -> None:
        """A slot that is not a plain frame: one too large for it, whole on the
        socket's receive queue (TP_STATUS_COPY: taken from there, in order), or one
        whose virtio-net header may ask for work (a checksum to finish, a GSO frame
        to cut: given to ``offloaded``, which returns the frames to append)."""
        mm = self.map
        outgoing = self.filter_outgoing and mm[off + SLL_PKTTYPE_OFFSET] == PACKET_OUTGOING
        if status & TP_STATUS_COPY:
            try:
                data = self.sock.recv(MAX_FRAME + VNET_HDR_LEN, socket.MSG_DONTWAIT)
            except OSError as e:  # the queued frame is gone (should not happen; never hang)
                if e.errno not in (errno.EAGAIN, errno.ENETDOWN):
                    log.warning("receive of a large frame failed: %s", e.strerror)
                self.truncated += 1
                return
            hdr, frame = (data[:VNET_HDR_LEN], data[VNET_HDR_LEN:]) if self.vnet else (b"", data)
        else:
            _, length, snap, mac, _ = _HDR.unpack_from(mm, off)
            if snap != length:
                self.truncated += 1
                return
            hdr = mm[off + mac - VNET_HDR_LEN: off + mac] if self.vnet else b""
            frame = mm[off + mac: off + mac + snap]
        if outgoing:
            self.ignored += 1
        elif hdr[:2] not in (b"", b"\0\0") and offloaded is not None:
            out += offloaded(hdr, frame)
        else:
            out.append(frame)

    def close(self) -> None:
        self._words.release()
        self._view.release()
        self._zeros.release()
        self.map.close()


class TxRing:
    """A transmit ring on ``sock`` (a bound AF_PACKET socket of its own, without a
    virtio-net header: the ring sets one up). ``put`` and ``put_frames`` fill slots, ``flush`` has the
    kernel send them with one call.

    Only one thread may use a ring: netio's loop. A slot stays the kernel's until the
    frame in it is freed (for a veth, once the peer has taken it), so ``put`` says
    False when the next slot is not free yet or the frame does not fit; the caller
    then flushes and sends that frame another way. The kernel takes frames in ring
    order from where it stopped, so the frames put and not yet taken are always the
    ``pending`` slots that follow ``first``.

    Each frame goes after a virtio-net header whose ``hdr_len`` is the frame's length
    (up to LINEAR_MAX), which makes the kernel copy the whole frame into the packet
    it builds. Without it the kernel copies only the Ethernet header and points the
    packet at the ring's page for the rest, and a veth, which must not hand a
    receiver memory the sender may rewrite, then allocates a page per frame and
    copies the rest into it, a cost per frame larger than the copy this option asks
    for. A kernel that refuses the option gets plain frames. (Transmit
    rings read the header since 2016, the kernel's selftest psock_txring_vnet.c;
    Debian 12's 6.1 and later do.)
    """

    def __init__(self, sock: socket.socket, layout: RingLayout) -> None:
        self.sock = sock
        self.layout = layout
        # a frame the device refuses is skipped (PACKET_LOSS), not a stop of the
        # ring; netio keeps frames the kernel would refuse out of it (max_len)
        sock.setsockopt(SOL_PACKET, PACKET_LOSS, 1)
        sock.setsockopt(SOL_PACKET, PACKET_VERSION, TPACKET_V2)
        try:
            sock.setsockopt(SOL_PACKET, PACKET_VNET_HDR, 1)
            self.vnet = True
        except OSError:
            self.vnet = False
        sock.setsockopt(SOL_PACKET, PACKET_TX_RING, layout.req())
        self.map = mmap.mmap(sock.fileno(), layout.size, mmap.MAP_SHARED,
                             mmap.PROT_READ | mmap.PROT_WRITE)
        self._words = memoryview(self.map).cast("I")
        self._half = memoryview(self.map).cast("H")
        fs = layout.frame_size
        self._status = [i * fs >> 2 for i in range(layout.frame_nr)]  # tp_status word
        # where each slot's frame starts, and its virtio-net header's hdr_len (in
        # 16-bit units; the rest of the header stays zero: no checksum, no GSO)
        head = VNET_HDR_LEN if self.vnet else 0
        self._data = [i * fs + TX_DATA_OFFSET + head for i in range(layout.frame_nr)]
        self._hdr_len = [(i * fs + TX_DATA_OFFSET + 2) >> 1 for i in range(layout.frame_nr)]
        self._head = head
        self._nr = layout.frame_nr
        self._next = 0  # the slot the next put uses
        self.first = 0  # the first slot put and not taken by the kernel yet
        self.pending = 0  # how many: first, first + 1, ... (modulo the ring)
        # the longest frame a slot has room for, and the longest put takes (netio: the MTU)
        self.room = fs - TX_DATA_OFFSET - head
        self.max_len = self.room

    def put(self, frame: bytes) -> bool:
        """Write ``frame`` into the next slot and mark it to send; False if the slot
        is still the kernel's or the frame is shorter than an Ethernet header or
        longer than ``max_len`` (nothing written)."""
        return self.put_frames([frame]) == 1

    def put_frames(self, frames: list[bytes], i: int = 0) -> int:
        """``put`` for ``frames[i]``, ``frames[i + 1]``, ... (all for this ring's port)
        as long as they go in; returns the index of the first one not put. netio
        hands it all the frames a batch made for one port, so that the set-up below
        is paid once per port and batch, not per frame; everything is in locals and
        looked up in lists made once."""
        j = self._next
        status = self._status
        data = self._data
        words = self._words
        mm = self.map
        nr = self._nr
        max_len = self.max_len
        k = i
        todo = frames if not i else islice(frames, i, None)
        if self.vnet:
            half = self._half
            hdr_len = self._hdr_len
            head = self._head
            for frame in todo:
                w = status[j]
                n = len(frame)
                if words[w] or not ETH_HLEN <= n <= max_len:
                    break
                start = data[j]
                mm[start: start + n] = frame
                half[hdr_len[j]] = n if n <= LINEAR_MAX else 0
                words[w + 1] = n + head  # tp_len
                words[w] = TP_STATUS_SEND_REQUEST
                j += 1
                if j == nr:
                    j = 0
                k += 1
        else:
            for frame in todo:
                w = status[j]
                n = len(frame)
                if words[w] or not ETH_HLEN <= n <= max_len:
                    break
                start = data[j]
                mm[start: start + n] = frame
                words[w + 1] = n  # tp_len
                words[w] = TP_STATUS_SEND_REQUEST
                j += 1
                if j == nr:
                    j = 0
                k += 1
        if k != i:
            if not self.pending:
                self.first = self._next
            self.pending += k - i
            self._next = j
        return k

    def flush(self, wait: bool = False) -> tuple[int, OSError | None]:
        """Have the kernel send every frame put since the last flush; returns how
        many it took and the error if it stopped early (those it did not take stay
        pending, for another flush or ``discard``). Without ``wait`` the call never
        blocks; with it, it waits for room in the send buffer and for the frames to
        leave, at most the socket's SO_SNDTIMEO."""
        n = self.pending
        if not n:
            return 0, None
        err: OSError | None = None
        try:
            self.sock.send(b"", 0 if wait else socket.MSG_DONTWAIT)
        except OSError as e:
            err = e
        words = self._words
        status = self._status
        nr = self._nr
        first = self.first
        if words[status[(first + n - 1) % nr]] != TP_STATUS_SEND_REQUEST:
            self.pending = 0  # the last one was taken, so all were
            return n, None
        taken = 0
        while taken < n and words[status[(first + taken) % nr]] != TP_STATUS_SEND_REQUEST:
            taken += 1
        self.first = (first + taken) % nr
        self.pending = n - taken
        return taken, err

    def discard(self) -> int:
        """Give up the frames the kernel did not take (they are not sent later, e.g.
        when the link comes back): their slots are free again and the next ``put``
        uses the first of them, where the kernel will look next. Returns how many."""
        n = self.pending
        for k in range(n):
            self._words[self._status[(self.first + k) % self._nr]] = TP_STATUS_AVAILABLE
        self._next = self.first
        self.pending = 0
        return n

    def close(self) -> None:
        self._words.release()
        self._half.release()
        self.map.close()
