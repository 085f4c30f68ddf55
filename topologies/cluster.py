"""The fabric over several servers: Mininet's cluster edition with P4 switch nodes.

Why Mininet's classes: ``mininet.examples.cluster`` already runs nodes on other
servers over ssh (``RemoteMixin``: the node's shell, its ``cmd`` and ``rcmd``, run
there), places them (``MininetCluster`` with a ``Placer``) and joins links across
servers with tunnels (``RemoteLink``). What the fabric adds:

- remote P4 switch classes: the project's switch classes (embedded target, a process
  per switch or grouped, and BMv2) on ``RemoteMixin``. A remote switch starts its
  process on its server over ssh (topologies/cluster_ssh.py), serves P4Runtime on
  the server's address (never 0.0.0.0), takes its free port there, and is stopped by
  a signal sent there. Grouped switches share processes per server only.
- a remote host class (topologies/cluster_hosts.py) for a host a
  placement file puts on a server: its shell, and so its commands and endpoints, run
  there, beside its NIC; the files its commands name are copied there and back when
  the server does not share this machine's files.
- ``TunnelLink``: a ``RemoteLink`` whose tunnels are GRE taps (Mininet's choice) when
  every server's kernel has them, VXLAN otherwise (``vxlan id N remote A local B
  dstport 4789``); either way the tunnel device carries a full 1500-byte fabric
  frame (Mininet's GRE link lowers it to 1450, which the fabric cannot take), so the
  underlay between servers needs an MTU of at least 1500 plus the tunnel header.
- ``ClusterPlan``: the servers (checked over ssh before anything starts), the
  placement (topologies/placement.py), the tunnel type; it builds the network and
  records the servers in the run directory (``servers.json``) so that ``make clean``
  (tools/cleanup.py) cleans each of them, also after a crash.

P4Runtime across machines is mutual TLS: before the network starts, ``prepare``
makes the run's CA and certificates in the run directory (``tls/``, as ``mrcctl certs``
does: one server certificate per server, for its address, and the client's); each
remote switch gets its server's certificate copied there and serves only clients
with a certificate of that CA; the readiness probe, the controller and ``mrcctl``
(through the state file's ``tls_dir``) use the client certificate. The local
switches stay plaintext on loopback. ``ClusterPlan(tls=False)`` (the runner's
``--insecure``) serves plaintext instead, for a private network one trusts.
"""

from __future__ import annotations

import json
import logging
import shutil
import subprocess
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from mininet.examples.cluster import MininetCluster, Placer, RemoteLink
from mininet.link import Link
from mininet.node import Host
from mininet.util import quietRun

from fabric.entries import nodes
from fabric.names import NodeNames
from fabric.topology import Topology
from topologies import switch_process
from topologies.cluster_hosts import ClusterNodeMixin, cluster_host_class
from topologies.cluster_ssh import Server, ServerError, parse_servers
from topologies.p4switch import P4Switch, SwitchError
from topologies.placement import LOCAL, PLANE, place_nodes
from topologies.switch_group import GroupedP4Switch, SwitchProcess
from topologies.switch_group import place as place_in_processes

log = logging.getLogger(__name__)

SERVERS_RECORD = "servers.json"
TLS_DIR = "tls"  # in the run directory: the run's CA and certificates
FABRIC_MTU = 1500
VXLAN_PORT = 4789
TLS_TARGETS = ("embedded", "bmv2")  # the switch targets whose P4Runtime serves mutual TLS on a server


class RemoteP4Mixin(ClusterNodeMixin):
    """What makes a P4 switch node run on its server (``servers``: the cluster's, by name)."""

    tls_root: ClassVar[Path | None] = None  # the certificates (ClusterPlan.prepare); None: plaintext

    def __init__(self, name: str, server: str = LOCAL, **params: Any) -> None:
        super().__init__(name, server=server, **params)
        if self.isRemote and self.tls_root is not None and getattr(self, "target", "") in TLS_TARGETS:
            self.tls_dir = str(self.tls_root)

    @property
    def grpc_host(self) -> str:
        return self.cluster_server.address if self.isRemote else "127.0.0.1"

    def pick_port(self) -> int:
        if not self.isRemote:
            return int(super().pick_port())
        return self.cluster_server.free_port()

    def _quiet_interfaces(self) -> None:
        if not self.isRemote:
            super()._quiet_interfaces()
            return
        intfs = list(self.port_interfaces().values())
        if intfs:
            out = self.cmd("sysctl -qw " + " ".join(f"net.ipv6.conf.{i}.disable_ipv6=1" for i in intfs))
            if out.strip():
                log.warning("%s: cannot disable IPv6 on its ports: %s", self.mrc_name, out.strip())

    def tls_files(self) -> dict[str, Path]:
        """This switch's server certificate, key and the CA (``mrcctl certs`` names), by option."""
        assert self.tls_dir is not None
        d, name = Path(self.tls_dir), self.cluster_server.name
        return {"--tls-cert": d / f"server-{name}.pem", "--tls-key": d / f"server-{name}.key", "--tls-ca": d / "ca.pem"}

    def security_args(self) -> list[str]:
        """The P4Runtime transport options of a remote switch's command: mutual TLS with
        its server's certificate, or plaintext off loopback when the network has no
        certificates (``--insecure``; BMv2 serves plaintext without an option)."""
        target = getattr(self, "target", "")
        if self.tls_dir is None:
            return ["--insecure"] if target == "embedded" else []
        files = self.tls_files()
        if target == "bmv2":  # simple_switch_grpc's own options (after its "--")
            return ["--grpc-server-ssl", "--grpc-server-cert", str(files["--tls-cert"]),
                    "--grpc-server-key", str(files["--tls-key"]), "--grpc-server-cacert", str(files["--tls-ca"]),
                    "--grpc-server-with-client-auth"]
        return [a for opt, path in files.items() for a in (opt, str(path))]

    def command(self) -> list[str]:
        if self.isRemote and getattr(self, "thrift_port", None) == 0:  # BMv2's Thrift port: free there
            self.thrift_port = self.cluster_server.free_port()
        cmd: list[str] = super().command()
        return cmd

    def wait_ready(self, timeout: float | None = None) -> float:
        """As here; BMv2's egress queues are then set over Thrift at the server's address."""
        queues = getattr(self, "queues", None)
        if not self.isRemote or not queues:
            return float(super().wait_ready(timeout))
        from topologies.bmv2_queues import QueueSettings, apply_queues

        self.queues = QueueSettings()  # not on 127.0.0.1, where BMv2's own wait would set them
        took = float(super().wait_ready(timeout))
        self.queues = queues
        apply_queues(self.thrift_port, queues, f"switch {self.mrc_name}", host=self.cluster_server.address)
        return took

    def spawn(self, cmd: Sequence[str], log_path: Path, title: str, node: str,
              files: Sequence[Path] = ()) -> subprocess.Popen[bytes]:
        if not self.isRemote:
            proc: subprocess.Popen[bytes] = super().spawn(cmd, log_path, title, node, files)
            return proc
        if hasattr(self, "bmv2_json"):  # BMv2 reads the compiled program: made here, copied there
            files = [*files, self.bmv2_json()]
        for path in files:
            self.cluster_server.put(path)
        if self.tls_dir is not None:
            for path in self.tls_files().values():
                self.cluster_server.put(path, mode=0o600 if path.suffix == ".key" else 0o644)
        return self.cluster_server.spawn([*cmd, *self.security_args()], log_path, title, node,
                                         switch_process.REPO)

    def signal_stop(self) -> None:
        if isinstance(self, GroupedP4Switch):  # its process's (RemoteSwitchProcess) to stop
            super().signal_stop()
        elif self.isRemote and getattr(self, "proc", None) is not None and self.proc.poll() is None:
            self.cluster_server.stop(self.log_path)
        else:
            super().signal_stop()


class RemoteSwitchProcess(SwitchProcess):
    """A ``p4target group`` process of switches of one server."""

    @property
    def server(self) -> Server:
        return getattr(self.members[0], "cluster_server", None) or Server.parse(LOCAL)

    def signal_stop(self) -> None:
        if not self.server.local and self.alive:
            self.server.stop(self.log_path)
        else:
            super().signal_stop()

    def wait_ready(self, timeout: float) -> float:
        if self.server.local:
            return super().wait_ready(timeout)
        try:  # the pid file is on the server: ask every member at once
            with ThreadPoolExecutor(max_workers=16, thread_name_prefix="mrc-ready") as pool:
                list(pool.map(lambda sw: sw.wait_ready(timeout), self.members))
        except SwitchError:
            self.signal_stop()
            self.reap()
            raise
        return time.monotonic() - self.started_at


class ClusterGroupedMixin:
    """Grouped switches placed into processes server by server (remote processes unpinned:
    on a server of its own the kernel spreads them; the local ones are pinned as usual)."""

    @classmethod
    def batchStartup(cls, switches: Iterable[P4Switch], run: Any = None) -> list[P4Switch]:
        from p4target.api import allowed_cpus
        from topologies.switch_group import READY_PER_SWITCH

        members = [s for s in switches if isinstance(s, GroupedP4Switch)]
        by_server: dict[str, list[GroupedP4Switch]] = {}
        for sw in members:
            by_server.setdefault(getattr(sw, "server", LOCAL), []).append(sw)
        groups: list[SwitchProcess] = []
        for server, sws in by_server.items():
            local = server == LOCAL
            cpus = allowed_cpus() if local else list(range(sws[0].cluster_server.cpus()))
            for part in place_in_processes(sws, cls.placement, len(cpus)):  # type: ignore[attr-defined]
                k = len(groups)
                pin = cpus[k % len(cpus)] if local and len(cpus) > 1 else None
                groups.append(RemoteSwitchProcess(f"{cls.prefix}grp{k}", part, pin))  # type: ignore[attr-defined]
        for g in groups:
            g.launch()
        for g in groups:
            g.wait_ready(max(sw.ready_timeout for sw in g.members) + READY_PER_SWITCH * len(g.members))
        return members


def cluster_switch_class(base: type[P4Switch], servers: dict[str, Server],
                         tls_root: Path | None = None) -> type[P4Switch]:
    """``base`` (a project switch class) as a node that may run on any of ``servers``,
    serving P4Runtime there over mutual TLS with the certificates in ``tls_root``."""
    mixins: tuple[type, ...] = (RemoteP4Mixin,)
    if issubclass(base, GroupedP4Switch):
        mixins = (ClusterGroupedMixin, RemoteP4Mixin)
    return type(f"Cluster{base.__name__}", (*mixins, base), {"servers": servers, "tls_root": tls_root})


def _root_cmd(node: Any, command: str) -> str:
    """Run ``command`` in the root namespace of the node's server: in the shell of a
    root-namespace node (a switch; no new ssh connection), else here."""
    if not node.inNamespace:
        return str(node.cmd(f"{{ {command} ; }} 2>&1"))
    if getattr(node, "isRemote", False):
        return str(node.rcmd(command))
    return str(quietRun(command))


class TunnelLink(RemoteLink):
    """A link that is a veth on one server and a GRE tap or VXLAN tunnel across two."""

    tunnel: Any  # set by RemoteLink: what makeTunnel returned, None for a local veth
    kind: ClassVar[str] = "vxlan"  # the ClusterPlan sets it: gretap when every server has it
    next_id: ClassVar[int] = 0
    id_base: ClassVar[int] = 1000

    def makeTunnel(self, node1: Any, node2: Any, intfname1: str, intfname2: str,
                   addr1: str | None = None, addr2: str | None = None) -> str:
        if node2.server == LOCAL:
            return self.makeTunnel(node2, node1, intfname2, intfname1, addr2, addr1)
        ip1, ip2 = node1.serverIP, node2.serverIP
        if node1.server == LOCAL:  # the local end: the address on the route to the server
            route = quietRun(f"ip -o route get {ip2}")
            ip1 = route.split(" src ")[1].split()[0] if " src " in route else ip1
        type(self).next_id += 1
        tid = self.id_base + self.next_id
        for node, name, addr, local, remote in ((node1, intfname1, addr1, ip1, ip2),
                                               (node2, intfname2, addr2, ip2, ip1)):
            kind = (f"type gretap local {local} remote {remote} key {tid} ttl 64" if self.kind == "gretap"
                    else f"type vxlan id {tid} local {local} remote {remote} dstport {VXLAN_PORT}")
            steps = [f"ip link add {name} mtu {FABRIC_MTU} {kind}", f"ip link set {name} up"]
            if addr:
                steps.append(f"ip link set {name} address {addr}")
            out = _root_cmd(node, f"ip link del {name} 2>/dev/null; " + " && ".join(steps))
            if out.strip():
                raise ServerError(f"server {node.server}: cannot make {self.kind} tunnel {name} "
                                  f"({local} -> {remote}): {out.strip()}")
            if node.inNamespace:
                out = _root_cmd(node, f"ip link set {name} netns {node.pid}")
                if out.strip():
                    raise ServerError(f"server {node.server}: cannot move {name} into {node.name}: {out.strip()}")
        return f"{self.kind} {tid}"

    def stop(self) -> None:
        if self.tunnel:
            self.intf1.delete()
            self.intf2.delete()
        else:
            Link.stop(self)
        self.tunnel = None


@dataclass
class ClusterPlan:
    """Where every node of a network runs, and how links cross servers."""

    servers: list[Server]
    where: dict[str, str]  # controller switch name -> server name
    tunnel: str  # gretap or vxlan
    policy: str = PLANE
    tls: bool = True  # remote switches serve mutual TLS with certificates made for the run
    hosts: dict[str, str] = field(default_factory=dict)  # controller host name -> server name (else here)

    @property
    def by_name(self) -> dict[str, Server]:
        return {s.name: s for s in self.servers}

    def remote(self) -> list[Server]:
        return [s for s in self.servers if not s.local]

    def switch_class(self, base: type[P4Switch], run_dir: Path) -> type[P4Switch]:
        tls_root = self.tls_dir(run_dir) if self.tls and self.remote() else None
        return cluster_switch_class(base, self.by_name, tls_root)

    @staticmethod
    def tls_dir(run_dir: Path) -> Path:
        return run_dir / TLS_DIR

    def network(self, names: NodeNames, **kwargs: Any) -> MininetCluster:
        """Mininet's cluster network of these placements (kwargs: Mininet's; ``topo``, the
        built Mininet topology, gets the remote class of each host placed on a server)."""
        where = {names.mininet(n): s for n, s in {**self.where, **self.hosts}.items()}
        topo, by_name = kwargs.get("topo"), self.by_name
        classes: dict[type, type] = {}  # one remote class per host class
        for host, server in self.hosts.items():
            if server != LOCAL and topo is not None:
                info = topo.nodeInfo(names.mininet(host))
                base = info.get("cls") or kwargs.get("host") or Host
                if base not in classes:
                    classes[base] = cluster_host_class(base, by_name)
                info["cls"] = classes[base]

        class FabricPlacer(Placer):
            def place(self, node: str) -> str:
                return where.get(node, LOCAL)

        TunnelLink.kind = self.tunnel
        servers = [LOCAL, *(s.name for s in self.remote())]
        ips = {LOCAL: "127.0.0.1", **{s.name: s.address for s in self.remote()}}
        return MininetCluster(servers=servers, serverIP=ips, user=self.servers[0].user if self.servers else "root",
                              placement=FabricPlacer, precheck=False, link=TunnelLink, **kwargs)

    def prepare(self, run_dir: Path, nodes_record: Path) -> Path:
        """Before any node exists: the servers into the run directory and the node record
        onto each server (``make clean`` finds what a killed run leaves there), and
        the run's certificates (``mrcctl certs``: a CA, one certificate per server for
        its address, the client's) when the remote switches serve TLS."""
        if self.tls and self.remote():
            from controller.certs import ServerName, make_certs

            make_certs(self.tls_dir(run_dir), [ServerName(s.name, s.address) for s in self.remote()], force=True)
        path = run_dir / SERVERS_RECORD
        data = {"run_dir": str(run_dir), "servers": [s.dest for s in self.remote()]}
        path.write_text(json.dumps(data, indent=1) + "\n")
        for s in self.remote():
            s.put(nodes_record)
        return path

    def close(self, run_dir: Path) -> None:
        """The network is gone: drop its servers record and the shared ssh connections."""
        (run_dir / SERVERS_RECORD).unlink(missing_ok=True)
        shutil.rmtree(self.tls_dir(run_dir), ignore_errors=True)
        for s in self.remote():
            s.close()

    def summary(self) -> str:
        counts: dict[str, int] = {}
        for s in self.where.values():
            counts[s] = counts.get(s, 0) + 1
        per = ", ".join(f"{name}: {n}" for name, n in counts.items())
        away = [f"{h} on {s}" for h, s in self.hosts.items() if s != LOCAL]
        hosts = f"; hosts {', '.join(away)}" if away else ""
        return (f"{len(self.remote())} servers, placement {self.policy} ({per} switches{hosts}), "
                f"links across servers over {self.tunnel}, "
                f"P4Runtime there over {'mutual TLS' if self.tls else 'plaintext (--insecure)'}")


def plan_cluster(topo: Topology, servers: str | Sequence[str], policy: str | Path = PLANE,
                 tls: bool = True) -> ClusterPlan:
    """Check the servers (ssh, root), place the switches, choose the tunnel type."""
    parsed = parse_servers(servers)
    where, hosts = place_nodes(topo, [s.name for s in parsed], policy)
    remote = [s for s in parsed if not s.local]
    with ThreadPoolExecutor(max_workers=max(1, len(remote))) as pool:
        list(pool.map(lambda s: s.check(), remote))
        gre = all(pool.map(lambda s: s.has_gretap(), [*remote, Server.parse(LOCAL)]))
    log.info("servers %s ready; tunnels: %s", ", ".join(s.name for s in remote), "gretap" if gre else "vxlan")
    known = {n.name for n in nodes(topo)}
    assert set(where) == known
    return ClusterPlan(parsed, where, "gretap" if gre else "vxlan", str(policy), tls, hosts)

