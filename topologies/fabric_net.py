"""Start the fabric as a Mininet network of P4 switches, and stop it, whatever happens.

Why a context manager: a network is namespaces, veths and a few dozen processes; a
failure anywhere (a switch that dies at start, a test's assertion, Ctrl-C) must still
remove all of it. ``fabric_network`` builds the Mininet network from the controller's
topology model (topologies/clos.py), starts every switch (in parallel; it returns when
all answer P4Runtime), writes the run directory's state file ``network.json``
(controller/network_state.py: what ``mrcctl`` reads to reach the switches, with each
cable's interfaces) and ``mininet.json`` (the Mininet node of each controller name),
and on exit stops the switch processes before Mininet deletes their interfaces, then
the network, then removes both files.

``install_tables`` has the controller compute and reconcile every table of every
switch (controller/reconcile.py). ``python -m topologies.fabric_net`` is ``make run``
(topologies/demo.py runs the demo on the started network).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from controller.targets import DEFAULT_GRPC_BASE
from fabric.entries import Entry, nodes
from fabric.names import DEFAULT_PREFIX, NodeNames, cables, node_names
from fabric.resolve import topology_source
from fabric.topology import Topology
from fabric.wanted import wanted_entries as fabric_wanted
from topologies.clos import MrcClos, inventory_of
from topologies.ping import PingResult, ping6
from controller.network_state import STATE_NAME, Inventory, write_whole
from controller.network_state import run_dir as default_run_dir
from topologies.node_marks import NODE_ENV

if TYPE_CHECKING:  # Mininet is imported lazily (errors and --help work without it)
    from mininet.net import Mininet

    from controller.reconcile import Report
    from topologies.cluster import ClusterPlan
    from topologies.hosts import FabricHost
    from topologies.p4switch import P4Switch

log = logging.getLogger(__name__)

MININET_STATE = "mininet.json"


class NetworkBusy(RuntimeError):
    """Another network already uses the names this one needs."""


class KernelLacks(RuntimeError):
    """The machine's kernel cannot do what the topology asks of it."""


def existing_interfaces() -> set[str]:
    """Names of the links in the root network namespace."""
    out = subprocess.run(["ip", "-j", "link", "show"], capture_output=True, text=True, timeout=20).stdout
    return {str(i.get("ifname")) for i in json.loads(out or "[]")}


def check_names_free(topo: Topology, names: NodeNames) -> None:
    """Refuse to start over a running network of the same prefix: Mininet would delete
    its interfaces first (it removes any interface of the name it is about to create)."""
    taken = sorted(set(root_interfaces(topo, names)) & existing_interfaces())
    if taken:
        which = f"with node prefix {names.prefix!r}" if names.prefix else "with the same node names"
        raise NetworkBusy(f"interface {taken[0]} already exists: a network {which} is "
                          "running; stop it, or start this one with a node prefix of its own (--prefix mrc2)")


NODES_RECORD = "nodes.json"


def root_interfaces(topo: Topology, names: NodeNames) -> list[str]:
    """The interfaces a network of ``topo`` creates in the root namespace (the switch ends)."""
    cs = cables(topo, names)
    return sorted({c.b_intf for c in cs} | {c.a_intf for c in cs if c.name})


def collector_mark(prefix: str) -> str:
    """The node mark of the network's event collector (it runs in no Mininet node)."""
    return f"{prefix}events"


def write_nodes_record(run_dir: Path, topo: Topology, names: NodeNames) -> Path:
    """Record the network's node and interface names in the run directory before any
    exists, so that `make clean` (tools/cleanup.py) finds what a killed run leaves
    even when the names carry no prefix. Removed when the network stops."""
    path = run_dir / NODES_RECORD
    nodes = [*names.to_mininet.values(), collector_mark(names.prefix)]
    data = {"prefix": names.prefix, "nodes": sorted(nodes),
            "interfaces": root_interfaces(topo, names)}
    write_whole(path, json.dumps(data, indent=1) + "\n")
    return path


@dataclass
class FabricNetwork:
    """A started fabric: the Mininet network, its model, names and state file."""

    net: Mininet
    topo: Topology
    names: NodeNames
    inventory: Inventory
    run_dir: Path
    started: float  # time.monotonic() when the start began
    switches_ready: float  # seconds from the start until every switch answered

    @property
    def state_path(self) -> Path:
        return self.run_dir / STATE_NAME

    def host(self, name: str) -> FabricHost:
        """The Mininet host of the controller's host ``name`` (``h1``)."""
        host: FabricHost = self.net.get(self.names.mininet(name))
        return host

    def switch(self, name: str) -> P4Switch:
        """The Mininet switch node of the controller's switch ``name`` (``p0-leaf1``, ``nic2``)."""
        switch: P4Switch = self.net.get(self.names.mininet(name))
        return switch

    def p4_switches(self) -> list[P4Switch]:
        return [self.switch(n.name) for n in nodes(self.topo)]

    def address(self, host: str) -> str:
        ipv6 = self.host(host).ipv6
        if ipv6 is None:
            raise ValueError(f"host {host}: no IPv6 address (the Topo gives every fabric host one)")
        return ipv6

    def ping(self, src: str, dst: str, count: int = 3) -> PingResult:
        return ping6(self.host(src), self.address(dst), count)

    def check_switches(self) -> None:
        """Raise SwitchError (with its log) for the first switch whose process died."""
        for sw in self.p4_switches():
            sw.check()

    def reload_inventory(self) -> Inventory:
        """Re-read the state file: its list of links that are down is the truth (``mrcctl
        fail`` in another shell updates it too)."""
        from controller.network_state import load

        self.inventory = load(self.state_path)
        return self.inventory


def _write_mininet_state(fn: FabricNetwork) -> Path:
    path = fn.run_dir / MININET_STATE
    data = {"prefix": fn.names.prefix, "nodes": fn.names.to_mininet,
            "logs": {sw.mrc_name: str(sw.log_path) for sw in fn.p4_switches()},
            "hosts": {h.name: {"pid": fn.host(h.name).pid, "address": fn.address(h.name)} for h in fn.topo.hosts}}
    write_whole(path, json.dumps(data, indent=1) + "\n")
    return path


def start_collector(run_dir: Path, prefix: str) -> tuple[subprocess.Popen[bytes], str | None]:
    """The network's event collector (controller/events.py), and the senders of its
    hosts told where it listens (``MRC_P4_EVENTS``, endpoints/events.py); the
    environment as it was is given back by ``stop_collector``. The collector carries
    the node mark ``<prefix>events`` (topologies/node_marks.py), named in the node
    record too, so that `make clean` finds it when the runner was killed."""
    import os
    import sys

    from controller.events import socket_path
    from endpoints.events import EVENTS_ENV

    sock = socket_path(run_dir)
    proc = subprocess.Popen([sys.executable, "-m", "controller.events", str(run_dir)],
                            cwd=Path(__file__).resolve().parents[1], stdin=subprocess.DEVNULL,
                            env={**os.environ, NODE_ENV: collector_mark(prefix)})
    deadline = time.monotonic() + 10
    while not sock.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    before = os.environ.get(EVENTS_ENV)
    os.environ[EVENTS_ENV] = str(sock)
    return proc, before


def stop_collector(collector: tuple[subprocess.Popen[bytes], str | None]) -> None:
    import os

    from endpoints.events import EVENTS_ENV

    proc, before = collector
    if before is None:
        os.environ.pop(EVENTS_ENV, None)
    else:
        os.environ[EVENTS_ENV] = before
    proc.terminate()
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _stop(net: Mininet) -> None:
    """Stop the P4 switch processes first (while their interfaces exist), then Mininet.
    A node whose shell command was interrupted (Ctrl-C in the middle of the demo) is
    let go of it first: Mininet's own stop runs commands in the nodes' shells (``ip
    link del``), and a node still waiting for its last command would refuse them,
    leaving the links behind."""
    from topologies.p4switch import P4Switch

    for node in [*net.hosts, *net.switches]:
        if getattr(node, "waiting", False):
            with contextlib.suppress(Exception):
                node.sendInt()  # its command ends; what it still prints is read by the next command
            node.waiting = False
    p4 = [s for s in net.switches if isinstance(s, P4Switch)]
    try:
        if p4:
            type(p4[0]).batchShutdown(p4)
    finally:
        net.stop()


@contextmanager
def fabric_network(topo: Topology, *, prefix: str = DEFAULT_PREFIX, target: str = "auto",
                   grpc_base: int = DEFAULT_GRPC_BASE, run_dir: Path | None = None,
                   source: dict[str, Any] | None = None,
                   switches_per_process: str | int = 1,
                   cluster: ClusterPlan | None = None) -> Iterator[FabricNetwork]:
    """Build and start ``topo`` as a Mininet network; always stop and remove it.

    ``grpc_base`` 0: every switch takes a free loopback port (tests); otherwise switch
    k listens on ``grpc_base + k``. ``run_dir``: logs, pid files and the state files
    (default ``controller.network_state.run_dir()``). ``switches_per_process``: the embedded
    target's switches N to a process, or ``"plane"`` (topologies/switch_group.py); 1
    (the default) is one process per switch. ``cluster``: the switches on the servers
    it places them on (topologies/cluster.py); None: all here.
    """
    from mininet.net import Mininet

    from topologies.hosts import FabricHost, kernel_srv6_missing
    from topologies.p4switch import switch_class

    t0 = time.monotonic()
    names = node_names(topo, prefix)  # refuses bad prefixes / too long names before anything exists
    check_names_free(topo, names)
    if topo.linux_hosts and cluster is None:  # before anything exists, not half-way through the hosts
        why = kernel_srv6_missing()
        if why:
            raise KernelLacks(f"the topology has Linux SRv6 nodes ({len(topo.linux_hosts)}) but {why}")
    cls = switch_class(target)
    if cls.target == "embedded" and switches_per_process != 1:
        from topologies.switch_group import grouped_switch_class

        cls = grouped_switch_class(switches_per_process, prefix)
    run_dir = Path(run_dir) if run_dir is not None else default_run_dir()
    run_dir.mkdir(parents=True, exist_ok=True)
    if cluster is not None:
        cls = cluster.switch_class(cls, run_dir)
    record = write_nodes_record(run_dir, topo, names)
    collector = start_collector(run_dir, prefix)  # before the hosts: they inherit where to publish
    mn_args = dict(topo=MrcClos(topology=topo, prefix=prefix, grpc_base=grpc_base, run_dir=run_dir),
                   switch=cls, host=FabricHost, controller=None, build=False, autoSetMacs=False,
                   waitConnected=False)
    if cluster is not None:
        cluster.prepare(run_dir, record)
    net = cluster.network(names, **mn_args) if cluster is not None else Mininet(**mn_args)
    try:
        net.build()
        net.start()  # P4Switch.batchStartup: returns when every switch answers P4Runtime
        fn = attach(net, topo, names, run_dir, source, t0)
        log.info("%s: %d switches answer P4Runtime after %.1f s", topo.name, len(net.switches), fn.switches_ready)
        yield fn
    finally:
        try:
            _stop(net)
        finally:
            remove_state(run_dir)
            (run_dir / NODES_RECORD).unlink(missing_ok=True)
            stop_collector(collector)
            if cluster is not None:
                cluster.close(run_dir)


def attach(net: Mininet, topo: Topology, names: NodeNames, run_dir: Path, source: dict[str, Any] | None = None,
           started: float | None = None) -> FabricNetwork:
    """The FabricNetwork of a started Mininet network of ``topo``; writes its state files."""
    started = time.monotonic() if started is None else started
    switches = {s.name: s for s in net.switches}
    inv = inventory_of(topo, names, switches, source or topology_source(topo))
    inv.save(run_dir / STATE_NAME)
    fn = FabricNetwork(net, topo, names, inv, run_dir, started, time.monotonic() - started)
    _write_mininet_state(fn)
    return fn


def remove_state(run_dir: Path) -> None:
    """Remove the state files: the network they describe is gone."""
    for name in (STATE_NAME, MININET_STATE):
        (run_dir / name).unlink(missing_ok=True)


def wanted_entries(fn: FabricNetwork) -> dict[str, list[Entry]]:
    """Every switch's entries, for the links denied now (the NICs avoid them)."""
    return fabric_wanted(fn.topo, fn.inventory.denied)


def install_tables(fn: FabricNetwork, progress: Callable[[str, int], None] | None = None) -> Report:
    """Have the controller reconcile every switch with its entries (pipeline if missing)."""
    from controller.reconcile import Reconciler

    targets = list(fn.inventory.switches.values())
    return asyncio.run(Reconciler(targets, progress=progress).run(wanted_entries(fn)))


TARGET_ENV = "MRC_P4_TARGET"
SERVERS_ENV = "MRC_SERVERS"
PLACEMENT_ENV = "MRC_PLACEMENT"


@contextmanager
def programmed_network(topo: Topology, *, prefix: str = DEFAULT_PREFIX, run_dir: Path | None = None,
                       target: str | None = None,
                       switches_per_process: str | int = 1) -> Iterator[FabricNetwork]:
    """``fabric_network`` on free gRPC ports with every table installed (RuntimeError
    naming the failures if the install fails): what tests and experiments start.
    ``target`` None: ``$MRC_P4_TARGET`` (``embedded``, ``bmv2`` or ``auto``), else the
    embedded target (``MRC_P4_TARGET=bmv2 make experiments`` runs them on BMv2).
    ``$MRC_SERVERS`` (``a,b,c``) and ``$MRC_PLACEMENT``: the switches on those servers,
    as the runner's ``--servers`` and ``--placement`` (docs/cluster.md)."""
    import os

    target = target or os.environ.get(TARGET_ENV) or "embedded"
    cluster = None
    if os.environ.get(SERVERS_ENV):
        from topologies.cluster import plan_cluster

        cluster = plan_cluster(topo, os.environ[SERVERS_ENV], os.environ.get(PLACEMENT_ENV) or "plane")
    with fabric_network(topo, prefix=prefix, target=target, grpc_base=0, run_dir=run_dir,
                        switches_per_process=switches_per_process, cluster=cluster) as fn:
        rep = install_tables(fn)
        if rep.failed:
            raise RuntimeError(f"install failed: {rep.summary()}: {'; '.join(str(r.error) for r in rep.failed)}")
        yield fn
