"""fabric/locate.py: the broken link from failed and working paths written by hand.

The paths are written out as cable lists (what fabric/paths.py gives for the
fabrics named in each test); the expected link is the one the test cut by hand."""

from __future__ import annotations

from fabric.locate import Observation, counter_loss, from_events, locate
from fabric.topology import from_parameters


def path(*links: str, ok: bool, what: str = "") -> Observation:
    return Observation(frozenset(links), ok, what or " ".join(links))


# Three leaves, one plane, two spines: h1 on leaf0, h2 on leaf1, h3 on leaf2.
H1_H2_S0 = ("nic1:p0-leaf0", "p0-leaf0:p0-spine0", "p0-leaf1:p0-spine0", "nic2:p0-leaf1")
H1_H2_S1 = ("nic1:p0-leaf0", "p0-leaf0:p0-spine1", "p0-leaf1:p0-spine1", "nic2:p0-leaf1")
H1_H3_S0 = ("nic1:p0-leaf0", "p0-leaf0:p0-spine0", "p0-leaf2:p0-spine0", "nic3:p0-leaf2")
H1_H3_S1 = ("nic1:p0-leaf0", "p0-leaf0:p0-spine1", "p0-leaf2:p0-spine1", "nic3:p0-leaf2")
H2_H3_S0 = ("nic2:p0-leaf1", "p0-leaf1:p0-spine0", "p0-leaf2:p0-spine0", "nic3:p0-leaf2")
H2_H3_S1 = ("nic2:p0-leaf1", "p0-leaf1:p0-spine1", "p0-leaf2:p0-spine1", "nic3:p0-leaf2")


def test_one_cut_link_is_named_exactly() -> None:
    # p0-leaf0:p0-spine0 cut: every path over it fails, every other works.
    obs = [path(*H1_H2_S0, ok=False), path(*H1_H3_S0, ok=False), path(*H1_H2_S1, ok=True),
           path(*H1_H3_S1, ok=True), path(*H2_H3_S0, ok=True), path(*H2_H3_S1, ok=True)]
    v = locate(obs)
    assert v.exact == "p0-leaf0:p0-spine0"
    assert v.cover == ("p0-leaf0:p0-spine0",)
    assert v.failed == 2 and v.working == 4 and v.unexplained == ()
    top = v.ranked[0]
    assert top.link == "p0-leaf0:p0-spine0" and len(top.explains) == 2 and top.contradicted == ()
    # the other links of the failed paths are each contradicted by a working path
    assert {s.link for s in v.ranked[1:]} == {"nic1:p0-leaf0", "p0-leaf1:p0-spine0", "nic2:p0-leaf1",
                                               "p0-leaf2:p0-spine0", "nic3:p0-leaf2"}
    assert all(s.contradicted for s in v.ranked[1:])


def test_a_far_end_link_is_told_from_the_near_one() -> None:
    # p0-leaf2:p0-spine0 cut: h1->h3 and h2->h3 over spine0 fail, h1->h2 over spine0 works.
    obs = [path(*H1_H2_S0, ok=True), path(*H1_H3_S0, ok=False), path(*H2_H3_S0, ok=False),
           path(*H1_H3_S1, ok=True), path(*H2_H3_S1, ok=True)]
    assert locate(obs).exact == "p0-leaf2:p0-spine0"


def test_two_leaves_tie_the_spine_links_and_counters_break_the_tie() -> None:
    # Two leaves: every path over spine0 crosses both of its links.
    a = ("nic1:p0-leaf0", "p0-leaf0:p0-spine0", "p0-leaf1:p0-spine0", "nic3:p0-leaf1")
    b = ("nic1:p0-leaf0", "p0-leaf0:p0-spine1", "p0-leaf1:p0-spine1", "nic3:p0-leaf1")
    obs = [path(*a, ok=False), path(*b, ok=True)]
    v = locate(obs)
    assert v.exact is None
    assert set(v.tied) == {"p0-leaf0:p0-spine0", "p0-leaf1:p0-spine0"}
    assert {s.link for s in v.ranked[:2]} == set(v.tied)
    # leaf0 sent 40 packets onto its cable to spine0 and spine0 received none of them;
    # the twin cable delivered all it was given.
    loss = {"p0-leaf0:p0-spine0": (40, 0), "p0-leaf1:p0-spine0": (40, 40)}
    v = locate(obs, loss)
    assert v.exact == "p0-leaf0:p0-spine0"
    assert v.ranked[0].link == "p0-leaf0:p0-spine0" and v.ranked[0].lost == 40


def test_counter_loss_takes_the_direction_that_lost() -> None:
    assert counter_loss(10, 10, 25, 0) == (25, 0)
    assert counter_loss(30, 2, 5, 5) == (30, 2)


def test_two_cut_links_are_both_in_the_cover() -> None:
    # p0-leaf0:p0-spine0 and p0-leaf2:p0-spine1 both cut.
    obs = [path(*H1_H2_S0, ok=False), path(*H1_H3_S0, ok=False), path(*H1_H2_S1, ok=True),
           path(*H1_H3_S1, ok=False), path(*H2_H3_S0, ok=True), path(*H2_H3_S1, ok=False)]
    v = locate(obs)
    assert set(v.cover) == {"p0-leaf0:p0-spine0", "p0-leaf2:p0-spine1"}
    assert {s.link for s in v.ranked[:2]} == {"p0-leaf0:p0-spine0", "p0-leaf2:p0-spine1"}
    assert v.exact is None  # no one link explains all four failures
    assert v.unexplained == ()


def test_nothing_failed_names_nothing() -> None:
    v = locate([path(*H1_H2_S0, ok=True)])
    assert v.exact is None and v.cover == () and v.ranked == ()


def test_events_become_paths_of_the_model() -> None:
    topo = from_parameters(planes=2, spines=2, leaves=2, hosts_per_leaf=1, evs_per_nic=4)
    # h1 (leaf0) -> h2 (leaf1): EVs 0x1000..0x1003 on (plane, spine) (0,0) (1,0) (0,1) (1,1).
    events = [{"t": 1.0, "host": "h1", "peer": "h2", "ev": 0x1000, "new": "ASSUMED_BAD", "cause": "nack"},
              {"t": 1.1, "host": "h1", "peer": "h2", "ev": 0x1002, "new": "ASSUMED_BAD", "cause": "nack"},
              {"t": 1.2, "host": "h1", "peer": "h2", "ev": 0x1002, "new": "GOOD", "cause": "probe"},
              {"t": 1.3, "host": "h1", "peer": "h2", "ev": 0x1000, "new": "GOOD", "cause": "ev_min_active"}]
    obs = from_events(topo, events)
    assert [(o.what, o.ok) for o in obs] == [("h1->h2 EV 0x1000", False), ("h1->h2 EV 0x1001", True),
                                             ("h1->h2 EV 0x1002", True), ("h1->h2 EV 0x1003", True)]
    assert obs[0].links == {"nic1:p0-leaf0", "p0-leaf0:p0-spine0", "p0-leaf1:p0-spine0", "nic2:p0-leaf1"}
    assert set(locate(obs).tied) == {"p0-leaf0:p0-spine0", "p0-leaf1:p0-spine0"}
