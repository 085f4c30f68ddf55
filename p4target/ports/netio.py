"""Packet I/O for a ``Device`` on Linux interfaces: raw sockets with PACKET_MMAP rings.

``p4target run -i 1@eth1 -i 2@eth2`` makes each interface a switch port, as
``simple_switch -i 1@eth1`` does. Frames are read with ``AF_PACKET`` sockets (the
interface is put in promiscuous mode for as long as the socket lives, so nothing
stays set when the process ends), run through the device, and the outputs written
on the output port's interface. Frames the socket sees because we sent them
(``PACKET_OUTGOING``) are ignored.

Each port is a ``RingPort`` (``p4target/ports/ring_port.py``) or, with ``rings=False``,
a ``SocketPort`` (``p4target/ports/socket_port.py``); netio is the loop over them. A
system call per frame each way costs more than the rest of the I/O, so a ring port
has a receive ring and a transmit ring (``p4target.ports.packet_ring``): frames are
copied out of shared memory with no call into the kernel, handed to the device in
batches, and its outputs written into the output ports' transmit rings, flushed with
one ``send`` per batch (a switch of a group: once per pass of the group loop, after
every switch of the process ran). Frames larger than a ring slot (a host's GSO super-frames)
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
the virtio-net header of every frame (PACKET_VNET_HDR) and the ports finish such sums
(``p4target/ports/offloads.py``), as a NIC would, before the pipeline sees the frame; frames that a sender's
segmentation offload (TCP TSO, UDP GSO) left as one super-frame are cut into the
frames a NIC would have sent (other GSO kinds are dropped and counted, with a hint to
turn the offload off: ``ethtool -K IFACE tso off gso off``).

Optionally each port's traffic is written to pcap files (``<DIR>/<iface>_in.pcap``
and ``_out.pcap``, as BMv2's ``--pcap`` does), in the classic libpcap format
(``p4target/ports/pcap.py``). Namespaces, interfaces and raw sockets: ``p4target/ports/linux_net.py``.

Everything runs in one thread (``run()``; the rings, and epoll over the sockets,
the netlink socket and a wake-up pipe), because the pipeline is Python and a thread
per port would only contend for the GIL (and on a VM a hand-over between threads on
two cores costs tens of microseconds). The loop sleeps in epoll only when no ring
had a frame in the last round. ``stop()`` may be called from a signal handler or
another thread.
"""
from __future__ import annotations

import errno
import logging
import os
import select
import socket
import threading
import time
from pathlib import Path
from typing import Any, Mapping

from p4target.errors import P4Error
# what tools and tests use from here (the homes of these are linux_net and pcap)
from p4target.ports.linux_net import in_netns, interface_index, interface_mtu, interface_up, open_interface_socket
from p4target.ports.link_notices import NETLINK_ROUTE, RTMGRP_LINK, link_notices
from p4target.ports.packet_ring import TxRing
from p4target.ports.pcap import PcapWriter, read_pcap
from p4target.ports.ring_port import RX_RING_FRAMES, TX_RING_FRAMES, RingPort
from p4target.ports.socket_port import PortStats, SocketPort

__all__ = ["NetIO", "PcapWriter", "PortStats", "RX_RING_FRAMES", "TX_RING_FRAMES", "in_netns",
           "open_interface_socket", "read_pcap"]

log = logging.getLogger(__name__)

_BATCH = 64  # frames handed to the device at once (it holds its lock meanwhile)
_RING_BATCH = 256  # frames taken from one receive ring before looking at the others


class NetIO:
    """Connects a ``Device`` to Linux interfaces (see the module docstring).

    ``rings=False`` reads and writes with one system call per frame instead of
    PACKET_MMAP rings (``p4target run --no-rings``): for comparison, and the way a
    port goes by itself if its rings cannot be set up. ``rx_ring_frames`` is the
    number of slots of each receive ring (``--rx-ring-frames N``), rounded up to fill
    whole blocks; None: RX_RING_FRAMES, fewer for jumbo MTUs so that a ring stays
    within RX_RING_BYTES. ``port_rx_ring_frames`` gives ports a number of their own
    (``--rx-ring-frames PORT=N``): a port that takes bursts from a host, without the
    memory of a large ring on every port.
    """

    def __init__(self, device: Any, ports: dict[int, str], pcap_dir: Path | str | None = None,
                 netns: str | None = None, poll_interval: float = 1.0,
                 promisc: bool = True, finish_checksums: bool = True,
                 rings: bool = True, rx_ring_frames: int | None = None,
                 tx_ring_frames: int = TX_RING_FRAMES,
                 port_rx_ring_frames: Mapping[int, int] | None = None) -> None:
        if not ports:
            raise P4Error("no ports: give at least one -i PORT@IFACE")
        names = list(ports.values())
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            raise P4Error(f"interface {sorted(dup)[0]} is given for more than one port; "
                          "give each interface once")
        by_port = dict(port_rx_ring_frames or {})
        for where, n in [(None, rx_ring_frames), *by_port.items()]:
            if n is not None and n < 1:
                raise P4Error(f"rx_ring_frames {n}{'' if where is None else f' of port {where}'}: "
                              "a receive ring needs at least one slot")
        if set(by_port) - set(ports):
            raise P4Error(f"rx_ring_frames of port {min(set(by_port) - set(ports))}: "
                          "not one of the ports; give it for a port of -i PORT@IFACE")
        self.device = device
        self.netns = netns
        self.poll_interval = poll_interval
        self.promisc = promisc
        self.finish_checksums = finish_checksums
        self.rings = rings
        self.rx_ring_frames = rx_ring_frames
        self.tx_ring_frames = tx_ring_frames
        device_id = getattr(device, "device_id", 0)
        self.ports: dict[int, SocketPort] = {
            n: RingPort(n, name, device_id, by_port.get(n, rx_ring_frames), tx_ring_frames) if rings
            else SocketPort(n, name, device_id) for n, name in sorted(ports.items())}
        self.by_name = {p.name: p for p in self.ports.values()}
        self.pcap_dir = Path(pcap_dir) if pcap_dir else None
        self._ctl: socket.socket | None = None
        self._nl: socket.socket | None = None
        self._epoll: select.epoll | None = None
        # the receive rings' sockets, apart from the rest: in ``_epoll`` (nested) when
        # this loop runs alone; a group loop waits on both and skips ``_epoll`` while
        # only rings have frames (``begin(grouped=True)``)
        self._ring_epoll: select.epoll | None = None
        self._grouped = False
        self._by_fd: dict[int, SocketPort] = {}
        self._ring_ports: list[RingPort] = []  # ports read through a receive ring
        self._tx_ports: list[RingPort] = []  # ports with a transmit ring
        self._tx_rings: dict[int, TxRing] = {}  # port -> ring, for _transmit (no pcap)
        self._loop_thread: int | None = None  # the thread that may use the rings
        self._wake_r, self._wake_w = -1, -1
        self._stopping = False
        self._thread: threading.Thread | None = None
        self._opened = False
        self._pcaps_opened = False
        # how often the loop's thread slept (its voluntary context switches, read
        # when run() ends): under load it should hardly ever wait for frames
        self.sleeps: int | None = None
        self._next_poll = self._next_flush = 0.0
        self._queue_wait: float | None = None
        # batches read from receive rings (a non-empty read of one ring) and the
        # largest: frames per batch is the loop's view of its load
        self.batches = 0
        self.largest_batch = 0

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
        log.info("%s: ports %s", getattr(dev, "label", f"device {getattr(dev, 'device_id', 0)}"),
                 ", ".join(f"{n}@{p.name}{'' if p.up else ' (down)'}"
                           + (f" (PACKET_MMAP rings, {p.rx_ring.layout.frame_nr} receive slots)"
                              if p.rx_ring else " (one system call per frame)")
                           for n, p in self.ports.items()))

    def _open_all(self) -> None:
        self._ctl = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._epoll = select.epoll()
        self._ring_epoll = select.epoll()
        self._epoll.register(self._ring_epoll.fileno(), select.EPOLLIN)
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
        for p in self.ports.values():
            idx = interface_index(self._ctl, p.name)
            if idx is None:
                where = f" in namespace {self.netns}" if self.netns else ""
                raise P4Error(f"port {p.number}: interface {p.name!r} does not exist{where}; "
                              "create it first or fix -i PORT@IFACE")
            self._open_port(p, idx)

    def open_pcaps(self) -> None:
        """Create ``pcap_dir`` and every port's pcap files, once. Not in ``open``: a
        start that fails later (an interface, the P4Runtime server) creates nothing.
        ``start`` and ``begin`` call it; a command calls it just before it announces
        the switch. Raises ``P4Error`` naming the directory (``close`` closes the
        files made so far)."""
        if self.pcap_dir is None or self._pcaps_opened:
            return
        self._pcaps_opened = True
        try:
            self.pcap_dir.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise P4Error(f"cannot create pcap directory: {e.strerror}", str(self.pcap_dir)) from None
        for p in self.ports.values():
            try:
                p.pcap_in = PcapWriter(self.pcap_dir / f"{p.name}_in.pcap")
                p.pcap_out = PcapWriter(self.pcap_dir / f"{p.name}_out.pcap")
            except OSError as e:
                raise P4Error(f"cannot write pcap file: {e.strerror}", str(self.pcap_dir)) from None
        self._index_rings()  # ports with pcap files go through send(), which writes them

    def _open_port(self, p: SocketPort, ifindex: int) -> None:
        assert self._ctl is not None
        try:
            p.open(ifindex, interface_mtu(self._ctl, p.name) or 1500, self.promisc,
                   self.finish_checksums)
        except PermissionError:
            self._close_port(p)
            raise P4Error(f"port {p.number}: no permission to open a raw socket on "
                          f"{p.name}; run as root (or with CAP_NET_RAW)") from None
        except OSError as e:
            self._close_port(p)
            raise P4Error(f"port {p.number}: cannot open {p.name}: {e.strerror}") from None
        assert p.sock is not None
        self._by_fd[p.sock.fileno()] = p
        assert self._epoll is not None and self._ring_epoll is not None
        where = self._ring_epoll if isinstance(p, RingPort) and p.rx_ring is not None else self._epoll
        where.register(p.sock.fileno(), select.EPOLLIN)
        self._index_rings()
        p.up = bool(interface_up(self._ctl, p.name))

    def _index_rings(self) -> None:
        rings = [q for q in self.ports.values() if isinstance(q, RingPort)]
        self._ring_ports = [q for q in rings if q.rx_ring is not None]
        self._tx_ports = [q for q in rings if q.tx_ring is not None]
        self._tx_rings = {q.number: q.tx_ring for q in self._tx_ports
                          if q.tx_ring is not None and q.pcap_out is None}

    def _close_port(self, p: SocketPort) -> None:
        if p.sock is not None:
            fd = p.sock.fileno()
            self._by_fd.pop(fd, None)
            for ep in (self._epoll, self._ring_epoll):
                if ep is not None:
                    try:
                        ep.unregister(fd)
                    except (OSError, ValueError):
                        pass
        p.close()
        self._index_rings()

    # -- sending (the device's output sink)
    def send(self, port: int, frame: bytes) -> None:
        p = self.ports.get(port)
        if p is None:
            log.debug("device %d: output to port %d dropped: no such port",
                      getattr(self.device, "device_id", 0), port)
            return
        # the transmit ring is the loop thread's; other threads send the plain way
        if (p.tx_ring is not None and threading.get_ident() == self._loop_thread
                and isinstance(p, RingPort) and p.queue(frame)):
            return
        p.send(frame)

    def _flush_all(self) -> None:
        if self._grouped:  # the group loop flushes once after running its switches
            return
        self.flush_transmits()

    def flush_transmits(self) -> None:
        """Have the kernel send what the transmit rings hold (one ``send`` per port
        that has frames)."""
        for p in self._tx_ports:
            ring = p.tx_ring
            if ring is not None and ring.pending:
                p.flush()

    def _transmit(self, outputs: list[tuple[int, bytes]]) -> None:
        """Send the device's outputs from the loop thread: into the ports' transmit
        rings (flushed by the caller), the rest through ``send``.

        The outputs are first sorted out by port, each port's in their order (the
        order between ports is no one's to see: they leave on different links), so
        that each ring takes all of its frames in one ``put_frames``: sprayed traffic
        alternates output ports from frame to frame, and a ring call per run of one
        port would be a call per frame."""
        by_port: dict[int, list[bytes]] = {}
        for port, frame in outputs:
            frames = by_port.get(port)
            if frames is None:
                by_port[port] = [frame]
            else:
                frames.append(frame)
        rings = self._tx_rings
        for port, frames in by_port.items():
            ring = rings.get(port)
            n = len(frames)
            i = 0 if ring is None else ring.put_frames(frames)
            while i < n:  # no ring, or no room in it: the general way, then the ring again
                self.send(port, frames[i])
                i += 1
                if ring is not None and i < n:
                    i = ring.put_frames(frames, i)

    # -- the loop
    def run(self) -> None:
        """Forward until ``stop()``. Opens the ports first if needed.

        Ports with rings are read at the top of every round, with no system call; the
        loop waits in epoll (the rings' sockets are in it, readable when a frame is in
        the ring) only after a round in which no ring had anything, and otherwise
        looks at epoll without waiting, for the netlink socket, the wake-up pipe and
        the ports on plain sockets. Frames put in transmit rings are flushed after
        each port's batch, so a frame waits at most one batch (this loop alone; a
        group loop flushes once per pass instead).
        """
        self.begin()
        try:
            while not self._stopping:
                self.round(wait=True)
        finally:
            self.end()
        self.close()

    def begin(self, grouped: bool = False) -> None:
        """Make the calling thread this NetIO's loop thread (``run`` does it; a
        ``p4target.group.process.GroupLoop`` does it for each of its switches, with
        ``grouped``: the group then waits on ``ring_fd`` and ``epoll_fd`` apart, tells
        ``round`` whether ``epoll_fd`` had anything, and calls ``flush_transmits``
        once after running its switches, where this loop alone flushes after every
        batch)."""
        self.open()
        self.open_pcaps()
        assert self._epoll is not None and self._ring_epoll is not None
        if grouped != self._grouped:
            if grouped:
                self._epoll.unregister(self._ring_epoll.fileno())
            else:
                self._epoll.register(self._ring_epoll.fileno(), select.EPOLLIN)
            self._grouped = grouped
        self._loop_thread = threading.get_ident()
        now = time.monotonic()
        self._next_poll = now + self.poll_interval
        self._next_flush = now + 0.2
        self._queue_wait = None

    def end(self) -> None:
        """The loop thread is done with the rings: flush what they hold."""
        self.flush_transmits()
        self._loop_thread = None
        self.sleeps = _voluntary_switches()

    @property
    def epoll_fd(self) -> int:
        """The loop's epoll descriptor: readable when a port, the netlink socket or the
        wake-up pipe has something (a group loop waits on many of them at once);
        when this loop runs alone, also when a receive ring has a frame."""
        assert self._epoll is not None
        return self._epoll.fileno()

    @property
    def ring_fd(self) -> int:
        """An epoll descriptor readable when a receive ring has a frame."""
        assert self._ring_epoll is not None
        return self._ring_epoll.fileno()

    def next_wake(self) -> float:
        """When (``time.monotonic()``) the loop has timed work next: the link poll, the
        pcap flush or a rate-limited queue's next departure."""
        wake = self._next_poll
        if self.pcap_dir is not None:  # only pcap files need the flush timer
            wake = min(wake, self._next_flush)
        if self._queue_wait is not None:
            wake = min(wake, time.monotonic() + self._queue_wait)
        return wake

    def round(self, wait: bool, control: bool = True) -> bool:
        """One round of the loop: the rings, the queues, epoll (waiting until the next
        timed work when ``wait`` and no ring had a frame; not looked at when
        ``control`` is False: a group loop knows it has nothing), the timers. True
        when a port had frames."""
        dev = self.device
        busy = False
        drain_ring = self._drain_ring
        for rp in self._ring_ports:
            if drain_ring(rp, dev):
                busy = True
        if not busy and self._ring_ports:
            self._clear_ring_errors()
        dev_poll = getattr(dev, "poll", None)
        if dev_poll is not None:
            self._queue_wait = dev_poll()
            self._flush_all()
        if control:
            timeout = max(0.0, self.next_wake() - time.monotonic()) if wait and not busy else 0.0
            if self._control(timeout, dev):
                busy = True
        now = time.monotonic()
        if now >= self._next_poll:
            self._next_poll = now + self.poll_interval
            self._poll_links()
        if now >= self._next_flush:
            self._next_flush = now + 0.2
            self._flush_pcaps()
        return busy

    def _clear_ring_errors(self) -> None:
        """Read the pending error of every ring port's socket that has one. The kernel
        sets ENETDOWN on a packet socket whose interface goes down, and every wait
        reports it (EPOLLERR) until it is read, even after the link is back; a ring's
        socket is never read with ``recv``, so unread, it would keep the rings'
        descriptor ready and the loop would never sleep again. Called after a round
        whose rings had no frame: one ``epoll_wait`` that returns at once."""
        assert self._ring_epoll is not None
        for fd, events in self._ring_epoll.poll(0):
            p = self._by_fd.get(fd)
            if events & select.EPOLLERR and p is not None and p.sock is not None:
                try:
                    err = p.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                except OSError:
                    continue
                log.debug("port %d (%s): socket error %s read", p.number, p.name, os.strerror(err) if err else 0)

    def _control(self, timeout: float, dev: Any) -> bool:
        """Wait up to ``timeout`` in epoll and handle what it has: ports on plain
        sockets, link notices, the wake-up pipe. True when a port had frames (a
        ring's are read at the top of the next round)."""
        assert self._epoll is not None and self._ring_epoll is not None
        try:
            events = self._epoll.poll(timeout)
        except InterruptedError:  # pragma: no cover - PEP 475 retries
            return False
        busy = False
        ring_fd = self._ring_epoll.fileno()
        for fd, _ in events:
            if fd == ring_fd:
                busy = True  # a ring has frames: read at the top of the next round
                continue
            p = self._by_fd.get(fd)
            if p is not None:
                busy = True
                if p.sock is not None and p.rx_ring is None:
                    self._drain(p, dev)
                    self._flush_all()
            elif self._nl is not None and fd == self._nl.fileno():
                self._read_netlink()
            elif fd == self._wake_r:
                try:
                    os.read(self._wake_r, 4096)
                except BlockingIOError:
                    pass
        return busy

    def _flush_pcaps(self) -> None:
        for p in self.ports.values():
            for w in (p.pcap_in, p.pcap_out):
                if w is not None:
                    w.flush()

    @property
    def stopping(self) -> bool:
        return self._stopping

    def _deliver_in(self, p: SocketPort, frames: list[bytes], dev: Any) -> None:
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
                elif batch is not None:
                    batch(number, chunk)
            return
        receive = dev.receive
        for frame in frames:
            receive(number, frame)

    def _drain_ring(self, p: RingPort, dev: Any) -> bool:
        """Take up to _RING_BATCH frames from ``p``'s receive ring, run them through
        the device and flush what they made; False if the ring was empty."""
        if p.rx_ring is None:
            return False
        frames: list[bytes] = []
        if not p.read_ring(frames, _RING_BATCH):
            return False
        if frames:
            self.batches += 1
            if len(frames) > self.largest_batch:
                self.largest_batch = len(frames)
            self._deliver_in(p, frames, dev)
        self._flush_all()
        return True

    def _drain(self, p: SocketPort, dev: Any) -> None:
        """Read up to a batch of frames from a port on a plain socket (until it is
        empty) and run them through the device."""
        frames = p.read()
        if frames:
            self._deliver_in(p, frames, dev)

    def start(self) -> None:
        """Open the ports (and pcap files) and forward in a background thread."""
        self.open()
        self.open_pcaps()
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
        for ep in (self._epoll, self._ring_epoll):
            if ep is not None:
                ep.close()
        self._epoll = self._ring_epoll = None
        self._grouped = False
        for fd in (self._wake_r, self._wake_w):
            if fd >= 0:
                os.close(fd)
        self._wake_r = self._wake_w = -1

    # -- link state
    def _set_up(self, p: SocketPort, up: bool) -> None:
        if p.up != up:
            p.up = up
            self.device.set_port_status(p.number, up)

    def _poll_links(self) -> None:
        if self._ctl is None:
            return
        for p in self.ports.values():
            p.account()
            try:
                idx = interface_index(self._ctl, p.name)
                state = interface_up(self._ctl, p.name) if idx is not None else None
                if idx is not None and idx == p.ifindex:
                    p.set_mtu(interface_mtu(self._ctl, p.name) or p.mtu)
            except OSError:
                continue
            self._follow(p, idx, bool(state))

    def _follow(self, p: SocketPort, ifindex: int | None, up: bool) -> None:
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
        """Follow the link notifications waiting on the netlink socket
        (``p4target/ports/link_notices.py`` reads them)."""
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
            for n in link_notices(data):
                p = self.by_name.get(n.name or "")
                if p is None:
                    p = next((c for c in self.ports.values() if c.ifindex == n.ifindex), None)
                if p is None:
                    continue
                if n.deleted:
                    if p.ifindex == n.ifindex:
                        self._follow(p, None, False)
                    continue
                self._follow(p, n.ifindex, n.up)
                if n.mtu is not None and p.ifindex == n.ifindex:
                    p.set_mtu(n.mtu)

    def stats(self) -> dict[int, PortStats]:
        return {n: p.stats for n, p in self.ports.items()}

    def loop_report(self) -> dict[str, Any]:
        """What the loop did so far: frames in and out, of them the frames the
        program's compiled fast path took (``fast``; the others took the general
        path), batches read from receive rings and the largest, transmit flushes that
        had to wait for room (and how long, ms), frames the kernel dropped on full
        receive rings."""
        ports = list(self.ports.values())
        for p in ports:
            p.account()
        switch = getattr(self.device, "switch", None)
        return {"rx": sum(p.stats.rx for p in ports), "tx": sum(p.stats.tx for p in ports),
                "fast": getattr(switch, "fast_packets", 0),
                "batches": self.batches, "largest_batch": self.largest_batch,
                "flush_waits": sum(p.stats.flush_waits for p in ports),
                "flush_wait_ms": round(sum(p.stats.flush_wait_s for p in ports) * 1e3, 3),
                "rx_dropped": sum(p.stats.rx_dropped for p in ports)}



def _voluntary_switches() -> int | None:
    """How many times the calling thread gave up the CPU to wait (Linux)."""
    try:
        for line in Path("/proc/thread-self/status").read_text().splitlines():
            if line.startswith("voluntary_ctxt_switches:"):
                return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return None
