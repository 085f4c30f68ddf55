"""A Linux SRv6 node in the Mininet fabric: the kernel's SRv6 meets the P4 switches.

topologies/linux-srv6.yaml cables a Linux node (lx1) to leaf 0 of plane 0. Its host
(lx1h) reaches the fabric's hosts through the node's ``encap seg6`` routes (Linux
H.Encaps, an SRH with one uSID carrier) and the P4 leaves and spines; what the
fabric hosts send back is encapsulated by their NIC (nic.p4) and decapsulated by the
node's End.DT6. A ping both ways shows both directions; the counters show the P4
switches carried it. On both targets (BMv2 when it is on the PATH).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from fabric import plan as P
from controller.counters import read_all
from fabric.topology import load_file
from tests.mininet.net_prefix import assert_nothing_left, private_prefix
from topologies.fabric_net import FabricNetwork, programmed_network
from topologies.hosts import kernel_srv6_missing

pytestmark = pytest.mark.root

REPO = Path(__file__).resolve().parents[2]
TOPO_FILE = REPO / "topologies" / "linux-srv6.yaml"


@pytest.fixture(scope="module", params=["embedded", pytest.param("bmv2", marks=pytest.mark.bmv2)])
def fabric(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[FabricNetwork]:
    if os.geteuid() != 0:
        pytest.skip("needs root (network namespaces, veths, Mininet)")
    why = kernel_srv6_missing()
    if why:
        pytest.skip(why)
    prefix = private_prefix()
    run_dir = tmp_path_factory.mktemp("linux-srv6-run")
    try:
        with programmed_network(load_file(TOPO_FILE), prefix=prefix, run_dir=run_dir, target=request.param) as fn:
            yield fn
    finally:
        assert_nothing_left(prefix, run_dir)


def _tx(fn: FabricNetwork, switch: str, port: int) -> int:
    t = fn.inventory.switches[switch]
    counts = asyncio.run(read_all([t]))[switch]
    return counts.get("FabricEgress.tx_port", {}).get(port, (0, 0))[0]


def test_linux_host_and_fabric_hosts_ping_each_other_through_the_p4_fabric(fabric: FabricNetwork) -> None:
    topo = fabric.topo
    lx = topo.linux_hosts[0]
    inner = fabric.net.get(fabric.names.mininet("lx1h"))
    assert inner.ipv6 == P.ip(P.host_addr(lx.leaf, lx.port)) == "fd00:0:0:3::1"
    to_linux_before = _tx(fabric, "p0-leaf0", lx.port)
    up_before = _tx(fabric, "p0-leaf1", P.leaf_uplink_port(topo, 0))
    for h in topo.hosts:  # h1 shares lx1's leaf; h2 is behind leaf 1 (through the spine)
        r = fabric.ping("lx1h", h.name, count=3)
        assert r.ok, r.output
        back = fabric.ping(h.name, "lx1h", count=3)
        assert back.ok, back.output
    # Each fabric host answered 3 pings and sent 3: 12 packets left leaf 0 on lx1's port,
    # all of them encapsulated by a NIC and decapsulated by lx1's End.DT6.
    assert _tx(fabric, "p0-leaf0", lx.port) - to_linux_before == 12
    # h2's 6 packets to lx1 went up from leaf 1 to the spine in plane 0 (lx1's only plane).
    assert _tx(fabric, "p0-leaf1", P.leaf_uplink_port(topo, 0)) - up_before == 6


def test_a_kernel_without_srv6_routes_is_refused_before_anything_exists(tmp_path: Path) -> None:
    """Where the kernel takes no SRv6 routes, the topology with Linux SRv6 nodes is
    refused in one line naming the kernel option, and nothing is created."""
    if os.geteuid() != 0:
        pytest.skip("needs root (network namespaces, veths, Mininet)")
    if kernel_srv6_missing() is None:
        pytest.skip("this kernel takes SRv6 routes: the network tests above run instead")
    prefix = private_prefix()
    try:
        r = subprocess.run([sys.executable, "-m", "topologies.run", "--topology", str(TOPO_FILE), "--no-cli",
                            "--prefix", prefix, "--grpc-base", "0", "--run-dir", str(tmp_path)],
                           cwd=REPO, capture_output=True, text=True, timeout=120)
        errors = [ln for ln in r.stderr.splitlines() if ln.startswith("error:")]
        assert r.returncode == 1 and len(errors) == 1, r.stdout + r.stderr
        assert "Linux SRv6 nodes" in errors[0] and "CONFIG_IPV6_SEG6_LWTUNNEL" in errors[0], errors
        assert "P4 switches" not in r.stdout, r.stdout  # refused before any node was made
    finally:
        assert_nothing_left(prefix, tmp_path)
