"""controller/guard.py: thresholds, the share limit and the hysteresis, in simulated time.

The fabric: 2 planes x 3 leaves x 2 spines, 1 host per leaf, 4 EVs per NIC (h1 on
leaf0, h2 on leaf1, h3 on leaf2). EV 0x1000 of every NIC goes over plane 0, spine 0
and EV 0x1002 over plane 0, spine 1 (EV k: plane k mod 2, spine k // 2). The events
are written by hand as senders publish them; p0-leaf0:p0-spine0 is the cut link."""

from __future__ import annotations

from typing import Any

import pytest

from controller.guard import Guard, GuardConfig
from fabric.topology import from_parameters

TOPO = from_parameters(planes=2, spines=2, leaves=3, hosts_per_leaf=1, evs_per_nic=4)
CUT = "p0-leaf0:p0-spine0"
# the switches of plane 0 spine 0 paths, by hand
HOPS = {("h1", "h2"): ["nic1", "p0-leaf0", "p0-spine0", "p0-leaf1", "nic2"],
        ("h1", "h3"): ["nic1", "p0-leaf0", "p0-spine0", "p0-leaf2", "nic3"],
        ("h2", "h1"): ["nic2", "p0-leaf1", "p0-spine0", "p0-leaf0", "nic1"],
        ("h3", "h1"): ["nic3", "p0-leaf2", "p0-spine0", "p0-leaf0", "nic1"]}
LINKS = {("h1", "h2"): ["nic1:p0-leaf0", CUT, "p0-leaf1:p0-spine0", "nic2:p0-leaf1"],
         ("h1", "h3"): ["nic1:p0-leaf0", CUT, "p0-leaf2:p0-spine0", "nic3:p0-leaf2"],
         ("h2", "h1"): ["nic2:p0-leaf1", "p0-leaf1:p0-spine0", CUT, "nic1:p0-leaf0"],
         ("h3", "h1"): ["nic3:p0-leaf2", "p0-leaf2:p0-spine0", CUT, "nic1:p0-leaf0"]}


def bad(t: float, src: str, dst: str, ev: int = 0x1000) -> dict[str, Any]:
    return {"t": t, "host": src, "peer": dst, "ev": ev, "plane": 0, "switches": HOPS[(src, dst)][1:-1],
            "links": LINKS[(src, dst)], "old": "GOOD", "new": "ASSUMED_BAD", "cause": "nack", "dropped": 0,
            "transport": "mrc"}


def test_a_link_is_denied_at_k_reports_from_two_hosts() -> None:
    g = Guard(TOPO, GuardConfig(k=3, min_hosts=2, window=10.0))
    events = [bad(100.0, "h1", "h2"), bad(100.5, "h1", "h3")]
    assert g.on_events(events, 101.0) == []  # 2 reports < K
    events.append(bad(101.0, "h1", "h2", 0x1000))
    assert g.on_events(events, 101.5) == []  # 3 reports, but all from h1
    events.append(bad(102.0, "h3", "h1"))
    [a] = g.on_events(events, 102.5)
    assert (a.action, a.link, a.t) == ("deny", CUT, 102.5)
    assert a.evidence["reports"] == 4 and a.evidence["hosts"] == ["h1", "h3"]
    assert a.evidence["contradicted"] == 0 and a.evidence["failed_paths"] == 3
    assert g.on_events(events, 103.0) == []  # denied once


def test_reports_older_than_the_window_do_not_count() -> None:
    g = Guard(TOPO, GuardConfig(k=3, min_hosts=2, window=5.0))
    events = [bad(100.0, "h1", "h2"), bad(100.0, "h2", "h1"), bad(106.0, "h1", "h3")]
    assert g.on_events(events, 106.0) == []  # the two at t=100 are 6 s old
    events.append(bad(106.5, "h3", "h1"))
    events.append(bad(107.0, "h1", "h2"))
    assert [a.link for a in g.on_events(events, 107.0)] == [CUT]


def test_given_back_after_hold_seconds_of_answered_probes() -> None:
    g = Guard(TOPO, GuardConfig(k=1, min_hosts=1, hold=5.0, tie_wait=0.0))
    events = [bad(100.0, "h1", "h2"), bad(100.0, "h1", "h3")]
    assert [a.action for a in g.on_events(events, 100.0)] == ["deny"]
    assert g.on_probe(CUT, False, 101.0) == []
    assert g.on_probe(CUT, True, 102.0) == []
    assert g.on_probe(CUT, True, 106.0) == []
    assert g.on_probe(CUT, False, 106.5) == []  # one failure: the count starts again
    for t in (107.0, 109.0, 111.0):
        assert g.on_probe(CUT, True, t) == []
    [a] = g.on_probe(CUT, True, 112.0)  # answered since 107.0: 5 s
    assert (a.action, a.evidence["answered_for_s"], a.evidence["denied_for_s"]) == ("undeny", 5.0, 12.0)
    assert CUT not in g.denied
    # the reports that led to the denial do not deny it again
    assert g.on_events(events, 112.5) == []
    # a new report does; alone, its path does not tell the cut link from its twin over
    # the same spine (h1->h2's other paths clear the NIC cables): with no time to wait
    # for counters (tie_wait 0), both are denied
    again = g.on_events([*events, bad(113.0, "h1", "h2")], 113.0)
    assert {(a.action, a.link) for a in again} == {("deny", CUT), ("deny", "p0-leaf1:p0-spine0")}


def test_never_more_than_the_share_of_a_plane() -> None:
    # plane 0 has 6 leaf-spine cables and 3 NIC cables: 12% of 9 is 1 link
    g = Guard(TOPO, GuardConfig(k=1, min_hosts=1, max_share=0.12, tie_wait=0.0))
    assert [a.action for a in g.on_events([bad(100.0, "h1", "h2"), bad(100.0, "h1", "h3")], 100.0)] == ["deny"]
    other = {"t": 101.0, "host": "h2", "peer": "h3", "ev": 0x1002, "new": "ASSUMED_BAD", "cause": "nack",
             "links": ["nic2:p0-leaf1", "p0-leaf1:p0-spine1", "p0-leaf2:p0-spine1", "nic3:p0-leaf2"]}
    # h2->h3 over spine 1 failed: its two spine cables tie, both would be denied, neither may be
    refused = g.on_events([other], 101.0)
    assert {(a.action, a.link) for a in refused} == {("refuse", "p0-leaf1:p0-spine1"), ("refuse", "p0-leaf2:p0-spine1")}
    a = refused[0]
    assert "plane 0: 1 of 9 links denied, at most 1" in a.evidence["reason"]
    assert g.on_events([other], 101.5) == []  # refused once, not again and again
    assert set(g.denied) == {CUT}
    assert a.record(dry_run=True)["kind"] == "guard"


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="K"):
        Guard(TOPO, GuardConfig(k=0))
    with pytest.raises(ValueError, match="share"):
        Guard(TOPO, GuardConfig(max_share=1.5))


def test_a_tie_waits_for_counters_then_denies_only_the_link_that_lost() -> None:
    g = Guard(TOPO, GuardConfig(k=1, min_hosts=1, tie_wait=1.0))
    twin = "p0-leaf1:p0-spine0"
    events = [bad(100.0, "h1", "h2")]  # h1 -> h2 alone: CUT and its twin tie
    assert g.on_events(events, 100.0) == []
    assert set(g.waiting) == {CUT, twin}
    # counters read: leaf0 sent 30 packets onto CUT, spine0 received none; the twin delivered all
    [a] = g.on_events(events, 100.3, {CUT: (30, 0), twin: (30, 30)})
    assert (a.action, a.link) == ("deny", CUT) and g.waiting == ()
    # later rounds see the tie again (no traffic crosses CUT now): the denied link settles it
    assert g.on_events(events, 101.5) == [] and set(g.denied) == {CUT}


def test_a_tie_no_counter_breaks_denies_all_its_links_after_the_wait() -> None:
    g = Guard(TOPO, GuardConfig(k=1, min_hosts=1, tie_wait=1.0))
    events = [bad(100.0, "h1", "h2")]
    assert g.on_events(events, 100.0) == []
    assert g.on_events(events, 100.6) == []
    assert {a.link for a in g.on_events(events, 101.0)} == {CUT, "p0-leaf1:p0-spine0"}
