"""fabric.p4 interoperates with the Linux kernel's SRv6 (as root, in network namespaces).

Why: the fabric must be a correct SRv6 node, not just agree with our own scapy
builders. Here the Linux kernel encapsulates, two ``p4target run`` switches running
fabric.p4 process the carrier, a Linux uSID node (``seg6local End flavors next-csid``)
takes the next step and a Linux End.DT6 decapsulates and delivers to a UDP socket.

    p4t..a (Linux H.Encaps) --- S1 (fabric.p4, uN 0x0100) --- S2 (fabric.p4, uN 0x0200)
        --- p4t..n (Linux uN 0x0300, next-csid) --- p4t..d (Linux End.DT6) --- p4t..h (receiver)

Segments: ``fcbb:bb00:100:200::`` (a uSID carrier: S1 shifts, S2 ends it),
``fcbb:bb00:300::`` (the Linux uN), ``fc00:d::100`` (End.DT6). S2 does the SRH End at
the end of its carrier. Namespaces and veths are prefixed ``p4t`` and always removed.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from scapy.layers.inet6 import IPv6, IPv6ExtHdrSegmentRouting
from scapy.layers.l2 import Ether

from fabric.entries import TableEntry
from fabric.plan import locator
from controller.stf import stf_lines
from fabric.match import Lpm
from tests.dataplane.fabric_net import FABRIC_P4, REPO, entry

pytestmark = pytest.mark.root

TAG = f"{os.getpid() & 0xFFFF:04x}"
NS_A, NS_SW, NS_N, NS_D, NS_H = (f"p4tf{TAG}{r}" for r in "aundh")
PORT_MAC = {("s1", 1): "02:00:01:00:01:01", ("s1", 2): "02:00:01:00:01:02",
            ("s2", 1): "02:00:01:00:02:01", ("s2", 2): "02:00:01:00:02:02"}
N0_MAC = "02:0e:00:00:00:00"
SEGS = ["fcbb:bb00:100:200::", "fcbb:bb00:300::", "fc00:d::100"]
DST, SRC, UDP_PORT = "fd00:d::1", "fc00:a::1", 47910


def ifname(role: str) -> str:
    return f"p4tf{TAG}{role}"


def sh(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    res = subprocess.run(list(args), capture_output=True, text=True, timeout=60)
    if check and res.returncode != 0:
        raise RuntimeError(f"{' '.join(args)}: {res.stderr.strip()}")
    return res


def nsx(ns: str, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return sh("ip", "netns", "exec", ns, *args, check=check)


def mac_int(text: str) -> int:
    return int(text.replace(":", ""), 16)


def switch_entries(name: str, own: int, nxt: int, nxt_mac: str) -> list[TableEntry]:
    """Entries of S1/S2: my uN, the next uSID towards port 2, both port MACs."""
    return [
        entry("FabricIngress.my_sid", {"hdr.ipv6.dst_addr": Lpm(locator(own), 48)}, "FabricIngress.usid_un"),
        entry("FabricIngress.usid_fwd", {"hdr.ipv6.dst_addr": Lpm(locator(nxt), 48)}, "FabricIngress.fwd",
              {"port": 2, "dmac": mac_int(nxt_mac)}),
        *(entry("FabricEgress.port_mac", {"standard_metadata.egress_port": p}, "FabricEgress.set_src_mac",
                {"mac": mac_int(PORT_MAC[(name, p)])}) for p in (1, 2)),
    ]


@dataclass
class Net:
    workdir: Path
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)


def next_csid_supported() -> str | None:
    """None if this kernel/iproute2 takes a next-csid End route, else why not."""
    probe = f"p4tf{TAG}p"
    try:
        sh("ip", "netns", "add", probe)
        nsx(probe, "ip", "link", "add", ifname("px"), "type", "veth", "peer", "name", ifname("py"))
        nsx(probe, "ip", "link", "set", ifname("px"), "up")
        nsx(probe, "ip", "link", "set", ifname("py"), "up")
        res = nsx(probe, "ip", "-6", "route", "add", "fcbb:bb00:300::/48", "encap", "seg6local", "action",
                  "End", "flavors", "next-csid", "lblen", "32", "nflen", "16", "dev", ifname("px"), check=False)
        if res.returncode != 0:
            return f"kernel/iproute2 lacks SRv6 next-csid: {res.stderr.strip()}"
        return None
    finally:
        sh("ip", "netns", "del", probe, check=False)


def setup_namespaces() -> None:
    for ns in (NS_A, NS_SW, NS_N, NS_D, NS_H):
        sh("ip", "netns", "add", ns)
        nsx(ns, "ip", "link", "set", "lo", "up")
    # The switches' interfaces carry no IP stack of their own: no RS/MLD noise.
    nsx(NS_SW, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1")
    for a_ns, a, b_ns, b in [(NS_A, "a0", NS_SW, "s1a"), (NS_SW, "s1b", NS_SW, "s2a"),
                             (NS_SW, "s2b", NS_N, "n0"), (NS_N, "n1", NS_D, "d0"),
                             (NS_D, "d1", NS_H, "h0")]:
        sh("ip", "link", "add", ifname(a), "netns", a_ns, "type", "veth", "peer", "name", ifname(b), "netns", b_ns)
        nsx(a_ns, "ip", "link", "set", ifname(a), "up")
        nsx(b_ns, "ip", "link", "set", ifname(b), "up")
    # Frames from veths into the switches' raw sockets would keep a partial (offloaded)
    # checksum: have the kernel compute checksums in software where Linux sends.
    for ns, name in [(NS_A, "a0"), (NS_N, "n0"), (NS_N, "n1"), (NS_D, "d0"), (NS_D, "d1")]:
        nsx(ns, "ethtool", "-K", ifname(name), "tx", "off")
    # A: Linux H.Encaps towards the fabric.
    nsx(NS_A, "ip", "link", "set", ifname("a0"), "address", "02:0a:00:00:00:01")
    nsx(NS_A, "ip", "-6", "addr", "add", f"{SRC}/64", "dev", ifname("a0"), "nodad")
    nsx(NS_A, "ip", "-6", "neigh", "add", "fc00:a::2", "lladdr", PORT_MAC[("s1", 1)], "dev", ifname("a0"),
        "nud", "permanent")
    nsx(NS_A, "ip", "-6", "route", "add", "fcbb:bb00::/32", "via", "fc00:a::2", "dev", ifname("a0"))
    nsx(NS_A, "ip", "-6", "route", "add", "fd00:d::/64", "encap", "seg6", "mode", "encap", "segs", ",".join(SEGS),
        "dev", ifname("a0"))
    # N: a Linux uSID node (uN 0x0300 with NEXT-CSID).
    nsx(NS_N, "sysctl", "-qw", "net.ipv6.conf.all.forwarding=1", "net.ipv6.conf.all.seg6_enabled=1",
        f"net.ipv6.conf.{ifname('n0')}.seg6_enabled=1")
    nsx(NS_N, "ip", "link", "set", ifname("n0"), "address", N0_MAC)
    nsx(NS_N, "ip", "-6", "addr", "add", "fc00:e::1/64", "dev", ifname("n0"), "nodad")
    nsx(NS_N, "ip", "-6", "addr", "add", "fc00:4d::1/64", "dev", ifname("n1"), "nodad")
    nsx(NS_N, "ip", "-6", "route", "add", "fcbb:bb00:300::/48", "encap", "seg6local", "action", "End",
        "flavors", "next-csid", "lblen", "32", "nflen", "16", "dev", ifname("n0"))
    nsx(NS_N, "ip", "-6", "route", "add", "fc00:d::/64", "via", "fc00:4d::2", "dev", ifname("n1"))
    # D: End.DT6 and the receiving host address.
    nsx(NS_D, "sysctl", "-qw", "net.ipv6.conf.all.forwarding=1")
    nsx(NS_D, "ip", "-6", "addr", "add", "fc00:4d::2/64", "dev", ifname("d0"), "nodad")
    nsx(NS_D, "ip", "-6", "addr", "add", "fd00:d::2/64", "dev", ifname("d1"), "nodad")
    # H: the receiving host behind D (End.DT6 in table mode forwards, never delivers locally).
    nsx(NS_H, "ip", "-6", "addr", "add", f"{DST}/64", "dev", ifname("h0"), "nodad")
    nsx(NS_D, "ip", "-6", "route", "add", "fc00:d::100/128", "encap", "seg6local", "action", "End.DT6",
        "table", "254", "dev", ifname("d0"))


def teardown(net: Net | None) -> None:
    if net is not None:
        for p in net.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in net.procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
    for ns in (NS_A, NS_SW, NS_N, NS_D, NS_H):
        sh("ip", "netns", "del", ns, check=False)


def start_switch(net: Net, name: str, ports: dict[int, str], entries: list[TableEntry]) -> None:
    cmds = net.workdir / f"{name}.stf"
    cmds.write_text("\n".join(stf_lines(entries)) + "\n")
    # Pid files live in the project's run directory, so `make clean` finds a switch
    # that a crashed test left behind (docs/environment.md, "Cleaning up").
    from tools.cleanup import run_dir

    run_dir().mkdir(parents=True, exist_ok=True)
    pid_file = run_dir() / f"p4tf{TAG}-{name}.pid"
    pid_file.unlink(missing_ok=True)
    args = [sys.executable, "-m", "p4target", "run", str(FABRIC_P4), "--no-grpc", "--commands", str(cmds),
            "--netns", NS_SW, "--pcap", str(net.workdir / "pcap"), "--pid-file", str(pid_file)]
    for num, iface in ports.items():
        args += ["-i", f"{num}@{iface}"]
    log = open(net.workdir / f"{name}.log", "wb")
    proc = subprocess.Popen(args, cwd=REPO, stdout=log, stderr=subprocess.STDOUT)
    net.procs.append(proc)
    deadline = time.monotonic() + 120
    while not pid_file.exists():
        if proc.poll() is not None:
            raise RuntimeError(f"{name} exited: {(net.workdir / f'{name}.log').read_text()}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"{name} did not start in time")
        time.sleep(0.1)


@pytest.fixture
def interop(tmp_path: Path) -> Iterator[Net]:
    for tool in ("ip", "ethtool"):
        if shutil.which(tool) is None:
            pytest.fail(f"{tool} is not installed: `make deps` installs it (Debian: iproute2, ethtool)")
    why = next_csid_supported()
    if why is not None:
        pytest.skip(why)
    net: Net | None = None
    try:
        setup_namespaces()
        net = Net(tmp_path)
        start_switch(net, "s1", {1: ifname("s1a"), 2: ifname("s1b")},
                     switch_entries("s1", 0x0100, 0x0200, PORT_MAC[("s2", 1)]))
        start_switch(net, "s2", {1: ifname("s2a"), 2: ifname("s2b")},
                     switch_entries("s2", 0x0200, 0x0300, N0_MAC))
        yield net
    finally:
        teardown(net)


RECEIVER = """
import socket, sys
s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
s.bind((sys.argv[1], int(sys.argv[2])))
s.settimeout(15)
print("ready", flush=True)
data, peer = s.recvfrom(2048)
print(peer[0], data.decode(), flush=True)
"""

SENDER = """
import socket, sys, time
s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
for i in range(10):
    s.sendto(b"mrc-interop", (sys.argv[1], int(sys.argv[2])))
    time.sleep(0.3)
"""


def test_linux_encap_crosses_fabric_p4_and_linux_usid_nodes(interop: Net) -> None:
    recv = subprocess.Popen(["ip", "netns", "exec", NS_H, sys.executable, "-c", RECEIVER, DST, str(UDP_PORT)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert recv.stdout is not None
        assert recv.stdout.readline().strip() == "ready"
        send = subprocess.Popen(["ip", "netns", "exec", NS_A, sys.executable, "-c", SENDER, DST, str(UDP_PORT)])
        out, err = recv.communicate(timeout=30)
        send.wait(timeout=30)
    finally:
        if recv.poll() is None:
            recv.kill()
    assert recv.returncode == 0, f"nothing delivered through the fabric: {err}"
    assert out.split() == [SRC, "mrc-interop"]

    # What the P4 switches sent: S1 shifted the carrier, S2 ended it with SRH End.
    teardown_switches(interop)
    from p4target.ports.netio import read_pcap

    s1_out = [Ether(f) for _, f in read_pcap(interop.workdir / "pcap" / f"{ifname('s1b')}_out.pcap")]
    s2_out = [Ether(f) for _, f in read_pcap(interop.workdir / "pcap" / f"{ifname('s2b')}_out.pcap")]
    s1_srv6 = [p for p in s1_out if IPv6ExtHdrSegmentRouting in p]
    s2_srv6 = [p for p in s2_out if IPv6ExtHdrSegmentRouting in p]
    assert s1_srv6 and s2_srv6
    p1, p2 = s1_srv6[0], s2_srv6[0]
    assert (p1.src, p1.dst) == (PORT_MAC[("s1", 2)], PORT_MAC[("s2", 1)])
    assert p1[IPv6].dst == "fcbb:bb00:200::"
    assert p1[IPv6ExtHdrSegmentRouting].segleft == 2
    assert p1[IPv6].hlim == 63
    assert (p2.src, p2.dst) == (PORT_MAC[("s2", 2)], N0_MAC)
    assert p2[IPv6].dst == "fcbb:bb00:300::"
    assert p2[IPv6ExtHdrSegmentRouting].segleft == 1
    assert p2[IPv6].hlim == 62
    assert p2[IPv6ExtHdrSegmentRouting].addresses == list(reversed(SEGS))


def teardown_switches(net: Net) -> None:
    """Stop the switches so their pcap files are complete."""
    for p in net.procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    for p in net.procs:
        p.wait(timeout=10)
