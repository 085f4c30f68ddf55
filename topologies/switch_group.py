"""Mininet P4 switches placed into shared processes (``p4target group``).

Why: one ``p4target run`` per switch costs tens of MB each and a process wake-up per
switch a frame crosses; a scale fabric of hundreds of switches does not fit that way.
Here the network still has one Mininet switch node per P4 switch, each with its own
interfaces (``<node>-ethN``), gRPC address, device id, log lines and pid file, but the
nodes are placed into a few ``p4target group`` processes:

- ``placement="cpu"`` (the default of ``make run``): the leaves and spines in one
  process per CPU but one (at least one), whole planes each, and the NICs in one: a
  sprayed frame then crosses as many processes as a frame on one plane;
  ``"plane"``: one process per plane, one for the NICs; ``N``: consecutive
  switches N at a time; N = 1 is the classic one process per switch
  (``EmbeddedP4Switch``, not this module).
- Receive rings are sized by port role: a NIC's host port takes a host's bursts
  (``EmbeddedP4Switch.HOST_PORT_RX_RING_FRAMES`` slots); a port whose other end is
  in another process (a leaf's port to a NIC, a NIC's port to a leaf) takes what
  that process sends while this one waits for the CPU (``EDGE_RX_RING_FRAMES``);
  a port between two switches of one process gets at most a loop round at a time
  (``FABRIC_RX_RING_FRAMES``). Transmit rings are small everywhere
  (``FABRIC_TX_RING_FRAMES``): a veth takes a flush at once.
- With ``MRC_SWITCH_REALTIME=N`` (1..99) the processes run SCHED_RR at priority N
  once they are up (the group file's ``realtime``): on a machine whose cores the
  hosts and other work share, a switch with frames then runs as soon as it wakes
  instead of after the task that has the CPU, which shortens the delay tail but
  takes the CPU from the hosts' endpoints and every other process when the fabric is
  busy (figures in docs/performance.md). Unset or ``0``: normal scheduling.
- Each process gets a group file ``<group>.yaml``, a log ``<group>.log`` (every line
  names its switch), its own pid file ``<group>.pid`` and the pid file of every
  member switch (``<node>.pid``, the group's pid), and the node mark of the group
  (``MRC_P4_NODE=<group>``): ``make clean`` and ``tools/cleanup.py`` find it as
  they find a switch process.
- A member's ``proc`` is its group's process; ``check()`` of a member whose process
  died names the process, its status, every switch it took down and its log;
  ``restart()`` starts the whole process again (its switches come back with the
  program loaded and empty tables: ``mrcctl install`` fills them).
"""

from __future__ import annotations

import logging
import os
import re
import subprocess
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import yaml

from topologies import switch_process
from topologies.p4switch import STOP_GRACE, EmbeddedP4Switch, P4Switch, SwitchError, _exe, exit_status, log_tail

log = logging.getLogger(__name__)

FABRIC_RX_RING_FRAMES = 256  # 512 KB at MTU 1500: a neighbour switch's round is at most 256 frames
EDGE_RX_RING_FRAMES = 4096  # a port whose other end is in another process (p4target's default ring)
FABRIC_TX_RING_FRAMES = 64
REALTIME_ENV = "MRC_SWITCH_REALTIME"
READY_PER_SWITCH = 0.5  # seconds more to wait for a process per switch it runs
STOP_PER_SWITCH = 0.05  # ... and to let it stop
PLANE = "plane"
CPU = "cpu"
_PLANE_OF = re.compile(r"^p(\d+)-")


def parse_placement(text: str) -> str | int:
    """``cpu``, ``plane`` or a number of switches per process (>= 1); ValueError otherwise."""
    t = text.strip().lower()
    if t in (CPU, PLANE):
        return t
    try:
        n = int(t, 10)
    except ValueError:
        n = 0
    if n < 1:
        raise ValueError(f"{text!r}: give 'cpu' (the fabric in one process per CPU but one, the NICs in "
                         "one), 'plane' (one process per plane, one for the NICs) or a number of switches "
                         "per process (1: one process per switch)")
    return n


def realtime_priority(environ: Mapping[str, str] | None = None) -> int | None:
    """The SCHED_RR priority of the group processes: ``MRC_SWITCH_REALTIME`` (1..99),
    None (normal scheduling) when it is unset or 0. SwitchError for anything else."""
    text = (os.environ if environ is None else environ).get(REALTIME_ENV, "").strip()
    if not text:
        return None
    if text.isdigit() and 0 <= int(text) <= 99:
        return int(text) or None
    raise SwitchError(f"{REALTIME_ENV}={text!r}: give a SCHED_RR priority 1..99 for the switch processes, "
                      "or 0 for normal scheduling")


def place(switches: Sequence[P4Switch], placement: str | int, cpus: int = 1) -> list[list[P4Switch]]:
    """The switches of each process, in order: whole planes in ``cpus - 1`` processes
    (at least one) and the NICs in one (``cpu``), by plane (``plane``), or N at a time."""
    if placement in (PLANE, CPU):
        fabric_processes = max(1, cpus - 1)
        groups: dict[str, list[P4Switch]] = {}
        for sw in switches:
            m = _PLANE_OF.match(sw.mrc_name)
            if m is None:
                key = sw.program
            elif placement == PLANE:
                key = f"plane{m.group(1)}"
            else:
                key = f"fabric{int(m.group(1)) % fabric_processes}"
            groups.setdefault(key, []).append(sw)
        return list(groups.values())
    assert isinstance(placement, int) and placement >= 1
    return [list(switches[i:i + placement]) for i in range(0, len(switches), placement)]


class SwitchProcess:
    """One ``p4target group`` process and the Mininet switch nodes it runs."""

    def __init__(self, name: str, members: list[GroupedP4Switch], cpu: int | None) -> None:
        self.name = name
        self.members = members
        self.cpu = cpu
        self.run_dir = members[0].run_dir
        self.proc: subprocess.Popen[bytes] | None = None
        self.started_at = 0.0
        for sw in members:
            sw.group = self

    @property
    def log_path(self) -> Path:
        return self.run_dir / f"{self.name}.log"

    @property
    def pid_path(self) -> Path:
        return self.run_dir / f"{self.name}.pid"

    @property
    def spec_path(self) -> Path:
        return self.run_dir / f"{self.name}.yaml"

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def describe(self) -> str:
        names = ", ".join(sw.mrc_name for sw in self.members[:6])
        more = f" and {len(self.members) - 6} more" if len(self.members) > 6 else ""
        pid = f"pid {self.proc.pid}, " if self.proc is not None else ""
        return f"process {self.name} ({pid}{len(self.members)} switches: {names}{more})"

    def spec(self) -> dict[str, Any]:
        switches = []
        for sw in self.members:
            ports = sw.port_interfaces()
            if sw.grpc_port == 0:
                sw.grpc_port = sw.pick_port()
            rings = {p: sw.HOST_PORT_RX_RING_FRAMES if sw.program == "nic" and p == 0 else EDGE_RX_RING_FRAMES
                     for p in ports if sw.program == "nic" and p == 0 or not self.holds_peer(sw, p)}
            switches.append({"name": sw.mrc_name, "program": str(sw.program_path), "device_id": sw.device_id,
                             "ports": ports, "grpc_addr": sw.grpc_addr, "rx_ring_frames": FABRIC_RX_RING_FRAMES,
                             "port_rx_ring_frames": rings, "tx_ring_frames": FABRIC_TX_RING_FRAMES,
                             "pid_file": str(sw.pid_path)})
        spec: dict[str, Any] = {"switches": switches}
        gc_mode = type(self.members[0]).gc_mode
        if gc_mode is not None:
            spec["gc"] = gc_mode
        realtime = realtime_priority()
        if realtime is not None:
            spec["realtime"] = realtime
        return spec

    def holds_peer(self, sw: P4Switch, port: int) -> bool:
        """Is the other end of ``sw``'s ``port`` a switch of this process? Its frames then
        arrive at most a loop round at a time; from another process (a NIC's, a host)
        they come as fast as that process runs, while this one may wait for the CPU."""
        intf = sw.intfs.get(port)
        link = getattr(intf, "link", None)
        if link is None:
            return False
        other = link.intf2 if link.intf1 is intf else link.intf1
        return getattr(other.node, "group", None) is self

    def launch(self) -> None:
        if self.alive:
            raise SwitchError(f"{self.describe()} is already running")
        for sw in self.members:
            if not sw.program_path.is_file():
                raise SwitchError(f"switch {sw.mrc_name}: no program {sw.program_path}; "
                                  "program must be 'fabric' or 'nic' (p4src/<program>.p4)")
            sw._quiet_interfaces()
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.spec_path.write_text(yaml.safe_dump(self.spec(), sort_keys=False))
        cmd = [_exe("p4target"), "--log-level", EmbeddedP4Switch.log_level, "group", str(self.spec_path),
               "--pid-file", str(self.pid_path)]
        if self.cpu is not None:
            cmd += ["--cpu", str(self.cpu)]
        self.proc = self.members[0].spawn(cmd, self.log_path, self.describe(), self.name, files=(self.spec_path,))
        self.started_at = time.monotonic()
        for sw in self.members:
            sw.started_at = self.started_at
        log.info("%s: started", self.describe())

    def died(self, what: str, switch: str | None = None) -> SwitchError:
        status = exit_status(self.proc.returncode if self.proc is not None else None)
        who = f"switch {switch}: " if switch else ""
        first = self.members[0].mrc_name if self.members else "SWITCH"
        return SwitchError(f"{who}{self.describe()} {status} {what}, taking all its switches down; restart it "
                           f"(the CLI's `restart {first}`, or any member node's restart()) and run `mrcctl install`; "
                           f"last lines of {self.log_path}:\n{log_tail(self.log_path)}")

    def signal_stop(self) -> None:
        switch_process.signal_stop(self.proc)

    def reap(self, grace: float = STOP_GRACE) -> None:
        if self.proc is None:
            return
        grace += STOP_PER_SWITCH * len(self.members)  # closing its ports takes a while
        switch_process.reap(self.proc, grace, self.name)
        for path in (self.pid_path, *(sw.pid_path for sw in self.members)):
            path.unlink(missing_ok=True)

    def wait_ready(self, timeout: float) -> float:
        """Wait until every member answers P4Runtime; the seconds since the launch.

        The process writes its pid file once every server listens, so that is waited
        for first; then every member is asked at once (a Capabilities call each, from
        a few threads: one after the other, hundreds of new channels take a minute)."""
        from concurrent.futures import ThreadPoolExecutor

        assert self.proc is not None
        deadline = self.started_at + timeout
        while not self.pid_path.exists():
            if self.proc.poll() is not None:
                raise self.died("while starting", self.members[0].mrc_name)
            if time.monotonic() > deadline:
                break  # each member's wait_ready says which one does not answer
            time.sleep(0.1)
        try:
            with ThreadPoolExecutor(max_workers=16, thread_name_prefix="mrc-ready") as pool:
                list(pool.map(lambda sw: sw.wait_ready(timeout), self.members))
        except SwitchError:
            self.signal_stop()
            self.reap()
            raise
        return time.monotonic() - self.started_at


class GroupedP4Switch(EmbeddedP4Switch):
    """An embedded-target switch node whose process is shared (see the module docstring).
    ``grouped_switch_class(placement)`` makes the class with a placement of its own."""

    placement: ClassVar[str | int] = CPU
    gc_mode: ClassVar[str | None] = None  # the group file's ``gc``; None: p4target's default
    prefix: ClassVar[str] = "mrc"  # the network's node prefix: processes are <prefix>grp<k>
    group: SwitchProcess | None

    def __init__(self, name: str, **params: Any) -> None:
        self.group = None
        super().__init__(name, **params)

    # ---- where things are: the group's
    @property
    def proc(self) -> subprocess.Popen[bytes] | None:
        return self.group.proc if self.group is not None else None

    @proc.setter
    def proc(self, value: Any) -> None:  # P4Switch.__init__ sets None
        if value is not None:
            raise AttributeError("a grouped switch's process is its group's")

    @property
    def log_path(self) -> Path:
        return self.group.log_path if self.group is not None else super().log_path

    def describe(self) -> str:
        where = f", in process {self.group.name}" if self.group is not None else ""
        return f"{self.mrc_name} ({self.name}, {self.target}, {self.grpc_addr}, device {self.device_id}{where})"

    # ---- life cycle: the group's
    def start(self, controllers: Sequence[Any] = ()) -> None:
        """Nothing yet: ``batchStartup`` starts the processes of all the switches."""

    @classmethod
    def batchStartup(cls, switches: Iterable[P4Switch], run: Any = None) -> list[P4Switch]:
        switches = [s for s in switches if isinstance(s, GroupedP4Switch)]
        from p4target.api import allowed_cpus

        cpus = allowed_cpus()
        groups = [SwitchProcess(f"{cls.prefix}grp{k}", members, cpus[k % len(cpus)] if len(cpus) > 1 else None)
                  for k, members in enumerate(place(switches, cls.placement, len(cpus)))]
        for g in groups:
            g.launch()
        for g in groups:  # a process of many switches takes longer to open all their ports
            g.wait_ready(max(sw.ready_timeout for sw in g.members) + READY_PER_SWITCH * len(g.members))
        return list(switches)

    def launch(self) -> None:
        if self.group is None:
            raise SwitchError(f"switch {self.describe()} has no process: the network starts it")
        self.group.launch()

    def wait_ready(self, timeout: float | None = None) -> float:
        if self.group is None or self.group.proc is None:
            raise SwitchError(f"switch {self.describe()} was never started")
        deadline = self.group.started_at + (self.ready_timeout if timeout is None else timeout)
        from topologies.p4switch import grpc_answers

        while True:
            if self.group.proc.poll() is not None:
                raise self.group.died("while starting", self.mrc_name)
            if grpc_answers(self.grpc_addr, timeout=0.5, tls_dir=self.tls_dir):
                return time.monotonic() - self.group.started_at
            if time.monotonic() > deadline:
                raise SwitchError(f"switch {self.describe()}: no P4Runtime answer within "
                                  f"{deadline - self.group.started_at:.0f} s; last lines of {self.log_path}:\n"
                                  f"{log_tail(self.log_path)}")
            time.sleep(0.1)

    def restart(self) -> None:
        """Start this switch's whole process again (every switch in it) and wait for them."""
        if self.group is None:
            raise SwitchError(f"switch {self.describe()} has no process: the network starts it")
        if self.extra_args:
            raise SwitchError(f"switch {self.mrc_name}: extra p4target run options ({' '.join(self.extra_args)}) "
                              "need a process of its own; start the network with --switches-per-process 1")
        self.group.signal_stop()
        self.group.reap()
        self.group.launch()
        self.group.wait_ready(self.ready_timeout)

    def died(self, what: str) -> SwitchError:
        """The error for this switch's process gone: it names the process and every switch it took down."""
        if self.group is None:
            return SwitchError(f"switch {self.describe()} was never started")
        return self.group.died(what)

    def check(self) -> None:
        if self.group is None or not self.group.alive:
            if self.group is None:
                raise SwitchError(f"switch {self.describe()} was never started")
            raise self.group.died("while running", self.mrc_name)

    def signal_stop(self) -> None:
        if self.group is not None:
            self.group.signal_stop()

    def reap(self, grace: float = STOP_GRACE) -> None:
        if self.group is not None:
            self.group.reap(grace)

    @classmethod
    def batchShutdown(cls, switches: Iterable[P4Switch], run: Any = None) -> list[P4Switch]:
        switches = list(switches)
        groups = {id(s.group): s.group for s in switches if isinstance(s, GroupedP4Switch) and s.group}
        for g in groups.values():
            g.signal_stop()
        for g in groups.values():
            g.reap()
        return switches


def grouped_switch_class(placement: str | int, prefix: str = "mrc") -> type[P4Switch]:
    """The switch class for ``placement`` (``plane`` or switches per process) in a network
    of node prefix ``prefix``: the classic ``EmbeddedP4Switch`` for 1, else a
    ``GroupedP4Switch`` placing that way."""
    if placement == 1:
        return EmbeddedP4Switch
    return type(f"GroupedP4Switch_{placement}", (GroupedP4Switch,), {"placement": placement, "prefix": prefix})
