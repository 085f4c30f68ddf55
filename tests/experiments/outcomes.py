"""What an experiment's run must show, asserted the same way on every target.

Why one place: the experiments run on the embedded target and on BMv2 (sized
smaller there, never asserted less); each test says the run's size and the values it
expects from first principles (which EVs cross a cut cable), and calls these.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.observe import CutWatch, link_ends, read_counters, read_tables


def run_watching_the_cut(fabric: Any, link: str, run: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """``run()``, an experiment that cuts ``link``'s cable, with the test's own reads:
    every table of every switch (fabric and NICs) before, while the cable is cut (as
    the kernel says: ``observe.CutWatch``) and after the restore, each the same as
    before. What ``run()`` returned."""
    switches = fabric.inventory.switches
    before = read_tables(switches)
    watch = CutWatch(switches, link_ends(fabric, link)).start()
    d = run()
    watch.join().check(before)
    assert read_tables(switches) == before, "tables changed after the restore"
    return d


def run_counting_planes(fabric: Any, src: str, run: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """``run()``, the spraying experiment from ``src``, with the test's own reads of
    ``src``'s NIC counters before and after: the packets it sent into each plane
    (``NicEgress.plane_tx``) are the experiment's three flows' counts together (MRC-lite,
    the per-flow plain flow, the RoCE baseline's QP). What ``run()`` returned."""
    nic = fabric.topo.host(src).nic
    switch = {nic: fabric.inventory.switches[nic]}
    before = read_counters(switch)[nic].get("NicEgress.plane_tx", {})
    d = run()
    after = read_counters(switch)[nic].get("NicEgress.plane_tx", {})
    own = {p: after.get(p, (0, 0))[0] - before.get(p, (0, 0))[0] for p in range(fabric.topo.planes)}
    flows = [d[k]["planes"] for k in ("mrc", "per_flow", "roce")]
    reported = {p: sum(int(f.get(p, f.get(str(p), 0))) for f in flows) for p in range(fabric.topo.planes)}
    assert own == reported, (own, reported)
    return d


def assert_cut_cable_outcome(fabric: Any, d: dict[str, Any], crossing: list[int], path: str) -> None:
    """``failure.run_all`` of one link x one seed: both runs verified, exactly the
    ``crossing`` EVs (each on ``path``) retired while the cable was down, each
    recovered after the restore, in that order; nothing retired without a cut. (That
    no table was written is ``run_watching_the_cut``'s to see.)"""
    (r,) = d["runs"]
    base = d["no_cut"]
    seen = [(round(e["t"], 2), e["event"], e["cause"], e["path"]) for e in r["ev_events"]]
    why = (r["summary"], f"srtt {r['srtt_s']}, cut {r['cut_t']}, restore {r['restore_t']}", seen)
    for x in (r, base):
        assert x["ok"], x["summary"]
        assert x["received_file_matches"], "the received file is the data generated for the run"
    assert r["evs_crossing"] == crossing
    assert r["retired_not_crossing"] == [], why  # no healthy EV retired
    assert r["crossing_not_retired"] == [], why  # every crossing EV retired while the cable was down
    assert r["recovered_while_down"] == [], why
    assert r["crossing_recovered_after_restore"] == r["evs_crossing"], why
    assert base["evs_retired"] == [] and base["ev_events"] == [], base["ev_events"]
    # In order: cut, the last crossing EV retired, restore, the last recovery, the end.
    assert 0 < r["cut_t"] < r["cut_t"] + r["cut_to_last_crossing_retired_s"] < r["restore_t"]
    assert r["restore_t"] + r["restore_to_last_recovery_s"] < r["completion_time_s"]
    assert r["cut_to_last_crossing_retired_rtts"] > 0
    n = len(crossing)
    assert [(e["event"], e["cause"]) for e in r["ev_events"]] == [("retired", "nack")] * n + [("recovered", "probe")] * n
    assert all(e["path"].startswith(path) for e in r["ev_events"])
    assert d["healthy_retired"] == d["recovered_while_down"] == d["no_cut_retired"] == 0
    assert fabric.reload_inventory().down == []  # restored


def assert_trimming_outcome(fabric: Any, d: dict[str, Any]) -> None:
    """``trimming.run``: both incasts verified; with trimming on, every packet the
    leaves trimmed reached the receiver trimmed, each one not already placed was NACKed
    at once and every trim NACK reached its sender (late ones counted); with it off nothing trimmed; the
    leaves unshaped and the entries back after."""
    from experiments import trimming
    from topologies.fabric_net import install_tables

    on, off = d["trim_on"], d["trim_off"]
    assert on["ok"] and off["ok"], (on["summaries"], off["summaries"])
    assert on["trimmed"] > 0
    assert on["trimmed_at_receiver"] == on["trimmed"]
    assert on["trim_nacks_sent"] + on["trimmed_duplicates_at_receiver"] == on["trimmed"]
    # every trim NACK reached its sender, during the transfer or after its verdict
    assert on["trim_nacks_received"] + on["trim_nacks_late"] == on["trim_nacks_sent"], \
        {k: v for k, v in on.items() if k != "delivered_series"}
    assert 0 < on["retransmissions"]["trim_nack"] <= on["trim_nacks_received"]
    # Without trimming nothing is trimmed (what the full queues drop instead depends on
    # how fast the Python senders get going on shared cores: reported, not asserted).
    assert off["trimmed"] == off["trimmed_at_receiver"] == off["trim_nacks_sent"] == 0
    assert off["retransmissions"]["trim_nack"] == 0 and d["trim_off_entries_written"] > 0
    # put back: leaves unshaped, trim_config installed again (nothing left to write)
    assert fabric.topo.trim_threshold == d["trim_threshold"] and install_tables(fabric).writes == 0
    assert all(fabric.switch(n).extra_args == [] for n in trimming.shaped_leaves(fabric, d["dst"])[0])


def assert_spraying_outcome(d: dict[str, Any], packets: int, planes: int, spines: int) -> None:
    """``spraying.run`` of ``packets`` data packets: MRC-lite's packets over every plane
    and every spine link within 10% of the mean (its EVs interleave planes and spines);
    the plain UDP flow on one member of the NIC's selector, so one plane and one spine
    link: its spread (largest distance from the mean over the mean) is exactly that of
    everything on one of ``planes``, ``planes - 1``."""
    import pytest

    m, f = d["mrc"], d["per_flow"]
    assert m["ok"] and f["ok"], (m["summary"], f["summary"])
    assert sum(m["planes"].values()) >= packets and len(m["planes"]) == planes
    for key in ("planes", "spine_up", "spine_down"):
        mean = sum(m[key].values()) / len(m[key])
        assert all(abs(v - mean) <= 0.1 * mean for v in m[key].values()), (key, m[key])
    assert len(m["spine_up"]) == len(m["spine_down"]) == planes * spines
    assert sorted(f["planes"].values())[:planes - 1] == [0] * (planes - 1) and max(f["planes"].values()) >= packets
    assert sum(1 for v in f["spine_up"].values() if v) == 1
    assert f["plane_spread"] == pytest.approx(planes - 1) and m["plane_spread"] <= 0.1


def assert_loss_reordering_outcome(d: dict[str, Any]) -> None:
    """``loss_reordering.run``: every byte verified with and without the impairments,
    which really dropped (plane 0) and delayed (plane 1) packets; resends and
    out-of-order arrivals seen; the links' queues as they were after."""
    import subprocess

    from experiments import loss_reordering as L

    assert d["ok"], d["summary"]
    assert d["baseline"]["ok"]
    assert d["impairment_dropped"] > 0 and d["impairment_delayed"] > 0, d
    assert d["per_plane"]["0"]["losses"] > 0 and d["retransmissions"]["total"] > 0
    assert d["receiver_counts"].get("out_of_order", 0) > 0
    for intf in d["lossy_links"] + d["reordering_links"]:
        assert set(L.qdisc_kinds(intf)) <= {"noqueue", "pfifo_fast", "fq_codel", "mq", ""}, intf
    if d["method"] != "netem":
        assert d["nft_table"] not in subprocess.run(["nft", "list", "tables"], capture_output=True, text=True).stdout


def assert_tcp_outcome(d: dict[str, Any], nbytes: int) -> None:
    """``tcp.run`` of ``nbytes``: both transfers complete, each above 1 Mb/s; the TCP
    sender's own report (bytes, the CPU it used) comes back with the receiver's."""
    assert d["mrc"]["ok"], d["mrc"]["summary"]
    assert d["tcp"]["ok"] and d["tcp"]["bytes"] == nbytes, d["tcp"]
    assert d["tcp"]["sender"]["bytes"] == nbytes and d["tcp"]["sender"]["cpu_s"] > 0, d["tcp"]
    assert d["mrc"]["goodput_bps"] > 1e6 and d["tcp"]["goodput_bps"] > 1e6


def assert_ecmp_outcome(fabric: Any, d: dict[str, Any]) -> None:
    """``ecmp.run`` over leaf 0's 8 limited uplinks: every byte of every flow both ways;
    spraying's slowest flow within 1.25x of its mean and sooner than hashing's slowest;
    the hashed flows on at most one uplink each, spraying on all; put back after."""
    from experiments import ecmp
    from topologies.fabric_net import install_tables

    f, s = d["per_flow"], d["spraying"]
    assert f["ok"] and s["ok"], (f["summaries"], s["summaries"])
    assert f["received_files_match"] and s["received_files_match"]
    assert d["limited_uplinks"] == 8
    assert f["uplinks_used"] <= 4 and s["uplinks_used"] == 8, (f["uplink_packets"], s["uplink_packets"])
    assert s["slowest_over_mean"] <= 1.25, s["completion_s"]
    assert s["slowest_s"] < f["slowest_s"], (s["completion_s"], f["completion_s"])
    assert all(fabric.switch(n).extra_args == [] for n in ecmp.uplinks(fabric))
    assert install_tables(fabric).writes == 0
