"""Many switches in one process: ``p4target group GROUP.yaml``.

Why: a ``p4target run`` process costs tens of MB before its first frame (Python, the
compiled program, the P4Runtime server) and, under sprayed traffic, one wake-up per
switch a frame crosses. A scale fabric of hundreds of switches is then gigabytes and
mostly hand-overs between processes. As Open vSwitch runs every bridge of a host in
one daemon, a group runs many switches in one process:

- every switch keeps what makes it a switch: its own ``Device`` (program instance,
  tables, counters, registers, meters, queues), its ports on its own Linux
  interfaces (a ``NetIO``, rings sized per port), its pcap files, its log lines
  (named ``NAME (device N)``) and its own P4Runtime device: its own gRPC address
  (``grpc_addr`` of the switch), or the group's shared address where the device id
  tells the switches apart (``p4runtime.shared_server``);
- switches of one program share the compiled program and its compiled fast path
  (compiled once per program file);
- one thread forwards for all of them (``GroupLoop``): it waits on the epoll
  descriptors of all the switches' loops at once and runs a round of the loops that
  have something, so a frame that crosses five switches of the group costs no
  hand-over between threads or processes;
- a failure stays with its switch: a frame the pipeline fails on is that switch's
  dropped frame (``Device`` counts and logs it); a loop round that raises is logged
  once with the switch's name and the others go on; a bad P4Runtime request is
  answered by that switch's server only.

The group file is read and checked by ``p4target/group/spec.py``.
"""

from __future__ import annotations

import logging
import os
import select
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from p4target.errors import P4Error
from p4target.group.spec import GroupSpec, SwitchSpec, load_group, refuse_plaintext_off_loopback
from p4target.ports.loop_stats import GcWatch, apply_gc_mode, report_line

log = logging.getLogger(__name__)

OPEN_THREADS = 16  # switches whose ports are opened at once
GROUP_POLL_INTERVAL = 5.0  # seconds between link-state polls per switch (netlink tells at once)


@dataclass
class GroupSwitch:
    """One running switch of a group."""

    spec: SwitchSpec
    device: Any
    netio: Any
    server: Any = None  # its P4RuntimeServer
    loop_errors: int = 0

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def device_id_text(self) -> str:
        return str(self.spec.device_id)

    def addr_text(self, group: "SwitchGroup") -> str:
        if self.spec.grpc_addr is not None:
            bound = getattr(self.server, "bound_port", 0)
            return f"{self.spec.grpc_addr.rsplit(':', 1)[0]}:{bound}" if bound else self.spec.grpc_addr
        bound = getattr(group.shared, "bound_port", 0)
        host = (group.spec.grpc_addr or "").rsplit(":", 1)[0]
        return f"{host}:{bound} (shared)" if bound else f"{group.spec.grpc_addr} (shared)"


class GroupLoop:
    """One thread forwarding for many ``NetIO``s (see the module docstring).

    Each switch's loop has two epoll descriptors, both in one outer epoll: its
    receive rings' (readable when a ring has a frame) and its other one (a link
    notice, a port on a plain socket, a wake-up). A pass runs a round of the
    switches that had frames in the last pass or are readable, and of all of them
    whose timed work (link poll, pcap flush, a shaped queue) is due; a round looks
    at the switch's other descriptor only when the outer epoll said it has
    something. The transmit rings of the switches that ran are flushed once, after
    the pass: under sprayed traffic each switch sees a share of the frames, and a
    ``send`` per port per pass, not per port per batch, keeps the cost per frame
    where it is when one switch takes all of them.
    """

    def __init__(self, switches: Iterable[GroupSwitch]) -> None:
        self.switches = list(switches)
        self._stopping = False
        self._epoll: select.epoll | None = None
        self._by_fd: dict[int, tuple[int, bool]] = {}  # fd -> (switch index, is its control fd)
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        self.passes = 0  # passes over the switches
        self.sleeps = 0  # waits in the outer epoll with a timeout (nothing to do)

    def stop(self) -> None:
        """End the loop (safe from a signal handler or another thread)."""
        self._stopping = True
        try:
            os.write(self._wake_w, b"x")
        except OSError:
            pass

    def _failed(self, sw: GroupSwitch, what: str) -> None:
        sw.loop_errors += 1
        if sw.loop_errors == 1 or sw.loop_errors % 1000 == 0:
            log.exception("%s: %s failed (%d so far); the other switches go on",
                          sw.device.label, what, sw.loop_errors)

    def _round(self, sw: GroupSwitch, control: bool) -> bool:
        try:
            return bool(sw.netio.round(wait=False, control=control))
        except Exception:  # one switch's failure is not the group's
            self._failed(sw, "forwarding round")
            return False

    def _flush(self, sw: GroupSwitch) -> None:
        try:
            sw.netio.flush_transmits()
        except Exception:
            self._failed(sw, "flushing the transmit rings")

    def run(self) -> None:
        """Forward until ``stop()``; every switch's rings are flushed at the end."""
        self._register()
        try:
            self._forward()
        finally:
            self._finish()

    def _register(self) -> None:
        self._epoll = select.epoll()
        self._epoll.register(self._wake_r, select.EPOLLIN)
        for i, sw in enumerate(self.switches):
            sw.netio.begin(grouped=True)
            for fd, is_control in ((sw.netio.ring_fd, False), (sw.netio.epoll_fd, True)):
                self._by_fd[fd] = (i, is_control)
                self._epoll.register(fd, select.EPOLLIN)

    def _forward(self) -> None:
        """The passes: the switches that had frames in the last pass, are readable
        or have timed work due; then wait in the outer epoll, not at all if a switch
        had frames."""
        switches = self.switches
        active = set(range(len(switches)))
        control: set[int] = set(active)  # the switches whose control descriptor has something
        timer_at = 0.0
        wakes = [0.0] * len(switches)  # each switch's next timed work
        while not self._stopping:
            now = time.monotonic()
            timers = now >= timer_at
            if timers:  # the switches whose timed work is due
                active |= {i for i, w in enumerate(wakes) if w <= now}
            ran = sorted(active)
            busy = self._pass(ran, control)
            if timers or active:
                for i in ran:
                    wakes[i] = switches[i].netio.next_wake()
                timer_at = min(wakes)
            timeout = 0.0 if busy else max(0.0, timer_at - time.monotonic())
            self.passes += 1
            if timeout > 0.0:
                self.sleeps += 1
            active, control = self._wait(timeout)
            active |= busy

    def _pass(self, ran: list[int], control: set[int]) -> set[int]:
        """A round of each switch of ``ran``, then one flush of each one's transmit
        rings; the switches that had frames."""
        switches = self.switches
        busy = {i for i in ran if self._round(switches[i], i in control)}
        for i in ran:  # what the pass put in transmit rings, at once
            self._flush(switches[i])
        return busy

    def _wait(self, timeout: float) -> tuple[set[int], set[int]]:
        """Wait up to ``timeout`` in the outer epoll: the switches with something, and
        those of them whose control descriptor has it."""
        assert self._epoll is not None
        active: set[int] = set()
        control: set[int] = set()
        by_fd = self._by_fd
        for fd, _ in self._epoll.poll(timeout):
            where = by_fd.get(fd)
            if where is not None:
                active.add(where[0])
                if where[1]:
                    control.add(where[0])
            elif fd == self._wake_r:
                try:
                    os.read(self._wake_r, 4096)
                except BlockingIOError:
                    pass
        return active, control

    def report(self) -> dict[str, Any]:
        """The loop's counters and each switch's (``NetIO.loop_report``)."""
        return {"passes": self.passes, "sleeps": self.sleeps,
                "switches": {sw.name: sw.netio.loop_report() for sw in self.switches}}

    def _finish(self) -> None:
        for sw in self.switches:
            try:
                sw.netio.end()
            except Exception:
                log.exception("%s: flushing the rings failed", sw.device.label)
        if self._epoll is not None:
            self._epoll.close()
            self._epoll = None
        for fd in (self._wake_r, self._wake_w):
            os.close(fd)
        self._wake_r = self._wake_w = -1


@dataclass
class SwitchGroup:
    """The switches of a group file, built and run in this process."""

    spec: GroupSpec
    switches: list[GroupSwitch] = field(default_factory=list)
    shared: Any = None  # the SharedP4RuntimeServer, when switches share an address
    loop: GroupLoop | None = None
    programs: dict[Path, Any] = field(default_factory=dict)  # one compiled program per file

    def compiled(self, path: Path) -> Any:
        key = path.resolve()
        if key not in self.programs:
            from p4target.compiler import compile_file

            self.programs[key] = compile_file(path)
        return self.programs[key]

    def build(self) -> None:
        """Compile each program once, make every device and open every port; raises
        ``P4Error`` naming the switch, with everything opened so far closed again."""
        from p4target.device import Device
        from p4target.ports.netio import NetIO

        from concurrent.futures import ThreadPoolExecutor

        try:
            for s in self.spec.switches:
                dev = Device(device_id=s.device_id, cpu_port=s.cpu_port, seed=s.seed, name=s.name)
                try:
                    dev.load(self.compiled(s.program))
                    netio = NetIO(dev, dict(s.ports), pcap_dir=s.pcap, netns=s.netns, poll_interval=GROUP_POLL_INTERVAL,
                                  rx_ring_frames=s.rx_ring_frames, tx_ring_frames=s.tx_ring_frames,
                                  port_rx_ring_frames=s.port_rx_ring_frames)
                except P4Error as e:
                    raise P4Error(f"switch {s.name}: {e}") from None
                self.switches.append(GroupSwitch(s, dev, netio))

            def open_ports(sw: GroupSwitch) -> None:
                try:
                    sw.netio.open()
                except P4Error as e:
                    raise P4Error(f"switch {sw.name}: {e}") from None

            # in parallel: opening a packet socket mostly waits for the kernel (RCU grace
            # periods), so a thread per port at a time would leave hundreds of switches
            # waiting in turn
            with ThreadPoolExecutor(max_workers=OPEN_THREADS, thread_name_prefix="p4target-open") as pool:
                for _ in pool.map(open_ports, self.switches):
                    pass
        except BaseException:
            self.close()
            raise

    def start_servers(self, tls: Any = None) -> None:
        """A P4Runtime server per switch with its own address, one shared server for
        the others; with mutual TLS when ``tls`` (a ``p4runtime.tls.ServerTLS``) is given."""
        from p4target.p4runtime.server import P4RuntimeServer
        from p4target.p4runtime.shared_server import SharedP4RuntimeServer

        sharing: list[Any] = []
        for sw in self.switches:
            server = P4RuntimeServer(sw.device, sw.spec.grpc_addr or self.spec.grpc_addr or "", max_workers=8,
                                     tls=tls)
            sw.server = server
            if sw.spec.grpc_addr is None:
                sharing.append(server)
                continue
            try:
                server.start()
            except Exception as e:  # a busy port is RuntimeError or OSError
                sw.server = None
                raise P4Error(f"switch {sw.name}: cannot start the P4Runtime server on {sw.spec.grpc_addr}: "
                              f"{e}; choose another grpc_addr") from None
        if sharing:
            assert self.spec.grpc_addr is not None
            self.shared = SharedP4RuntimeServer(sharing, self.spec.grpc_addr, tls=tls)
            try:
                self.shared.start()
            except Exception as e:
                self.shared = None
                raise P4Error(f"cannot start the shared P4Runtime server on {self.spec.grpc_addr}: {e}; "
                              "choose another grpc_addr") from None

    def open_pcaps(self) -> None:
        """Every switch's pcap files (``NetIO.open_pcaps``), once the whole group is up."""
        for sw in self.switches:
            try:
                sw.netio.open_pcaps()
            except P4Error as e:
                raise P4Error(f"switch {sw.name}: {e}") from None

    def write_pid_files(self) -> None:
        pid = f"{os.getpid()}\n"
        for sw in self.switches:
            path = sw.spec.pid_file
            if path is None:
                continue
            try:
                tmp = path.with_name(f".{path.name}.{os.getpid()}")
                tmp.write_text(pid)
                os.replace(tmp, path)
            except OSError as e:
                raise P4Error(f"switch {sw.name}: cannot write pid file: {e.strerror}", str(path)) from None

    def start(self) -> threading.Thread:
        """Forward in a background thread (tests; ``run`` for the command)."""
        self.loop = GroupLoop(self.switches)
        t = threading.Thread(target=self.loop.run, name="p4target-group", daemon=True)
        t.start()
        return t

    def stop(self) -> None:
        if self.loop is not None:
            self.loop.stop()

    def close(self) -> None:
        """Stop the servers and close every port (after the loop has ended)."""
        if self.shared is not None:
            self.shared.stop()
            self.shared = None
        own = [sw.server for sw in self.switches if sw.server is not None and sw.spec.grpc_addr is not None]
        stoppers = [threading.Thread(target=s.stop, name="p4target-stop", daemon=True) for s in own]
        for t in stoppers:  # at once: each waits out its grace time
            t.start()
        for t in stoppers:
            t.join(10)
        from concurrent.futures import ThreadPoolExecutor

        for sw in self.switches:
            sw.server = None
        with ThreadPoolExecutor(max_workers=OPEN_THREADS, thread_name_prefix="p4target-close") as pool:
            for _ in pool.map(lambda sw: sw.netio.close(), self.switches):  # closing waits as opening does
                pass
        for sw in self.switches:
            if sw.spec.pid_file is not None:
                try:
                    if sw.spec.pid_file.read_text().strip() == str(os.getpid()):
                        sw.spec.pid_file.unlink()
                except OSError:
                    pass

    def find(self, name: str) -> GroupSwitch:
        for sw in self.switches:
            if sw.name == name:
                return sw
        raise KeyError(name)


def apply_realtime(priority: int | None) -> bool:
    """Every thread of this process (and every thread started later) SCHED_RR at
    ``priority``, so a woken switch runs at once on a busy machine (see
    p4target/ports/scheduling.py); nothing for None.
    Without the privilege (CAP_SYS_NICE) one warning and the process goes on as it is."""
    if priority is None:
        return False
    from p4target.ports.scheduling import for_every_thread, set_realtime

    try:
        for_every_thread(lambda tid: set_realtime(tid, priority))
    except PermissionError as e:
        log.warning("group: realtime %d not set (%s): the switches run at normal priority; run as root "
                    "(or with CAP_SYS_NICE), or leave realtime out of the group file", priority, e.strerror)
        return False
    return True


def watch_process(group: SwitchGroup) -> GcWatch:
    """Once the group is up: set the collector's mode (the group file's ``gc``), time
    its collections from now on, and answer SIGUSR2 (from the main thread only) with
    one line on stderr (the log): the process's collections and the loop's counters
    (``loop_stats.report_line``)."""
    import signal
    import sys

    apply_gc_mode(group.spec.gc)
    watch = GcWatch()
    watch.install()

    def on_report(_signum: int, _frame: Any) -> None:
        loop = group.loop.report() if group.loop is not None else {}
        policy = os.sched_getscheduler(0)
        sched = {"policy": {os.SCHED_RR: "rr", os.SCHED_FIFO: "fifo"}.get(policy, "other"),
                 "priority": os.sched_getparam(0).sched_priority}
        print(report_line({"pid": os.getpid(), "gc": watch.snapshot(), "sched": sched, **loop}), file=sys.stderr,
              flush=True)

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGUSR2, on_report)
    return watch


def run_command(path: Path, grpc_addr: str | None = None, pid_file: Path | None = None,
                cpu: int | str | None = None, tls: Any = None, insecure: bool = False) -> int:
    """``p4target group FILE``: build the group, serve it, forward until SIGTERM/SIGINT.
    ``tls``: a ``p4runtime.tls.ServerTLS`` for every server; without it an address off
    loopback is refused unless ``insecure``."""
    import signal
    import sys

    import faulthandler

    faulthandler.register(signal.SIGUSR1)  # `kill -USR1 PID`: every thread's stack on stderr (the log)
    spec = load_group(path, grpc_addr)
    if tls is None and not insecure:
        refuse_plaintext_off_loopback(spec, path)
    if cpu is not None:  # before any thread starts: they all inherit it
        from p4target.p4runtime.placement import PlacementError, pin_process, resolve_cpu

        try:
            chosen = resolve_cpu(cpu, spec.switches[0].device_id)
        except PlacementError as e:
            raise P4Error(f"--cpu {cpu}: {e}") from None
        if chosen is not None:
            pin_process(chosen)
    group = SwitchGroup(spec)
    group.build()
    try:
        group.start_servers(tls)
        group.open_pcaps()
        group.write_pid_files()
        if pid_file is not None:
            try:
                tmp = pid_file.with_name(f".{pid_file.name}.{os.getpid()}")
                tmp.write_text(f"{os.getpid()}\n")
                os.replace(tmp, pid_file)
            except OSError as e:
                raise P4Error(f"cannot write pid file: {e.strerror}", str(pid_file)) from None
        group.loop = GroupLoop(group.switches)

        def on_signal(signum: int, _frame: Any) -> None:
            log.info("group: %s received, stopping", signal.Signals(signum).name)
            group.stop()

        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, on_signal)
            signal.signal(signal.SIGINT, on_signal)
        apply_realtime(spec.realtime)  # once up: compiling and opening ports take no priority over others
        watch_process(group)
        programs = len(group.programs)
        print(f"p4target: group of {len(group.switches)} switches ({programs} program"
              f"{'s' if programs != 1 else ''}) running: "
              + "; ".join(f"{sw.name} device {sw.device_id_text} on {sw.addr_text(group)}"
                          for sw in group.switches[:8])
              + (f"; and {len(group.switches) - 8} more" if len(group.switches) > 8 else ""),
              file=sys.stderr, flush=True)
        group.loop.run()
    finally:
        group.close()
        if pid_file is not None:
            try:
                pid_file.unlink()
            except OSError:
                pass
    for sw in group.switches:
        for n, st in sorted(sw.netio.stats().items()):
            log.info("%s: port %d: rx %d tx %d tx_errors %d rx_dropped %d", sw.device.label, n, st.rx, st.tx,
                     st.tx_errors, st.rx_dropped)
    return 0
