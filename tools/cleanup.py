"""Remove what the project started, and nothing else.

Tests, `make run` and `p4target run` create network namespaces, veths, Mininet host
shells and switch processes. A crash or a killed test can leave them behind, and a
leftover veth or namespace makes the next run fail in confusing ways. This helper finds
them by the project's naming rules and removes them:

- network namespaces and links (veths, Mininet `<node>-ethN` interfaces) whose names
  start with a project prefix: `p4t` (the embedded target's own tests and tools) or
  `mrc` (topologies, Mininet hosts and everything else of the project);
- Mininet node shells (`bash ... mininet:<name>`) whose node name starts with a prefix,
  and every process in the network namespace of such a node or in any unnamed
  namespace whose interfaces are all prefixed (a daemon that outlived its host);
- every process inside a prefixed named namespace (`ip netns pids`);
- the nodes and interfaces named in the run directory's node record
  (`nodes.json`, written by a network before its first node exists and removed when it
  stops): a network whose nodes are called as the controller calls them (`h1`,
  `p0-leaf0`) carries no prefix, so a killed run is found by that record;
- switch processes recorded in pid files under the run directory
  (`/tmp/mrc-p4/run/*.pid`, or `$MRC_P4_RUN_DIR`), and only when the process still is
  a switch (`p4target` or `simple_switch` on its command line) that started before its
  pid file was written, so a recycled pid never kills an unrelated process.

- on every server of a network spread over several machines (topologies/cluster.py
  records them in the run directory's `servers.json` before any node exists, and
  removes the record when the network stops; `--server` names more): this same file
  run there over ssh (`ssh DEST python3 - ...`, nothing to install), with the same
  prefixes and run directory, then the shared ssh connection to it is closed.

It uses only the standard library so `make clean` works before `make deps`.
"""

from __future__ import annotations

import argparse  # not typer: `make clean` runs this file on the system Python, with or without .venv
import json
import logging
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger("cleanup")

PREFIXES: tuple[str, ...] = ("p4t", "mrc")
DEFAULT_RUN_DIR = Path("/tmp/mrc-p4/run")
SWITCH_MARKERS: tuple[str, ...] = ("p4target", "simple_switch")
MININET_TAG = "mininet:"
# Exported by every Mininet node of ours (topologies/node_marks.py NODE_ENV; kept equal
# by a test): whatever runs in such a node inherits it.
NODE_ENV = "MRC_P4_NODE"
# Written by topologies/fabric_net.py (NODES_RECORD; kept equal by a test).
NODES_RECORD = "nodes.json"
# Written by topologies/cluster.py (SERVERS_RECORD, SHARED; kept equal by a test).
SERVERS_RECORD = "servers.json"
SSH = ("ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=10")
SSH_SHARED = ("-o", "ControlPath=/tmp/mrc-ssh-%C")


@dataclass(frozen=True)
class Recorded:
    """Node and root-namespace interface names a network recorded in its run directory."""

    nodes: frozenset[str] = frozenset()
    interfaces: frozenset[str] = frozenset()
    files: tuple[Path, ...] = ()


def recorded(directory: Path) -> Recorded:
    """The run directory's node record (nothing when there is none or it is unreadable)."""
    path = directory / NODES_RECORD
    try:
        data = json.loads(path.read_text())
        nodes = frozenset(str(n) for n in data.get("nodes", []))
        intfs = frozenset(str(i) for i in data.get("interfaces", []))
    except (OSError, ValueError, AttributeError, TypeError):
        return Recorded(files=(path,) if path.exists() else ())
    return Recorded(nodes, intfs, (path,))


def run_dir() -> Path:
    """The directory holding switch pid files (`$MRC_P4_RUN_DIR` overrides)."""
    return Path(os.environ.get("MRC_P4_RUN_DIR", str(DEFAULT_RUN_DIR)))


@dataclass(frozen=True)
class Leftovers:
    """What of the project is still on the machine."""

    namespaces: tuple[str, ...] = ()
    links: tuple[str, ...] = ()
    processes: tuple[int, ...] = ()
    pid_files: tuple[Path, ...] = ()
    cut_tables: tuple[str, ...] = ()  # nftables tables of cables cut on BMv2 (controller/cable_cuts.py)

    def empty(self) -> bool:
        return not (self.namespaces or self.links or self.processes or self.pid_files or self.cut_tables)

    def describe(self) -> str:
        parts = []
        if self.namespaces:
            parts.append("namespaces: " + ", ".join(self.namespaces))
        if self.links:
            parts.append("links: " + ", ".join(self.links))
        if self.processes:
            parts.append("processes: " + ", ".join(str(p) for p in self.processes))
        if self.pid_files:
            parts.append("pid/record files: " + ", ".join(str(p) for p in self.pid_files))
        if self.cut_tables:
            parts.append("nftables tables: " + ", ".join(self.cut_tables))
        return "; ".join(parts) if parts else "nothing"


def _ip(*args: str) -> str:
    """Run `ip` and return stdout ('' when it fails: a missing object is not an error)."""
    try:
        res = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as exc:
        log.warning("ip %s failed: %s", " ".join(args), exc)
        return ""
    return res.stdout if res.returncode == 0 else ""


def _has_prefix(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name.startswith(p) for p in prefixes)


def list_namespaces(prefixes: tuple[str, ...] = PREFIXES) -> list[str]:
    """Named network namespaces (`ip netns`) whose names carry a project prefix."""
    names = [line.split()[0] for line in _ip("netns", "list").splitlines() if line.strip()]
    return sorted(n for n in names if _has_prefix(n, prefixes))


def list_links(prefixes: tuple[str, ...] = PREFIXES, names: frozenset[str] = frozenset()) -> list[str]:
    """Links in this (the root) namespace whose names carry a project prefix or are in ``names``."""
    out = _ip("-j", "link", "show")
    try:
        links = json.loads(out) if out.strip() else []
    except json.JSONDecodeError:
        return []
    return sorted(str(link["ifname"]) for link in links
                  if _has_prefix(str(link.get("ifname", "")), prefixes) or str(link.get("ifname", "")) in names)


CUT_TABLE_PREFIX = "mrc_cut_"  # controller/cable_cuts.py names a cut cable's table so


def _cut_name(name: str) -> str:
    return CUT_TABLE_PREFIX + "".join(c if c.isalnum() else "_" for c in name)


def list_cut_tables(prefixes: tuple[str, ...] = PREFIXES, names: frozenset[str] = frozenset()) -> list[str]:
    """nftables netdev tables (root namespace) that hold a cut cable of one of our
    interfaces: a network killed while a cable was cut leaves them."""
    try:
        res = subprocess.run(["nft", "list", "tables", "netdev"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return []
    tables = [line.split()[-1] for line in res.stdout.splitlines() if line.startswith("table netdev ")]
    ours = {_cut_name(n) for n in names}
    return sorted(t for t in tables if t in ours or any(t.startswith(_cut_name(p)) for p in prefixes))


def _cmdline(pid: int) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [a.decode(errors="replace") for a in raw.split(b"\0") if a]


def _all_pids() -> list[int]:
    return [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit()]


def _named_netns_inodes() -> set[int]:
    """Network namespaces with a name (`ip netns`): ours are removed by name, and one not
    ours (a namespace cluster's "server", another tool's) is left alone even when it
    holds an interface of ours."""
    out = set()
    for path in Path("/run/netns").glob("*"):
        try:
            out.add(os.stat(path).st_ino)
        except OSError:
            pass
    return out


def _netns_inode(pid: int) -> int | None:
    try:
        return os.stat(f"/proc/{pid}/ns/net").st_ino
    except OSError:
        return None


def _start_time(pid: int) -> float | None:
    """Wall-clock start time of a process, from /proc (None when it is gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        btime = next(
            int(line.split()[1])
            for line in Path("/proc/stat").read_text().splitlines()
            if line.startswith("btime ")
        )
    except (OSError, StopIteration, ValueError):
        return None
    fields = stat.rsplit(")", 1)[1].split()
    return btime + int(fields[19]) / os.sysconf("SC_CLK_TCK")


def _netns_links(pid: int) -> list[str]:
    """Interface names in the network namespace of a process (from /proc/<pid>/net/dev)."""
    try:
        lines = Path(f"/proc/{pid}/net/dev").read_text().splitlines()[2:]
    except OSError:
        return []
    return [line.split(":", 1)[0].strip() for line in lines if ":" in line]


def _node_mark(pid: int) -> str | None:
    """The project's node mark in a process's environment (`MRC_P4_NODE=<node>`)."""
    try:
        env = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return None
    key = NODE_ENV.encode() + b"="
    for item in env.split(b"\0"):
        if item.startswith(key):
            return item[len(key):].decode(errors="replace")
    return None


def mininet_node_pids(prefixes: tuple[str, ...] = PREFIXES, rec: Recorded = Recorded()) -> list[int]:
    """Processes in Mininet nodes of ours, found three ways:

    - node shells (`mininet:<name>`) whose name carries a prefix, and every process
      sharing the private network namespace of such a shell;
    - every process in an unnamed private network namespace whose interfaces (but
      `lo`) all carry a prefix (a Mininet host's `<name>-ethN`), which also finds a
      daemon that outlived its host's shell and keeps the namespace (and its veth)
      alive;
    - every process whose environment carries the node mark of a node of ours (what
      was started in the node, even after Mininet deleted the node's interfaces).

    A node or interface named in the node record ``rec`` counts as one with a prefix.
    """

    def ours_node(name: str) -> bool:
        return _has_prefix(name, prefixes) or name in rec.nodes

    def ours_link(name: str) -> bool:
        return _has_prefix(name, prefixes)

    own = os.getpid()
    root_ns = _netns_inode(own)
    # never the machine's own namespace: run on a namespace cluster's "server", this
    # process shares the process table with everything the machine runs
    named = _named_netns_inodes()
    by_ns: dict[int, list[int]] = {}
    shells: list[int] = []
    for pid in _all_pids():
        if pid == own:
            continue
        ino = _netns_inode(pid)
        if ino is not None and ino != root_ns and ino not in named:
            by_ns.setdefault(ino, []).append(pid)
        for arg in _cmdline(pid):
            if arg.startswith(MININET_TAG) and ours_node(arg[len(MININET_TAG):]):
                shells.append(pid)
                break
        else:
            mark = _node_mark(pid)
            if mark is not None and ours_node(mark):
                shells.append(pid)
    found = set(shells)
    for pids in by_ns.values():
        # a Mininet host's namespace holds only its own interfaces; a machine's (seen from
        # a namespace cluster's "server", which shares its process table) holds others
        links = [name for name in _netns_links(pids[0]) if name != "lo"]
        ours = any(p in found for p in pids) or (bool(links) and all(ours_link(name) for name in links))
        if ours:
            found.update(pids)
    return sorted(found)


def namespace_pids(namespaces: list[str]) -> list[int]:
    """Processes running inside the given named namespaces."""
    pids: set[int] = set()
    for ns in namespaces:
        pids.update(int(p) for p in _ip("netns", "pids", ns).split() if p.isdigit())
    pids.discard(os.getpid())
    return sorted(pids)


def switch_pid_files(directory: Path) -> list[tuple[Path, int | None]]:
    """Pid files under the run dir with the pid of a live switch of ours, or None when the
    file is stale (process gone, or the pid now belongs to something else)."""
    result: list[tuple[Path, int | None]] = []
    if not directory.is_dir():
        return result
    for pidfile in sorted(directory.glob("*.pid")):
        pid: int | None = None
        try:
            text = pidfile.read_text().strip()
            mtime = pidfile.stat().st_mtime
        except OSError:
            continue
        if text.isdigit():
            candidate = int(text)
            args = " ".join(_cmdline(candidate))
            started = _start_time(candidate)
            if (
                candidate != os.getpid()
                and any(m in args for m in SWITCH_MARKERS)
                and started is not None
                and started <= mtime + 2.0
            ):
                pid = candidate
        result.append((pidfile, pid))
    return result


def find_leftovers(prefixes: tuple[str, ...] = PREFIXES, directory: Path | None = None) -> Leftovers:
    """Everything of ours still present (nothing is changed)."""
    directory = run_dir() if directory is None else directory
    rec = recorded(directory)
    namespaces = list_namespaces(prefixes)
    pidfiles = switch_pid_files(directory)
    procs = set(mininet_node_pids(prefixes, rec)) | set(namespace_pids(namespaces))
    procs.update(pid for _, pid in pidfiles if pid is not None)
    return Leftovers(
        namespaces=tuple(namespaces),
        links=tuple(list_links(prefixes, rec.interfaces)),
        processes=tuple(sorted(procs)),
        pid_files=tuple(p for p, _ in pidfiles) + rec.files,
        cut_tables=tuple(list_cut_tables(prefixes, rec.interfaces)),
    )


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def terminate(pids: list[int], grace: float = 2.0) -> None:
    """SIGTERM, wait up to `grace` seconds, then SIGKILL what is still alive."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        live = [p for p in pids if _alive(p)]
        for pid in live:
            try:
                os.kill(pid, sig)
            except (ProcessLookupError, PermissionError):
                pass
        deadline = time.monotonic() + grace
        while live and time.monotonic() < deadline:
            live = [p for p in live if _alive(p)]
            if live:
                time.sleep(0.05)
        if not live:
            return


def clean(prefixes: tuple[str, ...] = PREFIXES, directory: Path | None = None, grace: float = 2.0) -> Leftovers:
    """Remove our leftovers; returns what was found (and so removed)."""
    rec = recorded(run_dir() if directory is None else directory)
    found = find_leftovers(prefixes, directory)
    if found.empty():
        return found
    terminate(list(found.processes), grace)
    for pidfile in found.pid_files:
        pidfile.unlink(missing_ok=True)
    for ns in found.namespaces:
        _ip("netns", "delete", ns)
    for link in list_links(prefixes, rec.interfaces):  # deleting one end of a veth removes its peer
        _ip("link", "delete", link)
    for table in found.cut_tables:
        subprocess.run(["nft", "delete", "table", "netdev", table], capture_output=True, timeout=20)
    return found


def recorded_servers(directory: Path) -> list[str]:
    """The ssh destinations a cluster network recorded in its run directory."""
    try:
        data = json.loads((directory / SERVERS_RECORD).read_text())
        return [str(d) for d in data.get("servers", [])]
    except (OSError, ValueError, AttributeError, TypeError):
        return []


def on_server(dest: str, prefixes: tuple[str, ...], directory: Path, check: bool) -> tuple[int, str]:
    """Run this file on server ``dest`` over ssh (cleaning only there); (status, output)."""
    args = ["--here-only", "--run-dir", str(directory), *(a for p in prefixes for a in ("--prefix", p))]
    if check:
        args.append("--check")
    remote = "python3 - " + " ".join(f"'{a}'" for a in args)
    try:
        r = subprocess.run([*SSH, dest, remote], input=Path(__file__).read_bytes(), capture_output=True,
                           timeout=120)
    except subprocess.TimeoutExpired:
        return 1, "no answer within 120 s"
    out = (r.stdout + r.stderr).decode(errors="replace").strip()
    if r.returncode == 255:
        out += f" (ssh {dest} failed: check that `ssh {dest} true` works without a password)"
    if not check:
        subprocess.run([*SSH, *SSH_SHARED, "-O", "exit", dest], capture_output=True, timeout=20)
    return r.returncode, out


def clean_servers(servers: list[str], prefixes: tuple[str, ...], directory: Path, check: bool) -> int:
    """Clean (or check) every server; 0 when each is clean."""
    status = 0
    for dest in servers:
        code, out = on_server(dest, prefixes, directory, check)
        for line in out.splitlines() or [""]:
            print(f"server {dest}: {line}")
        status |= 1 if code else 0
    return status


def main(argv: list[str] | None = None) -> int:
    args, servers, directory = _parse(argv)
    prefixes = tuple(args.prefixes) if args.prefixes else PREFIXES
    # the servers first: the run directory's node record, which they may share, is removed here
    status = clean_servers(servers, prefixes, directory, args.check) if servers else 0
    status |= clean_here(prefixes, args.run_dir, args.check)
    if servers and not status and not args.check:
        (directory / SERVERS_RECORD).unlink(missing_ok=True)
    return status


def _parse(argv: list[str] | None) -> tuple[argparse.Namespace, list[str], Path]:
    parser = argparse.ArgumentParser(
        description="Remove the project's stray namespaces, veths, Mininet nodes and switch processes."
    )
    parser.add_argument(
        "--prefix", action="append", dest="prefixes", metavar="PREFIX",
        help=f"name prefix of our namespaces/links/Mininet nodes (repeatable; default: {' '.join(PREFIXES)})",
    )
    parser.add_argument("--run-dir", type=Path, default=None,
                        help=f"directory of switch pid files (default: $MRC_P4_RUN_DIR or {DEFAULT_RUN_DIR})")
    parser.add_argument("--check", action="store_true",
                        help="only list leftovers; exit 1 when there are any")
    parser.add_argument("--server", action="append", dest="servers", default=[], metavar="[USER@]HOST",
                        help="clean this server too, over ssh (repeatable; the run directory's servers.json "
                             "names those of a cluster network)")
    parser.add_argument("--here-only", action="store_true",
                        help="this machine only, not the recorded servers (what runs on each server)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="cleanup: %(message)s")
    directory = run_dir() if args.run_dir is None else args.run_dir
    servers = [] if args.here_only else list(dict.fromkeys([*recorded_servers(directory), *args.servers]))
    return args, servers, directory


def clean_here(prefixes: tuple[str, ...], directory: Path | None, check: bool) -> int:
    """Clean (or check) this machine; the exit status."""
    if check:
        left = find_leftovers(prefixes, directory)
        print(f"leftovers: {left.describe()}")
        return 0 if left.empty() else 1
    left = find_leftovers(prefixes, directory)
    if left.empty():
        print("cleanup: nothing of ours left")
        return 0
    if os.geteuid() != 0:
        print(f"cleanup: found {left.describe()}; removing them needs root (run as root)", file=sys.stderr)
        return 1
    removed = clean(prefixes, directory)
    print(f"cleanup: removed {removed.describe()}")
    remaining = find_leftovers(prefixes, directory)
    if not remaining.empty():
        print(f"cleanup: could not remove {remaining.describe()}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
