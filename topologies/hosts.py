"""The Mininet host of the fabric: a Linux host behind its NIC (docs/nic.md, "The host side").

Why a Host subclass: Mininet configures hosts (MAC, address, routes) in its own build
step, also when the network is started by Mininet's `mn` command, so the IPv6 set-up
belongs in ``config``. What the host needs comes from the controller's address plan
(fabric/plan.py), computed by the Topo and passed in as parameters:

- its MAC is the NIC's ``to_host`` destination MAC (``plan.host_mac``);
- ``fd00:0:<leaf>:<port>::1/64`` without duplicate address detection (usable at once);
- a default route via ``fd00:0:<leaf>:<port>::fe``, the gateway its NIC answers
  neighbour solicitations and pings for;
- an MTU 40 bytes below the fabric's (the NIC adds an outer IPv6 header): 1460;
- transmit checksum offload off on its veth (``ethtool -K <intf> tx off``): every
  packet leaves the host with its UDP/TCP checksum complete, as from a real NIC's
  wire. With offload on, a veth hands the NIC switch a partial checksum; a P4 switch
  that forwards the bytes as they are (BMv2 reads frames from a raw socket) then
  delivers packets that the receiving kernel drops (docs/nic.md, "Checksums").

No IPv4 at all (Mininet's 10.0.0.0/8 is switched off by ``ip=None``); ``IP()`` is the
IPv6 address, so Mininet's ``pingall``, ``iperf`` and the CLI's name substitution
(``h1 ping h3``) use it.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

from mininet.node import Host

from topologies.node_marks import mark_node

HOST_MTU = 1460
PREFIX_LEN = 64


class FabricHost(Host):
    """A Mininet host with the address plan's IPv6 address, gateway and MTU.

    Parameters (from the Topo): ``mac``, ``ipv6`` (address without length),
    ``gateway``; ``mrc_name`` is the controller's name of the host (``h3``)."""

    def __init__(self, name: str, ipv6: str | None = None, gateway: str | None = None,
                 mrc_name: str | None = None, **params: Any) -> None:
        params["ip"] = None
        self.ipv6 = ipv6
        self.gateway = gateway
        self.mrc_name = mrc_name or name
        super().__init__(name, **params)
        mark_node(self)
        # the project's commands (mrc-send, mrc-recv, mrcctl) by name in the host's shell
        self.cmd(f"export PATH={shlex.quote(str(Path(sys.executable).parent))}:$PATH")

    def config(self, mac: str | None = None, ip: str | None = None, defaultRoute: str | None = None,
               lo: str = "up", **params: Any) -> dict[str, Any]:
        result: dict[str, Any] = super().config(mac=mac, ip=None, defaultRoute=None, lo=lo, **params)
        intf = self.defaultIntf()
        if intf is None or self.ipv6 is None:
            return result
        name = intf.name
        # One shell round trip: Mininet's cmd() costs a few ms each on a busy machine.
        out = self.cmd(
            f"sysctl -qw net.ipv6.conf.all.accept_dad=0 net.ipv6.conf.default.accept_dad=0 "
            f"net.ipv6.conf.{name}.disable_ipv6=0 net.ipv6.conf.{name}.accept_dad=0 "
            f"net.ipv6.conf.{name}.accept_ra=0 net.ipv6.conf.{name}.router_solicitations=0"
            f" && ethtool -K {name} tx off >/dev/null"
            f" && ip link set {name} mtu {HOST_MTU} up"
            f" && ip -6 addr add {self.ipv6}/{PREFIX_LEN} dev {name} nodad"
            + (f" && ip -6 route add default via {self.gateway} dev {name}" if self.gateway else "")
        )
        if out.strip():
            raise RuntimeError(f"{self.name}: IPv6 set-up of {name} failed: {out.strip()}")
        return result

    def IP(self, intf: Any = None) -> str | None:  # Mininet's name
        """The host's IPv6 address: what Mininet puts in place of the host's name on the
        CLI (``h1 ping h3``) and what ``pingall`` and ``iperf`` send to."""
        return self.ipv6

    def addresses(self) -> str:
        """The host's global IPv6 addresses, as `ip` shows them (for checks and the CLI)."""
        out: str = self.cmd(f"ip -6 -o addr show dev {self.defaultIntf().name} scope global")
        return out


class LinuxSrv6Node(Host):
    """A Linux SRv6 edge node cabled to a leaf (fabric/topology.py's ``linux_hosts``):
    the kernel, not a P4 NIC, encapsulates and decapsulates.

    Its ``eth0`` goes to the leaf (outer packets), its ``eth1`` to a plain Linux host
    (``LinuxInnerHost``) that owns the host-plan address ``fd00:0:<leaf>:<port>::1``.
    Towards every fabric host it has a route with ``encap seg6 mode encap segs
    <carrier>`` (RFC 8986 H.Encaps, an SRH with one segment); the outer packets leave
    through the leaf's port MAC as next hop. Its local uSID locator
    ``fcbb:bb00:<0xE000 + port>::/48`` is an ``End.DT6`` route: decapsulate, look the
    inner destination up (the host on ``eth1``), forward. End.DT6 in table mode never
    delivers locally, hence the host behind it.

    Parameters: ``mac``, ``leaf_mac`` (next hop of the outer packets), ``inner_gw``
    (its own address towards the inner host), ``routes`` [(prefix/len, carrier)],
    ``locator`` (its End.DT6 prefix, /48)."""

    def __init__(self, name: str, leaf_mac: str = "", inner_gw: str = "", routes: Any = (),
                 locator: str = "", mrc_name: str | None = None, **params: Any) -> None:
        params["ip"] = None
        self.leaf_mac, self.inner_gw, self.routes, self.locator = leaf_mac, inner_gw, list(routes), locator
        self.mrc_name = mrc_name or name
        super().__init__(name, **params)
        mark_node(self)

    def config(self, mac: str | None = None, ip: str | None = None, defaultRoute: str | None = None,
               lo: str = "up", **params: Any) -> dict[str, Any]:
        result: dict[str, Any] = super().config(mac=mac, ip=None, defaultRoute=None, lo=lo, **params)
        out_if, in_if = f"{self.name}-eth0", f"{self.name}-eth1"
        cmds = [
            "sysctl -qw net.ipv6.conf.all.forwarding=1 net.ipv6.conf.all.seg6_enabled=1 "
            f"net.ipv6.conf.{out_if}.seg6_enabled=1 net.ipv6.conf.all.accept_dad=0 "
            f"net.ipv6.conf.{out_if}.accept_dad=0 net.ipv6.conf.{in_if}.accept_dad=0 "
            f"net.ipv6.conf.{out_if}.router_solicitations=0",
            # Linux sends into a P4 switch's raw socket: checksums in software, not offloaded.
            f"ethtool -K {out_if} tx off >/dev/null",
            f"ip link set {out_if} up && ip link set {in_if} up",
            f"ip -6 addr add {self.inner_gw}/64 dev {in_if} nodad",
            f"ip -6 neigh replace fe80::1 lladdr {self.leaf_mac} dev {out_if} nud permanent",
            f"ip -6 route add fcbb:bb00::/32 via fe80::1 dev {out_if}",
            f"ip sr tunsrc set {self.inner_gw}",
            f"ip -6 route add {self.locator} encap seg6local action End.DT6 table 254 dev {out_if}",
        ]
        cmds += [f"ip -6 route add {prefix} encap seg6 mode encap segs {carrier} dev {out_if}"
                 for prefix, carrier in self.routes]
        out = self.cmd(" && ".join(cmds))
        if out.strip():
            raise RuntimeError(f"{self.name}: SRv6 set-up failed: {out.strip()}")
        return result


def kernel_srv6_missing() -> str | None:
    """None if this kernel takes the routes a Linux SRv6 node needs (``encap seg6`` and
    ``seg6local End.DT6``), else why not, with the fix. Probed in a throwaway network
    namespace (``unshare --net``): nothing on the machine is touched."""
    probe = ("ip link set lo up && ip -6 route add 2001:db8::/64 encap seg6 mode encap segs 2001:db8::1 dev lo "
             "&& ip -6 route add 2001:db8:1::/48 encap seg6local action End.DT6 table 254 dev lo")
    try:
        r = subprocess.run(["unshare", "--net", "sh", "-c", probe], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"cannot probe the kernel's SRv6 routes ({exc})"
    if r.returncode == 0:
        return None
    why = r.stderr.strip().splitlines()[-1] if r.stderr.strip() else f"exit status {r.returncode}"
    return (f"this kernel ({os.uname().release}) takes no SRv6 routes ({why}): a Linux SRv6 node needs a kernel "
            "built with CONFIG_IPV6_SEG6_LWTUNNEL (Debian's kernels are); use a topology without linux nodes here")


class LinuxInnerHost(FabricHost):
    """The plain Linux host behind a Linux SRv6 node: host-plan address, default route
    via the node, an MTU that leaves room for the node's outer header and SRH."""

    MTU = 1400

    def config(self, mac: str | None = None, ip: str | None = None, defaultRoute: str | None = None,
               lo: str = "up", **params: Any) -> dict[str, Any]:
        result = super().config(mac=mac, ip=ip, defaultRoute=defaultRoute, lo=lo, **params)
        name = self.defaultIntf().name
        self.cmd(f"ip link set {name} mtu {self.MTU}")
        return result
