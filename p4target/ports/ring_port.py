"""A switch port on PACKET_MMAP rings: frames in and out without a system call each.

A ``SocketPort`` (``socket_port.py``) whose receive socket has a receive ring
(``packet_ring.RxRing``, made before the bind, so every frame goes into it) and
which has a transmit ring (``packet_ring.TxRing``) on a socket of its own: netio's
loop copies frames out of shared memory, hands them to the device in batches and
writes the outputs into the output ports' transmit rings, flushed with one ``send``
per batch. Frames larger than a receive slot still arrive whole (the kernel queues
them on the socket); frames that do not go in the transmit ring (longer than a slot,
the ring full of frames still in flight, sent by another thread) go through the
plain socket after what the ring holds. If the kernel refuses a ring (no memory for
it, a kernel without them), the port works as a socket port, with one line in the
log.
"""

from __future__ import annotations

import errno
import logging
import socket
import struct
import time

from p4target.ports.linux_net import ignores_outgoing, open_packet_socket, open_transmit_socket
from p4target.ports.offloads import VNET_HDR_LEN
from p4target.ports.packet_ring import TX_DATA_OFFSET, RxRing, TxRing, ring_layout, rx_slot_size
from p4target.ports.socket_port import SocketPort

log = logging.getLogger("p4target.ports.netio")  # one logger for the ports and their loop

ETH_HLEN = 14
RX_RING_FRAMES = 4096  # slots per port (2 KB each at MTU 1500: 8 MB of kernel memory): a burst the
# switch cannot take at once waits here, as in the 4 MB socket buffer of the plain path
# (how much of a burst fewer slots lose: docs/target.md and bench/fabric_net.py)
TX_RING_FRAMES = 256
RX_RING_BYTES = 8 << 20  # at most, per port, by default (fewer slots for jumbo MTUs)


class RingPort(SocketPort):
    """A ``SocketPort`` with a receive ring of ``rx_ring_frames`` slots (None: the
    default, RX_RING_FRAMES, fewer for jumbo MTUs so that a ring stays within
    RX_RING_BYTES) and a transmit ring of ``tx_ring_frames``."""

    def __init__(self, number: int, name: str, device_id: int = 0,
                 rx_ring_frames: int | None = None, tx_ring_frames: int = TX_RING_FRAMES) -> None:
        super().__init__(number, name, device_id)
        self.rx_ring_frames = rx_ring_frames
        self.tx_ring_frames = tx_ring_frames
        self.rx_ring: RxRing | None = None
        self.tx_ring: TxRing | None = None
        self.ring_sock: socket.socket | None = None  # the transmit ring's

    def _open_sockets(self, promisc: bool) -> None:
        """The receive socket with its ring and the transmit ring's socket, or plain
        sockets if the kernel refuses a ring."""
        assert self.ifindex is not None
        ring_error: list[OSError] = []

        def add_rx_ring(sock: socket.socket) -> None:
            slot = rx_slot_size(self.mtu)
            frames = self.rx_ring_frames
            if frames is None:  # the default: at most RX_RING_BYTES (fewer slots for jumbo MTUs)
                frames = max(64, min(RX_RING_FRAMES, RX_RING_BYTES // slot))
            try:
                self.rx_ring = RxRing(sock, ring_layout(slot, frames), vnet=self.vnet,
                                      filter_outgoing=not ignores_outgoing(sock))
            except OSError as e:
                ring_error.append(e)
                raise

        try:
            self.sock = open_packet_socket(self.name, self.ifindex, promisc=promisc,
                                           vnet_hdr=self.vnet, before_bind=add_rx_ring)
        except OSError as e:
            self.close_rings()
            if not ring_error:
                raise  # not the ring: the interface itself (the caller says which)
            self._no_rings(e)
            super()._open_sockets(promisc)
            return
        try:
            self.ring_sock = open_transmit_socket(self.name)
            try:  # room in the send buffer for every frame of the ring in flight
                self.ring_sock.setsockopt(socket.SOL_SOCKET, 32, 4 << 20)  # SO_SNDBUFFORCE (root)
            except OSError:
                pass
            # a flush that must wait for room waits this long at most (see flush)
            self.ring_sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO,
                                      struct.pack("ll", 0, 50_000))
            self.tx_ring = TxRing(self.ring_sock, ring_layout(
                TX_DATA_OFFSET + VNET_HDR_LEN + self.mtu + ETH_HLEN + 8, self.tx_ring_frames))
            self.set_mtu(self.mtu)  # longer frames go the plain way: the kernel says why
        except OSError as e:
            self._no_rings(e)
            self.sock.close()
            super()._open_sockets(promisc)

    def _no_rings(self, e: OSError) -> None:
        log.warning("port %d (%s): no PACKET_MMAP rings (%s); one system call per frame",
                    self.number, self.name, e.strerror)
        self.close_rings()

    def close_rings(self) -> None:
        for ring in (self.rx_ring, self.tx_ring):
            if ring is not None:
                ring.close()
        self.rx_ring = self.tx_ring = None
        if self.ring_sock is not None:
            self.ring_sock.close()
            self.ring_sock = None

    def _close_sockets(self) -> None:
        self.close_rings()
        super()._close_sockets()

    def account(self) -> None:
        """Move the kernel's and the receive ring's drop counts into the port's stats."""
        super().account()
        ring = self.rx_ring
        if ring is not None:
            st = self.stats
            st.rx_dropped += ring.truncated
            st.ignored += ring.ignored
            ring.truncated = ring.ignored = 0

    def set_mtu(self, mtu: int) -> None:
        super().set_mtu(mtu)
        if self.tx_ring is not None:
            self.tx_ring.max_len = min(self.tx_ring.room, mtu + ETH_HLEN)

    # -- receiving
    def read_ring(self, frames: list[bytes], limit: int) -> int:
        """Append up to ``limit`` frames from the receive ring to ``frames``; how
        many slots were taken (0: the ring is empty). See ``RxRing.read``."""
        assert self.rx_ring is not None
        return self.rx_ring.read(frames, limit, self.offloaded)

    # -- sending
    def queue(self, frame: bytes) -> bool:
        """Put ``frame`` in the transmit ring (flushed by the caller); False if it
        does not go in (no ring, the frame is too long for a slot, or the next slot
        still in flight after a flush): send it another way."""
        ring = self.tx_ring
        if ring is None:
            return False
        queued = ring.put(frame)
        if not queued:
            # the next slot is still in flight, or the frame does not go in a ring
            # (the kernel will say why it cannot be sent): send what waits first
            self.flush()
            queued = ring.put(frame)
        if queued and self.pcap_out is not None:
            self.pcap_out.write(frame)
        return queued

    def flush(self) -> None:
        """Have the kernel send what is in the transmit ring. Frames it cannot take
        (the link is down, or still no room in the send buffer after a wait of at
        most 50 ms) are dropped and counted as transmit errors."""
        ring = self.tx_ring
        if ring is None or not ring.pending:
            return
        sent, err = ring.flush()
        if ring.pending and (err is None or err.errno == errno.EAGAIN):
            began = time.monotonic()
            more, err = ring.flush(wait=True)  # the send buffer is full: wait for room
            sent += more
            self.stats.flush_waits += 1
            self.stats.flush_wait_s += time.monotonic() - began
        self.stats.tx += sent
        if ring.pending:
            self.stats.tx_errors += ring.discard()
            self.log_tx_error(err or OSError(errno.EAGAIN, "no room to send"))
