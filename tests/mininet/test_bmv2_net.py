"""The product on real BMv2: the fabric in Mininet with ``simple_switch_grpc`` switches.

One small network (2 planes x (2 leaves + 1 spine), 1 host per leaf: 4 leaves, 2
spines, 2 NICs, 2 hosts, each switch a ``simple_switch_grpc`` process running
p4c-bm2-ss's JSON) is started for the module under a private node prefix, programmed
by the controller, and shared by the tests in order: pings, checksums as the
receiving host sees them, an MRC-lite transfer, per-plane counters, ``mrcctl``'s
reconcile (a second run writes nothing; a killed switch gets its pipeline and entries
back), ``fail``/``restore``. Skipped without BMv2 on the PATH (``bmv2`` marker).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from controller.topology import from_parameters
from tests.mininet.net_prefix import assert_nothing_left, private_prefix

pytestmark = [pytest.mark.root, pytest.mark.bmv2]
pytest.importorskip("mininet.net")

from topologies.fabric_net import FabricNetwork, install_tables, programmed_network  # noqa: E402

SHAPE = dict(planes=2, spines=1, leaves=2, hosts_per_leaf=1)
REPO = Path(__file__).resolve().parents[2]
MRCCTL = REPO / ".venv" / "bin" / "mrcctl"


@pytest.fixture(scope="module")
def fabric(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FabricNetwork]:
    if os.geteuid() != 0:
        pytest.skip("needs root (network namespaces, veths, Mininet): run `make test` as root")
    prefix = private_prefix()
    run_dir = tmp_path_factory.mktemp("bmv2-run")
    try:
        with programmed_network(from_parameters(**SHAPE), prefix=prefix, run_dir=run_dir, target="bmv2") as fn:
            yield fn
    finally:
        assert_nothing_left(prefix, run_dir)


def test_every_switch_is_bmv2_and_every_pair_pings(fabric: FabricNetwork) -> None:
    from topologies.demo import ping_matrix

    assert {sw.target for sw in fabric.p4_switches()} == {"bmv2"}
    assert all(Path(sw.command()[0]).name == "simple_switch_grpc" for sw in fabric.p4_switches())
    matrix = ping_matrix(fabric, count=2)
    assert sorted(matrix) == [("h1", "h2"), ("h2", "h1")]
    assert all(r.ok for r in matrix.values()), [r.summary() for r in matrix.values()]


def test_packets_arrive_at_the_receiving_host_with_correct_checksums(fabric: FabricNetwork) -> None:
    from tests.mininet.host_capture import checksums_ok, exchange

    got = exchange(fabric.host("h1"), fabric.host("h2"), fabric.address("h1"), fabric.address("h2"))
    kinds = [checksums_ok(f) for f in got["frames"]]
    assert {k for k, _ in kinds} == {"UDP", "TCP"}, kinds
    assert all(ok for _, ok in kinds), kinds
    assert got["udp"] == "udp checksum probe " * 20 and got["tcp"] == "tcp checksum probe " * 20 + "END"


def test_an_mrc_lite_transfer_verifies_every_byte_over_both_planes(fabric: FabricNetwork, tmp_path: Path) -> None:
    from controller.counters import delta, read_all
    from topologies.transfer import run_transfer

    nics = [fabric.inventory.switches[n] for n in ("nic1", "nic2")]
    before = asyncio.run(read_all(nics))
    res = run_transfer(fabric, "h1", "h2", 200_000, tmp_path, send_args=["--rate", "500"], timeout=60)
    assert res.ok, res.summary()
    sent = res.sender["packets_sent"]
    diff = delta(asyncio.run(read_all(nics)), before)
    tx = {p: v[0] for p, v in diff["nic1"]["NicEgress.plane_tx"].items()}
    # the sender's data packets and probes all leave h1 through nic1 into the two planes
    assert sum(tx.values()) >= sent and min(tx.values()) > 0.3 * sum(tx.values()), tx
