"""Nodes of the fabric on servers, and hosts there: Mininet's ``RemoteMixin`` for the
project's node classes (topologies/cluster.py puts them together).

Why a module of its own: a host on a server is more than its shell there. What its
commands read and write (the endpoints' ``--report``, ``--in``, ``--out`` files) must
be where they run; a server with a file system of its own needs copies, made before
the command starts and fetched back once it has ended, and nothing left there. The
same path on both machines keeps the commands unchanged (docs/cluster.md, "Hosts on
servers").
"""

from __future__ import annotations

import shlex
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from mininet.examples.cluster import RemoteMixin

from topologies import switch_process
from topologies.cluster_ssh import Server
from topologies.placement import LOCAL


class ClusterNodeMixin(RemoteMixin):
    """What makes a Mininet node run on its server (``servers``: the cluster's, by name):
    its shell there over ssh, as the server's user, on one shared ssh connection."""

    servers: ClassVar[dict[str, Server]] = {}

    def __init__(self, name: str, server: str = LOCAL, **params: Any) -> None:
        self.cluster_server = self.servers.get(server) or Server.parse(LOCAL)
        params.setdefault("user", self.cluster_server.user)
        params.setdefault("serverIP", self.cluster_server.address)
        params.setdefault("controlPath", True)  # one ssh connection per server for the node shells
        super().__init__(name, server=server, **params)


class ClusterHostMixin(ClusterNodeMixin):
    """A host on its server: its shell, and so its ``cmd`` (ping, the CLI's commands) and
    its ``popen`` (the endpoints ``mrc-send`` and ``mrc-recv``), run there; the commands
    are the local paths (``.venv/bin/...``), so the repository and its environment must
    be at the same path there, as for the switches. Its NIC runs on the same server
    (topologies/placement.py), so the host-NIC link is a veth there.

    The files a command names after an option (``--report F``, ``--in F``, ``--out F``:
    absolute paths outside the repository) are where the command runs: on a server
    that does not share this machine's files, an existing file is copied there first,
    the directory of a new one made there, and once the process has ended each new
    file is fetched back here and every copy removed there."""

    def popen(self, *args: Any, **kwargs: Any) -> subprocess.Popen[bytes]:
        if not self.isRemote or self.cluster_server.shares_files():
            proc: subprocess.Popen[bytes] = super().popen(*args, **kwargs)
            return proc
        inputs, outputs = command_files(_argv(args))
        server = self.cluster_server
        for path in inputs:
            server.put(path)
        if outputs:
            server.run("mkdir -p " + " ".join(sorted({shlex.quote(str(p.parent)) for p in outputs})))
        proc = super().popen(*args, **kwargs)
        proc.__class__ = MirroredProcess
        assert isinstance(proc, MirroredProcess)
        proc.mirror = (server, inputs, outputs)
        return proc


class MirroredProcess(subprocess.Popen[bytes]):
    """A remote host's process whose new files come back here when it has ended."""

    mirror: tuple[Server, list[Path], list[Path]] | None = None

    def wait(self, timeout: float | None = None) -> int:
        code = super().wait(timeout)
        mirror, self.mirror = self.mirror, None
        if mirror is not None:
            server, inputs, outputs = mirror
            fetched = {path: server.get(path) for path in outputs}
            # the copies there, before writing here (a server may share this machine's
            # files: then an input is the file here itself, and stays)
            server.remove([*(p for p in inputs if not server.same_file(p)), *outputs])
            for path, data in fetched.items():
                if data is not None:
                    path.write_bytes(data)
        return code


def _argv(args: tuple[Any, ...]) -> list[str]:
    """A command as Mininet's ``popen`` takes it (one list, one string, or arguments)."""
    if len(args) == 1 and isinstance(args[0], list):
        return [str(a) for a in args[0]]
    if len(args) == 1 and isinstance(args[0], str):
        return args[0].split()
    return [str(a) for a in args]


def command_files(argv: Sequence[str]) -> tuple[list[Path], list[Path]]:
    """The files a command names after its options, outside the repository: (those that
    exist here, the inputs; those whose directory exists here, the outputs)."""
    inputs: list[Path] = []
    outputs: list[Path] = []
    for prev, arg in zip(argv, argv[1:], strict=False):
        path = Path(arg)
        if not prev.startswith("--") or not path.is_absolute() or path.is_relative_to(switch_process.REPO):
            continue
        if path.is_file():
            inputs.append(path)
        elif path.parent.is_dir() and not path.exists():
            outputs.append(path)
    return inputs, outputs


def cluster_host_class(base: type, servers: dict[str, Server]) -> type:
    """``base`` (a Mininet host class of the project) as a node on one of ``servers``."""
    return type(f"Cluster{base.__name__}", (ClusterHostMixin, base), {"servers": servers})
