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

from tests.mininet.net_prefix import assert_nothing_left

pytestmark = pytest.mark.root
pytest.importorskip("mininet.net")

from experiments import common as C  # noqa: E402


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


def test_a_cut_spine_link_is_survived_without_a_fabric_write(fabric, tmp_path: Path) -> None:
    from experiments import failure

    d = failure.run(fabric, tmp_path, nbytes=4_000_000, rate=4000, cut_after=0.6)
    assert d["ok"], d["summary"]
    assert d["fabric_tables_unchanged"] and d["fabric_entries"] > 0
    assert d["repair"]["nics_changed"], "the NICs were rewritten"
    assert 0 < d["cut_t"] < d["completion_time_s"], "the cut fell inside the transfer"
    assert d["evs_crossing"] == 8  # 64 EVs over 8 (plane, spine) paths
    assert d["cut_to_first_retirement_s"] is not None and 0 <= d["cut_to_first_retirement_s"] < 1.0
    assert d["back_to_90pct_s"] is not None and d["goodput_before_bps"] > 0
    assert fabric.reload_inventory().down == []  # restored


def test_trimming_on_against_off_in_an_incast(fabric, tmp_path: Path) -> None:
    from experiments import trimming

    # 3 x 1,500 packets/s into 4 x 500: the queues (64 packets each) overflow within 0.1 s.
    # Every attempt must deliver every byte, trim only with trimming on and retransmit
    # trimmed packets on their trim NACKs. That trimming also loses fewer packets and
    # retires fewer paths is a comparison of two runs of a few hundred packets each on
    # shared cores, and about one run in fifteen falls into another regime (on the
    # project machine, 2 of 46 trimming-on runs retired 100-150 paths early and lost
    # 110-175 packets, the others 0-40; once in CI a trimming-off run lost only 33):
    # so the comparison may take a second attempt, and must hold in it.
    for attempt in (1, 2):
        d = trimming.run(fabric, tmp_path / f"attempt{attempt}", nbytes=500_000, rate=1500, port_rate=500)
        on, off = d["trim_on"], d["trim_off"]
        assert on["ok"] and off["ok"], (on["summaries"], off["summaries"])
        assert on["trimmed"] > 0 and on["trimmed_at_receiver"] > 0
        assert on["retransmissions"]["trim_nack"] > 0, "trim NACKs cause retransmissions"
        assert off["trimmed"] == 0 and off["retransmissions"]["trim_nack"] == 0 and d["trim_off_entries_written"] > 0
        # without trimming the full queue drops: losses found by NACKs and timeouts, paths retired
        lost = {k: r["retransmissions"]["nack"] + r["retransmissions"]["timeout"] for k, r in (("on", on), ("off", off))}
        compared = lost["off"] > 0 and lost["on"] < lost["off"] and on["evs_retired"] < off["evs_retired"]
        if compared or attempt == 2:
            break
        print(f"attempt 1: lost {lost}, EVs retired on {on['evs_retired']} off {off['evs_retired']}; again")
    assert lost["off"] > 0 and lost["on"] < lost["off"], lost
    assert on["evs_retired"] < off["evs_retired"], (on["evs_retired"], off["evs_retired"])
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
