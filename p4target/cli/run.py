"""``p4target run``: a switch on Linux interfaces with a P4Runtime server.

Why apart from the command line (``cli.py``): this is what the command does once its
options are parsed: each check in a function of its own, all of them before the
first interface is opened (a mistake changes nothing), then the server, the
forwarding loop and a clean stop. ``Args`` is the parsed options by name.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
from pathlib import Path
from types import SimpleNamespace as Args
from typing import Any

from p4target.errors import P4Error

log = logging.getLogger("p4target.cli")

PROG = "p4target"


class UsageError(Exception):
    """A command-line mistake the option parser cannot see (exit status 2)."""


def server_tls_of(args: Args) -> Any:
    """The ``--tls-*`` files read and checked (a ``ServerTLS``), or None without them."""
    from p4target.p4runtime import tls

    missing = tls.missing_options(args.tls_cert, args.tls_key, args.tls_ca)
    if missing:
        raise UsageError(f"mutual TLS needs --tls-cert, --tls-key and --tls-ca together; {', '.join(missing)} "
                         f"{'is' if len(missing) == 1 else 'are'} missing")
    if args.tls_cert is None:
        return None
    if args.insecure:
        raise UsageError("--insecure serves plaintext; drop it with --tls-cert, --tls-key and --tls-ca")
    return tls.load(args.tls_cert, args.tls_key, args.tls_ca)


def compile_program(args: Args) -> Any:
    path: Path = args.program
    if path.is_dir():
        raise P4Error("is a directory; give the program's .p4 file", str(path))
    if not path.is_file():
        raise P4Error("no such program file; check the path", str(path))
    from p4target.compiler import compile_file

    return compile_file(path, include_dirs=tuple(Path(d) for d in args.include_dirs),
                        defines=dict(args.defines))


def run(args: Args) -> int:
    """``p4target run``: every option checked before an interface is opened, then
    serve and forward until SIGTERM/SIGINT."""
    ports = _run_ports(args)
    rings = _rx_ring_frames(args, ports)
    _check_queue_options(args, ports)
    cpu = "auto" if args.cpu is None else args.cpu
    grpc_limits = _grpc_limits(args, cpu)
    server_tls = _run_tls(args)
    device = _run_device(args)
    netio = _open_netio(args, device, ports, rings)
    try:
        server = None if args.no_grpc else _start_grpc(device, args.grpc_addr, cpu, grpc_limits, server_tls)
        try:
            _forward(args, device, netio, ports, server)
        finally:
            if server is not None:
                server.stop()
    finally:
        netio.stop()
        netio.close()
    _log_stats(device, netio)
    return 0


def _open_netio(args: Args, device: Any, ports: dict[int, str],
                rings: tuple[int | None, dict[int, int]]) -> Any:
    from p4target.ports.netio import NetIO

    netio = NetIO(device, ports, pcap_dir=args.pcap, netns=args.netns, promisc=not args.no_promisc,
                  rings=not args.no_rings, rx_ring_frames=rings[0], port_rx_ring_frames=rings[1])
    netio.open()
    return netio


def _forward(args: Args, device: Any, netio: Any, ports: dict[int, str], server: _Server | None) -> None:
    """Announce the switch (the line scripts wait for) and forward until stopped;
    the pcap files and the pid file only now, when nothing else can fail."""
    netio.open_pcaps()
    if args.pid_file is not None:
        _write_pid_file(args.pid_file)
    try:
        _stop_on_signals(device, netio)
        grpc_txt = f", P4Runtime on {server.bound_addr}" if server is not None else ""
        print(f"{PROG}: device {device.device_id} running: "
              + ", ".join(f"{n}@{i}" for n, i in sorted(ports.items())) + grpc_txt,
              file=sys.stderr, flush=True)
        netio.run()
    finally:
        if args.pid_file is not None:
            try:
                args.pid_file.unlink()
            except OSError:
                pass


def _stop_on_signals(device: Any, netio: Any) -> None:
    def on_signal(signum: int, _frame: Any) -> None:
        log.info("device %d: %s received, stopping", device.device_id, signal.Signals(signum).name)
        netio.stop()

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)


def _log_stats(device: Any, netio: Any) -> None:
    for n, st in sorted(netio.stats().items()):
        log.info("device %d: port %d: rx %d tx %d tx_errors %d rx_dropped %d",
                 device.device_id, n, st.rx, st.tx, st.tx_errors, st.rx_dropped)
    if netio.sleeps is not None:
        log.info("device %d: the forwarding loop slept %d times", device.device_id, netio.sleeps)


def _run_ports(args: Args) -> dict[int, str]:
    """``run``'s interface ports (port -> interface), once the options that exclude
    each other are checked."""
    if args.no_p4 and args.program is not None:
        raise UsageError("give either PROGRAM.p4 or --no-p4, not both")
    if not args.no_p4 and args.program is None:
        raise UsageError("PROGRAM.p4 is required (or --no-p4 to wait for a pipeline "
                         "from the controller)")
    if not args.ports:
        raise UsageError("give at least one port: -i PORT@IFACE")
    ports: dict[int, str] = {}
    for num, iface in args.ports:
        if num in ports:
            raise UsageError(f"port {num} is given twice ({ports[num]} and {iface})")
        ports[num] = iface
    if args.cpu_port is not None and args.cpu_port in ports:
        raise UsageError(f"--cpu-port {args.cpu_port} is also an interface port")
    if args.commands is not None and args.no_p4:
        raise UsageError("--commands needs a program at start; drop --no-p4")
    if args.no_grpc and args.cpu is not None:
        raise UsageError("--cpu places the P4Runtime server's threads; drop it with --no-grpc")
    if args.no_rings and args.rx_ring_frames:
        raise UsageError("--rx-ring-frames sizes the receive rings; drop it with --no-rings")
    return ports


def _rx_ring_frames(args: Args, ports: dict[int, str]) -> tuple[int | None, dict[int, int]]:
    """``--rx-ring-frames``: the ring size of every port (None: the default) and of
    the ports given their own."""
    every_port: int | None = None
    port_ring_frames: dict[int, int] = {}
    for port, n in args.rx_ring_frames:
        if port is None:
            if every_port is not None:
                raise UsageError("--rx-ring-frames N is given twice; give it once "
                                 "(and PORT=N for a port of its own)")
            every_port = n
        elif port not in ports:
            raise UsageError(f"--rx-ring-frames {port}={n}: port {port} is not an interface "
                             f"port (-i {port}@IFACE)")
        elif port in port_ring_frames:
            raise UsageError(f"--rx-ring-frames {port}=...: port {port} is given twice")
        else:
            port_ring_frames[port] = n
    return every_port, port_ring_frames


def _run_tls(args: Args) -> Any:
    """``run``'s TLS files (None: plaintext), checked before any interface is opened;
    plaintext off loopback only with ``--insecure``."""
    server_tls = server_tls_of(args)
    if args.no_grpc:
        if server_tls is not None or args.insecure:
            raise UsageError("the --tls-* options and --insecure are for the P4Runtime server; drop them "
                             "with --no-grpc")
        return None
    _check_grpc_addr(args.grpc_addr)
    if server_tls is None and not args.insecure:
        from p4target.p4runtime.tls import plaintext_refusal

        why = plaintext_refusal(args.grpc_addr)
        if why is not None:
            raise UsageError(f"--grpc-addr {why}")
    return server_tls


def _check_queue_options(args: Args, ports: dict[int, str]) -> None:
    if args.no_grpc and args.no_p4:
        raise UsageError("--no-p4 needs the P4Runtime server to receive a pipeline; "
                         "drop --no-grpc")

    for opt, specs in (("--queue-rate", args.queue_rates), ("--queue-depth", args.queue_depths)):
        for port, _ in specs:
            if port not in ports:
                raise UsageError(f"{opt} {port}=...: port {port} is not an interface port (-i {port}@IFACE)")


def _grpc_limits(args: Args, cpu: str) -> Any:
    """The P4Runtime server's limits from the options; ``--cpu`` checked before any
    interface is opened (a bad one changes nothing)."""
    from p4target.p4runtime.limits import from_options

    try:
        grpc_limits = from_options(args.limits)
    except ValueError as e:
        raise UsageError(str(e)) from None
    if not args.no_grpc:  # before any interface is opened: a bad --cpu changes nothing
        from p4target.p4runtime.placement import PlacementError, resolve_cpu

        try:
            resolve_cpu(cpu, args.device_id)
        except PlacementError as e:
            raise P4Error(f"--cpu {cpu}: {e}") from None
    return grpc_limits


def _run_device(args: Args) -> Any:
    """The device ``run`` drives: queues set, the program loaded, the commands applied."""
    from p4target.device import Device

    device = Device(device_id=args.device_id, cpu_port=args.cpu_port, seed=args.seed)
    for port, rate in args.queue_rates:
        device.set_queue_rate(port, rate)
    for port, depth in args.queue_depths:
        device.set_queue_depth(port, depth)
    if args.program is not None:
        device.load(compile_program(args))
    if args.commands is not None:
        apply_commands(device.switch, args.commands)
    return device


def _write_pid_file(path: Path) -> None:
    try:  # atomically: a reader never sees an empty file
        tmp = path.with_name(f".{path.name}.{os.getpid()}")
        tmp.write_text(f"{os.getpid()}\n")
        os.replace(tmp, path)
    except OSError as e:
        raise P4Error(f"cannot write pid file: {e.strerror}", str(path)) from None


STF_CONTROL_ONLY = ("packet", "expect", "check_counter", "check_register", "wait", "no_packet")


def apply_commands(switch: Any, path: Path) -> int:
    """Apply an STF file's control-plane commands to ``switch``; returns how many.
    Packets and checks have no place at start-up and are refused, naming the line."""
    from p4target.stf import StfRunner, parse_stf_file

    cmds = parse_stf_file(path)
    for c in cmds:
        if c.kind in STF_CONTROL_ONLY:
            raise P4Error(f"'{c.kind}' is not a control command; --commands takes table, "
                          "multicast, mirroring, counter, register and meter commands",
                          f"{path}:{c.line}:{c.col}")
    runner = StfRunner(switch, str(path))
    for c in cmds:
        runner.execute(c)
    log.info("applied %d command(s) from %s", len(cmds), path)
    return len(cmds)


class _Server:
    def __init__(self, server: Any, addr: str) -> None:
        self.server = server
        host = addr.rsplit(":", 1)[0]
        port = getattr(server, "bound_port", None)
        self.bound_addr = f"{host}:{port}" if port else addr

    def stop(self) -> None:
        self.server.stop()


def _check_grpc_addr(addr: str) -> None:
    host, sep, port = addr.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise UsageError(f"--grpc-addr {addr!r} is not HOST:PORT (for example 127.0.0.1:9559)")


def _start_grpc(device: Any, addr: str, cpu: int | str = "auto", limits: Any = None,
                server_tls: Any = None) -> _Server:
    _check_grpc_addr(addr)
    try:
        from p4target.p4runtime.placement import PlacementError
        from p4target.p4runtime.server import P4RuntimeServer
    except ImportError as e:
        raise P4Error(f"the P4Runtime server is not available ({e}); run with --no-grpc") from None
    try:
        server = P4RuntimeServer(device, addr, cpu=cpu, limits=limits, tls=server_tls)
    except PlacementError as e:
        raise P4Error(f"--cpu {cpu}: {e}") from None
    try:
        server.start()
    except P4Error:
        raise
    except Exception as e:  # grpc reports a busy port as RuntimeError
        raise P4Error(f"cannot start the P4Runtime server on {addr}: {e}; "
                      "choose another --grpc-addr") from None
    return _Server(server, addr)
