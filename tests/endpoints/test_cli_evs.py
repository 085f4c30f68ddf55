"""Where mrc-send's EV set comes from: the topology's plan for the two hosts, the
command-line overrides, or a plain list. Expected EVs are written from
docs/addressing.md: EXPLICIT EV k = 0x1000 + k on plane k mod P; GENERATED EV =
plane << 13 | spine << 5 | entropy."""

from __future__ import annotations

from pathlib import Path

import pytest

from endpoints.cli import UsageError, parse_ev_list, sender_evs


def evs_of(**kw):
    args = dict(ev_list=None, topology=None, shape={}, evs=None, ev_mode=None, src_host=None, dst_host=None,
                local=None, remote=None)
    args.update(kw)
    return sender_evs(**args)


@pytest.fixture
def topo_file(tmp_path: Path) -> Path:
    p = tmp_path / "two.yaml"
    p.write_text("planes: 2\nspines: 2\nleaves: 2\nhosts_per_leaf: 1\nevs_per_nic: 4\n")
    return p


def test_topology_file_and_host_names(topo_file: Path) -> None:
    got = evs_of(topology=topo_file, src_host="h1", dst_host="h2")
    assert [(e.ev, e.plane) for e in got] == [(0x1000 + k, k % 2) for k in range(4)]
    # Each plane's EVs use both spines.
    assert {(e.plane, e.spine) for e in got} == {(0, 0), (0, 1), (1, 0), (1, 1)}


def test_overrides_and_hosts_from_addresses(topo_file: Path) -> None:
    # h1 = leaf 0 port 1 = fd00:0:0:1::1, h2 = leaf 1 port 1 = fd00:0:1:1::1
    got = evs_of(topology=topo_file, evs=6, ev_mode="generated", local="fd00:0:0:1::1", remote="fd00:0:1:1::1")
    assert len(got) == 6
    assert all(e.ev == e.plane << 13 | e.spine << 5 | (e.ev & 31) for e in got)
    assert [e.plane for e in got] == [0, 1, 0, 1, 0, 1]


def test_shape_parameters() -> None:
    got = evs_of(shape={"planes": 4, "spines": 2, "leaves": 2, "hosts_per_leaf": 2}, evs=64, src_host="h1",
                 dst_host="h4")
    assert [e.ev for e in got] == [0x1000 + k for k in range(64)]
    assert [sum(1 for e in got if e.plane == p) for p in range(4)] == [16, 16, 16, 16]


def test_plain_list() -> None:
    assert [e.ev for e in parse_ev_list("4096-4099,5000, 0x10")] == [4096, 4097, 4098, 4099, 5000, 16]
    assert {(e.plane, e.spine) for e in parse_ev_list("1-3")} == {(-1, -1)}


@pytest.mark.parametrize("kw, message", [
    (dict(ev_list="1-3", shape={"planes": 2}), "--ev-list replaces the topology's EVs"),
    (dict(ev_list="1,1"), "listed twice"),
    (dict(ev_list=""), "--ev-list is empty"),
    (dict(src_host="h1"), "the EV set needs the two hosts"),
    (dict(src_host="h1", dst_host="h1", evs=0), "--evs 0: a NIC has 1..256 EVs"),
    (dict(shape={"planes": 9}, src_host="h1", dst_host="h2"), "planes"),
])
def test_refusals(kw: dict, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        evs_of(**kw)
