"""A cluster of "servers" on one machine: network namespaces that each run their own sshd.

Why: the fabric runs over several servers through Mininet's cluster classes
(topologies/cluster.py), which reach each server over ssh and join links across
servers with tunnels. Testing that, and trying it as a new user would, needs servers;
here each server is a network namespace on a private bridge with its own address on
198.18.200.0/24 (the benchmarking range of RFC 2544, never routed), and its own sshd
that lets root log in with a key this tool generates. The servers share the machine's
file system and processes, so the repository and its .venv are where a real server
would need its own copy; ``up --private-tmp K`` gives server K a /tmp of its own (a
tmpfs in a mount namespace of its sshd), so that what a network copies to a real
server, and must remove there again, is tried too.

- ``up [--servers N]``: the bridge ``nclbr0`` (198.18.200.1, the local machine's end),
  namespaces ``ncl1``..``nclN`` (198.18.200.11, .12, ...; veth ``nclK-br`` to the
  bridge, ``eth0`` inside), a host key and a client key under the state directory, an
  sshd per namespace with a config of its own (root by key only, ``UseDNS no``), and
  ssh client options for 198.18.200.* in ``/etc/ssh/ssh_config.d/`` (so ``ssh
  198.18.200.11`` works for every tool without options). Prints the ``--servers``
  value to give ``make run``.
- ``down``: stops the sshds and whatever else runs in the namespaces, removes the
  namespaces, veths, bridge, client options and state directory. Idempotent.
- ``status``: what exists now.

The names do not start with the project's cleanup prefixes on purpose: ``make clean``
run on a "server" must not remove the server. Standard library only.
"""

from __future__ import annotations

import argparse  # not typer: the README runs this file with the system python3 (standard library only)
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

STATE_DIR = Path(os.environ.get("MRC_NS_CLUSTER_DIR", "/tmp/mrc-ns-cluster"))
REPO = Path(__file__).resolve().parents[1]
SSH_DROPIN = Path("/etc/ssh/ssh_config.d/mrc-ns-cluster.conf")
NS_PREFIX = "ncl"
BRIDGE = "nclbr0"
NET = "198.18.200"
LOCAL_ADDR = f"{NET}.1"
FIRST_SERVER = 11
MAX_SERVERS = 8
PRIVATE_TMP = "mrc-ns-tmp"  # the tmpfs source name of a server's own /tmp
UNDERLAY_MTU = 9000  # room for a tunnel header around a 1500-byte fabric frame
SSHD = "/usr/sbin/sshd"


class ClusterError(RuntimeError):
    """Something the tool could not do; the message says what to do instead."""


def server_address(k: int) -> str:
    return f"{NET}.{FIRST_SERVER + k - 1}"


def _run(*cmd: str, check: bool = True, ns: str | None = None) -> subprocess.CompletedProcess[str]:
    argv = (["ip", "netns", "exec", ns] if ns else []) + list(cmd)
    r = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    if check and r.returncode != 0:
        raise ClusterError(f"{' '.join(argv)}: {(r.stderr or r.stdout).strip()}")
    return r


def namespaces() -> list[str]:
    """The tool's namespaces that exist now."""
    out = _run("ip", "netns", "list", check=False).stdout
    return sorted(line.split()[0] for line in out.splitlines()
                  if line.split() and line.split()[0].startswith(NS_PREFIX) and line.split()[0][3:].isdigit())


def _link_exists(name: str) -> bool:
    return _run("ip", "link", "show", "dev", name, check=False).returncode == 0


def _sshd_config(k: int) -> Path:
    ns = f"{NS_PREFIX}{k}"
    path = STATE_DIR / f"sshd_{ns}.conf"
    path.write_text("\n".join([
        f"ListenAddress {server_address(k)}",
        f"HostKey {STATE_DIR / 'host_ed25519'}",
        f"PidFile {STATE_DIR / f'sshd_{ns}.pid'}",
        f"AuthorizedKeysFile {STATE_DIR / 'authorized_keys'}",
        "PermitRootLogin prohibit-password",
        "PasswordAuthentication no",
        "KbdInteractiveAuthentication no",
        "UsePAM no",
        "UseDNS no",
        "StrictModes no",  # the keys live under /tmp
        "MaxStartups 200",  # Mininet opens a connection per node
        "MaxSessions 200",
        "X11Forwarding no",
        "PrintMotd no",
        "",
    ]))
    return path


def _keys() -> None:
    STATE_DIR.mkdir(parents=True, exist_ok=True)
    os.chmod(STATE_DIR, 0o700)
    for name in ("host_ed25519", "id_ed25519"):
        if not (STATE_DIR / name).exists():
            _run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"mrc-ns-cluster-{name}",
                 "-f", str(STATE_DIR / name))
    shutil.copyfile(STATE_DIR / "id_ed25519.pub", STATE_DIR / "authorized_keys")


def _client_options() -> None:
    SSH_DROPIN.parent.mkdir(parents=True, exist_ok=True)
    SSH_DROPIN.write_text("\n".join([
        "# written by tools/ns_cluster.py up; removed by tools/ns_cluster.py down",
        f"Host {NET}.*",
        "  User root",
        f"  IdentityFile {STATE_DIR / 'id_ed25519'}",
        "  IdentitiesOnly yes",
        "  StrictHostKeyChecking no",
        f"  UserKnownHostsFile {STATE_DIR / 'known_hosts'}",
        "  BatchMode yes",
        "  LogLevel ERROR",
        "",
    ]))


def _bridge() -> None:
    if not _link_exists(BRIDGE):
        _run("ip", "link", "add", BRIDGE, "mtu", str(UNDERLAY_MTU), "type", "bridge")
        _run("ip", "addr", "add", f"{LOCAL_ADDR}/24", "dev", BRIDGE)
    _run("ip", "link", "set", BRIDGE, "up")


def _private_tmp(pid: int) -> bool:
    """Does process ``pid`` see a /tmp of its own (the tool's tmpfs)?"""
    try:
        mounts = Path(f"/proc/{pid}/mountinfo").read_text()
    except OSError:
        return False
    return any(line.split()[4] == "/tmp" and f" - tmpfs {PRIVATE_TMP} " in line for line in mounts.splitlines())


def _start_sshd(k: int, private_tmp: bool) -> None:
    """The server's sshd; with ``private_tmp``, in a mount namespace whose /tmp is a tmpfs
    of its own (the state directory bound back into it: the keys, the config, the pid
    file; and the repository when it is under /tmp), so that the server does not share
    this machine's temporary files."""
    ns, config = f"{NS_PREFIX}{k}", _sshd_config(k)
    if not private_tmp:
        _run(SSHD, "-f", str(config), ns=ns)
        return
    # Each directory bound back is opened (fd 3, 4) before the tmpfs hides it and bound
    # from /proc/self/fd/N, the open directory itself (--no-canonicalize: not its path,
    # which names the new /tmp by then). The repository is one of them when it lives
    # under /tmp (a clone there): a real server has the project at the same path.
    keep = [STATE_DIR] + ([REPO] if REPO.is_relative_to("/tmp") else [])
    opened = " && ".join(f"exec {3 + i}< {d}" for i, d in enumerate(keep))
    bound = " && ".join(f"mkdir -p {d} && mount --no-canonicalize --bind /proc/self/fd/{3 + i} {d} && exec {3 + i}<&-"
                        for i, d in enumerate(keep))
    script = (f"{opened} && mount -t tmpfs -o mode=1777 {PRIVATE_TMP} /tmp && {bound} "
              f"&& cd / && exec {SSHD} -f {config}")
    _run("unshare", "--mount", "--propagation", "private", "sh", "-c", script, ns=ns)


def _server(k: int, private_tmp: bool = False) -> None:
    ns, outer = f"{NS_PREFIX}{k}", f"{NS_PREFIX}{k}-br"
    if ns not in namespaces():
        _run("ip", "netns", "add", ns)
    if not _link_exists(outer):
        _run("ip", "link", "add", outer, "mtu", str(UNDERLAY_MTU), "type", "veth", "peer", "name", "eth0",
             "mtu", str(UNDERLAY_MTU), "netns", ns)
        _run("ip", "link", "set", outer, "master", BRIDGE, "up")
        _run("ip", "addr", "add", f"{server_address(k)}/24", "dev", "eth0", ns=ns)
    _run("ip", "link", "set", "lo", "up", ns=ns)
    _run("ip", "link", "set", "eth0", "up", ns=ns)
    pid_file = STATE_DIR / f"sshd_{ns}.pid"
    if _pid_alive(pid_file) and _private_tmp(int(pid_file.read_text().split()[0])) != private_tmp:
        _stop_pid(int(pid_file.read_text().split()[0]))  # the other kind of server: started again below
    if not _pid_alive(pid_file):
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege separation directory
        _start_sshd(k, private_tmp)


def _stop_pid(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + 3.0
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)


def _pid_alive(pid_file: Path) -> bool:
    try:
        os.kill(int(pid_file.read_text().split()[0]), 0)
    except (OSError, ValueError, IndexError):
        return False
    return True


def _wait_ssh(address: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        r = subprocess.run(["ssh", "-o", "ConnectTimeout=3", address, "true"], capture_output=True, text=True,
                           timeout=30)
        if r.returncode == 0:
            return
        if time.monotonic() > deadline:
            raise ClusterError(f"ssh {address} does not answer: {r.stderr.strip()}")
        time.sleep(0.2)


def up(count: int, private_tmp: tuple[int, ...] = ()) -> list[str]:
    """Make (or complete) a cluster of ``count`` servers; their addresses. The servers
    numbered in ``private_tmp`` (1 is the first) get a /tmp of their own."""
    if os.geteuid() != 0:
        raise ClusterError("namespaces and sshd need root; run as root")
    if not Path(SSHD).is_file():
        raise ClusterError(f"no {SSHD}: apt-get install openssh-server (make deps installs it)")
    if not 1 <= count <= MAX_SERVERS:
        raise ClusterError(f"--servers {count}: give 1 to {MAX_SERVERS}")
    _keys()
    _client_options()
    _bridge()
    for k in range(1, count + 1):
        _server(k, k in private_tmp)
    addresses = [server_address(k) for k in range(1, count + 1)]
    for a in addresses:
        _wait_ssh(a)
    return addresses


@contextmanager
def servers(count: int, private_tmp: tuple[int, ...] = ()) -> Iterator[list[str]]:
    """``up(count, private_tmp)`` for a block; afterwards ``down()``, unless a cluster
    was already there before (someone else's: it is left as it was)."""
    existed = bool(namespaces())
    try:
        yield up(count, private_tmp)
    finally:
        if not existed:
            down()


def _netns_pids(ns: str) -> list[int]:
    out = _run("ip", "netns", "pids", ns, check=False).stdout
    return [int(p) for p in out.split() if p.isdigit()]


def down() -> list[str]:
    """Remove everything ``up`` made; what was removed."""
    removed: list[str] = []
    for ns in namespaces():
        pids = _netns_pids(ns)
        for sig in (signal.SIGTERM, signal.SIGKILL):
            for pid in pids:
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass
            deadline = time.monotonic() + 3.0
            while pids and time.monotonic() < deadline:
                pids = _netns_pids(ns)
                time.sleep(0.05)
            if not pids:
                break
        _run("ip", "netns", "del", ns, check=False)
        removed.append(f"namespace {ns}")
    out = _run("ip", "-o", "link", "show", check=False).stdout
    for line in out.splitlines():
        name = line.split(":")[1].strip().split("@")[0] if ":" in line else ""
        if name.startswith(NS_PREFIX) and name.endswith("-br"):
            _run("ip", "link", "del", name, check=False)
            removed.append(f"veth {name}")
    if _link_exists(BRIDGE):
        _run("ip", "link", "del", BRIDGE, check=False)
        removed.append(f"bridge {BRIDGE}")
    if SSH_DROPIN.exists():
        SSH_DROPIN.unlink()
        removed.append(str(SSH_DROPIN))
    if STATE_DIR.exists():
        shutil.rmtree(STATE_DIR, ignore_errors=True)
        removed.append(str(STATE_DIR))
    return removed


def status() -> list[str]:
    lines = []
    for ns in namespaces():
        k = int(ns[len(NS_PREFIX):])
        sshd = "sshd running" if _pid_alive(STATE_DIR / f"sshd_{ns}.pid") else "no sshd"
        lines.append(f"{ns}: {server_address(k)}, {sshd}, {len(_netns_pids(ns))} processes")
    return lines or ["no namespace cluster"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tools/ns_cluster.py",
                                     description="Network namespaces acting as servers (each with its own sshd) "
                                                 "for running the fabric over several 'servers' on one machine.")
    sub = parser.add_subparsers(dest="command", required=True)
    p_up = sub.add_parser("up", help="make the servers")
    p_up.add_argument("--servers", type=int, default=3, help="how many (default 3)")
    p_up.add_argument("--private-tmp", type=int, action="append", default=[], metavar="K",
                      help="server K (1 is the first) gets a /tmp of its own, as a real server has (repeatable)")
    sub.add_parser("down", help="remove the servers and everything in them")
    sub.add_parser("status", help="list the servers")
    args = parser.parse_args(argv)
    try:
        if args.command == "up":
            addresses = up(args.servers, tuple(args.private_tmp))
            print(f"ns-cluster: {len(addresses)} servers up: {', '.join(addresses)} (ssh as root by key; "
                  f"this machine is {LOCAL_ADDR})")
            print(f"ns-cluster: make run RUN_ARGS='--servers {','.join(addresses)}'")
        elif args.command == "down":
            removed = down()
            print(f"ns-cluster: removed {', '.join(removed)}" if removed else "ns-cluster: nothing to remove")
        else:
            print("\n".join(status()))
    except ClusterError as exc:
        print(f"error: ns-cluster: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
