"""The five experiments end to end on one small Mininet fabric (embedded target), with
small transfers: each asserts the experiment's outcome from the switches' counters,
the endpoints' reports and their exit statuses (every byte verified).

The network (4 planes x (2 leaves + 2 spines), 2 hosts per leaf: 20 switches) is
started once for the module under a private prefix; each test puts back what it
changes (a cut link, shaped leaves, trimming off, netem qdiscs); the module's teardown
checks that nothing of the prefix is left.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from experiments import common as C
from tests.mininet.fast_path import assert_compiled_fast_path
from tests.mininet.net_prefix import assert_nothing_left

pytestmark = pytest.mark.root


@pytest.fixture(scope="module")
def fabric(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    if os.geteuid() != 0:
        pytest.skip("needs root (network namespaces, veths, Mininet): run `make test` as root")
    prefix = C.private_prefix()
    run_dir = tmp_path_factory.mktemp("exp-run")
    try:
        with C.programmed_fabric(C.topology(), prefix, run_dir) as fn:
            yield fn
    finally:
        assert_nothing_left(prefix, run_dir)


def test_the_switches_run_the_compiled_fast_path(fabric) -> None:
    assert_compiled_fast_path(fabric)


def test_spraying_balances_planes_and_spine_links_and_per_flow_does_not(fabric, tmp_path: Path) -> None:
    from experiments import spraying

    d = spraying.run(fabric, tmp_path, nbytes=800_000, rate=4000)
    m, f = d["mrc"], d["per_flow"]
    assert m["ok"] and f["ok"], (m["summary"], f["summary"])
    packets = 800  # 800,000 bytes in 1,000-byte payloads
    assert sum(m["planes"].values()) >= packets and len(m["planes"]) == 4
    for key in ("planes", "spine_up", "spine_down"):
        mean = sum(m[key].values()) / len(m[key])
        assert all(abs(v - mean) <= 0.1 * mean for v in m[key].values()), (key, m[key])
    assert len(m["spine_up"]) == 8 and len(m["spine_down"]) == 8  # 4 planes x 2 spines
    # one flow, one member of the NIC's selector: one plane and one spine link carry it all
    assert sorted(f["planes"].values())[:3] == [0, 0, 0] and max(f["planes"].values()) >= packets
    assert sum(1 for v in f["spine_up"].values() if v) == 1
    assert f["plane_spread"] > 1.0 > 0.1 >= m["plane_spread"]


def test_a_cut_cable_retires_exactly_the_crossing_evs_and_writes_no_table(fabric, tmp_path: Path) -> None:
    from experiments import failure

    # One link x one seed here (the experiment runs 3 x 3), and one run without a cut.
    d = failure.run_all(fabric, tmp_path, links=("p0-leaf0:p0-spine0",), seeds=(1,), nbytes=4_000_000,
                        rate=4000, cut_at=0.25, down_for=0.4)
    (r,) = d["runs"]
    base = d["no_cut"]
    for x in (r, base):
        assert x["ok"], x["summary"]
        assert x["received_file_matches"], "the received file is the data generated for the run"
        assert x["tables_unchanged"] and x["table_entries"] > 0  # fabric and NICs read back
    # 64 EVs over 8 (plane, spine) paths: the 8 EVs k = 0, 8, 16, ... (plane 0, spine 0).
    assert r["evs_crossing"] == [0x1000 + 8 * k for k in range(8)]
    assert r["retired_not_crossing"] == []  # no healthy EV retired
    assert r["crossing_not_retired"] == []  # every crossing EV retired while the cable was down
    assert r["recovered_while_down"] == []
    assert r["crossing_recovered_after_restore"] == r["evs_crossing"]
    assert base["evs_retired"] == [] and base["ev_events"] == []
    # In order: cut, the last crossing EV retired, restore, the last recovery, the end.
    assert 0 < r["cut_t"] < r["cut_t"] + r["cut_to_last_crossing_retired_s"] < r["restore_t"]
    assert r["restore_t"] + r["restore_to_last_recovery_s"] < r["completion_time_s"]
    assert r["cut_to_last_crossing_retired_rtts"] > 0
    assert [(e["event"], e["cause"]) for e in r["ev_events"]] == [("retired", "nack")] * 8 + [("recovered", "probe")] * 8
    assert all(e["path"].startswith("nic1 > p0-leaf0 > p0-spine0 > p0-leaf1") for e in r["ev_events"])
    assert d["healthy_retired"] == d["recovered_while_down"] == d["no_cut_retired"] == 0
    assert fabric.reload_inventory().down == []  # restored


def test_trimming_on_against_off_in_an_incast(fabric, tmp_path: Path) -> None:
    from experiments import trimming

    # 3 x 1,500 packets/s into 4 x 500: the queues (64 packets each) overflow within 0.1 s.
    d = trimming.run(fabric, tmp_path, nbytes=500_000, rate=1500, port_rate=500)
    on, off = d["trim_on"], d["trim_off"]
    assert on["ok"] and off["ok"], (on["summaries"], off["summaries"])
    # Every packet the leaves trimmed reached the receiver as a trimmed packet; each one
    # not already placed was NACKed at once, and every trim NACK reached its sender.
    assert on["trimmed"] > 0
    assert on["trimmed_at_receiver"] == on["trimmed"]
    assert on["trim_nacks_sent"] + on["trimmed_duplicates_at_receiver"] == on["trimmed"]
    assert on["trim_nacks_received"] == on["trim_nacks_sent"]
    assert 0 < on["retransmissions"]["trim_nack"] <= on["trim_nacks_received"]
    # Without trimming nothing is trimmed (what the full queues drop instead depends on
    # how fast the Python senders get going on shared cores: reported, not asserted).
    assert off["trimmed"] == off["trimmed_at_receiver"] == off["trim_nacks_sent"] == 0
    assert off["retransmissions"]["trim_nack"] == 0 and d["trim_off_entries_written"] > 0
    # put back: leaves unshaped, trim_config installed again (nothing left to write)
    from topologies.fabric_net import install_tables

    assert fabric.topo.trim_threshold == d["trim_threshold"] and install_tables(fabric).writes == 0
    assert all(fabric.switch(n).extra_args == [] for n in trimming.shaped_leaves(fabric, "h3")[0])


def test_loss_and_reordering_on_fabric_links(fabric, tmp_path: Path) -> None:
    """2% random loss on plane 0's uplinks, a delaying queue on plane 1's: every byte
    still verified; the impairments really dropped and delayed packets; all removed."""
    from experiments import loss_reordering as L

    d = L.run(fabric, tmp_path, nbytes=1_500_000, rate=3000, loss=2.0, delay_ms=5.0, jitter_ms=4.0)
    assert d["ok"], d["summary"]
    assert d["baseline"]["ok"]
    assert d["impairment_dropped"] > 0 and d["impairment_delayed"] > 0, d
    assert d["per_plane"]["0"]["losses"] > 0 and d["retransmissions"]["total"] > 0
    assert d["receiver_counts"].get("out_of_order", 0) > 0
    for intf in d["lossy_links"] + d["reordering_links"]:
        assert set(L.qdisc_kinds(intf)) <= {"noqueue", "pfifo_fast", "fq_codel", "mq", ""}, intf
    if d["method"] != "netem":
        assert d["nft_table"] not in subprocess.run(["nft", "list", "tables"], capture_output=True, text=True).stdout


def test_mrc_and_tcp_goodput_between_the_same_hosts(fabric, tmp_path: Path) -> None:
    from experiments import tcp

    d = tcp.run(fabric, tmp_path, nbytes=2_000_000, rate=4000)
    assert d["mrc"]["ok"], d["mrc"]["summary"]
    assert d["tcp"]["ok"] and d["tcp"]["bytes"] == 2_000_000, d["tcp"]
    assert d["mrc"]["goodput_bps"] > 1e6 and d["tcp"]["goodput_bps"] > 1e6


def test_adaptive_spraying_puts_less_on_a_slow_path_than_round_robin(fabric, tmp_path: Path) -> None:
    from experiments import adaptive

    # 4,000 packets over 8 paths at 4,000 packets/s; p0-leaf0's uplink to p0-spine0
    # drains a quarter of its round-robin share (125 packets/s) and marks CE above 2
    # packets. Round robin needs the slow port for 1 packet in 8: 500 packets at 125/s,
    # 4 s, twice the paced 1 s. Adaptive's cost is a tail of about one slow queue
    # (64 packets) and its recovery, the same whatever the size: the transfer is large
    # enough that the difference (seconds) dwarfs a loaded machine's noise (tenths).
    packets = 4000
    d = adaptive.run(fabric, tmp_path, nbytes=packets * 1000, rate=4000)
    rr, ad = d["rr"], d["adaptive"]
    assert rr["ok"] and ad["ok"], (rr["summary"], ad["summary"])
    assert rr["slow_port_packets"] >= packets // 8  # one packet in 8 (plus OPENs)
    assert rr["slow_port_ce_marked"] > 0 and rr["ce_echoes"] > 0
    assert 2 * ad["slow_port_packets"] <= rr["slow_port_packets"], (ad["slow_port_packets"], rr["slow_port_packets"])
    assert ad["completion_time_s"] < rr["completion_time_s"]
    # put back: the leaf unshaped, no ECN entry left (nothing to write)
    from topologies.fabric_net import install_tables

    assert fabric.switch(adaptive.LEAF).extra_args == [] and install_tables(fabric).writes == 0
