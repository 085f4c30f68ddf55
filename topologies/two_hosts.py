"""The smallest Mininet network of the project: two hosts joined by one link.

It shows that the machine can run the project's Mininet networks at all (root, network namespaces, veths,
IPv6 neighbour discovery) before any switch is involved. The two hosts are linked
directly, so neither Open vSwitch nor a Mininet controller is needed.

Hosts are IPv6 only. They sit on `fd00:0:ffff:1::/64`: inside the project's host ULA
range (`fd00:0:<leaf>:<port>::/64`, docs/addressing.md) but on leaf 0xffff, which no
real fabric has (leaves are 0..511), so it never clashes with the fabric plan. Mininet's
default IPv4 addressing (10.0.0.0/8) is switched off. DAD is disabled on the test
interfaces so addresses are usable at once.

Node names start with a project prefix (`mrc` by default) and each host's shell carries
the project's node mark (topologies/node_marks.py), so `make clean` / tools/cleanup.py
can find anything a crash leaves behind.
"""

from __future__ import annotations

import logging
import os
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated

import typer

from cli_common.command import new_app, run_command
from topologies.node_marks import mark_node
from topologies.ping import PingResult, ping6

if TYPE_CHECKING:  # Mininet is imported lazily so `--help` and errors work without it
    from mininet.net import Mininet
    from mininet.node import Host

log = logging.getLogger(__name__)

LINK_PREFIX = "fd00:0:ffff:1::"
PREFIX_LEN = 64
DEFAULT_NAME_PREFIX = "mrc"


@dataclass
class TwoHostNetwork:
    """A started two-host network and the IPv6 address of each host."""

    net: Mininet
    hosts: tuple[Host, Host]
    addresses: tuple[str, str]

    def ping(self, src: int, dst: int, count: int = 3) -> PingResult:
        """Ping host `dst`'s address from host `src` (indexes 0 or 1)."""
        return ping6(self.hosts[src], self.addresses[dst], count)


def configure_ipv6(host: Host, address: str) -> None:
    """Give the host's only interface an IPv6 address, usable at once (no DAD)."""
    intf = host.defaultIntf().name
    host.cmd(f"sysctl -qw net.ipv6.conf.{intf}.disable_ipv6=0 net.ipv6.conf.{intf}.accept_dad=0")
    host.cmd(f"ip link set {intf} up")
    host.cmd(f"ip -6 addr add {address}/{PREFIX_LEN} dev {intf} nodad")


@contextmanager
def two_host_network(name_prefix: str = DEFAULT_NAME_PREFIX) -> Iterator[TwoHostNetwork]:
    """Start two hosts `<prefix>h1`, `<prefix>h2` joined by a veth; always stop them.

    Interface names are `<prefix>hN-eth0`, so keep the prefix short (Linux allows 15
    characters). The network is stopped on any exit, including exceptions and Ctrl-C.
    """
    from mininet.net import Mininet

    net = Mininet(topo=None, controller=None, build=False, autoSetMacs=False, waitConnected=False)
    try:
        h1 = net.addHost(f"{name_prefix}h1", ip=None)
        h2 = net.addHost(f"{name_prefix}h2", ip=None)
        net.addLink(h1, h2, addr1="02:00:00:ff:01:01", addr2="02:00:00:ff:01:02")
        net.build()
        net.start()
        addresses = (f"{LINK_PREFIX}1", f"{LINK_PREFIX}2")
        mark_node(h1)
        mark_node(h2)
        configure_ipv6(h1, addresses[0])
        configure_ipv6(h2, addresses[1])
        yield TwoHostNetwork(net=net, hosts=(h1, h2), addresses=addresses)
    finally:
        net.stop()


app = new_app()
PROG = "python -m topologies.two_hosts"


def _usage(text: str) -> int:
    print(f"error: {text} (see {PROG} --help)", file=sys.stderr)
    return 2


@app.command(help="Start two Mininet hosts joined by a link and ping across over IPv6, report, stop. Exit status 0 "
                  "when every ping got its reply, 1 otherwise, 2 for a command-line mistake.")
def cli(count: Annotated[int, typer.Option("--count", help="pings in each direction")] = 3,
        prefix: Annotated[str, typer.Option("--prefix", help="host name prefix (at most 6 characters)")]
        = DEFAULT_NAME_PREFIX,
        no_cli: Annotated[bool, typer.Option("--no-cli", help="never open the Mininet CLI, even on a terminal")]
        = False) -> int:
    if count < 1:
        return _usage("--count must be at least 1")
    if not re.fullmatch(r"[a-z][a-z0-9]{0,5}", prefix):
        return _usage("--prefix must be 1-6 lower-case letters/digits starting with a letter")
    return start(count, prefix, no_cli)


def main(argv: list[str] | None = None) -> int:
    """Start, ping both ways, report, stop (`python -m topologies.two_hosts`)."""
    return run_command(app, argv, prog=PROG)


def start(count: int, prefix: str, no_cli: bool) -> int:
    if os.geteuid() != 0:
        print("error: Mininet needs root (it creates network namespaces and veths); run it as root",
              file=sys.stderr)
        return 1
    try:
        import mininet.net  # noqa: F401
    except ImportError:
        print("error: Mininet is not importable; run `make deps` (Debian's mininet package and "
              ".venv made with --system-site-packages)", file=sys.stderr)
        return 1

    try:
        with two_host_network(prefix) as tn:
            h1, h2 = tn.hosts
            print(f"two-host network: {h1.name} ({tn.addresses[0]}) <-> {h2.name} ({tn.addresses[1]}), "
                  f"one direct link, IPv6 only, no switch")
            results = [tn.ping(0, 1, count), tn.ping(1, 0, count)]
            for r in results:
                print(r.summary())
            ok = all(r.ok for r in results)
            replies = sum(r.received for r in results)
            sent = sum(r.sent for r in results)
            if ok:
                print(f"summary: OK, IPv6 ping across the link works ({replies}/{sent} replies)")
            else:
                print(f"summary: FAILED, {sent - replies} of {sent} pings got no reply")
                for r in results:
                    if not r.ok:
                        print(r.output.rstrip())
            if sys.stdin.isatty() and sys.stdout.isatty() and not no_cli:
                from mininet.cli import CLI

                print(f"Mininet CLI: try `{h1.name} ping -6 -c 3 {tn.addresses[1]}`; `exit` stops the network")
                CLI(tn.net)
            return 0 if ok else 1
    except Exception as exc:  # one clear line, not a traceback (Mininet errors are plain)
        print(f"error: the two-host network failed: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
