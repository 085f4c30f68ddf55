"""The ``p4target`` command: compile a program, run an STF test, or run a switch.

One entry point for people and scripts (Mininet node classes, ``make``, CI):

- ``p4target compile PROGRAM.p4 [--p4info OUT.txtpb]``: check a program against the
  embedded target's front-end and write its P4Info (text format), as
  ``p4c --p4runtime-files`` would.
- ``p4target stf PROGRAM.p4 TEST.stf``: run a p4c STF test; exit 0 if it passes.
- ``p4target run PROGRAM.p4 -i 1@eth1 -i 2@eth2 ...``: a switch on Linux
  interfaces with a P4Runtime server, like ``simple_switch_grpc``.

Every problem a user can cause is one line on stderr, ``p4target: FILE:LINE:COL:
error: WHAT; FIX`` (or ``p4target: error: ...``), and exit status 1; usage
mistakes exit 2 with argparse's usage line. Never a traceback.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any, Sequence

from p4target.errors import P4Error

log = logging.getLogger("p4target.cli")

PROG = "p4target"
DEFAULT_GRPC_ADDR = "127.0.0.1:9559"
LOG_LEVELS = ("debug", "info", "warning", "error", "critical")


class UsageError(Exception):
    """A command-line mistake that argparse cannot see (exit status 2)."""


def _port_spec(text: str) -> tuple[int, str]:
    """``N@IFACE`` -> (N, IFACE)."""
    num, sep, iface = text.partition("@")
    if not sep or not num or not iface:
        raise argparse.ArgumentTypeError(f"{text!r} is not PORT@IFACE (for example 1@veth0)")
    try:
        port = int(num, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: port {num!r} is not a number") from None
    if not 0 <= port < 511:
        raise argparse.ArgumentTypeError(f"{text!r}: port must be 0..510 (511 is drop)")
    if len(iface) > 15 or "/" in iface or " " in iface:
        raise argparse.ArgumentTypeError(f"{text!r}: {iface!r} is not a valid interface name")
    return port, iface


def _queue_spec(kind: str, cast: type) -> Any:
    """``PORT=VALUE`` for --queue-rate (packets/s > 0) and --queue-depth (packets >= 0)."""

    def parse(text: str) -> tuple[int, Any]:
        num, sep, value = text.partition("=")
        try:
            port, v = int(num, 0), cast(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not PORT={kind.upper()} (for example 2=1000)") from None
        if not sep or not 0 <= port < 511:
            raise argparse.ArgumentTypeError(f"{text!r}: give PORT={kind.upper()} with a port 0..510")
        if v < 0 or (cast is float and v == 0):
            raise argparse.ArgumentTypeError(f"{text!r}: the {kind} must be "
                                             + ("more than 0 packets/s" if cast is float else "0 packets or more"))
        return port, v

    return parse


RX_RING_FRAMES_MIN, RX_RING_FRAMES_MAX = 64, 65536


def _ring_frames(text: str) -> tuple[int | None, int]:
    """``--rx-ring-frames``: ``N`` receive ring slots for every port, or ``PORT=N``
    for one port: (the port or None, N)."""
    port_text, sep, count = text.rpartition("=")
    port: int | None = None
    if sep:
        try:
            port = int(port_text, 10)
        except ValueError:
            port = -1
        if port < 0:
            raise argparse.ArgumentTypeError(
                f"{text!r}: give N (slots for every port) or PORT=N (for one port)")
    try:
        n = int(count, 10)
    except ValueError:
        n = -1
    if not RX_RING_FRAMES_MIN <= n <= RX_RING_FRAMES_MAX:
        raise argparse.ArgumentTypeError(
            f"{text!r}: give a whole number of receive ring slots per port from "
            f"{RX_RING_FRAMES_MIN} to {RX_RING_FRAMES_MAX} (default 4096)")
    return port, n


def _cpu_spec(text: str) -> int | str:
    """``--cpu``: ``auto``, ``any`` or a CPU number."""
    from p4target.p4runtime.placement import parse_cpu

    try:
        return parse_cpu(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _define(text: str) -> tuple[str, str]:
    name, _, value = text.partition("=")
    if not name.isidentifier():
        raise argparse.ArgumentTypeError(f"{text!r} is not NAME or NAME=VALUE")
    return name, value or "1"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Embedded P4_16 v1model target: compile programs, run STF tests, "
        "and run a switch on Linux interfaces with a P4Runtime server.",
        epilog="Run 'p4target COMMAND --help' for the options of each command.",
    )
    parser.add_argument("--log-level", default="warning", choices=LOG_LEVELS,
                        help="how much to log on stderr (default: warning)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    def common_p4(p: argparse.ArgumentParser) -> None:
        p.add_argument("-I", "--include", dest="include_dirs", action="append", default=[],
                       metavar="DIR", help="add DIR to the #include search path")
        p.add_argument("-D", "--define", dest="defines", action="append", default=[],
                       type=_define, metavar="NAME[=VALUE]", help="preprocessor define")

    c = sub.add_parser("compile", help="check a program and write its P4Info",
                       description="Compile PROGRAM.p4 with the embedded front-end; "
                       "report the first error as FILE:LINE:COL; optionally write the "
                       "P4Info in protobuf text format.")
    c.add_argument("program", type=Path, metavar="PROGRAM.p4")
    c.add_argument("--p4info", type=Path, metavar="OUT.txtpb",
                   help="write the P4Info here ('-' for stdout)")
    c.add_argument("--native", action="store_true",
                   help="also build the program's compiled fast path (Cython + C compiler) "
                   "into the cache now, so switches running it take it from their first "
                   "frame (they build it themselves in the background otherwise); "
                   "the cache is $P4TARGET_CACHE or ~/.cache/p4target/native")
    common_p4(c)

    s = sub.add_parser("stf", help="run a p4c STF test on a program",
                       description="Run TEST.stf (p4c's simple test framework format) "
                       "against PROGRAM.p4 in the embedded target; exit 0 if every "
                       "expectation holds, 1 otherwise.")
    s.add_argument("program", type=Path, metavar="PROGRAM.p4")
    s.add_argument("stf", type=Path, metavar="TEST.stf")
    s.add_argument("--ordered", action="store_true",
                   help="packets on one port must come out in the order expected "
                   "(default: any order within a port)")
    s.add_argument("--seed", type=int, default=0, help="seed for random() and hashes")
    common_p4(s)

    r = sub.add_parser("run", help="run a switch on Linux interfaces",
                       description="Run PROGRAM.p4 as a switch whose ports are Linux "
                       "interfaces (raw sockets), with a P4Runtime server. "
                       "Frames take the program's compiled fast path (from the cache "
                       "'p4target compile --native' fills; built in the background when "
                       "it is not there, forwarding on the interpreted one meanwhile; "
                       "P4TARGET_NATIVE=0 keeps the interpreted one). "
                       "Stops cleanly on SIGTERM or SIGINT.",
                       epilog="Example: p4target run fabric.p4 -i 1@veth1 -i 2@veth2 "
                       "--grpc-addr 127.0.0.1:9559 --cpu-port 255")
    r.add_argument("program", type=Path, nargs="?", metavar="PROGRAM.p4",
                   help="program to load at start (omit with --no-p4)")
    r.add_argument("-i", "--interface", dest="ports", action="append", default=[],
                   type=_port_spec, metavar="PORT@IFACE",
                   help="make interface IFACE switch port PORT (repeat for each port)")
    r.add_argument("--device-id", type=int, default=0, help="P4Runtime device id (default 0)")
    r.add_argument("--cpu-port", type=int, default=None,
                   help="port number whose output goes to the controller as packet-in")
    r.add_argument("--pcap", type=Path, metavar="DIR",
                   help="write IFACE_in.pcap / IFACE_out.pcap per port into DIR")
    r.add_argument("--grpc-addr", default=DEFAULT_GRPC_ADDR, metavar="ADDR",
                   help=f"P4Runtime server address (default {DEFAULT_GRPC_ADDR})")
    r.add_argument("--no-grpc", action="store_true", help="do not start the P4Runtime server")
    r.add_argument("--cpu", type=_cpu_spec, default=None, metavar="CPU",
                   help="keep every thread of the switch (P4Runtime server and packet I/O) on one CPU: "
                   "a CPU number, 'auto' (the default: CPU number device-id modulo the CPUs this "
                   "process may use, so switches 1..N spread over them) or 'any' (not pinned)")
    r.add_argument("--no-p4", action="store_true",
                   help="start without a pipeline; wait for SetForwardingPipelineConfig")
    r.add_argument("--seed", type=int, default=0, help="seed for random() and hashes")
    r.add_argument("--commands", type=Path, metavar="FILE.stf",
                   help="apply these STF control commands (add, setdefault, mc_*, "
                   "mirroring_*, register_*, ...) to the pipeline at start")
    r.add_argument("--queue-rate", dest="queue_rates", action="append", default=[], metavar="PORT=PPS",
                   type=_queue_spec("rate", float),
                   help="send at most PPS packets/s out of PORT (its egress queues fill behind it; "
                   "repeat per port)")
    r.add_argument("--queue-depth", dest="queue_depths", action="append", default=[], metavar="PORT=N",
                   type=_queue_spec("depth", int),
                   help="egress queue depth of PORT in packets (default 64; repeat per port)")
    r.add_argument("--pid-file", type=Path, metavar="PATH", help="write the process id here")
    r.add_argument("--netns", metavar="NAME",
                   help="open the interfaces in network namespace NAME (/run/netns/NAME)")
    r.add_argument("--no-promisc", action="store_true",
                   help="do not put the interfaces in promiscuous mode")
    r.add_argument("--no-rings", action="store_true",
                   help="read and write frames with one system call each instead of "
                   "PACKET_MMAP rings (slower; for comparison)")
    r.add_argument("--rx-ring-frames", type=_ring_frames, action="append", default=[],
                   metavar="[PORT=]N",
                   help="slots of each port's receive ring, or with PORT= of that port's "
                   "(repeat for more ports; 64 to 65536; default 4096, fewer for jumbo "
                   "MTUs): a slot holds one frame of up to the MTU (2 KB at MTU 1500, "
                   "kernel memory locked while the switch runs), and the ring is what "
                   "holds a burst the switch cannot take at once, so fewer slots save "
                   "memory and lose the end of larger bursts")
    common_p4(r)
    from p4target.p4runtime import limits

    limits.add_arguments(r)
    g = sub.add_parser("group", help="run many switches in one process",
                       description="Run every switch of GROUP.yaml (YAML or JSON: each switch's name, "
                       "program, device id, ports and P4Runtime address; docs/target.md) in this "
                       "process: one forwarding thread for all, one compiled program per file. "
                       "Stops cleanly on SIGTERM or SIGINT.")
    g.add_argument("group_file", type=Path, metavar="GROUP.yaml")
    g.add_argument("--grpc-addr", default=None, metavar="ADDR",
                   help="serve the switches without an address of their own here, told apart by device id")
    g.add_argument("--pid-file", type=Path, metavar="PATH", help="write the process id here")
    g.add_argument("--cpu", type=_cpu_spec, default=None, metavar="CPU",
                   help="keep every thread on one CPU: a number, 'auto' (by the first switch's device id) "
                   "or 'any' (the default)")
    for p in (r, g):
        _tls_arguments(p)
    for p in (c, s, r, g):
        p.add_argument("--log-level", default=argparse.SUPPRESS, choices=LOG_LEVELS,
                       help="how much to log on stderr (default: warning)")
    return parser


def _tls_arguments(p: argparse.ArgumentParser) -> None:
    t = p.add_argument_group("mutual TLS (docs/p4runtime.md, \"Mutual TLS\"; `mrcctl certs` makes the files)")
    t.add_argument("--tls-cert", type=Path, metavar="FILE", help="the server's certificate (PEM)")
    t.add_argument("--tls-key", type=Path, metavar="FILE", help="the server's private key (PEM)")
    t.add_argument("--tls-ca", type=Path, metavar="FILE",
                   help="the CA certificate (PEM): only clients with a certificate it signed are served")
    t.add_argument("--insecure", action="store_true",
                   help="serve plaintext P4Runtime on an address that is not loopback (refused otherwise)")


def _server_tls(args: argparse.Namespace) -> Any:
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


def _setup_logging(level: str) -> None:
    logging.basicConfig(level=getattr(logging, level.upper()), stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")


def _compile(args: argparse.Namespace) -> Any:
    path: Path = args.program
    if not path.is_file():
        raise P4Error("no such program file; check the path", str(path))
    from p4target.compiler import compile_file

    return compile_file(path, include_dirs=tuple(Path(d) for d in args.include_dirs),
                        defines=dict(args.defines))


def cmd_compile(args: argparse.Namespace) -> int:
    compiled = _compile(args)
    for w in getattr(compiled.model, "warnings", ()):
        print(f"{PROG}: warning: {w}", file=sys.stderr)
    if args.p4info is not None:
        from p4target.p4info import p4info_text

        text = p4info_text(compiled.model)
        if str(args.p4info) == "-":
            sys.stdout.write(text)
        else:
            try:
                args.p4info.write_text(text)
            except OSError as e:
                raise P4Error(f"cannot write P4Info: {e.strerror}", str(args.p4info)) from None
    if args.native:
        return _build_native(compiled)
    return 0


def _build_native(compiled: Any) -> int:
    """``compile --native``: build (or find) the compiled fast path; 1 if there is none."""
    from p4target import optional_accel

    path = compiled.path
    native = optional_accel.part("native")
    if native is None:
        print(f"{PROG}: error: {path}: this installation has no p4target/accel/ (the compiled fast "
              "path's builder); reinstall p4target with it", file=sys.stderr)
        return 1
    if not native.enabled():
        print(f"{PROG}: error: {path}: {native.ENV_SWITCH}=0 turns the compiled fast path off; "
              "unset it", file=sys.stderr)
        return 1
    fast = compiled.native_fast_path()
    if fast is None:
        print(f"{path}: no fast path (every frame takes the general path); nothing to build")
        return 0
    start = time.monotonic()
    found: list[object] = []
    fast.when_ready(found.append)  # at once when it is in the cache
    if not found and fast.error is None:
        print(f"{path}: building the compiled fast path (once: it is kept in the cache)...",
              flush=True)
    if fast.get() is None:
        print(f"{PROG}: error: {path}: no compiled fast path: {fast.error}", file=sys.stderr)
        return 1
    print(f"{path}: compiled fast path ready in {native.cache_dir()} "
          f"({time.monotonic() - start:.1f} s)")
    return 0


def cmd_stf(args: argparse.Namespace) -> int:
    from p4target.stf import StfRunner, parse_stf_file

    cmds = parse_stf_file(args.stf)
    if not args.program.is_file():
        raise P4Error("no such program file; check the path", str(args.program))
    sw = _make_switch(args, _compile(args))
    runner = StfRunner(sw, str(args.stf), ordered=args.ordered)
    for c in cmds:
        runner.execute(c)
    res = runner.finish()
    for line in res.log:
        log.info("%s", line)
    out_count = sum(len(v) for v in res.received.values())
    if res.passed:
        print(f"PASS {args.stf}: {res.commands} commands, {res.packets_sent} packets in, "
              f"{out_count} out")
        return 0
    for f in res.failures:
        print(f"{PROG}: FAIL: {f}", file=sys.stderr)
    print(f"FAIL {args.stf}: {len(res.failures)} failure(s)")
    return 1


def _make_switch(args: argparse.Namespace, compiled: Any, **kw: Any) -> Any:
    from p4target import Switch

    return Switch(compiled, seed=args.seed, **kw)


def cmd_run(args: argparse.Namespace) -> int:
    from p4target.netio import NetIO

    ports = _run_ports(args)
    every_port, port_ring_frames = _rx_ring_frames(args, ports)
    _check_queue_options(args, ports)
    cpu = "auto" if args.cpu is None else args.cpu
    grpc_limits = _grpc_limits(args, cpu)
    server_tls = _run_tls(args)
    device = _run_device(args)
    netio = NetIO(device, ports, pcap_dir=args.pcap, netns=args.netns,
                  promisc=not args.no_promisc, rings=not args.no_rings,
                  rx_ring_frames=every_port, port_rx_ring_frames=port_ring_frames)
    netio.open()
    server = None
    try:
        if not args.no_grpc:
            server = _start_grpc(device, args.grpc_addr, cpu, grpc_limits, server_tls)
        if args.pid_file is not None:
            _write_pid_file(args.pid_file)

        def on_signal(signum: int, _frame: Any) -> None:
            log.info("device %d: %s received, stopping", device.device_id,
                     signal.Signals(signum).name)
            netio.stop()

        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, on_signal)
            signal.signal(signal.SIGINT, on_signal)
        grpc_txt = f", P4Runtime on {server.bound_addr}" if server is not None else ""
        print(f"{PROG}: device {device.device_id} running: "
              + ", ".join(f"{n}@{i}" for n, i in sorted(ports.items())) + grpc_txt,
              file=sys.stderr, flush=True)
        netio.run()
    finally:
        netio.stop()
        netio.close()
        if server is not None:
            server.stop()
        if args.pid_file is not None:
            try:
                args.pid_file.unlink()
            except OSError:
                pass
    for n, st in sorted(netio.stats().items()):
        log.info("device %d: port %d: rx %d tx %d tx_errors %d rx_dropped %d",
                 device.device_id, n, st.rx, st.tx, st.tx_errors, st.rx_dropped)
    if netio.sleeps is not None:
        log.info("device %d: the forwarding loop slept %d times", device.device_id, netio.sleeps)
    return 0


def _run_ports(args: argparse.Namespace) -> dict[int, str]:
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


def _rx_ring_frames(args: argparse.Namespace, ports: dict[int, str]) -> tuple[int | None, dict[int, int]]:
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


def _run_tls(args: argparse.Namespace) -> Any:
    """``run``'s TLS files (None: plaintext), checked before any interface is opened;
    plaintext off loopback only with ``--insecure``."""
    server_tls = _server_tls(args)
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


def _check_queue_options(args: argparse.Namespace, ports: dict[int, str]) -> None:
    if args.no_grpc and args.no_p4:
        raise UsageError("--no-p4 needs the P4Runtime server to receive a pipeline; "
                         "drop --no-grpc")

    for opt, specs in (("--queue-rate", args.queue_rates), ("--queue-depth", args.queue_depths)):
        for port, _ in specs:
            if port not in ports:
                raise UsageError(f"{opt} {port}=...: port {port} is not an interface port (-i {port}@IFACE)")


def _grpc_limits(args: argparse.Namespace, cpu: str) -> Any:
    """The P4Runtime server's limits from the options; ``--cpu`` checked before any
    interface is opened (a bad one changes nothing)."""
    from p4target.p4runtime.limits import from_arguments

    try:
        grpc_limits = from_arguments(args)
    except ValueError as e:
        raise UsageError(str(e)) from None
    if not args.no_grpc:  # before any interface is opened: a bad --cpu changes nothing
        from p4target.p4runtime.placement import PlacementError, resolve_cpu

        try:
            resolve_cpu(cpu, args.device_id)
        except PlacementError as e:
            raise P4Error(f"--cpu {cpu}: {e}") from None
    return grpc_limits


def _run_device(args: argparse.Namespace) -> Any:
    """The device ``run`` drives: queues set, the program loaded, the commands applied."""
    from p4target.device import Device

    device = Device(device_id=args.device_id, cpu_port=args.cpu_port, seed=args.seed)
    for port, rate in args.queue_rates:
        device.set_queue_rate(port, rate)
    for port, depth in args.queue_depths:
        device.set_queue_depth(port, depth)
    if args.program is not None:
        device.load(_compile(args))
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


def cmd_group(args: argparse.Namespace) -> int:
    from p4target.switch_group import run_command

    return run_command(args.group_file, args.grpc_addr, args.pid_file, args.cpu, tls=_server_tls(args),
                       insecure=args.insecure)


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


def format_error(e: P4Error) -> str:
    text = str(e)
    if ": error: " not in text and not text.startswith("error:"):
        text = f"error: {text}"
    return f"{PROG}: {text}"


def main(argv: Sequence[str] | None = None) -> int:
    """Console-script entry point: returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)  # exits 2 on usage errors
    _setup_logging(getattr(args, "log_level", "warning"))
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    handler = {"compile": cmd_compile, "stf": cmd_stf, "run": cmd_run, "group": cmd_group}[args.command]
    try:
        return handler(args)
    except UsageError as e:
        sub = parser._subparsers._group_actions[0].choices[args.command]  # type: ignore[union-attr, index]  # argparse keeps its subcommands' parsers in private attributes
        sub.print_usage(sys.stderr)
        print(f"{PROG} {args.command}: error: {e}", file=sys.stderr)
        return 2
    except P4Error as e:
        print(format_error(e), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 1
    except OSError as e:
        where = f"{e.filename}: " if getattr(e, "filename", None) else ""
        print(f"{PROG}: error: {where}{e.strerror or e}", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
