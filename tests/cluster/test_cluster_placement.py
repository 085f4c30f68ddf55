"""Placement of the fabric's switches on servers (topologies/placement.py), without a network."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from fabric.topology import default_topology
from topologies.cluster_hosts import command_files
from topologies.placement import LOCAL, PlacementError, crossing_links, place, place_nodes

SERVERS = ["a", "b", "c"]


def test_plane_keeps_each_plane_on_one_server_and_the_nics_here() -> None:
    where = place(default_topology(), SERVERS, "plane")
    assert {n: s for n, s in where.items() if n.startswith("p0-")} == {
        "p0-leaf0": "a", "p0-leaf1": "a", "p0-spine0": "a", "p0-spine1": "a"}
    assert {where[f"p{p}-spine1"] for p in range(4)} == {"a", "b", "c"}
    assert where["p3-leaf1"] == "a"  # plane 3 wraps around to the first server
    assert [where[f"nic{k}"] for k in range(1, 5)] == [LOCAL] * 4
    # only the NIC-leaf links cross: 4 hosts x 4 planes, every plane away from the NICs
    assert crossing_links(default_topology(), where) == 4 * 4


def test_round_robin_spreads_neighbouring_switches() -> None:
    where = place(default_topology(), SERVERS, "round-robin")
    assert [where[n] for n in ("p0-leaf0", "p0-leaf1", "p0-spine0", "p0-spine1", "p1-leaf0")] == [
        "a", "b", "c", "a", "b"]
    assert where["nic1"] == LOCAL


def test_a_placement_file_names_planes_and_switches(tmp_path: Path) -> None:
    f = tmp_path / "p.yaml"
    f.write_text("plane0: a\nplane1: localhost\np0-spine1: b\n")
    where = place(default_topology(), SERVERS, f)
    assert (where["p0-leaf0"], where["p0-spine1"], where["p1-leaf0"], where["p2-leaf0"]) == ("a", "b", LOCAL, LOCAL)


def test_a_placement_file_moves_a_host_and_its_nic_together(tmp_path: Path) -> None:
    f = tmp_path / "p.yaml"
    f.write_text("plane0: a\nh3: c\nh4: localhost\n")
    switches, hosts = place_nodes(default_topology(), SERVERS, f)
    assert hosts == {"h1": LOCAL, "h2": LOCAL, "h3": "c", "h4": LOCAL}
    assert [switches[f"nic{k}"] for k in range(1, 5)] == [LOCAL, LOCAL, "c", LOCAL]
    assert switches["p0-leaf1"] == "a" and switches["p1-leaf1"] == LOCAL
    # nic3's 4 plane links cross (plane 0 on a, the others here), and so do the other
    # 3 NICs' plane-0 links; no host-NIC link ever does (they are not fabric links)
    assert crossing_links(default_topology(), switches) == 4 + 3
    # the policies keep every host here
    assert set(place_nodes(default_topology(), SERVERS, "plane")[1].values()) == {LOCAL}
    assert set(place_nodes(default_topology(), SERVERS, "round-robin")[1].values()) == {LOCAL}


def test_a_remote_hosts_command_files_are_the_absolute_paths_after_its_options(tmp_path: Path) -> None:
    data = tmp_path / "in.bin"
    data.write_bytes(b"x")
    repo_file = Path(__file__).resolve()  # in the repository: there already, never copied
    argv = ["/usr/bin/mrc-send", "--in", str(data), "--report", str(tmp_path / "r.json"), "--bind", "fd00::1",
            "--out", str(tmp_path / "no-such-dir" / "o"), "--config", str(repo_file), str(tmp_path / "free")]
    assert command_files(argv) == ([data], [tmp_path / "r.json"])


@pytest.mark.parametrize(("text", "message"), [
    ("p9-leaf0: a\n", "p9-leaf0: no such switch or host"),
    ("plane0: z\n", "plane0: server 'z' is not one of --servers (a, b, c, localhost)"),
    ("nic1: a\n", "nic1: a NIC runs where its host runs: place the host (h1: a)"),
    ("h9: a\n", "h9: no such switch or host"),
    ("plane4: a\n", "plane4: the fabric has planes 0 to 3"),
    ("- a\n", "must map switch names or planes to servers"),
])
def test_a_wrong_placement_file_is_one_error_naming_the_entry(tmp_path: Path, text: str, message: str) -> None:
    f = tmp_path / "p.yaml"
    f.write_text(text)
    with pytest.raises(PlacementError, match=message.replace("(", r"\(").replace(")", r"\)")):
        place(default_topology(), SERVERS, f)


def test_no_such_placement_file() -> None:
    with pytest.raises(PlacementError, match="no such file; give plane, round-robin or a YAML file"):
        place(default_topology(), SERVERS, Path("/nonexistent/p.yaml"))


@pytest.mark.parametrize(("args", "message"), [
    (["--placement", "plane"], "give --servers a,b,c too"),
    (["--insecure"], "give --servers a,b,c too"),
])
def test_runner_refuses_what_a_cluster_cannot_do_before_anything_starts(args: list[str], message: str) -> None:
    r = subprocess.run([sys.executable, "-m", "topologies.run", "--no-cli", *args],
                       cwd=Path(__file__).resolve().parents[2], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2, r.stderr
    assert message in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
