"""netio's PACKET_MMAP rings on real veths in a private namespace.

Frames of every size up to the MTU, frames larger than a ring slot (the copy path),
bursts larger than the receive and the transmit ring, a link that is down while
frames wait in the transmit ring, and the virtio-net header's cases (a checksum to
finish and a GSO frame small enough for a slot). The device is a two-port wire, as
in test_netio.py, in both of its forms: one that takes frames one by one and sends
through ``NetIO.send``, and one that takes batches and returns its outputs
(``process_batch``, the way of ``Device``), whose outputs go into the rings without
``send``. Each test also runs with ``rings=False`` (one system call per frame), where
the behaviour must be the same.
"""

from __future__ import annotations

import random
import sys
import threading

import pytest
from scapy.layers.inet6 import IPv6, UDP
from scapy.layers.l2 import Ether

from p4target.ports.linux_net import open_interface_socket
from p4target.ports.netio import NetIO

from p4t_netlab import NetLab, recv_frames, wait_for


class Wire:
    """Port 1 <-> port 2, one frame at a time, through the output sink."""

    def __init__(self) -> None:
        self.device_id = 9
        self.ports: dict[int, str] = {}
        self.output_sink = lambda port, frame: None
        self.status: dict[int, bool] = {}
        self.gate: threading.Event | None = None  # set: the first frame waits for it

    def set_port_status(self, port: int, up: bool) -> None:
        self.status[port] = up

    def _wait(self) -> None:
        if self.gate is not None:
            self.gate.wait(10)
            self.gate = None

    def receive(self, port: int, frame: bytes) -> None:
        self._wait()
        self.output_sink(3 - port, frame)


class BatchWire(Wire):
    """The same wire taking batches and returning its outputs, as ``Device`` does."""

    def process_batch(self, port: int, frames: list[bytes]) -> list[tuple[int, bytes]]:
        self._wait()
        return [(3 - port, f) for f in frames]


DEVICES = {"one-by-one": Wire, "batches": BatchWire}
MODES = {"rings": True, "no-rings": False}
# without rings both kinds of device go through NetIO.send: one of them is enough
SETUPS = pytest.mark.parametrize("kind,mode", [("one-by-one", "rings"), ("batches", "rings"),
                                               ("batches", "no-rings")])


def frame(seq: int, size: int) -> bytes:
    """An Ethernet/IPv6/UDP frame of exactly ``size`` bytes whose payload starts with
    ``seq`` and goes on with bytes that differ from frame to frame."""
    head = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02") / IPv6(
        src="fd00::1", dst="fd00::2") / UDP(sport=1000, dport=4791)
    room = size - len(head)
    assert room >= 4
    rng = random.Random(seq)
    payload = seq.to_bytes(4, "big") + rng.randbytes(room - 4)
    data = bytes(head / payload)
    assert len(data) == size
    return data


def seq_of(data: bytes) -> int:
    return int.from_bytes(data[62:66], "big")


@pytest.fixture
def lab():
    with NetLab("rng") as lab:
        lab.veth("p4ta0", "p4ta1")
        lab.veth("p4tb0", "p4tb1")
        yield lab


def start(lab: NetLab, device: Wire, rings: bool, **kw) -> NetIO:
    nio = NetIO(device, {1: "p4ta1", 2: "p4tb1"}, netns=lab.ns, poll_interval=30.0,
                rings=rings, **kw)
    nio.start()
    for p in nio.ports.values():  # the mode asked for is the mode in use
        assert (p.rx_ring is not None and p.tx_ring is not None) == rings
    return nio


def recv_until_quiet(sock, quiet: float = 0.3) -> list[bytes]:
    """Every frame that arrives until none has for ``quiet`` seconds."""
    got: list[bytes] = []
    while True:
        more = recv_frames(sock, timeout=quiet)
        if not more:
            return got
        got += more


def big_socket(lab: NetLab, ifname: str):
    """A raw socket with room for a whole burst in its receive buffer."""
    s = open_interface_socket(ifname, lab.ns, rcvbuf=32 << 20)
    lab.socks.append(s)
    return s


@pytest.mark.root
@SETUPS
def test_frames_of_every_size_up_to_the_mtu_cross_unchanged(lab, kind, mode):
    nio = start(lab, DEVICES[kind](), MODES[mode])
    try:
        a, b = lab.socket("p4ta0"), lab.socket("p4tb0")
        sizes = [66, 67, 100, 127, 128, 255, 511, 1000, 1499, 1513, 1514]
        sent = [frame(i, n) for i, n in enumerate(sizes)]
        for f in sent:
            a.send(f)
        assert recv_frames(b, timeout=3.0, want=len(sent)) == sent
        back = [frame(100 + i, n) for i, n in enumerate(reversed(sizes))]
        for f in back:
            b.send(f)
        assert recv_frames(a, timeout=3.0, want=len(back)) == back
        assert recv_frames(a, timeout=0.2) == []  # nothing extra (nor our own frames)
        # counted once the kernel's send returns to the loop, maybe after the peer has it
        assert wait_for(lambda: nio.stats()[2].tx == len(sent) and nio.stats()[1].tx == len(back),
                        timeout=2.0)
        assert nio.stats()[1].rx == len(sent) and nio.stats()[2].rx == len(back)
    finally:
        nio.stop()
        nio.join(5)


@pytest.mark.root
@SETUPS
def test_a_burst_larger_than_the_rings_arrives_in_order_and_losses_are_counted(lab, kind, mode):
    """600 frames arrive while the device is busy with the first: the 64-slot
    receive ring overflows, and once the device goes on, what the ring held leaves
    through a 32-slot transmit ring. Every frame either comes out, unchanged and in
    order, or is counted as dropped by the kernel; none is lost silently."""
    dev = DEVICES[kind]()
    dev.gate = threading.Event()
    nio = start(lab, dev, MODES[mode], rx_ring_frames=64, tx_ring_frames=32)
    try:
        if MODES[mode]:
            assert nio.ports[1].rx_ring.layout.frame_nr == 64
            assert nio.ports[2].tx_ring.layout.frame_nr == 32
        a, b = lab.socket("p4ta0"), big_socket(lab, "p4tb0")
        sizes = [66, 1514, 300, 1000, 128, 777]
        sent = [frame(i, sizes[i % len(sizes)]) for i in range(600)]
        for f in sent:
            a.send(f)
        dev.gate.set()
        got = recv_until_quiet(b)
    finally:
        nio.stop()
        nio.join(5)
    seqs = [seq_of(f) for f in got]
    assert seqs == sorted(set(seqs)), "reordered or duplicated"
    assert all(f == sent[s] for s, f in zip(seqs, got, strict=False)), "a frame changed on the way"
    st1, st2 = nio.stats()[1], nio.stats()[2]
    if MODES[mode]:
        assert st1.rx_dropped > 0, "the burst did not overflow the receive ring"
    assert len(got) + st1.rx_dropped == len(sent)
    assert st1.rx == len(got) and st2.tx == len(got) and st2.tx_errors == 0


@pytest.mark.root
@SETUPS
def test_frames_larger_than_a_slot_come_whole_and_too_long_ones_are_counted(lab, kind, mode):
    """The rings are made for MTU 1500 (2 KB slots). Raised to 9000 afterwards, the
    veths carry frames a slot cannot hold: they come through the socket's queue (the
    copy path) and leave through the plain socket, in order with the small ones
    around them. A frame longer than the output's MTU is a transmit error."""
    nio = start(lab, DEVICES[kind](), MODES[mode])
    try:
        for ifname in ("p4ta0", "p4ta1", "p4tb0", "p4tb1"):
            lab.sh("ip", "link", "set", ifname, "mtu", "9000")
        assert wait_for(lambda: nio.ports[2].mtu == 9000, timeout=5.0)  # rtnetlink
        a, b = lab.socket("p4ta0"), big_socket(lab, "p4tb0")
        sizes = [9014, 100, 4000, 2100, 1514, 2049, 66, 9014]
        sent = [frame(i, n) for i, n in enumerate(sizes)]
        for f in sent:
            a.send(f)
        assert recv_frames(b, timeout=3.0, want=len(sent)) == sent
        lab.sh("ip", "link", "set", "p4tb1", "mtu", "1500")
        assert wait_for(lambda: nio.ports[2].mtu == 1500, timeout=5.0)
        a.send(frame(50, 4000))  # fits port 1, too long for port 2
        small = frame(51, 200)
        a.send(small)
        assert recv_frames(b, timeout=2.0, want=1) == [small]
        assert recv_frames(b, timeout=0.2) == []
        assert wait_for(lambda: nio.stats()[2].tx_errors == 1, timeout=2.0)
        assert nio.stats()[1].rx_dropped == 0
    finally:
        nio.stop()
        nio.join(5)


@pytest.mark.root
@SETUPS
def test_frames_for_a_link_that_is_down_are_dropped_not_sent_later(lab, kind, mode):
    """A port set down cannot send: what the device gives it is counted as transmit
    errors and forgotten. When the port is up again only new frames leave, and the
    ring goes on working."""
    dev = DEVICES[kind]()
    nio = start(lab, dev, MODES[mode])
    try:
        a, b = lab.socket("p4ta0"), big_socket(lab, "p4tb0")
        lab.link("p4tb1", "down")
        assert wait_for(lambda: dev.status.get(2) is False, timeout=5.0)
        for i in range(5):
            a.send(frame(i, 200))
        assert wait_for(lambda: nio.stats()[2].tx_errors == 5, timeout=3.0)
        lab.link("p4tb1", "up")
        assert wait_for(lambda: dev.status.get(2) is True, timeout=5.0)
        recv_frames(b, timeout=0.2)  # whatever the kernel sent when the link came up
        new = [frame(10 + i, 300 + i) for i in range(40)]
        for f in new:
            a.send(f)
        assert recv_frames(b, timeout=3.0, want=len(new)) == new
        assert recv_frames(b, timeout=0.2) == []  # none of the five came later
        assert wait_for(lambda: nio.stats()[2].tx == len(new), timeout=2.0)
        assert nio.stats()[2].tx_errors == 5
    finally:
        nio.stop()
        nio.join(5)


@pytest.mark.root
@pytest.mark.parametrize("mode", MODES)
def test_small_gso_frame_and_partial_checksum_in_a_slot(lab, mode):
    """A UDP GSO frame of three 300-byte datagrams fits in a ring slot (the header
    is read from the slot, not through the copy path): the switch port cuts it into
    the three datagrams, with checksums a receiving host accepts; a plain datagram
    with a partial checksum (offloaded by the host) arrives with its sum finished."""
    import subprocess

    h1 = lab.host("h1", "p4ta0", "fd00::1", offloads=True)
    h2 = lab.host("h2", "p4tb0", "fd00::2", offloads=True)
    nio = start(lab, BatchWire(), MODES[mode])
    try:
        server = subprocess.Popen(
            ["ip", "netns", "exec", h2, sys.executable, "-c",
             "import socket\n"
             "u = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM); u.bind(('::', 5000))\n"
             "print('ready', flush=True); u.settimeout(5)\n"
             "print(' '.join(u.recv(9000).decode()[:6] for _ in range(4)), flush=True)\n"],
            stdout=subprocess.PIPE, text=True)
        assert server.stdout.readline().strip() == "ready"
        subprocess.run(
            ["ip", "netns", "exec", h1, sys.executable, "-c",
             "import socket, time\n"
             "u = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)\n"
             "u.sendto(b'plain!' + b'p' * 50, ('fd00::2', 5000))\n"
             "time.sleep(0.2)\n"
             "u.setsockopt(socket.IPPROTO_UDP, 103, 300)\n"  # UDP_SEGMENT
             "u.sendto(b''.join(b'seg%d--' % i + b'z' * 294 for i in range(3)), ('fd00::2', 5000))\n"],
            check=True, capture_output=True, timeout=20)
        out, _ = server.communicate(timeout=10)
        assert out.split() == ["plain!", "seg0--", "seg1--", "seg2--"]
        assert nio.ports[1].gso_segmented == 1 and nio.ports[1].gso_dropped == 0
        assert nio.stats()[1].rx_dropped == 0
    finally:
        nio.stop()
        nio.join(5)


@pytest.mark.root
def test_a_port_whose_rings_the_kernel_refuses_works_without(lab, caplog):
    """A transmit ring of 2^27 slots is more than the kernel takes (EINVAL): the
    ports say so in the log once each and forward through plain sockets."""
    import logging

    caplog.set_level(logging.WARNING, logger="p4target.ports.netio")
    nio = NetIO(BatchWire(), {1: "p4ta1", 2: "p4tb1"}, netns=lab.ns, poll_interval=30.0,
                tx_ring_frames=1 << 27)
    nio.start()
    try:
        assert all(p.rx_ring is None and p.tx_ring is None for p in nio.ports.values())
        warned = [r.getMessage() for r in caplog.records if "no PACKET_MMAP rings" in r.getMessage()]
        assert len(warned) == 2 and "port 1 (p4ta1)" in warned[0]
        a, b = lab.socket("p4ta0"), lab.socket("p4tb0")
        sent = [frame(i, 100 + i) for i in range(10)]
        for f in sent:
            a.send(f)
        assert recv_frames(b, timeout=3.0, want=len(sent)) == sent
    finally:
        nio.stop()
        nio.join(5)


@pytest.mark.root
def test_jumbo_rings_send_long_frames_through_the_ring(lab):
    """Veths with a 9000-byte MTU before the ports open: the rings get slots for
    9000-byte frames, and frames on both sides of the length up to which the
    transmit ring has the kernel copy the whole frame (2,048 bytes) leave through
    the transmit ring, unchanged and in order."""
    for ifname in ("p4ta0", "p4ta1", "p4tb0", "p4tb1"):
        lab.sh("ip", "link", "set", ifname, "mtu", "9000")
    nio = start(lab, BatchWire(), True)
    try:
        ring = nio.ports[2].tx_ring
        assert ring.max_len == 9014
        a, b = lab.socket("p4ta0"), big_socket(lab, "p4tb0")
        sizes = [9014, 2049, 2048, 2047, 66, 4000, 1514, 8999]
        sent = [frame(i, n) for i, n in enumerate(sizes)]
        for f in sent:
            a.send(f)
        assert recv_frames(b, timeout=3.0, want=len(sent)) == sent
        # all went through the ring (the loop counts them once the kernel has sent them)
        assert wait_for(lambda: nio.stats()[2].tx == len(sent), timeout=2.0)
        assert ring._next == len(sent) and ring.pending == 0 and nio.stats()[2].tx_errors == 0
    finally:
        nio.stop()
        nio.join(5)


class SprayWire(BatchWire):
    """Frames from port 1 go to ports 2, 2, 3, 2, 2, 3, ... (as a NIC sprays over
    planes): every batch's outputs change output port from frame to frame."""

    def process_batch(self, port: int, frames: list[bytes]) -> list[tuple[int, bytes]]:
        self._wait()
        return [(to_port(seq_of(f)), f) for f in frames] if port == 1 else []


def to_port(seq: int) -> int:
    return 3 if seq % 3 == 2 else 2


@pytest.mark.root
def test_outputs_alternating_ports_leave_each_port_whole_and_in_order():
    """300 frames arrive while the device is busy with the first, so they reach it in
    batches of 64 whose outputs alternate between ports 2 and 3; each port's transmit
    ring has 32 slots (the fewest a ring has), fewer than the 43 frames a batch gives
    port 2. Port 2 sends exactly the frames meant for it and port 3 the others, each
    in the order they came, none lost."""
    with NetLab("rsp") as lab:
        for a, b in (("p4ta0", "p4ta1"), ("p4tb0", "p4tb1"), ("p4tc0", "p4tc1")):
            lab.veth(a, b)
        dev = SprayWire()
        dev.gate = threading.Event()
        nio = NetIO(dev, {1: "p4ta1", 2: "p4tb1", 3: "p4tc1"}, netns=lab.ns, poll_interval=30.0,
                    tx_ring_frames=32)
        nio.start()
        try:
            assert nio.ports[2].tx_ring is not None and nio.ports[2].tx_ring.layout.frame_nr == 32
            a, two, three = lab.socket("p4ta0"), big_socket(lab, "p4tb0"), big_socket(lab, "p4tc0")
            sent = [frame(i, 1000) for i in range(300)]
            for f in sent:
                a.send(f)
            dev.gate.set()
            got2, got3 = recv_until_quiet(two), recv_until_quiet(three)
        finally:
            nio.stop()
            nio.join(5)
    assert nio.stats()[1].rx == 300
    assert len(got2) == 200 and got2 == [f for i, f in enumerate(sent) if to_port(i) == 2]
    assert len(got3) == 100 and got3 == [f for i, f in enumerate(sent) if to_port(i) == 3]
    assert nio.stats()[2].tx == 200 and nio.stats()[3].tx == 100


@pytest.mark.root
def test_a_port_set_down_and_up_leaves_the_loop_able_to_sleep(lab):
    """The kernel marks a packet socket whose interface goes down with an error
    (ENETDOWN) that every wait reports until it is read, even once the link is up
    again: a ring's socket is never read with ``recv``, so the loop must read the
    error itself, or its receive rings' descriptor stays ready and the loop (a
    switch, a group of switches) never sleeps again. The loop is run here round by
    round in this thread, and the rings' descriptor looked at between rounds."""
    import select

    dev = BatchWire()
    nio = NetIO(dev, {1: "p4ta1", 2: "p4tb1"}, netns=lab.ns, poll_interval=30.0)
    nio.begin()
    try:
        def rounds_then_ready(n: int = 5) -> bool:
            for _ in range(n):
                nio.round(wait=False)
            return bool(select.select([nio.ring_fd], [], [], 0)[0])

        assert not rounds_then_ready()  # idle: nothing to read, the loop may sleep
        lab.link("p4ta1", "down")  # the switch's own side of the cable, as a cut sets it
        assert wait_for(lambda: (nio.round(wait=False), dev.status.get(1))[1] is False, timeout=5.0)
        lab.link("p4ta1", "up")
        assert wait_for(lambda: (nio.round(wait=False), dev.status.get(1))[1] is True, timeout=5.0)
        assert not rounds_then_ready()
        a, b = lab.socket("p4ta0"), lab.socket("p4tb0")  # and the port still forwards
        f = frame(1, 200)
        a.send(f)
        assert wait_for(lambda: (nio.round(wait=False), nio.stats()[1].rx)[1] == 1, timeout=3.0)
        assert recv_frames(b, timeout=2.0, want=1) == [f]
    finally:
        nio.end()
        nio.close()
