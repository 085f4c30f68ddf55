"""netio on real veths in a private namespace: forwarding, pcap, link following.

The device here is a two-port wire (port 1 <-> port 2), so these tests look only at
what netio does with the interfaces; the pipeline itself is tested with real P4
programs in test_run_veth.py and the runtime's own tests.
"""

from __future__ import annotations

import sys
import threading
import time

import pytest
from scapy.layers.inet6 import IPv6, UDP
from scapy.layers.l2 import Ether
from scapy.utils import rdpcap

from p4target.errors import P4Error
from p4target.ports.netio import NetIO
from p4target.ports.pcap import PcapWriter, read_pcap

from p4t_netlab import NetLab, recv_frames, wait_for


class WireDevice:
    """Sends what comes in on port 1 out of port 2 and back; records link changes."""

    def __init__(self) -> None:
        self.device_id = 7
        self.ports: dict[int, str] = {}
        self.output_sink = lambda port, frame: None
        self.received: list[tuple[int, bytes]] = []
        self.status: dict[int, bool] = {}
        self.events: list[tuple[float, int, bool]] = []
        self.cond = threading.Condition()

    def receive(self, port: int, frame: bytes) -> None:
        self.received.append((port, frame))
        self.output_sink(3 - port, frame)

    def set_port_status(self, port: int, up: bool) -> None:
        with self.cond:
            self.status[port] = up
            self.events.append((time.monotonic(), port, up))


# explicit MACs everywhere: scapy would otherwise resolve them on the real network
MACS = {"src": "02:00:00:00:00:01", "dst": "02:00:00:00:00:02"}


def frame(n: int) -> bytes:
    return bytes(Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
                 / IPv6(src="fd00::1", dst="fd00::2") / UDP(sport=1000 + n, dport=4791)
                 / (b"x" * 20))


def test_pcap_writer_output_reads_back_with_scapy(tmp_path):
    frames = [frame(i) for i in range(3)]
    w = PcapWriter(tmp_path / "a.pcap")
    for i, f in enumerate(frames):
        w.write(f, timestamp=1000.25 + i)
    w.close()
    pkts = rdpcap(str(tmp_path / "a.pcap"))
    assert [bytes(p) for p in pkts] == frames
    assert float(pkts[1].time) == pytest.approx(1001.25)
    assert [f for _, f in read_pcap(tmp_path / "a.pcap")] == frames


def test_read_pcap_rejects_garbage(tmp_path):
    (tmp_path / "bad.pcap").write_bytes(b"not a pcap file at all, really no")
    with pytest.raises(P4Error, match="bad magic"):
        read_pcap(tmp_path / "bad.pcap")


@pytest.fixture
def lab():
    with NetLab("nio") as lab:
        lab.veth("p4ta0", "p4ta1")
        lab.veth("p4tb0", "p4tb1")
        yield lab


@pytest.fixture
def wire(lab, tmp_path):
    dev = WireDevice()
    nio = NetIO(dev, {1: "p4ta1", 2: "p4tb1"}, pcap_dir=tmp_path / "pcap", netns=lab.ns,
                poll_interval=30.0)
    nio.start()
    try:
        yield dev, nio
    finally:
        nio.stop()
        nio.join(5)


@pytest.mark.root
def test_frames_cross_between_ports_and_land_in_pcap(lab, wire, tmp_path):
    dev, nio = wire
    assert dev.ports == {1: "p4ta1", 2: "p4tb1"}
    assert dev.status == {1: True, 2: True}
    a, b = lab.socket("p4ta0"), lab.socket("p4tb0")
    sent = [frame(i) for i in range(5)]
    for f in sent:
        a.send(f)
    got = recv_frames(b, timeout=2.0, want=5)
    assert got == sent
    back = frame(99)
    b.send(back)
    assert recv_frames(a, timeout=2.0, want=1) == [back]
    # what netio sent itself never came back in as input (PACKET_OUTGOING ignored)
    assert [p for p, _ in dev.received] == [1] * 5 + [2]
    # counted once the kernel's send returns to the loop, which may be after the peer has it
    assert wait_for(lambda: nio.stats()[2].tx == 5 and nio.stats()[1].tx == 1, timeout=2.0)
    nio.stop()
    nio.join(5)
    ins = [f for _, f in read_pcap(tmp_path / "pcap" / "p4ta1_in.pcap")]
    outs = [f for _, f in read_pcap(tmp_path / "pcap" / "p4tb1_out.pcap")]
    assert ins == sent and outs == sent


@pytest.mark.root
def test_carrier_loss_reaches_the_device_at_once(lab, wire):
    dev, _ = wire
    # the poll runs every 30 s here: a change seen quickly came from rtnetlink
    t0 = time.monotonic()
    lab.link("p4tb0", "down")  # the peer goes down: p4tb1 loses its carrier
    assert wait_for(lambda: dev.status.get(2) is False, timeout=5.0)
    assert dev.events[-1][0] - t0 < 5.0  # far below the 30 s poll
    assert dev.status[1] is True
    lab.link("p4tb0", "up")
    assert wait_for(lambda: dev.status.get(2) is True, timeout=5.0)
    lab.link("p4ta1", "down")  # our own side administratively down
    assert wait_for(lambda: dev.status.get(1) is False, timeout=5.0)


@pytest.mark.root
def test_recreated_interface_is_reopened(lab, wire):
    dev, nio = wire
    lab.sh("ip", "link", "del", "p4tb0")  # deletes the pair, p4tb1 too
    assert wait_for(lambda: dev.status.get(2) is False, timeout=5.0)
    lab.veth("p4tb0", "p4tb1")
    assert wait_for(lambda: dev.status.get(2) is True, timeout=5.0)
    a, b = lab.socket("p4ta0"), lab.socket("p4tb0")
    f = frame(5)
    a.send(f)
    assert recv_frames(b, timeout=2.0, want=1) == [f]


@pytest.mark.root
def test_missing_interface_is_one_clear_error(lab):
    nio = NetIO(WireDevice(), {1: "p4ta1", 2: "p4tnope"}, netns=lab.ns)
    with pytest.raises(P4Error, match=r"port 2: interface 'p4tnope' does not exist"):
        nio.open()
    # nothing stays open: the same interface can be used again at once
    nio2 = NetIO(WireDevice(), {1: "p4ta1"}, netns=lab.ns)
    nio2.open()
    nio2.close()


def test_same_interface_twice_is_refused():
    with pytest.raises(P4Error, match="more than one port"):
        NetIO(WireDevice(), {1: "p4tx", 2: "p4tx"})


@pytest.mark.root
def test_missing_namespace_is_one_clear_error():
    nio = NetIO(WireDevice(), {1: "p4ta1"}, netns="p4t-does-not-exist")
    with pytest.raises(P4Error, match="namespace 'p4t-does-not-exist' does not exist"):
        nio.open()


def test_complete_checksum_matches_scapy():
    """A UDP frame with only the pseudo-header sum in its checksum field (as a host
    stack leaves it for the NIC) comes out with the checksum scapy computes."""
    from p4target.ports.offloads import complete_checksum

    full = bytes(Ether(**MACS) / IPv6(src="fd00::1", dst="fd00::2") / UDP(sport=7, dport=9)
                 / b"odd-length!")
    udp_off = 14 + 40
    udp_len = len(full) - udp_off
    # the pseudo-header (addresses, length, next header) summed, not inverted: what
    # the kernel writes into the field for CHECKSUM_PARTIAL
    pseudo = full[14 + 8: 14 + 40] + udp_len.to_bytes(4, "big") + b"\0\0\0\x11"
    seed = int.from_bytes(pseudo, "big") % 0xFFFF
    partial = full[: udp_off + 6] + seed.to_bytes(2, "big") + full[udp_off + 8:]
    assert partial != full
    assert complete_checksum(partial, udp_off, 6) == full
    # a checksum position outside the frame leaves it alone
    assert complete_checksum(partial, len(partial), 6) == partial


@pytest.mark.root
@pytest.mark.parametrize("offloads", [False, True], ids=["tso-off", "tso-on"])
def test_host_stack_udp_and_tcp_cross_the_switch(lab, offloads):
    """Real hosts' kernels offload checksums (and, with TSO on, segmentation) on
    veths: netio finishes the sums and cuts the super-frames, so UDP and TCP between
    two host namespaces work through the switch with the hosts left as they are."""
    import subprocess

    h1 = lab.host("h1", "p4ta0", "fd00::1", offloads=offloads)
    h2 = lab.host("h2", "p4tb0", "fd00::2", offloads=offloads)
    dev = WireDevice()
    nio = NetIO(dev, {1: "p4ta1", 2: "p4tb1"}, netns=lab.ns, poll_interval=30.0)
    nio.start()
    try:
        server = subprocess.Popen(
            ["ip", "netns", "exec", h2, sys.executable, "-c",
             "import socket\n"
             "u = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM); u.bind(('::', 5000))\n"
             "t = socket.socket(socket.AF_INET6); t.bind(('::', 5001)); t.listen()\n"
             "print('ready', flush=True)\n"
             "u.settimeout(5); print(u.recv(100).decode(), flush=True)\n"
             "t.settimeout(5); c, _ = t.accept(); c.settimeout(5); n = 0\n"
             "while n < 200000:\n"
             "    b = c.recv(65536)\n"
             "    if not b: break\n"
             "    n += len(b)\n"
             "print(n, flush=True)\n"],
            stdout=subprocess.PIPE, text=True)
        assert server.stdout.readline().strip() == "ready"
        client = subprocess.run(
            ["ip", "netns", "exec", h1, sys.executable, "-c",
             "import socket\n"
             "u = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)\n"
             "u.sendto(b'hello over udp', ('fd00::2', 5000))\n"
             "t = socket.create_connection(('fd00::2', 5001), timeout=5)\n"
             "t.sendall(b'x' * 200000); t.close()\n"],
            capture_output=True, text=True, timeout=20)
        assert client.returncode == 0, client.stderr
        out, _ = server.communicate(timeout=10)
        assert out.split() == ["hello", "over", "udp", "200000"]
        if offloads:  # TCP's super-frames were cut, none dropped
            assert nio.ports[1].gso_segmented > 0 and nio.ports[1].gso_dropped == 0
    finally:
        nio.stop()
        nio.join(5)


def test_segment_gso_makes_what_a_nic_would_send():
    """A TSO super-frame cut by segment_gso equals the segments scapy builds with
    correct lengths, sequence numbers, flags and checksums."""
    from scapy.layers.inet import IP, TCP

    from p4target.ports.offloads import VNET_GSO_TCPV4, VNET_GSO_TCPV6, segment_gso

    data = bytes(range(256)) * 10  # 2560 bytes: segments of 1000, 1000, 560
    for ip, gso in ((IP(src="10.0.0.1", dst="10.0.0.2", id=7), VNET_GSO_TCPV4),
                    (IPv6(src="fd00::1", dst="fd00::2"), VNET_GSO_TCPV6)):
        big = bytes(Ether(**MACS) / ip / TCP(sport=1, dport=2, seq=1000, flags="PAF") / data)
        l4 = 14 + (20 if gso == VNET_GSO_TCPV4 else 40)
        segs = segment_gso(big, gso, 1000, l4)
        assert segs is not None and len(segs) == 3
        for n, seg in enumerate(segs):
            chunk = data[n * 1000: (n + 1) * 1000]
            flags = "A" if n < 2 else "PAF"
            ip_n = ip.copy()
            if gso == VNET_GSO_TCPV4:
                ip_n.id = 7 + n
            want = bytes(Ether(**MACS) / ip_n / TCP(sport=1, dport=2, seq=1000 + 1000 * n,
                                              flags=flags) / chunk)
            assert seg == want, n


@pytest.mark.root
def test_udp_gso_super_frames_are_segmented(lab):
    """UDP segmentation offload: one 6000-byte write leaves h1 as one GSO frame; the
    switch port cuts it into the five 1200-byte datagrams a NIC would send."""
    import subprocess

    h1 = lab.host("h1", "p4ta0", "fd00::1", offloads=True)
    h2 = lab.host("h2", "p4tb0", "fd00::2", offloads=True)
    nio = NetIO(WireDevice(), {1: "p4ta1", 2: "p4tb1"}, netns=lab.ns, poll_interval=30.0)
    nio.start()
    try:
        server = subprocess.Popen(
            ["ip", "netns", "exec", h2, sys.executable, "-c",
             "import socket\n"
             "u = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM); u.bind(('::', 5000))\n"
             "print('ready', flush=True); u.settimeout(5)\n"
             "print(' '.join(str(len(u.recv(9000))) for _ in range(5)), flush=True)\n"],
            stdout=subprocess.PIPE, text=True)
        assert server.stdout.readline().strip() == "ready"
        subprocess.run(
            ["ip", "netns", "exec", h1, sys.executable, "-c",
             "import socket\n"
             "u = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)\n"
             "u.setsockopt(socket.IPPROTO_UDP, 103, 1200)\n"  # UDP_SEGMENT
             "u.sendto(b'y' * 6000, ('fd00::2', 5000))\n"],
            check=True, capture_output=True, timeout=20)
        out, _ = server.communicate(timeout=10)
        assert out.split() == ["1200"] * 5
        assert nio.ports[1].gso_segmented == 1 and nio.ports[1].gso_dropped == 0
    finally:
        nio.stop()
        nio.join(5)
