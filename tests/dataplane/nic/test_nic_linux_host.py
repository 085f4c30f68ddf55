"""A real Linux host behind nic.p4 (`p4target run` on veths, programmed over P4Runtime).

Why: the NIC answers neighbour solicitations and pings in P4; only a real kernel can
say whether it accepts those answers. The host lives in its own network namespace
with the address plan's address and default route; the test plays the fabric on the
NIC's plane port: it reads what the NIC sends, checks the encapsulation, and answers
the host's ping to a remote host with an encapsulated echo reply, as the remote NIC
would, so `ping` succeeds only if the whole round trip is right.
"""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import time
import uuid

import pytest
from scapy.layers.inet6 import ICMPv6EchoReply, ICMPv6EchoRequest, IPv6
from scapy.layers.l2 import Ether

from p4target.ports.netio import open_interface_socket
from fabric.topology import from_parameters
from tests.dataplane.fabric_net import NIC_P4, REPO
from tests.dataplane.nic.nic_case import carrier_ip, gateway_ip, host_ip, nic_case, nic_ip
from tests.dataplane.packets import usid_carrier

FABRIC = from_parameters(name="linux-host", planes=1, spines=1, leaves=2, hosts_per_leaf=2)
REMOTE = (1, 2)


def run(*args: str, check: bool = True, timeout: float = 20) -> subprocess.CompletedProcess:
    return subprocess.run(list(args), check=check, capture_output=True, text=True, timeout=timeout)


def in_ns(ns: str, *args: str, check: bool = True, timeout: float = 20) -> subprocess.CompletedProcess:
    return run("ip", "netns", "exec", ns, *args, check=check, timeout=timeout)


def start_nic(ns: str) -> tuple[subprocess.Popen, int]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "p4target", "run", "--no-p4", "--netns", ns, "-i", "0@p4tnsh",
         "-i", "1@p4tnsp", "--device-id", "1", "--grpc-addr", "127.0.0.1:0", "--log-level", "info"],
        cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    for _ in range(200):
        line = proc.stderr.readline()
        m = re.search(r"P4Runtime on ([0-9.]+:\d+)", line)
        if m:
            return proc, int(m.group(1).rsplit(":", 1)[1])
        if not line and proc.poll() is not None:
            break
    proc.kill()
    raise AssertionError(f"p4target run did not start: {proc.stderr.read()}")


@pytest.mark.root
def test_a_linux_host_reaches_its_gateway_and_a_remote_host():
    from p4target.device_config import device_config_from_file, load_device_config
    from p4target.p4info import build_p4info
    from controller.codec import Codec
    from tests.p4runtime.p4rt_client import RawClient

    tag = uuid.uuid4().hex[:6]
    sw_ns, host_ns = f"p4t-nsw-{tag}", f"p4t-nh-{tag}"
    cfg = nic_case(FABRIC, 0, 1)
    proc = None
    sock = None
    run("ip", "netns", "add", sw_ns)
    run("ip", "netns", "add", host_ns)
    try:
        # host <-> NIC port 0; NIC port 1 (plane 0) <-> the test playing the fabric
        run("ip", "link", "add", "p4tnhh", "netns", host_ns, "type", "veth", "peer", "name", "p4tnsh",
            "netns", sw_ns)
        run("ip", "-n", sw_ns, "link", "add", "p4tnsp", "type", "veth", "peer", "name", "p4tnsf")
        for ifname in ("p4tnsh", "p4tnsp", "p4tnsf"):
            run("ip", "-n", sw_ns, "link", "set", ifname, "up")
        in_ns(sw_ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1")
        run("ip", "-n", host_ns, "link", "set", "p4tnhh", "address", cfg.host_mac, "mtu", "1460")
        run("ip", "-n", host_ns, "link", "set", "p4tnhh", "up")
        run("ip", "-n", host_ns, "-6", "addr", "add", f"{host_ip(0, 1)}/64", "dev", "p4tnhh", "nodad")
        run("ip", "-n", host_ns, "-6", "route", "add", "default", "via", gateway_ip(0, 1), "dev", "p4tnhh")

        proc, port = start_nic(sw_ns)
        client = RawClient(port, device_id=1)
        try:
            client.arbitrate(1)
            data = device_config_from_file(NIC_P4)
            p4info = build_p4info(load_device_config(data).model)
            client.set_pipeline(p4info, data)
            client.write(*Codec(p4info).write_request("insert", cfg.entries()).updates)
        finally:
            client.close()

        # 1. Neighbour discovery and ping of the gateway, answered by nic.p4.
        ping = in_ns(host_ns, "ping", "-6", "-c", "2", "-i", "0.2", "-W", "3", gateway_ip(0, 1), check=False)
        assert ping.returncode == 0, ping.stdout + ping.stderr
        neigh = run("ip", "-n", host_ns, "-6", "neigh", "show", gateway_ip(0, 1)).stdout
        assert cfg.gw_mac in neigh

        # 2. A ping to a remote host: the NIC encapsulates it; "the fabric" answers.
        sock = open_interface_socket("p4tnsf", sw_ns)
        pinger = subprocess.Popen(["ip", "netns", "exec", host_ns, "ping", "-6", "-c", "1", "-W", "5",
                                   host_ip(*REMOTE)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  text=True)
        request = None
        end = time.monotonic() + 5
        while request is None and time.monotonic() < end:
            sock.settimeout(max(0.01, end - time.monotonic()))
            try:
                frame, addr = sock.recvfrom(65535)
            except (socket.timeout, TimeoutError):
                break
            pkt = Ether(frame)
            if addr[2] != 4 and IPv6 in pkt and ICMPv6EchoRequest in pkt:  # 4: our own sends
                request = pkt
        assert request is not None, "no encapsulated echo request on the plane port"
        outer, inner = request[IPv6], request[IPv6].payload
        assert (outer.src, outer.dst, outer.nh, outer.hlim) == (
            nic_ip(0, 1), carrier_ip(0, 0, 0, *REMOTE), 41, 64)
        assert (inner.src, inner.dst) == (host_ip(0, 1), host_ip(*REMOTE))
        echo = inner[ICMPv6EchoRequest]
        reply = (Ether(src=cfg.leaf_mac(0), dst=cfg.plane_mac(0))
                 / IPv6(src=nic_ip(*REMOTE), dst=usid_carrier([0xE001]), hlim=61, nh=41)
                 / IPv6(src=host_ip(*REMOTE), dst=host_ip(0, 1), hlim=64)
                 / ICMPv6EchoReply(id=echo.id, seq=echo.seq, data=echo.data))
        sock.send(bytes(reply))
        out, _ = pinger.communicate(timeout=10)
        assert pinger.returncode == 0, out
    finally:
        if sock is not None:
            sock.close()
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        run("ip", "netns", "del", host_ns, check=False)
        run("ip", "netns", "del", sw_ns, check=False)
