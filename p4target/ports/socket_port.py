"""A switch port on a Linux interface through a raw socket: one system call per frame.

The port of ``p4target run --no-rings``, and what a ring port (``ring_port.py``)
falls back to when the kernel refuses it rings. One ``AF_PACKET`` socket bound to
the interface reads every frame on it (``recv``, one per frame) and, without a
virtio-net header, sends (``send``, one per frame); with the header, which the
port asks for to learn what host stacks left to the NIC (``offloads.py``), a second
socket without it sends, which saves the kernel parsing a header per frame. The
port also keeps its counters and its pcap files.
"""

from __future__ import annotations

import errno
import logging
import socket
import struct
from dataclasses import dataclass
from typing import TYPE_CHECKING

from p4target.ports.linux_net import ignores_outgoing, open_packet_socket, open_transmit_socket
from p4target.ports.offloads import (VNET_F_NEEDS_CSUM, VNET_GSO_ECN, VNET_HDR_LEN, complete_checksum,
                               segment_gso)
from p4target.ports.packet_ring import kernel_drops
from p4target.ports.pcap import PcapWriter

if TYPE_CHECKING:  # pragma: no cover - typing only
    from p4target.ports.packet_ring import RxRing, TxRing

log = logging.getLogger("p4target.ports.netio")  # one logger for the ports and their loop, as before

MAX_FRAME = 65535
PACKET_OUTGOING = 4
# frames read from a socket port at once (and handed to the device as one batch)
READ_BATCH = 64


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
    # transmit flushes that found the send buffer full and waited for room, and the
    # seconds they waited (the loop forwards nothing meanwhile)
    flush_waits: int = 0
    flush_wait_s: float = 0.0


class SocketPort:
    """Switch port ``number`` on interface ``name`` (of device ``device_id``, for
    the log). ``open`` and ``close`` it as the interface comes and goes; the
    counters and pcap files stay."""

    # a socket port has no rings (a RingPort has them while the kernel lets it)
    rx_ring: RxRing | None = None
    tx_ring: TxRing | None = None

    def __init__(self, number: int, name: str, device_id: int = 0) -> None:
        self.number = number
        self.name = name
        self.device_id = device_id
        self.ifindex: int | None = None
        self.sock: socket.socket | None = None
        self.tx_sock: socket.socket | None = None
        self.up = False
        self.stats = PortStats()
        self.pcap_in: PcapWriter | None = None
        self.pcap_out: PcapWriter | None = None
        self.kernel_filters_outgoing = False
        self.gso_dropped = 0
        self.gso_segmented = 0
        self.vnet = False
        self.mtu = 1500

    # -- opening and closing
    def open(self, ifindex: int, mtu: int, promisc: bool, vnet: bool) -> None:
        """Open the port's sockets on its interface (``ifindex`` in the calling
        thread's namespace); raises OSError (the caller says which port)."""
        self.ifindex = ifindex
        self.mtu = mtu
        self.vnet = vnet
        self._open_sockets(promisc)
        assert self.sock is not None
        self.kernel_filters_outgoing = ignores_outgoing(self.sock)
        self.tx_sock = open_transmit_socket(self.name) if vnet else self.sock

    def _open_sockets(self, promisc: bool) -> None:
        assert self.ifindex is not None
        self.sock = open_packet_socket(self.name, self.ifindex, promisc=promisc,
                                       vnet_hdr=self.vnet)

    def close(self) -> None:
        """Close the sockets, the kernel's drop count taken first (the caller takes
        the receive socket out of its epoll before)."""
        self.account()
        self._close_sockets()

    def _close_sockets(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None
        if self.tx_sock is not None:
            self.tx_sock.close()  # a no-op when it was the receive socket
            self.tx_sock = None
        self.ifindex = None

    def account(self) -> None:
        """Move the kernel's drop count into the port's stats."""
        if self.sock is not None:
            self.stats.rx_dropped += kernel_drops(self.sock)

    def set_mtu(self, mtu: int) -> None:
        self.mtu = mtu

    # -- receiving
    def read(self) -> list[bytes]:
        """Up to READ_BATCH frames from the socket (until it is empty), with what
        their senders offloaded done; our own transmissions are skipped and counted."""
        sock = self.sock
        frames: list[bytes] = []
        if sock is None:
            return frames
        add = frames.append
        flags = socket.MSG_DONTWAIT
        fast = self.kernel_filters_outgoing
        vnet = self.vnet
        size = MAX_FRAME + VNET_HDR_LEN
        ignored = 0
        for _ in range(READ_BATCH):
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
                    log.warning("port %d (%s): receive failed: %s", self.number, self.name,
                                e.strerror)
                break
            if vnet:
                if data[0] or data[1]:  # checksum to finish, or a GSO super-frame
                    frames.extend(self.offloaded(data[:VNET_HDR_LEN], data[VNET_HDR_LEN:]))
                    continue
                data = data[VNET_HDR_LEN:]
            add(data)
        self.stats.ignored += ignored
        return frames

    def offloaded(self, hdr: bytes, frame: bytes) -> list[bytes]:
        """A frame whose sender left work to the NIC (its virtio-net header ``hdr``
        says what): finish its checksum, or cut a TCP/UDP segmentation-offload
        super-frame into the frames a NIC would have sent. What cannot be cut (other
        GSO kinds) is dropped and counted."""
        flags, gso_type, _hdr_len, gso_size, start, offset = struct.unpack_from("=BBHHHH", hdr)
        if gso_type:
            frames = segment_gso(frame, gso_type & ~VNET_GSO_ECN, gso_size, start)
            if frames is not None:
                self.gso_segmented += 1
                return frames
            self.gso_dropped += 1
            if self.gso_dropped == 1 or self.gso_dropped % 1000 == 0:
                log.warning("device %d: port %d (%s): dropped %d GSO frame(s) of %d bytes "
                            "(type %d, segments of %d) that cannot be segmented here; turn "
                            "segmentation offload off on the sending interface: "
                            "ethtool -K IFACE tso off gso off",
                            self.device_id, self.number, self.name,
                            self.gso_dropped, len(frame), gso_type, gso_size)
            return []
        if flags & VNET_F_NEEDS_CSUM:
            frame = complete_checksum(frame, start, offset)
        return [frame]

    # -- sending
    def send(self, frame: bytes) -> None:
        """Send ``frame`` with one system call; a failure is counted and logged."""
        sock = self.tx_sock
        if sock is None:
            self.stats.tx_errors += 1
            return
        try:
            sock.send(frame)
        except OSError as e:
            self.stats.tx_errors += 1
            self.log_tx_error(e)
            return
        self.stats.tx += 1
        if self.pcap_out is not None:
            self.pcap_out.write(frame)

    def log_tx_error(self, e: OSError) -> None:
        if self.stats.tx_errors == 1 or self.stats.tx_errors % 1000 == 0:
            log.warning("device %d: port %d (%s): send failed: %s (%d failures)",
                        self.device_id, self.number, self.name, e.strerror,
                        self.stats.tx_errors)
