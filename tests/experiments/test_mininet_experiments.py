"""The five experiments end to end on one small Mininet fabric (embedded target), with
small transfers: each asserts the experiment's outcome from the switches' counters,
the endpoints' reports and their exit statuses (every byte verified).

The network (4 planes x (2 leaves + 2 spines), 2 hosts per leaf: 20 switches) is
started once for the module under a private prefix; each test puts back what it
changes (a cut link, shaped leaves, trimming off, netem qdiscs); the module's teardown
checks that nothing of the prefix is left.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.experiments.outcomes import (
    assert_cut_cable_outcome,
    assert_loss_reordering_outcome,
    assert_spraying_outcome,
    assert_tcp_outcome,
    assert_trimming_outcome,
    run_counting_planes,
    run_watching_the_cut,
)
from tests.experiments.roce_outcomes import (
    assert_adaptive_roce,
    assert_loss_roce,
    assert_roce_reported,
    assert_spraying_roce,
)
from tests.mininet.fast_path import assert_compiled_fast_path

pytestmark = pytest.mark.root


def test_the_switches_run_the_compiled_fast_path(fabric) -> None:
    assert_compiled_fast_path(fabric)


def test_spraying_balances_planes_and_spine_links_and_per_flow_does_not(fabric, tmp_path: Path) -> None:
    from experiments import spraying

    # 800,000 bytes in 1,000-byte payloads: 800 packets over 4 planes x 2 spines
    d = run_counting_planes(fabric, "h1", lambda: spraying.run(fabric, tmp_path, nbytes=800_000, rate=4000))
    assert_spraying_outcome(d, 800, planes=4, spines=2)
    assert_spraying_roce(fabric, d, 800)


def test_a_cut_cable_retires_exactly_the_crossing_evs_and_writes_no_table(fabric, tmp_path: Path) -> None:
    from experiments import failure

    # One link x one seed here (the experiment runs 3 x 3), and one run without a cut;
    # every table read by the test before, during the cut and after.
    link = "p0-leaf0:p0-spine0"
    d = run_watching_the_cut(fabric, link, lambda: failure.run_all(
        fabric, tmp_path, links=(link,), seeds=(1,), nbytes=4_000_000, rate=4000, cut_at=0.25, down_for=0.4))
    # 64 EVs over 8 (plane, spine) paths, EV k on plane k mod 4 and spine k div 4 mod 2
    # (fabric/plan.py): the 8 EVs k = 0, 8, 16, ... cross plane 0's spine 0.
    assert_cut_cable_outcome(fabric, d, [0x1000 + 8 * k for k in range(8)], "nic1 > p0-leaf0 > p0-spine0 > p0-leaf1")
    assert_roce_reported(d["roce"][0]["qp"], 4_000_000)  # the baseline's QP on the same cut (test_roce_failure.py)


def test_trimming_on_against_off_in_an_incast(fabric, tmp_path: Path) -> None:
    from experiments import trimming

    # 3 x 1,500 packets/s into 4 x 500: the queues (64 packets each) overflow within 0.1 s.
    d = trimming.run(fabric, tmp_path, nbytes=500_000, rate=1500, port_rate=500)
    assert_trimming_outcome(fabric, d)


def test_loss_and_reordering_on_fabric_links(fabric, tmp_path: Path) -> None:
    """2% random loss on plane 0's uplinks, a delaying queue on plane 1's: every byte
    still verified; the impairments really dropped and delayed packets; all removed."""
    from experiments import loss_reordering as L

    d = L.run(fabric, tmp_path, nbytes=1_500_000, rate=3000, loss=2.0, delay_ms=5.0, jitter_ms=4.0)
    assert_loss_reordering_outcome(d)
    assert_loss_roce(fabric, d)


def test_mrc_and_tcp_goodput_between_the_same_hosts(fabric, tmp_path: Path) -> None:
    from experiments import tcp

    assert_tcp_outcome(tcp.run(fabric, tmp_path, nbytes=2_000_000, rate=4000), 2_000_000)


def test_adaptive_spraying_puts_less_on_a_slow_path_than_round_robin(fabric, tmp_path: Path) -> None:
    from experiments import adaptive

    # 4,000 packets over 8 paths at 4,000 packets/s; p0-leaf0's uplink to p0-spine0
    # drains a quarter of its round-robin share (125 packets/s) and marks CE above 2
    # packets. Round robin needs the slow port for 1 packet in 8: 500 packets at 125/s,
    # 4 s, twice the paced 1 s. Adaptive's cost is a tail of about one slow queue
    # (64 packets) and its recovery, the same whatever the size: the transfer is large
    # enough that the difference (seconds) dwarfs a loaded machine's noise (tenths).
    packets = 4000
    # the RoCE QP's one path is the slow port (125 packets/s): 200 packets of it
    d = adaptive.run(fabric, tmp_path, nbytes=packets * 1000, rate=4000, roce_bytes=200_000)
    rr, ad = d["rr"], d["adaptive"]
    assert rr["ok"] and ad["ok"], (rr["summary"], ad["summary"])
    assert rr["slow_port_packets"] >= packets // 8  # one packet in 8 (plus OPENs)
    assert rr["slow_port_ce_marked"] > 0 and rr["ce_echoes"] > 0
    assert 2 * ad["slow_port_packets"] <= rr["slow_port_packets"], (ad["slow_port_packets"], rr["slow_port_packets"])
    assert ad["completion_time_s"] < rr["completion_time_s"]
    assert_adaptive_roce(fabric, d)
    # put back: the leaf unshaped, no ECN entry left (nothing to write)
    from topologies.fabric_net import install_tables

    assert fabric.switch(adaptive.LEAF).extra_args == [] and install_tables(fabric).writes == 0
