"""Mininet switch nodes that run a P4 program: the embedded target or BMv2.

Why these classes: the fabric's leaves and spines (``p4src/fabric.p4``) and the NICs
(``p4src/nic.p4``) are P4Runtime servers that the controller programs; Mininet only
has to cable them and start them. Each switch is one process in the root network
namespace whose ports are the node's veths: port N is ``<node>-ethN`` (N as the
controller's cabling says, fabric/names.py).

- ``EmbeddedP4Switch`` runs ``p4target run p4src/<program>.p4 -i N@<node>-ethN ...``
  with the program loaded at start (the controller's reconcile pushes a pipeline
  only when one is missing, so loading it here saves a round trip per switch).
- ``Bmv2Switch`` runs BMv2's ``simple_switch_grpc`` with ``p4c-bm2-ss``'s JSON, when
  both are on the PATH.
- ``switch_class("auto")`` picks one: BMv2 when found, the embedded target otherwise
  (``"embedded"``/``"bmv2"`` override). Mininet's command line knows them as
  ``--switch p4`` (the automatic choice), ``p4embedded`` and ``p4bmv2``
  (topologies/mn_custom.py).

Life cycle, as Mininet drives it: ``start`` launches the process; Mininet then calls
``batchStartup`` with every switch of the class, which waits until each gRPC server
answers a P4Runtime ``Capabilities`` call, so the processes start in parallel and
``net.start()`` returns with every switch ready (``restart`` does both for one
switch). A switch that dies is reported as a ``SwitchError`` with the last lines of its
log. ``stop``/``batchShutdown`` stop the processes with SIGTERM (SIGKILL after a grace
time). Logs and pid files live in the run directory (controller.network_state.run_dir()),
named after the node: ``<node>.log``, ``<node>.pid``; the process carries the node mark
(topologies/node_marks.py), so ``make clean`` finds it even without its pid file.
"""

from __future__ import annotations

import logging
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, ClassVar

from mininet.node import Switch

from cli_common.options import TARGETS
from topologies import switch_process
from topologies.node_marks import mark_node
from controller.network_state import run_dir as default_run_dir

log = logging.getLogger(__name__)

REPO = switch_process.REPO
P4SRC = REPO / "p4src"
READY_TIMEOUT = 60.0
STOP_GRACE = 5.0
LOG_TAIL_LINES = 15
BMV2_TOOLS = ("simple_switch_grpc", "p4c-bm2-ss")
# Queues per egress port on BMv2, one per value of v1model's 3-bit
# standard_metadata.priority: with fewer, BMv2 drops every packet whose priority has
# no queue (fabric.p4 gives the trim mark priority 7), and with one it has no strict
# priority at all. The embedded target always has these 8.
BMV2_PRIORITY_QUEUES = 8


class SwitchError(RuntimeError):
    """A switch that could not start or died; ``str()`` names it and quotes its log."""


def exit_status(code: int | None) -> str:
    """How a process ended, for a message: killed by a signal (by name), or its status."""
    if code is None:
        return "is not running"
    if code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with status {code}"


_HANDED_OUT: set[int] = set()


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nobody listens on now (the kernel's choice), never one this process
    handed out before: the switches bind theirs only when their process starts, and
    the kernel may offer a released port again meanwhile."""
    while True:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind((host, 0))
            port = int(s.getsockname()[1])
        if port not in _HANDED_OUT:
            _HANDED_OUT.add(port)
            return port


def log_tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    """The last ``lines`` lines of a log file ('' when there is none)."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.rstrip().splitlines()[-lines:])


def grpc_answers(address: str, timeout: float, tls_dir: str | Path | None = None) -> bool:
    """Does a P4Runtime server at ``address`` answer a Capabilities call within ``timeout``?
    With ``tls_dir``, over mutual TLS with the client certificate there (controller/tls.py;
    a directory that cannot be used raises its TLSError: no wait can fix it)."""
    import grpc
    from finsy.proto.p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

    from controller.tls import load_client_tls

    channel = (grpc.insecure_channel(address) if tls_dir is None
               else grpc.secure_channel(address, load_client_tls(tls_dir).channel_credentials()))
    with channel:
        try:
            grpc.channel_ready_future(channel).result(timeout=timeout)
            p4runtime_pb2_grpc.P4RuntimeStub(channel).Capabilities(
                p4runtime_pb2.CapabilitiesRequest(), timeout=timeout)
        except (grpc.FutureTimeoutError, grpc.RpcError):
            return False
    return True


def bmv2_available() -> bool:
    return all(shutil.which(tool) for tool in BMV2_TOOLS)


def choose_target(target: str = "auto") -> str:
    """``embedded`` or ``bmv2``: BMv2 when ``auto`` and both of its tools are on the PATH."""
    if target not in TARGETS:
        raise ValueError(f"target {target!r}: choose one of {', '.join(TARGETS)}")
    if target == "auto":
        return "bmv2" if bmv2_available() else "embedded"
    if target == "bmv2" and not bmv2_available():
        missing = [t for t in BMV2_TOOLS if not shutil.which(t)]
        raise ValueError(f"target bmv2: {', '.join(missing)} not on the PATH; install BMv2 and p4c, "
                         "or use the embedded target (--target embedded)")
    return target


class P4Switch(Switch):
    """A Mininet switch node running one P4Runtime server process (subclasses say which).

    Parameters (from the Topo's switch options): ``program`` (``fabric`` or ``nic``),
    ``device_id``, ``grpc_port`` (0: a free port chosen at the first start and kept),
    ``run_dir``, ``mrc_name`` (the controller's name, for messages), ``ready_timeout``,
    ``cpu`` (embedded target: ``p4target run --cpu``; None leaves its default, one CPU
    per switch chosen by device id, so consecutive ids spread over the cores).
    """

    target: ClassVar[str] = ""
    controlIntf: Any  # set by Mininet's Switch: a root-namespace switch's 'lo', or None

    def __init__(self, name: str, program: str = "fabric", device_id: int = 1, grpc_port: int = 0,
                 run_dir: str | Path | None = None, mrc_name: str | None = None,
                 ready_timeout: float = READY_TIMEOUT, cpu: int | str | None = None, **params: Any) -> None:
        params["inNamespace"] = False
        params.pop("listenPort", None)
        super().__init__(name, dpid=f"{device_id:x}", **params)
        # Mininet gives a root-namespace switch 'lo' as port 0; a NIC's port 0 is its host.
        if self.controlIntf is not None:
            self.delIntf(self.controlIntf)
            self.controlIntf = None
        self.program = program
        self.device_id = int(device_id)
        self.grpc_port = int(grpc_port)
        self.run_dir = Path(run_dir) if run_dir is not None else default_run_dir()
        self.mrc_name = mrc_name or name
        self.ready_timeout = float(ready_timeout)
        self.cpu = cpu
        self.proc: subprocess.Popen[bytes] | None = None
        self.started_at = 0.0
        # more `p4target run` options from the next (re)start on, e.g. an experiment's
        # `--queue-rate 1=800` (BMv2 takes --queue-rate/--queue-depth, over Thrift)
        self.extra_args: list[str] = []
        # mutual TLS: the client certificates the readiness probe uses (a cluster's remote
        # switches, topologies/cluster.py); None: plaintext on loopback
        self.tls_dir: str | None = None
        mark_node(self)

    # ---- what subclasses provide ------------------------------------------

    def command(self) -> list[str]:  # pragma: no cover - abstract
        raise NotImplementedError

    # ---- places -------------------------------------------------------------

    @property
    def grpc_host(self) -> str:
        """Where the switch serves P4Runtime: loopback here (a cluster's remote switches:
        their server's address, topologies/cluster.py)."""
        return "127.0.0.1"

    @property
    def grpc_addr(self) -> str:
        return f"{self.grpc_host}:{self.grpc_port}"

    @property
    def log_path(self) -> Path:
        return self.run_dir / f"{self.name}.log"

    @property
    def pid_path(self) -> Path:
        return self.run_dir / f"{self.name}.pid"

    @property
    def program_path(self) -> Path:
        return P4SRC / f"{self.program}.p4"

    def port_interfaces(self) -> dict[int, str]:
        """Switch port number -> interface name, from the node's links."""
        return {port: intf.name for port, intf in sorted(self.intfs.items()) if intf.name != "lo"}

    def describe(self) -> str:
        return f"{self.mrc_name} ({self.name}, {self.target}, {self.grpc_addr}, device {self.device_id})"

    # ---- life cycle -----------------------------------------------------------

    def start(self, controllers: Sequence[Any] = ()) -> None:
        """Launch the switch process; Mininet's ``batchStartup`` then waits for it."""
        self.launch()

    @classmethod
    def batchStartup(cls, switches: Iterable[P4Switch], run: Any = None) -> list[P4Switch]:
        """Wait until every switch's gRPC server answers (they start in parallel)."""
        switches = list(switches)
        for sw in switches:
            sw.wait_ready()
        return switches

    def restart(self) -> None:
        """Stop the process if it runs, start it again and wait until it answers."""
        self.stop_process()
        self.launch()
        self.wait_ready()

    def launch(self) -> None:
        if self.proc is not None and self.alive:
            raise SwitchError(f"switch {self.describe()} is already running (pid {self.proc.pid})")
        if not self.program_path.is_file():
            raise SwitchError(f"switch {self.mrc_name}: no program {self.program_path}; "
                              "program must be 'fabric' or 'nic' (p4src/<program>.p4)")
        self.run_dir.mkdir(parents=True, exist_ok=True)
        if self.grpc_port == 0:
            self.grpc_port = self.pick_port()
        self._quiet_interfaces()
        cmd = self.command()
        log.info("%s: starting %s", self.mrc_name, " ".join(cmd))
        self.proc = self.spawn(cmd, self.log_path, self.describe(), self.name)
        self.started_at = time.monotonic()
        self._after_launch()

    def pick_port(self) -> int:
        """A free port for the P4Runtime server, where the switch runs."""
        return free_port(self.grpc_host)

    def spawn(self, cmd: Sequence[str], log_path: Path, title: str, node: str,
              files: Sequence[Path] = ()) -> subprocess.Popen[bytes]:
        """Start a switch process where the node runs (``files``: what it reads, for a
        server that needs copies; here they are at hand)."""
        return switch_process.spawn(cmd, log_path, title, node)

    def _after_launch(self) -> None:
        """Hook: the embedded target writes its own pid file; BMv2 needs it written."""

    def _quiet_interfaces(self) -> None:
        """No IPv6 on the switch's veths: the root namespace's kernel would otherwise send
        router solicitations and MLD reports into the P4 ports."""
        for intf in self.port_interfaces().values():
            try:
                Path(f"/proc/sys/net/ipv6/conf/{intf}/disable_ipv6").write_text("1\n")
            except OSError as exc:
                log.warning("%s: cannot disable IPv6 on %s: %s", self.mrc_name, intf, exc)

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def died(self, what: str) -> SwitchError:
        """The error for a switch whose process is gone, with the end of its log."""
        status = exit_status(self.proc.returncode if self.proc is not None else None)
        tail = log_tail(self.log_path)
        return SwitchError(f"switch {self.describe()} {status} {what}; restart it (the CLI's `restart "
                           f"{self.mrc_name}`) and run `mrcctl install`; last lines of {self.log_path}:\n{tail}")

    def wait_ready(self, timeout: float | None = None) -> float:
        """Wait until the gRPC server answers; the seconds since the launch."""
        if self.proc is None:
            raise SwitchError(f"switch {self.describe()} was never started")
        deadline = self.started_at + (self.ready_timeout if timeout is None else timeout)
        while True:
            if self.proc.poll() is not None:
                raise self.died("while starting")
            if grpc_answers(self.grpc_addr, timeout=0.5, tls_dir=self.tls_dir):
                took = time.monotonic() - self.started_at
                log.info("%s: P4Runtime answers on %s after %.2f s", self.mrc_name, self.grpc_addr, took)
                return took
            if time.monotonic() > deadline:
                self.stop_process()
                raise SwitchError(f"switch {self.describe()}: no P4Runtime answer within "
                                  f"{deadline - self.started_at:.0f} s; last lines of {self.log_path}:\n"
                                  f"{log_tail(self.log_path)}")
            time.sleep(0.1)

    def check(self) -> None:
        """Raise a SwitchError (with its log) if the process has died."""
        if self.proc is None or self.proc.poll() is not None:
            raise self.died("while running")

    def signal_stop(self) -> None:
        switch_process.signal_stop(self.proc)

    def reap(self, grace: float = STOP_GRACE) -> None:
        """Wait for a signalled process; SIGKILL it after ``grace`` seconds."""
        if self.proc is None:
            return
        switch_process.reap(self.proc, grace, self.mrc_name)
        self.pid_path.unlink(missing_ok=True)

    def stop_process(self, grace: float = STOP_GRACE) -> None:
        self.signal_stop()
        self.reap(grace)

    def stop(self, deleteIntfs: bool = True) -> None:
        self.stop_process()
        super().stop(deleteIntfs)

    @classmethod
    def batchShutdown(cls, switches: Iterable[P4Switch], run: Any = None) -> list[P4Switch]:
        """Stop every switch process: SIGTERM to all, then wait for each."""
        switches = list(switches)
        for sw in switches:
            sw.signal_stop()
        for sw in switches:
            sw.reap()
        return switches


def _exe(name: str) -> str:
    """A command of the project's environment: next to this Python first, then the PATH."""
    beside = Path(sys.executable).parent / name
    if beside.is_file():
        return str(beside)
    found = shutil.which(name)
    if found is None:
        raise SwitchError(f"no {name} command next to {sys.executable} or on the PATH; run `make deps` "
                          "and start the network with .venv/bin/python")
    return found


class EmbeddedP4Switch(P4Switch):
    """The project's embedded target: ``p4target run`` with the program loaded at start.

    A NIC's host port (port 0) gets a receive ring of HOST_PORT_RX_RING_FRAMES slots:
    a host's sending loop outruns its NIC switch for as long as it sends flat out,
    and with the default 4,096 slots a 5,000-frame burst lost 136-392 frames there
    (``bench/fabric_net.py``; none with 16,384). Only that port: the same ring on
    every port doubled the fabric's memory."""

    target = "embedded"
    log_level: ClassVar[str] = "info"
    HOST_PORT_RX_RING_FRAMES: ClassVar[int] = 16384

    def command(self) -> list[str]:
        cmd = [_exe("p4target"), "run", str(self.program_path)]
        ports = self.port_interfaces()
        for port, intf in ports.items():
            cmd += ["-i", f"{port}@{intf}"]
        if self.program == "nic" and 0 in ports:
            cmd += ["--rx-ring-frames", f"0={self.HOST_PORT_RX_RING_FRAMES}"]
        if self.cpu is not None:
            cmd += ["--cpu", str(self.cpu)]
        return cmd + ["--grpc-addr", self.grpc_addr, "--device-id", str(self.device_id),
                      "--pid-file", str(self.pid_path), "--log-level", self.log_level, *self.extra_args]


class Bmv2Switch(P4Switch):
    """BMv2's ``simple_switch_grpc`` with p4c-bm2-ss's JSON of the program: the same
    compilation the controller pushes (controller.p4rt.pipeline, ``build/bmv2/``)."""

    target = "bmv2"

    def __init__(self, name: str, thrift_port: int = 0, **params: Any) -> None:
        super().__init__(name, **params)
        self.thrift_port = int(thrift_port)
        from topologies.bmv2_queues import QueueSettings

        self.queues = QueueSettings()

    def bmv2_json(self) -> Path:
        from controller.pipeline import REPO as CONTROLLER_REPO
        from controller.pipeline import pipeline

        pipeline(self.program, "bmv2")  # compiles once per program (cached)
        return CONTROLLER_REPO / "build" / "bmv2" / f"{self.program}.json"

    def command(self) -> list[str]:
        from topologies.bmv2_queues import queue_options

        self.queues, rest = queue_options(self.extra_args, f"switch {self.mrc_name}")
        if rest:
            raise SwitchError(f"switch {self.mrc_name}: options {' '.join(rest)} are the embedded target's; "
                              "BMv2 takes only --queue-rate PORT=PPS and --queue-depth PORT=N")
        if self.thrift_port == 0:
            self.thrift_port = free_port()
        cmd = [_exe("simple_switch_grpc"), "--device-id", str(self.device_id),
               "--thrift-port", str(self.thrift_port), "--log-console", "--log-level", "warn",
               "--notifications-addr", f"ipc://{self.run_dir / (self.name + '.ipc')}"]
        for port, intf in self.port_interfaces().items():
            cmd += ["-i", f"{port}@{intf}"]
        return cmd + [str(self.bmv2_json()), "--", "--grpc-server-addr", self.grpc_addr,
                      "--priority-queues", str(BMV2_PRIORITY_QUEUES)]

    def wait_ready(self, timeout: float | None = None) -> float:
        """Wait until P4Runtime answers, then set the egress queues asked for (Thrift)."""
        took = super().wait_ready(timeout)
        if self.queues:
            from topologies.bmv2_queues import apply_queues

            apply_queues(self.thrift_port, self.queues, f"switch {self.mrc_name}")
        return took

    def _after_launch(self) -> None:
        assert self.proc is not None
        tmp = self.pid_path.with_name(f".{self.pid_path.name}.tmp")
        tmp.write_text(f"{self.proc.pid}\n")
        tmp.replace(self.pid_path)


SWITCH_CLASSES: dict[str, type[P4Switch]] = {"embedded": EmbeddedP4Switch, "bmv2": Bmv2Switch}


def switch_class(target: str = "auto") -> type[P4Switch]:
    """The switch class of ``target`` (``auto``: BMv2 when installed, else embedded)."""
    return SWITCH_CLASSES[choose_target(target)]
