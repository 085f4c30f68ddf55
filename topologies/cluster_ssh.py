"""One server of a cluster and what the network does on it over ssh.

Why one place: the remote switch nodes (topologies/cluster.py) start their processes,
copy the files those read, pick free ports, probe the tunnel types and clean up, each
as one ssh command to the server; the same options (batch mode, a time limit to
connect) and the same error (naming the server and the command) apply to all.

A server is ``[USER@]HOST``: an IPv4 address or a name the local resolver knows
(Mininet's cluster classes reach servers by address). ``localhost`` is the local
machine, reached without ssh. A user other than root runs the remote commands
through ``sudo -n`` (passwordless sudo; docs/cluster.md).
"""

from __future__ import annotations

import ipaddress
import secrets
import shlex
import socket
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from controller.ssh_options import SHARED, SSH_OPTIONS
from topologies.node_marks import NODE_ENV
from topologies.placement import LOCAL

PORT_BATCH = 32
COMMAND_TIMEOUT = 60.0
PID_SUFFIX = ".rpid"  # a remote process's pid file (its own pid, written before it starts)
REPO = Path(__file__).resolve().parents[1]


class ServerError(RuntimeError):
    """A server that cannot be used; the message names it and says what to do."""


def _resolve(host: str) -> str:
    try:
        return str(ipaddress.IPv4Address(host))
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, None, socket.AF_INET)
    except socket.gaierror:
        infos = []
    if not infos:
        raise ServerError(f"server {host}: no IPv4 address for that name; give its address or add it to "
                          "/etc/hosts (Mininet's cluster classes reach servers by IPv4 address)")
    return str(infos[0][4][0])


@dataclass
class Server:
    """A machine the network runs nodes on."""

    spec: str  # as given: [user@]host
    user: str = "root"
    host: str = LOCAL
    address: str = "127.0.0.1"
    _cpus: int | None = field(default=None, repr=False)
    _ports: list[int] = field(default_factory=list, repr=False)
    _handed_out: set[int] = field(default_factory=set, repr=False)
    _shared: bool | None = field(default=None, repr=False)
    _copies: set[Path] = field(default_factory=set, repr=False)  # what put copied there, removed by close

    @classmethod
    def parse(cls, spec: str, default_user: str = "root") -> Server:
        text = spec.strip()
        if not text:
            raise ServerError("an empty server name in --servers; give a,b,c (each [USER@]HOST)")
        user, _, host = text.rpartition("@")
        user = user or default_user
        if host == LOCAL:
            return cls(text, user, LOCAL, "127.0.0.1")
        return cls(text, user, host, _resolve(host))

    @property
    def name(self) -> str:
        """The server's name in placements and messages: the host as given."""
        return self.host

    @property
    def local(self) -> bool:
        return self.host == LOCAL

    @property
    def dest(self) -> str:
        return f"{self.user}@{self.address}"

    def ssh(self, *extra: str) -> list[str]:
        """The ssh command line up to the remote command."""
        return ["ssh", *SSH_OPTIONS, *extra, self.dest]

    def _remote(self, command: str) -> str:
        return command if self.user == "root" else f"sudo -n sh -c {shlex.quote(command)}"

    def run(self, command: str, timeout: float = COMMAND_TIMEOUT, check: bool = True,
            stdin: bytes | None = None) -> str:
        """Run a shell command on the server (locally for ``localhost``); its output."""
        argv = ["sh", "-c", command] if self.local else [*self.ssh(*SHARED), self._remote(command)]
        try:
            r = subprocess.run(argv, input=stdin, capture_output=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise ServerError(f"server {self.name}: {command!r} did not finish within {timeout:.0f} s") from None
        out = r.stdout.decode(errors="replace")
        if check and r.returncode != 0:
            err = (r.stderr.decode(errors="replace") or out).strip()
            hint = (f"; check that `ssh {self.dest} true` works without a password (docs/cluster.md)"
                    if r.returncode == 255 else "")
            raise ServerError(f"server {self.name}: {command!r} failed (status {r.returncode}): {err}{hint}")
        return out

    def check(self) -> None:
        """Can we log in and act as root there? (ServerError saying how to fix it.)"""
        if self.local:
            return
        out = self.run("id -u", timeout=20).strip()
        if out != "0":
            raise ServerError(f"server {self.name}: remote commands do not run as root (id -u: {out!r}); log in "
                              "as root or give the user passwordless sudo")

    def cpus(self) -> int:
        if self._cpus is None:
            out = self.run("nproc").strip()
            self._cpus = int(out) if out.isdigit() else 1
        return self._cpus

    def put(self, path: Path, mode: int = 0o644) -> None:
        """Copy a local file to the same path on the server (a new file renamed into
        place: on a server that shares this file system the source stays intact)."""
        if self.local:
            return
        if not path.is_relative_to(REPO):  # the repository's own files (a compiled program) stay there
            self._copies.add(path)
        tmp = f"{path}.put.$$"
        self.run(f"mkdir -p {shlex.quote(str(path.parent))} && (umask 077 && cat > {tmp}) && chmod {mode:o} {tmp} "
                 f"&& mv -f {tmp} {shlex.quote(str(path))}", stdin=path.read_bytes())

    def get(self, path: Path) -> bytes | None:
        """The bytes of the server's file at ``path``, None when it has none there."""
        if self.local:
            return path.read_bytes() if path.is_file() else None
        q = shlex.quote(str(path))
        out = subprocess.run([*self.ssh(*SHARED), self._remote(f"test -f {q} && cat {q}")], capture_output=True,
                             timeout=COMMAND_TIMEOUT)
        return out.stdout if out.returncode == 0 else None

    def remove(self, paths: Sequence[Path]) -> None:
        """Remove these files on the server (and their directories up the tree, as far as
        they are left empty)."""
        if self.local or not paths:
            return
        files = " ".join(shlex.quote(str(p)) for p in paths)
        dirs = " ".join(sorted({shlex.quote(str(p.parent)) for p in paths}, reverse=True))
        self.run(f"rm -f {files}; rmdir -p {dirs} 2>/dev/null; true", check=False)

    def same_file(self, path: Path) -> bool:
        """Is the server's ``path`` this machine's file itself (a shared file system)?"""
        if self.local:
            return True
        st = path.stat()
        out = self.run(f"stat -c %d:%i {shlex.quote(str(path))}", check=False).strip()
        return out == f"{st.st_dev}:{st.st_ino}"

    def shares_files(self) -> bool:
        """Does the server see this machine's files (the namespace cluster's servers do)?
        A file of a fresh random name made here is looked for there; asked once."""
        if self._shared is None:
            if self.local:
                self._shared = True
            else:
                with tempfile.NamedTemporaryFile(prefix="mrc-shared-", dir="/tmp") as probe:
                    token = secrets.token_hex(8)
                    probe.write(token.encode())
                    probe.flush()
                    self._shared = self.get(Path(probe.name)) == token.encode()
        return self._shared

    def free_port(self) -> int:
        """A TCP port nobody listens on now at the server's address (the server's kernel's
        choice), never one handed out before; asked for PORT_BATCH at a time."""
        while not self._ports:
            code = ("import socket\nss = [socket.socket() for _ in range(%d)]\n"
                    "for s in ss: s.bind((%r, 0))\nprint(*[s.getsockname()[1] for s in ss])"
                    % (PORT_BATCH, self.address))
            fresh = [int(p) for p in self.run(f"python3 -c {shlex.quote(code)}").split()]
            self._ports = [p for p in fresh if p not in self._handed_out]
        port = self._ports.pop(0)
        self._handed_out.add(port)
        return port

    def has_gretap(self) -> bool:
        """Can this server's kernel make a GRE tap device (Mininet's tunnel)?"""
        probe = "mrcgreprobe0"
        out = self.run(f"ip link add {probe} type gretap local 127.0.0.1 remote 127.0.0.2 2>&1 "
                       f"&& ip link del {probe} && echo yes", check=False)
        return out.strip().endswith("yes")

    def spawn(self, cmd: Sequence[str], log_path: Path, title: str, node: str, cwd: Path) -> subprocess.Popen[bytes]:
        """Start ``cmd`` on the server over ssh; its output goes to the local ``log_path``.

        The remote shell writes its pid to ``<log>.rpid`` on the server and becomes the
        command (``exec``), so ``stop`` signals the switch itself; the ssh session has a
        terminal, so a lost connection hangs the switch up too."""
        pid_file = f"{log_path.with_suffix(PID_SUFFIX)}"
        remote = (f"mkdir -p {shlex.quote(str(log_path.parent))} && cd {shlex.quote(str(cwd))} && "
                  f"echo $$ > {shlex.quote(pid_file)} && exec env {NODE_ENV}={shlex.quote(node)} "
                  + " ".join(shlex.quote(c) for c in cmd))
        with open(log_path, "wb") as logf:
            logf.write(f"# {title}\n# on {self.name}: {' '.join(cmd)}\n".encode())
            logf.flush()
            return subprocess.Popen([*self.ssh(*SHARED, "-tt"), self._remote(remote)], stdin=subprocess.DEVNULL,
                                    stdout=logf, stderr=subprocess.STDOUT, start_new_session=True)

    def stop(self, log_path: Path, sig: str = "TERM") -> None:
        """Signal the process ``spawn`` started with this log (if it still runs)."""
        pid_file = shlex.quote(f"{log_path.with_suffix(PID_SUFFIX)}")
        self.run(f"p=$(cat {pid_file} 2>/dev/null) && kill -{sig} \"$p\" 2>/dev/null; rm -f {pid_file}; true",
                 check=False, timeout=20)


    def close(self) -> None:
        """Remove what ``put`` copied there (unless the server shares this machine's files,
        where the copies are the files here), then end the shared connection."""
        if self.local:
            return
        if self._copies and not self.shares_files():
            self.remove(sorted(self._copies))
        self._copies.clear()
        subprocess.run([*self.ssh(*SHARED, "-O", "exit")], capture_output=True, timeout=20)


def parse_servers(text: str | Sequence[str], default_user: str = "root") -> list[Server]:
    """``a,b,c`` (or a list) as servers, each once (ServerError naming a bad one)."""
    items = text.split(",") if isinstance(text, str) else list(text)
    servers = [Server.parse(s, default_user) for s in items]
    seen: set[str] = set()
    for s in servers:
        if s.name in seen:
            raise ServerError(f"server {s.name} is given twice in --servers")
        seen.add(s.name)
    return servers
