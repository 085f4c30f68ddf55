"""P4Runtime over mutual TLS: real ``p4target`` processes, real gRPC clients.

A ``p4target group`` serves the three switches of a one-plane fabric (spine, leaf,
NIC; their ports veths in a private namespace), each on a loopback port of its own,
with the server certificate ``mrcctl certs`` made. Clients: plain gRPC (no
certificate, one from another CA, the right one), ``mrcctl --tls-dir`` (install,
counters), finsy's ``P4Client``, p4runtime-shell through ``make shell TLS_DIR=``, and
the Mininet package's readiness probe. And the command line: plaintext off loopback
and a partial set of ``--tls-*`` options are refused before anything starts.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest
from finsy.grpcutil import GRPCCredentialsTLS
from finsy.p4client import P4Client
from finsy.proto.p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from topologies.p4switch import grpc_answers

REPO = Path(__file__).resolve().parents[2]
BIN = REPO / ".venv" / "bin"
SHAPE = ["--planes", "1", "--spines", "1", "--leaves", "1", "--hosts-per-leaf", "1"]
# the one-plane fabric: switch -> (program, device id)
SWITCHES = {"p0-spine0": ("fabric", 1), "p0-leaf0": ("fabric", 2), "nic1": ("nic", 3)}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=20)


def _run(*cmd: str | Path, timeout: float = 120, **kw: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=timeout,
                          cwd=REPO, **kw)  # type: ignore[call-overload]


@dataclass
class Fabric:
    certs: Path  # mrcctl certs of the switches' CA
    other: Path  # mrcctl certs of another CA
    addrs: dict[str, str]  # switch -> its P4Runtime address
    state: Path  # a state file naming those addresses (for mrcctl)

    def addr(self, name: str = "p0-leaf0") -> str:
        return self.addrs[name]


def _make_certs(directory: Path) -> None:
    r = _run(BIN / "mrcctl", "certs", directory, "--server", "sw=127.0.0.1")
    assert r.returncode == 0, r.stderr


@pytest.fixture(scope="module")
def fabric(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fabric]:
    if os.geteuid() != 0:
        pytest.skip("needs root: the switches' ports are veths in a network namespace")
    tmp = tmp_path_factory.mktemp("tls")
    certs, other = tmp / "certs", tmp / "other"
    _make_certs(certs)
    _make_certs(other)
    prefix = "mrct" + secrets.token_hex(2)
    ns = prefix
    addrs = {name: f"127.0.0.1:{_free_port()}" for name in SWITCHES}
    # spine port 1 - leaf port 2, leaf port 1 - NIC port 1 (as `mrcctl links` numbers them)
    ports = {"p0-spine0": {1: f"{prefix}s1"}, "p0-leaf0": {2: f"{prefix}l2", 1: f"{prefix}l1"},
             "nic1": {1: f"{prefix}n1"}}
    group = {"switches": [{"name": n, "program": str(REPO / "p4src" / f"{prog}.p4"), "device_id": dev,
                           "ports": ports[n], "grpc_addr": addrs[n], "netns": ns}
                          for n, (prog, dev) in SWITCHES.items()]}
    group_file = tmp / "group.json"
    group_file.write_text(json.dumps(group))
    state = tmp / "network.json"
    state.write_text(json.dumps({
        "topology": {"parameters": {"planes": 1, "spines": 1, "leaves": 1, "hosts_per_leaf": 1}},
        "switches": {n: {"name": n, "address": addrs[n], "device_id": dev, "program": prog}
                     for n, (prog, dev) in SWITCHES.items()}}))
    log = tmp / "group.log"
    proc: subprocess.Popen[bytes] | None = None
    try:
        _ip("netns", "add", ns)
        for a, b in ((f"{prefix}s1", f"{prefix}l2"), (f"{prefix}l1", f"{prefix}n1")):
            _ip("-n", ns, "link", "add", a, "type", "veth", "peer", "name", b)
            _ip("-n", ns, "link", "set", a, "up")
            _ip("-n", ns, "link", "set", b, "up")
        with log.open("wb") as out:
            proc = subprocess.Popen(
                [str(BIN / "p4target"), "group", str(group_file), "--tls-cert", str(certs / "server-sw.pem"),
                 "--tls-key", str(certs / "server-sw.key"), "--tls-ca", str(certs / "ca.pem")],
                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 90
        while b"running" not in log.read_bytes():
            assert proc.poll() is None, f"p4target group exited: {log.read_text()}"
            assert time.monotonic() < deadline, f"p4target group did not start: {log.read_text()}"
            time.sleep(0.1)
        yield Fabric(certs, other, addrs, state)
    finally:
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)
        subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=20)


def _capabilities(addr: str, creds: grpc.ChannelCredentials | None) -> str:
    """The server's P4Runtime version over this channel, or the gRPC status name of the failure."""
    channel = grpc.insecure_channel(addr) if creds is None else grpc.secure_channel(addr, creds)
    with channel:
        try:
            reply = p4runtime_pb2_grpc.P4RuntimeStub(channel).Capabilities(
                p4runtime_pb2.CapabilitiesRequest(), timeout=5)
        except grpc.RpcError as e:
            return e.code().name
    return str(reply.p4runtime_api_version)


def _creds(d: Path, *, client_cert: bool = True) -> grpc.ChannelCredentials:
    ca = (d / "ca.pem").read_bytes()
    if not client_cert:
        return grpc.ssl_channel_credentials(root_certificates=ca)
    return grpc.ssl_channel_credentials(root_certificates=ca, private_key=(d / "client.key").read_bytes(),
                                        certificate_chain=(d / "client.pem").read_bytes())


# ---- who is served ------------------------------------------------------------------


def test_a_client_with_the_right_certificate_is_served(fabric: Fabric) -> None:
    assert _capabilities(fabric.addr(), _creds(fabric.certs)) == "1.4.1"


def test_a_tls_client_without_a_certificate_is_refused(fabric: Fabric) -> None:
    assert _capabilities(fabric.addr(), _creds(fabric.certs, client_cert=False)) == "UNAVAILABLE"


def test_a_plaintext_client_is_refused(fabric: Fabric) -> None:
    assert _capabilities(fabric.addr(), None) == "UNAVAILABLE"


def test_a_client_certificate_from_another_ca_is_refused(fabric: Fabric) -> None:
    # the client trusts the switch (its CA's ca.pem) but shows a certificate of another CA
    other_client = grpc.ssl_channel_credentials(
        root_certificates=(fabric.certs / "ca.pem").read_bytes(),
        private_key=(fabric.other / "client.key").read_bytes(),
        certificate_chain=(fabric.other / "client.pem").read_bytes())
    assert _capabilities(fabric.addr(), other_client) == "UNAVAILABLE"


# ---- mrcctl ---------------------------------------------------------------------------


def _mrcctl(fabric: Fabric, *args: str, tls_dir: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "MRCCTL_TLS_DIR"}
    if tls_dir is not None:
        env["MRCCTL_TLS_DIR"] = str(tls_dir)
    return _run(BIN / "mrcctl", "--state", fabric.state, *args, env=env)


def _entries_wanted(fabric: Fabric, switch: str) -> int:
    r = _run(BIN / "mrcctl", *SHAPE, "entries", switch, "--json")
    assert r.returncode == 0, r.stderr
    return sum(1 for e in json.loads(r.stdout)["entries"] if e["kind"] == "table")


async def _table_entries_over_finsy(addr: str, device_id: int, certs: Path) -> int:
    creds = GRPCCredentialsTLS(cacert=certs / "ca.pem", cert=certs / "client.pem",
                               private_key=certs / "client.key")
    async with P4Client(addr, creds) as client:
        req = p4runtime_pb2.ReadRequest(device_id=device_id,
                                        entities=[p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry())])
        counts = [sum(1 for e in reply.entities if e.HasField("table_entry"))
                  async for reply in client.request_iter(req)]
    return sum(counts)


def test_mrcctl_installs_over_tls_and_finsy_reads_it_back(fabric: Fabric) -> None:
    r = _mrcctl(fabric, "install", tls_dir=fabric.certs)
    assert r.returncode == 0, r.stdout + r.stderr
    for name, (_, device_id) in SWITCHES.items():
        wanted = _entries_wanted(fabric, name)
        assert wanted > 0
        assert asyncio.run(_table_entries_over_finsy(fabric.addrs[name], device_id, fabric.certs)) == wanted, name
    # the same through the --tls-dir option (not the environment)
    r = _run(BIN / "mrcctl", "--state", fabric.state, "--tls-dir", fabric.certs, "counters", "nic1", "--json",
             env={k: v for k, v in os.environ.items() if k != "MRCCTL_TLS_DIR"})
    assert r.returncode == 0, r.stderr
    assert "ports" in json.loads(r.stdout)["nic1"]


def test_mrcctl_with_another_ca_is_one_clear_line(fabric: Fabric) -> None:
    r = _mrcctl(fabric, "counters", "nic1", tls_dir=fabric.other)
    assert r.returncode == 1
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    assert f"nic1 ({fabric.addrs['nic1']}, device 3)" in lines[0]
    assert "no TLS session came up" in lines[0] and str(fabric.other) in lines[0]


def test_mrcctl_without_tls_dir_says_to_give_it(fabric: Fabric) -> None:
    r = _mrcctl(fabric, "counters", "nic1")
    assert r.returncode == 1 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "if it serves mutual TLS, give --tls-dir" in r.stderr


def test_mrcctl_with_an_unusable_tls_dir_names_the_file(fabric: Fabric, tmp_path: Path) -> None:
    (tmp_path / "ca.pem").write_bytes((fabric.certs / "ca.pem").read_bytes())
    r = _mrcctl(fabric, "counters", "nic1", tls_dir=tmp_path)
    assert r.returncode == 1
    assert r.stderr.strip() == (f"mrcctl: error: --tls-dir {tmp_path}: no client.pem there; make the "
                                f"certificates with `mrcctl certs {tmp_path} --server NAME=ADDR`")


# ---- p4runtime-shell, the readiness probe ------------------------------------------------


def _make_shell(addr: str, device_id: int, tls_dir: Path | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")}
    args = ["make", "--no-print-directory", "shell", f"GRPC_ADDR={addr}", f"DEVICE_ID={device_id}"]
    if tls_dir is not None:
        args.append(f"TLS_DIR={tls_dir}")
    return subprocess.run(args, cwd=REPO, env=env, input='print("TABLES", len(list(tables)))\n',
                          capture_output=True, text=True, timeout=180)


def test_p4runtime_shell_connects_with_the_client_certificate(fabric: Fabric, tmp_path: Path) -> None:
    assert (REPO / ".venv-shell" / "bin" / "python").exists(), ".venv-shell is missing: run `make deps`"
    p4info = tmp_path / "nic.p4info.txtpb"
    r = _run(BIN / "p4target", "compile", REPO / "p4src" / "nic.p4", "--p4info", p4info)
    assert r.returncode == 0, r.stderr
    text = p4info.read_text()
    tables = text.count("\ntables {") + text.startswith("tables {")
    assert tables > 0
    res = _make_shell(fabric.addrs["nic1"], 3, fabric.certs)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    assert f"TABLES {tables}" in res.stdout, res.stdout[-2000:]
    refused = _make_shell(fabric.addrs["nic1"], 3, fabric.other)
    assert refused.returncode != 0 and "TABLES" not in refused.stdout


def test_readiness_probe_over_tls(fabric: Fabric) -> None:
    assert grpc_answers(fabric.addr(), 5, tls_dir=fabric.certs)
    assert not grpc_answers(fabric.addr(), 2, tls_dir=fabric.other)
    assert not grpc_answers(fabric.addr(), 2)


# ---- the command line: refused before anything starts -----------------------------------


def test_plaintext_off_loopback_needs_insecure(tmp_path: Path) -> None:
    missing = tmp_path / "missing.p4"
    r = _run(BIN / "p4target", "run", missing, "-i", "1@mrctnone", "--grpc-addr", "0.0.0.0:0")
    assert r.returncode == 2
    assert ("--grpc-addr 0.0.0.0:0 is not a loopback address" in r.stderr
            and "give --tls-cert, --tls-key and --tls-ca" in r.stderr and "--insecure" in r.stderr), r.stderr
    # with --insecure the address passes, and the next problem (the program) is the one reported
    r = _run(BIN / "p4target", "run", missing, "-i", "1@mrctnone", "--grpc-addr", "0.0.0.0:0", "--insecure")
    assert r.returncode == 1
    assert r.stderr.strip() == f"p4target: {missing}: error: no such program file; check the path"
    # loopback plaintext stays the default
    r = _run(BIN / "p4target", "run", missing, "-i", "1@mrctnone", "--grpc-addr", "127.0.0.1:0")
    assert r.returncode == 1 and "no such program file" in r.stderr


def test_group_plaintext_off_loopback_needs_insecure(tmp_path: Path) -> None:
    group = tmp_path / "g.json"
    group.write_text(json.dumps({"switches": [{"name": "a", "program": str(REPO / "p4src" / "nic.p4"),
                                               "device_id": 1, "ports": {1: "mrctnone"},
                                               "grpc_addr": "0.0.0.0:0"}]}))
    r = _run(BIN / "p4target", "group", group)
    assert r.returncode == 1
    assert r.stderr.startswith(f"p4target: {group}: switch a: error: 0.0.0.0:0 is not a loopback address"), r.stderr
    r = _run(BIN / "p4target", "group", group, "--insecure")
    assert r.returncode == 1 and "not a loopback address" not in r.stderr
    assert "mrctnone" in r.stderr  # the next problem: the interface is not there


@pytest.mark.parametrize("given,missing", [
    (("--tls-cert",), "--tls-key, --tls-ca are missing"),
    (("--tls-cert", "--tls-key"), "--tls-ca is missing"),
    (("--tls-ca",), "--tls-cert, --tls-key are missing"),
])
@pytest.mark.parametrize("command", ["run", "group"])
def test_partial_tls_options_are_refused(command: str, given: tuple[str, ...], missing: str,
                                         tmp_path: Path) -> None:
    args = ["x.p4", "-i", "1@mrctnone"] if command == "run" else [str(tmp_path / "g.yaml")]
    files = [a for opt in given for a in (opt, str(tmp_path / f"{opt[2:]}.pem"))]
    r = _run(BIN / "p4target", command, *args, *files)
    assert r.returncode == 2
    assert r.stderr.strip().splitlines()[-1] == (
        f"p4target {command}: error: mutual TLS needs --tls-cert, --tls-key and --tls-ca together; {missing}")


def test_a_key_that_is_not_the_certificates_is_refused(tmp_path: Path) -> None:
    _make_certs(tmp_path / "c")
    c = tmp_path / "c"
    r = _run(BIN / "p4target", "run", "x.p4", "-i", "1@mrctnone", "--tls-cert", c / "server-sw.pem",
             "--tls-key", c / "client.key", "--tls-ca", c / "ca.pem")
    assert r.returncode == 1
    assert r.stderr.startswith(f"p4target: error: --tls-key {c / 'client.key'} does not go with "
                               f"--tls-cert {c / 'server-sw.pem'}"), r.stderr
