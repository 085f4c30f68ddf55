"""The ``p4target`` command: compile a program, run an STF test, run a switch or a group.

One entry point for people and scripts (Mininet node classes, ``make``, CI):

- ``p4target compile PROGRAM.p4 [--p4info OUT.txtpb]``: check a program against the
  embedded target's front-end and write its P4Info (text format), as
  ``p4c --p4runtime-files`` would.
- ``p4target stf PROGRAM.p4 TEST.stf``: run a p4c STF test; exit 0 if it passes.
- ``p4target run PROGRAM.p4 -i 1@eth1 -i 2@eth2 ...``: a switch on Linux
  interfaces with a P4Runtime server, like ``simple_switch_grpc`` (``run.py``).
- ``p4target group GROUP.yaml``: many switches in one process (``group/process.py``).

Every problem a user can cause is one line on stderr, ``p4target: FILE:LINE:COL:
error: WHAT; FIX`` (or ``p4target: error: ...``), and exit status 1; usage mistakes
exit 2 with the command's usage line. Never a traceback. On typer (help laid out by
rich); the errors are printed here, in the one format above.
"""

from __future__ import annotations

import inspect
import logging
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from p4target.cli import values as cli_values
from p4target.cli.run import PROG, Args, UsageError, compile_program, server_tls_of
from p4target.cli.run import run as run_switch
from p4target.errors import P4Error

log = logging.getLogger("p4target.cli")

DEFAULT_GRPC_ADDR = "127.0.0.1:9559"
LOG_LEVELS = ("debug", "info", "warning", "error", "critical")
TLS_PANEL = "Mutual TLS (docs/p4runtime.md; `mrcctl certs` makes the files)"
LIMITS_PANEL = "P4Runtime server limits (docs/p4runtime.md, \"Limits and hardening\")"

app = typer.Typer(
    name=PROG, add_completion=False, pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
    help="Embedded P4_16 v1model target: compile programs, run STF tests, and run a switch on Linux "
         "interfaces with a P4Runtime server.\n\nRun 'p4target COMMAND --help' for the options of each command.")


def command(name: str, **kw: Any) -> Callable[[Callable[..., int]], Callable[..., int]]:
    """``app.command`` with the docstring's paragraphs each made one line: rich wraps
    them to the terminal and keeps the line breaks it is given."""
    def register(func: Callable[..., int]) -> Callable[..., int]:
        paragraphs = inspect.cleandoc(func.__doc__ or "").split("\n\n")
        func.__doc__ = "\n\n".join(" ".join(p.split()) for p in paragraphs)
        return app.command(name, **kw)(func)
    return register


class SpecError(Exception):
    """An option's value that does not parse (exit status 2, as a parse error)."""


def _levels(value: Optional[str]) -> Optional[str]:
    if value is not None and value not in LOG_LEVELS:
        raise typer.BadParameter(f"invalid choice: {value!r} (choose from {', '.join(LOG_LEVELS)})")
    return value


LogLevelOpt = Annotated[Optional[str], typer.Option(
    "--log-level", metavar="LEVEL", callback=_levels,
    help="how much to log on stderr: debug, info, warning, error or critical (default: warning)")]


def _directory(path: Path, fix: str) -> None:
    """A path option's directory, checked as the option is parsed (before anything is done)."""
    if not path.is_dir():
        raise typer.BadParameter(f"{str(path)!r} is not a directory; {fix}")


def _include_dirs(dirs: Optional[list[Path]]) -> Optional[list[Path]]:
    for d in dirs or ():
        _directory(d, "give a directory that holds #include files")
    return dirs


IncludeOpt = Annotated[Optional[list[Path]], typer.Option(
    "-I", "--include", metavar="DIR", callback=_include_dirs, help="add DIR to the #include search path")]
DefineOpt = Annotated[Optional[list[str]], typer.Option(
    "-D", "--define", metavar="NAME[=VALUE]", help="preprocessor define")]
SeedOpt = Annotated[int, typer.Option("--seed", help="seed for random() and hashes")]


def _in_a_directory(path: Optional[Path]) -> Optional[Path]:
    """``--pid-file``: its directory must exist (the file is written last, once running)."""
    if path is not None:
        _directory(path.parent, "create it first or give a path in an existing directory")
    return path


PidFileOpt = Annotated[Optional[Path], typer.Option(
    "--pid-file", metavar="PATH", callback=_in_a_directory, help="write the process id here")]
TlsCertOpt = Annotated[Optional[Path], typer.Option(
    "--tls-cert", metavar="FILE", rich_help_panel=TLS_PANEL, help="the server's certificate (PEM)")]
TlsKeyOpt = Annotated[Optional[Path], typer.Option(
    "--tls-key", metavar="FILE", rich_help_panel=TLS_PANEL, help="the server's private key (PEM)")]
TlsCaOpt = Annotated[Optional[Path], typer.Option(
    "--tls-ca", metavar="FILE", rich_help_panel=TLS_PANEL,
    help="the CA certificate (PEM): only clients with a certificate it signed are served")]
InsecureOpt = Annotated[bool, typer.Option(
    "--insecure", rich_help_panel=TLS_PANEL,
    help="serve plaintext P4Runtime on an address that is not loopback (refused otherwise)")]


def _parsed(flag: str, values: Sequence[str] | None, parse: Callable[[str], Any]) -> list[Any]:
    """Each value of a repeated option parsed; SpecError naming the option."""
    out = []
    for text in values or ():
        try:
            out.append(parse(text))
        except ValueError as e:
            raise SpecError(f"argument {flag}: {e}") from None
    return out


def _within(low: int, high: int, what: str) -> Callable[[Optional[int]], Optional[int]]:
    """An int option's range check, as the option is parsed."""
    def check(value: Optional[int]) -> Optional[int]:
        if value is not None and not low <= value <= high:
            raise typer.BadParameter(f"{value}: give a {what} from {low} to {high}")
        return value
    return check


def _one(flag: str, value: str | None, parse: Callable[[str], Any]) -> Any:
    return None if value is None else _parsed(flag, [value], parse)[0]


def _start(ctx: typer.Context, log_level: str | None) -> None:
    """Logging at the command's --log-level, else the one before the command."""
    level = log_level or (ctx.obj or {}).get("log_level") or "warning"
    logging.basicConfig(level=getattr(logging, level.upper()), stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")


@app.callback(invoke_without_command=True)
def _main_options(ctx: typer.Context, log_level: LogLevelOpt = None) -> None:
    ctx.obj = {"log_level": log_level}
    if ctx.invoked_subcommand is None:
        typer.echo(ctx.get_help(), err=True)
        raise typer.Exit(2)


def _p4_args(include: list[Path] | None, define: list[str] | None, **more: Any) -> Args:
    return Args(include_dirs=list(include or ()), defines=_parsed("-D/--define", define, cli_values.define), **more)


# ---- compile, stf ------------------------------------------------------------------


@command("compile")
def compile_cmd(
    ctx: typer.Context,
    program: Annotated[Path, typer.Argument(metavar="PROGRAM.p4", help="the program")],
    p4info: Annotated[Optional[Path], typer.Option("--p4info", metavar="OUT.txtpb",
                                                   help="write the P4Info here ('-' for stdout)")] = None,
    native: Annotated[bool, typer.Option(
        "--native", help="also build the program's compiled fast path (Cython + C compiler) into the cache "
        "now, so switches running it take it from their first frame (they build it themselves in the "
        "background otherwise); the cache is $P4TARGET_CACHE or ~/.cache/p4target/native")] = False,
    include: IncludeOpt = None, define: DefineOpt = None, log_level: LogLevelOpt = None,
) -> int:
    """Check a program and write its P4Info.

    Compile PROGRAM.p4 with the embedded front-end; report the first error as FILE:LINE:COL; optionally
    write the P4Info in protobuf text format.
    """
    _start(ctx, log_level)
    compiled = compile_program(_p4_args(include, define, program=program))
    for w in getattr(compiled.model, "warnings", ()):
        print(f"{PROG}: warning: {w}", file=sys.stderr)
    if p4info is not None:
        _write_p4info(compiled, p4info)
    return _build_native(compiled) if native else 0


def _write_p4info(compiled: Any, path: Path) -> None:
    from p4target.p4info import p4info_text

    text = p4info_text(compiled.model)
    if str(path) == "-":
        sys.stdout.write(text)
        return
    try:
        path.write_text(text)
    except OSError as e:
        raise P4Error(f"cannot write P4Info: {e.strerror}", str(path)) from None


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


@command("stf")
def stf_cmd(
    ctx: typer.Context,
    program: Annotated[Path, typer.Argument(metavar="PROGRAM.p4", help="the program")],
    stf: Annotated[Path, typer.Argument(metavar="TEST.stf", help="the test (p4c's STF format)")],
    ordered: Annotated[bool, typer.Option(
        "--ordered", help="packets on one port must come out in the order expected "
        "(default: any order within a port)")] = False,
    seed: SeedOpt = 0, include: IncludeOpt = None, define: DefineOpt = None, log_level: LogLevelOpt = None,
) -> int:
    """Run a p4c STF test on a program.

    Run TEST.stf (p4c's simple test framework format) against PROGRAM.p4 in the embedded target; exit 0
    if every expectation holds, 1 otherwise.
    """
    _start(ctx, log_level)
    from p4target import Switch
    from p4target.stf import StfRunner, parse_stf_file

    cmds = parse_stf_file(stf)
    sw = Switch(compile_program(_p4_args(include, define, program=program)), seed=seed)
    runner = StfRunner(sw, str(stf), ordered=ordered)
    for c in cmds:
        runner.execute(c)
    res = runner.finish()
    for line in res.log:
        log.info("%s", line)
    out_count = sum(len(v) for v in res.received.values())
    if res.passed:
        print(f"PASS {stf}: {res.commands} commands, {res.packets_sent} packets in, {out_count} out")
        return 0
    for f in res.failures:
        print(f"{PROG}: FAIL: {f}", file=sys.stderr)
    print(f"FAIL {stf}: {len(res.failures)} failure(s)")
    return 1


# ---- run, group --------------------------------------------------------------------


def _with_limit_options(func: Callable[..., int]) -> Callable[..., int]:
    """Add the server limits' ``--grpc-max-*`` options (``limits.OPTIONS``, their one
    owner) to a command, given to it by field name as ``**limits``."""
    from p4target.p4runtime.limits import OPTIONS, ServerLimits

    defaults = ServerLimits()
    sig = inspect.signature(func, eval_str=True)  # the options' typer metadata, not their text
    params = [p for p in sig.parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]
    for flag, name, metavar, what in OPTIONS:
        option = typer.Option(flag, metavar=metavar, rich_help_panel=LIMITS_PANEL,
                              help=f"{what} (default {getattr(defaults, name)})")
        params.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=None,
                                        annotation=Annotated[Optional[str], option]))
    func.__signature__ = sig.replace(parameters=params)  # type: ignore[attr-defined]  # typer reads the signature
    return func


@command("run", epilog="Example: p4target run fabric.p4 -i 1@veth1 -i 2@veth2 --grpc-addr 127.0.0.1:9559 "
             "--cpu-port 255")
@_with_limit_options
def run_cmd(
    ctx: typer.Context,
    program: Annotated[Optional[Path], typer.Argument(metavar="PROGRAM.p4",
                                                      help="program to load at start (omit with --no-p4)")] = None,
    interface: Annotated[Optional[list[str]], typer.Option(
        "-i", "--interface", metavar="PORT@IFACE",
        help="make interface IFACE switch port PORT (repeat for each port)")] = None,
    device_id: Annotated[int, typer.Option(
        "--device-id", callback=_within(0, 2**64 - 1, "P4Runtime device id"), help="P4Runtime device id")] = 0,
    cpu_port: Annotated[Optional[int], typer.Option(
        "--cpu-port", callback=_within(0, cli_values.MAX_PORT, "port number"),
        help="port number whose output goes to the controller as packet-in")] = None,
    pcap: Annotated[Optional[Path], typer.Option(
        "--pcap", metavar="DIR", help="write IFACE_in.pcap / IFACE_out.pcap per port into DIR")] = None,
    grpc_addr: Annotated[str, typer.Option("--grpc-addr", metavar="ADDR", help="P4Runtime server address")]
    = DEFAULT_GRPC_ADDR,
    no_grpc: Annotated[bool, typer.Option("--no-grpc", help="do not start the P4Runtime server")] = False,
    cpu: Annotated[Optional[str], typer.Option(
        "--cpu", metavar="CPU", help="keep every thread of the switch (P4Runtime server and packet I/O) on one "
        "CPU: a CPU number, 'auto' (the default: CPU number device-id modulo the CPUs this process may use, "
        "so switches 1..N spread over them) or 'any' (not pinned)")] = None,
    no_p4: Annotated[bool, typer.Option(
        "--no-p4", help="start without a pipeline; wait for SetForwardingPipelineConfig")] = False,
    seed: SeedOpt = 0,
    commands: Annotated[Optional[Path], typer.Option(
        "--commands", metavar="FILE.stf", help="apply these STF control commands (add, setdefault, mc_*, "
        "mirroring_*, register_*, ...) to the pipeline at start")] = None,
    queue_rate: Annotated[Optional[list[str]], typer.Option(
        "--queue-rate", metavar="PORT=PPS", help="send at most PPS packets/s out of PORT (its egress queues "
        "fill behind it; repeat per port)")] = None,
    queue_depth: Annotated[Optional[list[str]], typer.Option(
        "--queue-depth", metavar="PORT=N", help="egress queue depth of PORT in packets (default 64; repeat "
        "per port)")] = None,
    pid_file: PidFileOpt = None,
    netns: Annotated[Optional[str], typer.Option(
        "--netns", metavar="NAME", help="open the interfaces in network namespace NAME (/run/netns/NAME)")] = None,
    no_promisc: Annotated[bool, typer.Option(
        "--no-promisc", help="do not put the interfaces in promiscuous mode")] = False,
    no_rings: Annotated[bool, typer.Option(
        "--no-rings", help="read and write frames with one system call each instead of PACKET_MMAP rings "
        "(slower; for comparison)")] = False,
    rx_ring_frames: Annotated[Optional[list[str]], typer.Option(
        "--rx-ring-frames", metavar="[PORT=]N", help="slots of each port's receive ring, or with PORT= of "
        "that port's (repeat for more ports; 64 to 65536; default 4096, fewer for jumbo MTUs): a slot holds "
        "one frame of up to the MTU (2 KB at MTU 1500, kernel memory locked while the switch runs), and the "
        "ring is what holds a burst the switch cannot take at once, so fewer slots save memory and lose the "
        "end of larger bursts")] = None,
    include: IncludeOpt = None, define: DefineOpt = None,
    tls_cert: TlsCertOpt = None, tls_key: TlsKeyOpt = None, tls_ca: TlsCaOpt = None, insecure: InsecureOpt = False,
    log_level: LogLevelOpt = None,
    **limits: str | None,
) -> int:
    """Run a switch on Linux interfaces.

    Run PROGRAM.p4 as a switch whose ports are Linux interfaces (raw sockets), with a P4Runtime server.
    Frames take the program's compiled fast path (from the cache 'p4target compile --native' fills; built
    in the background when it is not there, forwarding on the interpreted one meanwhile; P4TARGET_NATIVE=0
    keeps the interpreted one). Stops cleanly on SIGTERM or SIGINT.
    """
    _start(ctx, log_level)
    args = _p4_args(
        include, define, program=program, ports=_parsed("-i/--interface", interface, cli_values.port_spec),
        device_id=device_id, cpu_port=cpu_port, pcap=pcap, grpc_addr=grpc_addr, no_grpc=no_grpc,
        cpu=_one("--cpu", cpu, cli_values.cpu_spec), no_p4=no_p4, seed=seed, commands=commands,
        queue_rates=_parsed("--queue-rate", queue_rate, cli_values.queue_spec("rate", float)),
        queue_depths=_parsed("--queue-depth", queue_depth, cli_values.queue_spec("depth", int)),
        pid_file=pid_file, netns=netns, no_promisc=no_promisc, no_rings=no_rings,
        rx_ring_frames=_parsed("--rx-ring-frames", rx_ring_frames, cli_values.ring_frames),
        tls_cert=tls_cert, tls_key=tls_key, tls_ca=tls_ca, insecure=insecure, limits=limits)
    return run_switch(args)


@command("group")
def group_cmd(
    ctx: typer.Context,
    group_file: Annotated[Path, typer.Argument(metavar="GROUP.yaml", help="the group file (docs/target.md)")],
    grpc_addr: Annotated[Optional[str], typer.Option(
        "--grpc-addr", metavar="ADDR",
        help="serve the switches without an address of their own here, told apart by device id")] = None,
    pid_file: PidFileOpt = None,
    cpu: Annotated[Optional[str], typer.Option(
        "--cpu", metavar="CPU", help="keep every thread on one CPU: a number, 'auto' (by the first switch's "
        "device id) or 'any' (the default)")] = None,
    tls_cert: TlsCertOpt = None, tls_key: TlsKeyOpt = None, tls_ca: TlsCaOpt = None, insecure: InsecureOpt = False,
    log_level: LogLevelOpt = None,
) -> int:
    """Run many switches in one process.

    Run every switch of GROUP.yaml (YAML or JSON: each switch's name, program, device id, ports and
    P4Runtime address; docs/target.md) in this process: one forwarding thread for all, one compiled program
    per file. Stops cleanly on SIGTERM or SIGINT.
    """
    _start(ctx, log_level)
    from p4target.group.process import run_command

    cpu_value = _one("--cpu", cpu, cli_values.cpu_spec)
    tls = server_tls_of(Args(tls_cert=tls_cert, tls_key=tls_key, tls_ca=tls_ca, insecure=insecure))
    return run_command(group_file, grpc_addr, pid_file, cpu_value, tls=tls, insecure=insecure)


# ---- errors, entry point -----------------------------------------------------------


def format_error(e: P4Error) -> str:
    text = str(e)
    if ": error: " not in text and not text.startswith("error:"):
        text = f"error: {text}"
    return f"{PROG}: {text}"


def _usage(command: Any, ctx: Any) -> str:
    pieces = " ".join(command.collect_usage_pieces(ctx))
    return f"usage: {ctx.command_path} {pieces}"


def _usage_error(group: Any, argv: list[str], message: str) -> None:
    """The command's usage line and ``p4target COMMAND: error: MESSAGE`` on stderr."""
    name = next((a for a in argv if a in group.commands), None)
    with group.make_context(PROG, [], resilient_parsing=True) as gctx:
        if name is None:
            print(_usage(group, gctx), file=sys.stderr)
            print(f"{PROG}: error: {message}", file=sys.stderr)
            return
        sub = group.commands[name]
        with sub.make_context(name, [], parent=gctx, resilient_parsing=True) as sctx:
            print(_usage(sub, sctx), file=sys.stderr)
    print(f"{PROG} {name}: error: {message}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    """Console-script entry point: returns the exit status (``--help`` and parse
    errors exit at once, with status 0 and 2)."""
    args = list(sys.argv[1:] if argv is None else argv)
    group = typer.main.get_command(app)
    try:
        code = group.main(args=args, prog_name=PROG, standalone_mode=False)
    except SpecError as e:
        _usage_error(group, args, str(e))
        raise SystemExit(2) from None
    except typer.TyperException as e:  # the parser's own: a missing or unknown option, a bad choice
        _usage_error(group, args, e.format_message() if hasattr(e, "format_message") else str(e))
        raise SystemExit(getattr(e, "exit_code", 2)) from None
    except UsageError as e:
        _usage_error(group, args, str(e))
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
    if code == 0 and any(a in ("-h", "--help") for a in args):  # the help was shown: exit as it does
        raise SystemExit(0)
    return int(code or 0)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
