"""The default fabric over three "servers" and the local machine, end to end.

The servers are network namespaces on a private bridge, each with its own sshd
(tools/ns_cluster.py); the network runner reaches them over ssh as it would real
servers, through Mininet's cluster classes (topologies/cluster.py). A placement file
puts one plane on each server and one here, plane 0's first spine on the second
server, so that the demo's cut link (p0-leaf0:p0-spine0) is a tunnel between two
servers, and host h3 (with its NIC) on the third server, so that the demo's receiver
``mrc-recv`` runs there. The third server has a /tmp of its own, as a real server
has: the certificates, the node record and the switch process files must be copied
there, the receiver's report fetched back from there. The run must install every
table, answer every ping, move the demo's 2,000 packets with the cut, every byte
verified, and `mrcctl` must read the counters of a remote switch. Afterwards nothing
may be left on any server: no interface but its own, no process but its sshd, no
tunnel, no shared ssh connection, no file in the third server's /tmp.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.mininet.net_prefix import assert_nothing_left, private_prefix
from fabric.names import node_names
from fabric.topology import default_topology
from tools import cleanup, ns_cluster
from topologies import cluster, cluster_ssh

pytestmark = pytest.mark.root

REPO = Path(__file__).resolve().parents[2]
SERVERS = [ns_cluster.server_address(k) for k in (1, 2, 3)]
S1, S2, S3 = SERVERS
PRIVATE_TMP = (3,)  # S3 has a /tmp of its own


def _settled_servers(timeout: float = 15.0) -> list[tuple[list[str], list[int]]]:
    """Every server's state once it holds only its own interfaces and its sshd, or as it
    is after ``timeout`` seconds (an ssh connection's server side ends a moment after
    the network stopped with it: Mininet's shared connections persist for a second)."""
    deadline = time.monotonic() + timeout
    while True:
        states = [_server_state(k) for k in (1, 2, 3)]
        if all(links == ["eth0", "lo"] and len(pids) == 1 for links, pids in states) or time.monotonic() > deadline:
            return states
        time.sleep(0.2)


def _server_state(k: int) -> tuple[list[str], list[int]]:
    """A server's interfaces and the processes in its namespace."""
    ns = f"{ns_cluster.NS_PREFIX}{k}"
    out = subprocess.run(["ip", "netns", "exec", ns, "ip", "-o", "link", "show"], capture_output=True, text=True,
                         timeout=20).stdout
    links = sorted(line.split(":")[1].strip().split("@")[0] for line in out.splitlines() if ":" in line)
    return links, ns_cluster._netns_pids(ns)


@pytest.fixture(scope="module")
def servers() -> Iterator[list[str]]:
    if os.geteuid() != 0:
        pytest.skip("needs root (network namespaces, sshd): run `make test` as root")
    if not Path(ns_cluster.SSHD).is_file() or not shutil.which("ssh"):
        pytest.skip("no sshd/ssh: apt-get install openssh-server (make deps installs it)")
    with ns_cluster.servers(3, PRIVATE_TMP):
        yield SERVERS


def test_the_default_fabric_runs_over_three_servers_and_leaves_nothing(servers: list[str], tmp_path: Path) -> None:
    prefix = private_prefix()
    run_dir = tmp_path / "run"
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    placement = tmp_path / "placement.yaml"
    placement.write_text(f"plane0: {S1}\nplane1: {S2}\nplane2: {S3}\nplane3: localhost\np0-spine0: {S2}\n"
                         f"h3: {S3}\n")
    h3, nic3 = (node_names(default_topology(), prefix).mininet(n) for n in ("h3", "nic3"))
    before = [_server_state(k) for k in (1, 2, 3)]
    assert all(links == ["eth0", "lo"] for links, _ in before), before
    mrcctl = Path(sys.executable).with_name("mrcctl")
    script = tmp_path / "cli.txt"
    script.write_text("\n".join([
        f"sh {mrcctl} --state {run_dir}/network.json counters --json p1-leaf0 > {out_dir}/counters.json",
        f"sh ip netns exec ncl2 ss -Htlnp > {out_dir}/listen2.txt",
        f"sh ip netns exec ncl1 ip -d -o link show type vxlan > {out_dir}/tunnels1.txt",
        f"sh ip -d -o link show type vxlan > {out_dir}/tunnels_local.txt",
        f"sh ip netns exec ncl3 ip -o link show > {out_dir}/links3.txt",
        f"{h3} echo $SSH_CONNECTION",
        f"sh cp {run_dir}/network.json {out_dir}/network.json",
        f"sh {sys.executable} {REPO}/tests/cluster/probe_tls.py {run_dir}/network.json p1-leaf0 > {out_dir}/tls.txt",
        "",
    ]))
    try:
        res = subprocess.run(
            [sys.executable, "-m", "topologies.run", "--servers", ",".join([*servers, "localhost"]),
             "--placement", str(placement), "--prefix", prefix, "--grpc-base", "0", "--run-dir", str(run_dir),
             "--bytes", "2000000", "--no-cli", "--cli-script", str(script)],
            cwd=REPO, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=400)
        out = res.stdout + res.stderr
        assert res.returncode == 0, out
        # the file's placement: plane 0 but its first spine on S1, S2 plane 1 and that spine,
        # S3 plane 2 and h3's NIC, here plane 3 and the other 3 NICs
        assert (f"placement {placement} ({S1}: 3, {S2}: 5, {S3}: 5, localhost: 7 switches; hosts h3 on {S3}), "
                "links across servers over vxlan, P4Runtime there over mutual TLS") in out, out
        assert "20 P4 switches" in out, out
        for row in ("h1         -    2/2    2/2    2/2", "h2       2/2      -    2/2    2/2",
                    "h3       2/2    2/2      -    2/2", "h4       2/2    2/2    2/2      -"):
            assert row in out, out
        assert "MRC-lite transfer h1 -> h3: 2,000,000 bytes, every byte verified (SHA-256)" in out, out
        assert "cable cut, no table written; fabric tables unchanged" in out, out
        retired = re.search(r"EVs retired (\d+) of (\d+) across the cut \(healthy EVs retired (\d+)\)", out)
        assert retired, out
        # 64 EVs over 4 planes x 2 spines: 8 cross p0-spine0, and the cut takes them all out
        assert retired.groups() == ("8", "8", "0"), out
        assert "result: OK" in out, out

        state = json.loads((out_dir / "network.json").read_text())
        assert state["switches"]["p1-leaf0"]["address"].startswith(f"{S2}:")
        assert state["switches"]["p3-leaf0"]["address"].startswith("127.0.0.1:")
        cut = state["links"]["p0-leaf0:p0-spine0"]
        assert (cut["a_server"], cut["b_server"]) == (f"root@{S1}", f"root@{S2}")
        port = state["switches"]["p1-leaf0"]["address"].rsplit(":", 1)[1]
        listen = (out_dir / "listen2.txt").read_text()
        assert re.search(rf"\b{re.escape(S2)}\]?:{port}\b.*p4target", listen), listen  # maybe [::ffff:...]
        # S1's tunnels: plane 0's NIC links to the 3 NICs here and to nic3 on S3, and
        # p0-spine0's 2 leaf links to S2
        tunnels = (out_dir / "tunnels1.txt").read_text().splitlines()
        assert len(tunnels) == 6, tunnels
        assert sum(f"remote {S2} " in t for t in tunnels) == 2, tunnels
        assert sum(f"remote {S3} " in t for t in tunnels) == 1, tunnels
        assert sum(f"remote {ns_cluster.LOCAL_ADDR} " in t for t in tunnels) == 3, tunnels
        # here: the 3 local NICs' links to each of the 3 remote planes, and plane 3's
        # leaf 1 to nic3 on S3 (the other plane-3 links are veths)
        assert len((out_dir / "tunnels_local.txt").read_text().splitlines()) == 3 * 3 + 1
        # h3's shell is a session of S3's sshd; its NIC's port to it (eth0, a veth) and
        # its 4 plane ports are on S3, the host's own end in its namespace there
        assert re.search(rf"^{re.escape(ns_cluster.LOCAL_ADDR)} \d+ {re.escape(S3)} 22\s*$", out, re.M), out
        links3 = (out_dir / "links3.txt").read_text()
        assert all(f"{nic3}-eth{k}" in links3 for k in range(5)) and f"{h3}-eth0" not in links3, links3
        assert all(state["links"][f"nic3:p{p}-leaf1"]["a_server"] == f"root@{S3}" for p in range(4))
        # the remote switch serves mutual TLS only: refused without the client certificate
        assert (out_dir / "tls.txt").read_text().split() == ["plaintext:", "refused", "tls:", "answers"]
        assert state["switches"]["p1-leaf0"]["tls_dir"] == str(run_dir / cluster.TLS_DIR)
        assert state["switches"]["p3-leaf0"]["tls_dir"] is None
        counters = json.loads((out_dir / "counters.json").read_text())
        ports = {int(r["port"]): r for r in counters["p1-leaf0"]["ports"]}
        # h1 and h2 sit on leaf 0's ports 1 and 2: h1's quarter of the 2,000 data packets
        # (plane 1's EVs) enters on port 1, and leaves by the two uplinks (ports 3, 4)
        assert ports[1]["rx_packets"] >= 2000 // 4
        assert ports[3]["tx_packets"] + ports[4]["tx_packets"] >= 2000 // 4
    finally:  # what the network itself left in S3's /tmp (before cleanup.py looks there)
        # once the network's ssh sessions have ended on the servers (a moment after it
        # stopped, as _settled_servers says), so that a session's own files are gone with
        # it (one run found a /tmp/ssh-* directory there when the listing came first)
        _settled_servers()
        s3 = cluster_ssh.Server.parse(S3)
        try:  # it was S3's own /tmp indeed: a file made here is not there
            s3_shares = s3.shares_files()
            # besides the tool's state, the repository when it is under /tmp (bound there
            # by tools/ns_cluster.py, as a real server has the project at the same path)
            repo_top = f" ! -path /tmp/{REPO.relative_to('/tmp').parts[0]}" if REPO.is_relative_to("/tmp") else ""
            tmp3 = s3.run(f"find /tmp -mindepth 1 -maxdepth 1 ! -name mrc-ns-cluster{repo_top}; "
                          f"find {run_dir} 2>/dev/null", check=False)
        finally:
            s3.close()  # the shared connection, before the servers' processes are counted
        left = _left_behind(prefix, run_dir, servers)
    _assert_nothing_left_behind(*left, run_dir)
    assert not s3_shares
    assert tmp3.split() == [], tmp3  # S3's own /tmp: nothing of the run


def _left_behind(prefix: str, run_dir: Path, servers: list[str]) -> tuple[list[tuple[list[str], list[int]]],
                                                                        subprocess.CompletedProcess[str]]:
    """After a run: each server's state once settled, and what cleanup's check finds
    (then cleaned, so that a failure leaves nothing either)."""
    after = _settled_servers()
    check = subprocess.run([sys.executable, "tools/cleanup.py", "--check", "--prefix", prefix,
                            "--run-dir", str(run_dir), *(a for s in servers for a in ("--server", s))],
                           cwd=REPO, capture_output=True, text=True, timeout=120)
    subprocess.run([sys.executable, "tools/cleanup.py", "--prefix", prefix, "--run-dir", str(run_dir),
                    *(a for s in servers for a in ("--server", s))], cwd=REPO, capture_output=True, timeout=120)
    assert_nothing_left(prefix, run_dir)
    return after, check


def _assert_nothing_left_behind(after: list[tuple[list[str], list[int]]], check: subprocess.CompletedProcess[str],
                                run_dir: Path) -> None:
    assert [links for links, _ in after] == [["eth0", "lo"]] * 3, after
    assert [len(pids) for _, pids in after] == [1, 1, 1], after  # each server's sshd only
    assert check.returncode == 0, check.stdout + check.stderr
    assert check.stdout.count("leftovers: nothing") == 4, check.stdout
    assert not (run_dir / cluster.SERVERS_RECORD).exists()
    assert not (run_dir / cluster.TLS_DIR).exists()
    assert not list(Path("/tmp").glob("mrc-ssh-*")), "a shared ssh connection is still open"


@pytest.mark.bmv2
def test_bmv2_switches_on_a_server_serve_mutual_tls_there(servers: list[str], tmp_path: Path) -> None:
    """One plane of BMv2 switches (2 leaves, 2 spines) on the first server, the 2 NICs
    (BMv2 too) here, every table installed over TLS: every ping answered, a TCP stream
    carried, and each remote switch's P4Runtime on the server's address, mutual TLS
    only. (No demo: its cut retires EVs by the endpoints' timeouts, and BMv2 on this
    shared machine is slow enough now and then to make healthy EVs time out too.)"""
    if not shutil.which("simple_switch_grpc"):
        pytest.skip("needs BMv2 (simple_switch_grpc) on the PATH")
    prefix = private_prefix()
    run_dir, out_dir = tmp_path / "run", tmp_path / "out"
    out_dir.mkdir()
    script = tmp_path / "cli.txt"
    script.write_text("\n".join([
        f"sh ip netns exec ncl1 ss -Htlnp > {out_dir}/listen1.txt",
        f"sh cp {run_dir}/network.json {out_dir}/network.json",
        f"sh {sys.executable} {REPO}/tests/cluster/probe_tls.py {run_dir}/network.json p0-spine1 > {out_dir}/tls.txt",
        "pingmatrix",
        "iperf",  # the first host to the last
        "",
    ]))
    try:
        res = subprocess.run(
            [sys.executable, "-m", "topologies.run", "--target", "bmv2", "--servers", servers[0], "--planes", "1",
             "--spines", "2", "--leaves", "2", "--hosts-per-leaf", "1", "--prefix", prefix, "--grpc-base", "0",
             "--run-dir", str(run_dir), "--no-demo", "--no-cli", "--cli-script", str(script)],
            cwd=REPO, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=300)
        out = res.stdout + res.stderr
        assert res.returncode == 0, out
        assert f"placement plane ({S1}: 4, localhost: 2 switches)" in out, out
        assert "6 P4 switches (bmv2 target)" in out, out
        assert "h1         -    2/2" in out and "h2       2/2      -" in out, out
        assert re.search(r"\*\*\* Results: [\d.]+ [KMG]bits/sec", out), out
        assert "result: OK" in out, out
        state = json.loads((out_dir / "network.json").read_text())
        host, port = state["switches"]["p0-spine1"]["address"].rsplit(":", 1)
        assert host == S1 and state["switches"]["nic1"]["address"].startswith("127.0.0.1:")
        listen = (out_dir / "listen1.txt").read_text()
        assert re.search(rf"\b{re.escape(S1)}\]?:{port}\b.*simple_switch", listen), listen
        assert (out_dir / "tls.txt").read_text().split() == ["plaintext:", "refused", "tls:", "answers"]
    finally:
        left = _left_behind(prefix, run_dir, servers)
    _assert_nothing_left_behind(*left, run_dir)


def test_cleanup_removes_what_the_servers_were_left_with(servers: list[str], tmp_path: Path) -> None:
    """What a killed run leaves on servers (here an interface of the network's prefix on
    two of them) is found and removed by tools/cleanup.py over ssh, from the servers
    record; cleaning one server never touches another's processes (the namespace
    servers share one process table, and each sshd must survive)."""
    prefix = private_prefix()
    tmp_path.joinpath(cluster.SERVERS_RECORD).write_text(json.dumps({"servers": [f"root@{S2}", f"root@{S3}"]}))
    for k in (2, 3):
        subprocess.run(["ip", "netns", "exec", f"ncl{k}", "ip", "link", "add", f"{prefix}x-eth1", "type", "veth",
                        "peer", "name", f"{prefix}x-eth2"], check=True, timeout=20)
    try:
        found = subprocess.run([sys.executable, "tools/cleanup.py", "--check", "--prefix", prefix,
                                "--run-dir", str(tmp_path)], cwd=REPO, capture_output=True, text=True, timeout=60)
        assert found.returncode == 1
        for s in (S2, S3):
            assert f"server root@{s}: leftovers: links: {prefix}x-eth1, {prefix}x-eth2" in found.stdout, found.stdout
        done = subprocess.run([sys.executable, "tools/cleanup.py", "--prefix", prefix, "--run-dir", str(tmp_path)],
                              cwd=REPO, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stdout + done.stderr
        assert [_server_state(k)[0] for k in (2, 3)] == [["eth0", "lo"]] * 2
        assert [len(_server_state(k)[1]) for k in (2, 3)] == [1, 1]  # the sshds
        assert not tmp_path.joinpath(cluster.SERVERS_RECORD).exists()
    finally:
        for k in (2, 3):
            subprocess.run(["ip", "netns", "exec", f"ncl{k}", "ip", "link", "del", f"{prefix}x-eth1"],
                           capture_output=True, timeout=20)
        ns_cluster.up(3, PRIVATE_TMP)  # a server whose sshd was killed gets it back for the next test


def test_the_records_cleanup_reads_are_the_ones_the_cluster_writes() -> None:
    assert cleanup.SERVERS_RECORD == cluster.SERVERS_RECORD
    assert " ".join(cleanup.SSH_SHARED) in " ".join(cluster_ssh.SHARED)
