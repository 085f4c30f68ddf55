"""fabric/resolve.py (which topology the options select) and fabric/wanted.py (the
entries wanted with links denied), without any switch."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fabric.entries import TableEntry
from fabric.resolve import Shape, resolve, topology_of, topology_source
from fabric.topology import TopologyError, from_parameters
from fabric.wanted import wanted_entries

REPO = Path(__file__).resolve().parents[2]
ONE_PLANE = REPO / "topologies" / "one-plane.yaml"


def test_nothing_given_is_the_default_fabric() -> None:
    r = resolve()
    assert (r.topology.planes, len(r.topology.leaves), r.topology.spines, len(r.topology.hosts)) == (4, 2, 2, 4)
    assert r.source == {"parameters": {}} and r.state is None


def test_the_shape_options_given_are_recorded() -> None:
    r = resolve(shape=Shape(planes=2, hosts_per_leaf=1))
    assert (r.topology.planes, len(r.topology.hosts)) == (2, 2)
    assert r.source == {"parameters": {"planes": 2, "hosts_per_leaf": 1}}


def test_a_file_and_shape_options_are_refused_in_one_line() -> None:
    with pytest.raises(TopologyError) as exc:
        resolve(ONE_PLANE, Shape(planes=2, leaves=3))
    assert str(exc.value) == "give --topology or the shape options (--planes, --leaves), not both"


def test_a_state_file_and_a_topology_are_refused(tmp_path: Path) -> None:
    with pytest.raises(TopologyError) as exc:
        resolve(shape=Shape(spines=1), state=tmp_path / "network.json")
    assert str(exc.value) == "give --state (a running network, which knows its topology) or a topology, not both"


def test_a_running_network_is_used_when_nothing_else_is_given(tmp_path: Path) -> None:
    state = tmp_path / "network.json"
    state.write_text(json.dumps({"topology": {"parameters": {"planes": 1, "spines": 1}}, "switches": {}}))
    r = resolve(running=state)
    assert (r.topology.planes, r.topology.spines) == (1, 1) and r.state == state
    # ... but not when a topology is given: that one wins
    assert resolve(shape=Shape(planes=3), running=state).topology.planes == 3
    assert resolve(running=tmp_path / "absent.json").topology.planes == 4


@pytest.mark.parametrize("text", ["{not json", "[1, 2]", '{"switches": {}}', '{"topology": 7}',
                                  '{"topology": ' + "[" * 100000 + "]" * 100000 + "}"])
def test_a_damaged_state_file_is_one_line_naming_it(tmp_path: Path, text: str) -> None:
    state = tmp_path / "network.json"
    state.write_text(text)
    with pytest.raises(TopologyError) as exc:
        resolve(state=state)
    msg = str(exc.value)
    assert msg.startswith(f"{state}: damaged network state file (") and "\n" not in msg
    assert msg.endswith("restart the network or delete the file")


def test_a_missing_state_file_says_how_to_get_one(tmp_path: Path) -> None:
    with pytest.raises(TopologyError, match="no network state file; start a network"):
        resolve(state=tmp_path / "network.json")


@pytest.mark.parametrize("given", [None, ONE_PLANE])
def test_the_recorded_source_gives_the_same_topology_back(given: Path | None) -> None:
    topo = resolve(given, Shape() if given else Shape(planes=3, evs_per_nic=16)).topology
    assert topology_of(topology_source(topo)) == topo


def test_a_state_file_records_the_trimmed_classes() -> None:
    topo = from_parameters(planes=1, trim_threshold=8, trim_classes=(26,))
    source = topology_source(topo)
    assert source["parameters"]["trim_classes"] == [26]
    assert topology_of(source).trim_classes == (26,) and topology_of(source) == topo


def _ev_rows(entries: list[object]) -> list[TableEntry]:
    return [e for e in entries if isinstance(e, TableEntry) and e.table == "NicIngress.ev_table"]


def test_denying_a_spine_link_removes_exactly_its_paths_from_the_nics() -> None:
    # The default fabric: 4 planes x 2 spines = 8 paths between leaves, 64 EVs per NIC:
    # 8 EVs on each path. Denying p0-leaf0:p0-spine0 takes the (plane 0, spine 0) path
    # away between the two leaves: for each NIC, its 2 hosts on the other leaf x 8 EVs
    # = 16 EV-table rows fewer; the fabric switches' entries do not change.
    topo = resolve().topology
    before = wanted_entries(topo)
    after = wanted_entries(topo, ["p0-leaf0:p0-spine0"])
    assert before.keys() == after.keys() and len(before) == 20
    for name in before:
        if name.startswith("nic"):
            assert len(_ev_rows(before[name])) == 3 * 64
            gone = set(_ev_rows(before[name])) - set(_ev_rows(after[name]))
            assert len(gone) == 16 and len(_ev_rows(after[name])) == 3 * 64 - 16, name
            assert {dict(e.params)["plane"] for e in gone} == {0}
        else:
            assert after[name] == before[name], name
    assert wanted_entries(topo, ["p0-leaf0:p0-spine0"], program="nic").keys() == {"nic1", "nic2", "nic3", "nic4"}


def test_denying_an_unknown_link_names_it() -> None:
    with pytest.raises(TopologyError, match="no link 'p0-leaf0:p9-spine0'"):
        wanted_entries(resolve().topology, ["p0-leaf0:p9-spine0"])
