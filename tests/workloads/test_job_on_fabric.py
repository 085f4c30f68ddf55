"""A small job end to end on the Mininet fabric (embedded target, and BMv2 when on the
PATH): a ring all-reduce of 3 hosts, 2 iterations, on the sprayed transport, on the
per-flow baseline and on the RoCE baseline. Checked against the schedule worked out
here: every flow's bytes and ends, every byte verified, each flow started after the
flows it waits for arrived, the steps adding up to the iteration, each iteration
starting where the last ended, and the fabric links' counters carrying at least the
data packets of the flows that cross the spines; on RoCE each QP on the EV its
4-tuple hashes onto (CRC-32 written out here), its packets on that EV's plane."""

from __future__ import annotations

import ipaddress
import tempfile
import zlib
from pathlib import Path
from typing import Any

import pytest

from fabric.resolve import Shape, resolve
from workloads.collectives import ring_allreduce
from workloads.figures import report
from workloads.runner import JobSpec, run_job
from workloads.transports import transport

pytestmark = pytest.mark.root

SIZE = 30_001  # chunks of 10,001, 10,000 and 10,000 bytes
HOSTS = ("h1", "h3", "h2")  # h1, h2 on leaf 0, h3 on leaf 1: ring h1 -> h3 -> h2 -> h1
SHAPE = Shape(planes=2, spines=1, leaves=2, hosts_per_leaf=2)
MTU = 1000


def _run(target: str, name: str) -> tuple[dict[str, Any], dict[str, Any]]:
    from topologies.fabric_net import programmed_network

    topo = resolve(None, SHAPE).topology
    with tempfile.TemporaryDirectory(prefix="mrc-wl-test-") as tmp, \
            programmed_network(topo, prefix="mrcwt", run_dir=Path(tmp) / "run", target=target) as fn:
        spec = JobSpec(ring_allreduce(3, SIZE), HOSTS, transport(name), iterations=2, timeout=30.0)
        raw = run_job(fn, spec, Path(tmp) / "job")
        raw["addresses"] = {h: fn.address(h) for h in HOSTS}
    return report(raw, capacity_bps=8e6), raw


def _check(rep: dict[str, Any]) -> None:
    assert rep["complete"] and rep["all_verified"] and rep["errors"] == []
    flows = rep["flows"]
    # the schedule by hand: 4 steps; in step s rank r sends to r+1 a chunk of 10,001 bytes when it is chunk 0
    chunk_of = {0: [0, 1, 2], 1: [2, 0, 1], 2: [1, 2, 0], 3: [0, 1, 2]}  # step -> chunk sent by rank 0, 1, 2
    assert len(flows) == 2 * 4 * 3
    for f in flows:
        rank = HOSTS.index(f["src"])
        assert f["dst"] == HOSTS[(rank + 1) % 3]
        assert f["bytes"] == f["bytes_received"] == (10_001 if chunk_of[f["step"]][rank] == 0 else 10_000)
        assert f["verified"] and f["fct_s"] > 0
    assert rep["bytes_verified"] == rep["bytes_scheduled"] == 2 * 4 * SIZE
    assert rep["iterations_done"] == 2
    for it in rep["iterations"]:
        assert sum(it["steps_s"]) == pytest.approx(it["time_s"], abs=1e-9)
        assert all(s >= 0 for s in it["steps_s"])


def _check_raw(raw: dict[str, Any]) -> None:
    starts, ends = raw["iteration_starts"], raw["iteration_ends"]
    assert starts[1] == ends[0] and starts[0] == raw["started_at"]
    by = {(f["iteration"], f["step"], f["src"]): f for f in raw["flows"]}
    for f in raw["flows"]:
        if f["step"] > 0:  # waits for its input (from rank - 1) and its own last send
            for dep in (by[(f["iteration"], f["step"] - 1, (f["src"] - 1) % 3)],
                        by[(f["iteration"], f["step"] - 1, f["src"])]):
                assert dep["arrived"] <= f["asked"] <= f["started"]
        assert starts[f["iteration"]] <= f["started"] < f["arrived"] <= ends[f["iteration"]]
    # h1 -> h3 and h3 -> h2 cross the spines (steps of ranks 0 and 1): their data packets at least, twice each
    crossing = sum(-(-f["size"] // MTU) for f in raw["flows"] if f["src"] in (0, 1))
    assert sum(raw["link_packets"].values()) >= 2 * crossing


def _check_qps(raw: dict[str, Any]) -> None:
    """RoCE: a NIC's EVs are 4096 + k, EV k on plane k mod 2 (docs/addressing.md); a QP
    takes EV index CRC-32(source and destination address, source port, 4791) mod 64
    and sends every packet on it, so the links of its plane carry them (twice: up to
    the spine and down), whatever the other plane carries."""
    addr = raw["addresses"]
    on_plane = [0, 0]
    for f in raw["flows"]:
        key = (ipaddress.ip_address(addr[f["src_host"]]).packed + ipaddress.ip_address(addr[f["dst_host"]]).packed
               + f["source_port"].to_bytes(2, "big") + (4791).to_bytes(2, "big"))
        ev = 4096 + zlib.crc32(key) % 64
        assert f["qp_ev"] == ev and f["evs_retired"] == [] and f["qp_state"] == "complete"
        assert f["per_plane_packets"] == {str(ev % 2): f["per_plane_packets"][str(ev % 2)]}
        if f["src"] in (0, 1):  # crosses the spines
            on_plane[ev % 2] += -(-f["size"] // MTU)
    for plane in (0, 1):
        links = (f"p{plane}-leaf0:p{plane}-spine0", f"p{plane}-leaf1:p{plane}-spine0")
        assert sum(raw["link_packets"][x] for x in links) >= 2 * on_plane[plane]


@pytest.mark.parametrize("name", ["mrc", "perflow", "roce"])
def test_a_ring_allreduce_on_the_embedded_fabric(name: str) -> None:
    rep, raw = _run("embedded", name)
    _check(rep)
    _check_raw(raw)
    if name == "roce":
        _check_qps(raw)


@pytest.mark.bmv2
@pytest.mark.parametrize("name", ["mrc", "roce"])
def test_a_ring_allreduce_on_bmv2(name: str) -> None:
    rep, raw = _run("bmv2", name)
    _check(rep)
    _check_raw(raw)
    if name == "roce":
        _check_qps(raw)


def test_scenarios_a_cut_a_degraded_link_and_background_flows() -> None:
    """The all-to-all of 3 hosts with a background flow h4 -> h3 the whole time, the link
    p0-leaf0:p0-spine0 limited to 200 packets/s and the cable p1-leaf0:p1-spine0 cut
    part-way and restored: every job flow arrives verified, the background flows are not
    among them, the cut is logged down then up."""
    from topologies.fabric_net import programmed_network
    from workloads import degrade
    from workloads.collectives import alltoall
    from workloads.runner import Cut

    topo = resolve(None, SHAPE).topology
    with tempfile.TemporaryDirectory(prefix="mrc-wl-test-") as tmp, \
            programmed_network(topo, prefix="mrcwt", run_dir=Path(tmp) / "run", target="embedded") as fn:
        degrade.limit(fn, "p0-leaf0:p0-spine0", 200.0)
        assert fn.switch("p0-leaf0").extra_args == ["--queue-rate", f"{1 + 2}=200"]  # uplink: after 2 host ports
        spec = JobSpec(alltoall(3, 60_000), HOSTS, transport("mrc"), iterations=3, timeout=30.0,
                       cut=Cut("p1-leaf0:p1-spine0", 0.2, 0.3), background=(("h4", "h3"),), background_bytes=50_000)
        raw = run_job(fn, spec, Path(tmp) / "job")
        degrade.limit(fn, "p0-leaf0:p0-spine0", None)
    rep = report(raw, None)
    assert rep["complete"] and rep["all_verified"], rep["errors"]
    assert len(rep["flows"]) == 3 * 6 and {f["src"] for f in rep["flows"]} == set(HOSTS)
    assert [c["down"] for c in raw["cut"]["log"]] == [True, False]
