"""`make run`: start the fabric in Mininet, install every table, run the demo, report.

With no arguments this is the default fabric (4 planes x (2 leaves + 2 spines), 2 hosts
per leaf: 16 fabric switches, 4 NICs, 4 hosts). It starts the network
(topologies/fabric_net.py), has the controller install every table (progress shown),
then runs the demo (topologies/demo.py): IPv6 ping between every pair of hosts, one
MRC flow over all planes with a spine link cut half-way, the same bytes over one
RoCE queue pair whose path crosses that link, cut at the same points, and prints a
summary. While the network runs, its live view (`mrcctl web`, topologies/web_process.py)
serves the page and /metrics on the loopback; its URL is printed. On a terminal it then
opens the Mininet CLI with the project's commands (topologies/cli.py);
without one it exits: 0 when everything worked, 1 otherwise. The network is always
stopped and removed at the end.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import sys
import time
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from controller.targets import DEFAULT_GRPC_BASE
from cli_common.options import (
    EvsPerNicOpt,
    HostsPerLeafOpt,
    LeavesOpt,
    NodePrefixOpt,
    PlanesOpt,
    RunDirOpt,
    SpinesOpt,
    TargetOpt,
    TopologyOpt,
)
from fabric.names import DEFAULT_PREFIX, check_prefix
from fabric.resolve import Shape, resolve
from fabric.topology import Topology, TopologyError
from cli_common.command import new_app, run_command

if TYPE_CHECKING:
    from topologies.fabric_net import FabricNetwork


FIXED_PORTS_MAX = 64  # more switches take free ports: hundreds of fixed ones meet the kernel's ephemeral ports
PROG = "python -m topologies.run"

app = new_app()


@dataclass
class RunArgs:
    """What the command line asked for (see ``cli`` for each option's meaning)."""

    topology: Path | None = None
    planes: int | None = None
    spines: int | None = None
    leaves: int | None = None
    hosts_per_leaf: int | None = None
    evs_per_nic: int | None = None
    target: str = "auto"
    switches_per_process: str | int = "cpu"
    prefix: str = DEFAULT_PREFIX
    grpc_base: int | None = None
    run_dir: Path | None = None
    nbytes: int = 2_000_000
    no_demo: bool = False
    no_cli: bool = False
    cli_script: Path | None = None
    verbose: bool = False
    servers: str | None = None
    placement: str | None = None
    insecure: bool = False
    no_web: bool = False


@app.command(help="Start the MRC fabric in Mininet (P4 switches and NICs), install its tables with the controller, "
                  "ping every host pair, run one MRC flow over all planes with a spine link cut, print a summary; "
                  "then the Mininet CLI on a terminal. Exit status 0 when everything worked, 1 otherwise, 2 for a "
                  "command-line mistake.")
def cli(
    topology: TopologyOpt = None,
    planes: PlanesOpt = None,
    spines: SpinesOpt = None,
    leaves: LeavesOpt = None,
    hosts_per_leaf: HostsPerLeafOpt = None,
    evs_per_nic: EvsPerNicOpt = None,
    target: TargetOpt = "auto",
    switches_per_process: Annotated[str, typer.Option(
        "--switches-per-process", metavar="N|cpu|plane",
        help="embedded target: put N switches in each p4target process; 'cpu' (the default): the fabric in one "
             "process per CPU but one, the NICs in one; 'plane': one process per plane and one for the NICs; "
             "1: one process per switch")] = "cpu",
    prefix: NodePrefixOpt = DEFAULT_PREFIX,
    grpc_base: Annotated[Optional[int], typer.Option(
        "--grpc-base", help=f"switch k serves P4Runtime on 127.0.0.1:BASE+k (default {DEFAULT_GRPC_BASE}, or 0 for "
                            f"a fabric of more than {FIXED_PORTS_MAX} switches; 0: any free port)")] = None,
    run_dir: RunDirOpt = None,
    nbytes: Annotated[int, typer.Option(
        "--bytes", help="bytes of the demo's MRC-lite transfer (default 2,000,000: 2,000 packets at 1,000/s)")]
    = 2_000_000,
    no_demo: Annotated[bool, typer.Option("--no-demo", help="start and program the network only")] = False,
    no_cli: Annotated[bool, typer.Option("--no-cli", help="never open the Mininet CLI, even on a terminal")] = False,
    cli_script: Annotated[Optional[Path], typer.Option(
        "--cli-script", metavar="FILE",
        help="run the Mininet CLI commands of FILE (one a line, as the CLI's `source`), then stop")] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="log what the network and controller do")] = False,
    servers: Annotated[Optional[str], typer.Option(
        "--servers", metavar="A,B,C",
        help="run the fabric's switches on these servers ([USER@]HOST each, reached by ssh as root; localhost: "
             "this machine); the hosts and NICs stay here unless --placement FILE moves them (docs/cluster.md). "
             "Default: the topology file's servers, else all here")] = None,
    placement: Annotated[Optional[str], typer.Option(
        "--placement", metavar="plane|round-robin|FILE",
        help="with --servers: 'plane' (the default: whole planes per server), 'round-robin' (switch by switch) "
             "or a YAML file mapping switches, planes or hosts (with their NICs) to servers")] = None,
    insecure: Annotated[bool, typer.Option(
        "--insecure", help="with --servers: the remote switches serve plaintext P4Runtime instead of mutual TLS "
                           "with certificates made for the run (only on a network you trust)")] = False,
    no_web: Annotated[bool, typer.Option("--no-web", help="do not start the live view (mrcctl web, docs/web.md)")]
    = False,
) -> int:
    return start(RunArgs(topology, planes, spines, leaves, hosts_per_leaf, evs_per_nic, target, switches_per_process,
                         prefix, grpc_base, run_dir, nbytes, no_demo, no_cli, cli_script, verbose, servers,
                         placement, insecure, no_web))


def parse_args(argv: list[str]) -> RunArgs:
    """The options ``argv`` gives, without running anything (typer's own parsing)."""
    ctx = typer.main.get_command(app).make_context(PROG, list(argv))
    return RunArgs(**ctx.params)


def load_topology(args: RunArgs) -> Topology:
    shape = Shape(planes=args.planes, spines=args.spines, leaves=args.leaves, hosts_per_leaf=args.hosts_per_leaf,
                  evs_per_nic=args.evs_per_nic)
    return resolve(args.topology, shape).topology


def _say(text: str) -> None:
    print(text, flush=True)


def run(args: RunArgs, topo: Topology) -> int:
    from fabric.plan import v1model_port_problem
    from topologies.fabric_net import fabric_network, install_tables, wanted_entries
    from topologies.web_process import web_view

    problem = v1model_port_problem(topo)
    if problem:
        raise TopologyError(problem)
    t0 = time.monotonic()
    _say(f"network: {topo.summary()}")
    cluster = None
    servers = args.servers or ",".join(topo.servers)
    if servers:
        from topologies.cluster import plan_cluster

        if args.target == "auto":  # BMv2 on the servers only when asked for: it must be at the same path there
            args.target = "embedded"
        cluster = plan_cluster(topo, servers, args.placement or topo.placement or "plane", tls=not args.insecure)
        _say(f"network: cluster: {cluster.summary()}")
    if args.grpc_base is None:
        from fabric.entries import nodes

        args.grpc_base = DEFAULT_GRPC_BASE if len(nodes(topo)) <= FIXED_PORTS_MAX else 0
    with fabric_network(topo, prefix=args.prefix, target=args.target, grpc_base=args.grpc_base,
                        run_dir=args.run_dir, switches_per_process=args.switches_per_process,
                        cluster=cluster) as fn, (nullcontext() if args.no_web else web_view(fn.state_path, _say)):
        sws = fn.p4_switches()
        _say(f"network: {len(sws)} P4 switches ({sws[0].target} target) and {len(topo.hosts)} hosts up, "
             f"every switch answers P4Runtime after {fn.switches_ready:.1f} s; state file {fn.state_path}")
        total = sum(len(es) for es in wanted_entries(fn).values())
        done, shown = [0], [0]

        def progress(switch: str, n: int) -> None:
            """At most about 20 lines: one each time another 5% is written."""
            done[0] += n
            if done[0] * 20 // max(total, 1) > shown[0] or done[0] == total:
                shown[0] = done[0] * 20 // max(total, 1)
                _say(f"install: {done[0]:>7}/{total} entries written ({100 * done[0] // max(total, 1)}%, "
                     f"last: {switch})")

        report = install_tables(fn, progress)
        ready = time.monotonic() - t0
        _say(f"install: {report.summary()}")
        if report.failed:
            for r in report.failed:
                _say(f"error: {r.error}")
            return 1
        _say(f"ready: every table installed {ready:.1f} s after the start")
        if args.no_demo:
            ok = True
            lines: list[str] = []
        else:
            ok, lines = _demo(fn, args)
        fn.check_switches()
        _say("")
        _say("summary:")
        _say(f"  hosts {len(topo.hosts)}, switches {len(topo.leaves) * topo.planes} leaves + "
             f"{topo.spines * topo.planes} spines + {len(topo.hosts)} NICs, "
             f"entries installed {report.entries}, seconds to ready {ready:.1f}")
        for line in lines:
            _say("  " + line)
        _say(f"  result: {'OK' if ok else 'FAILED'}")
        if args.cli_script is not None:
            from topologies.cli import FabricCLI

            FabricCLI(fn, script=str(args.cli_script))
        elif not args.no_cli and sys.stdin.isatty() and sys.stdout.isatty():
            from topologies.cli import FabricCLI

            last = topo.hosts[-1].name
            _say(f"Mininet CLI with the project's commands: paths h1 {last}, links, fail LINK, restore LINK, "
                 "counters [SWITCH], watch [SECONDS], pingmatrix, mrcctl ARGS; `help`; `exit` stops the network")
            FabricCLI(fn)
        return 0 if ok else 1


def _demo(fn: FabricNetwork, args: RunArgs) -> tuple[bool, list[str]]:
    """Ping matrix, then the MRC flow with a cut; (everything as expected, summary lines)."""
    from topologies import demo

    topo = fn.topo
    _say("demo: ping -6 between every pair of hosts")
    matrix = demo.ping_matrix(fn)
    pings_ok = all(r.ok for r in matrix.values())
    lines = ["ping matrix (replies/sent):"] + ["  " + row for row in demo.format_matrix(matrix)]
    lines += [f"  failed: {p.summary()}" for p in matrix.values() if not p.ok]
    src = topo.hosts[0]
    others = [h for h in topo.hosts if h.leaf != src.leaf] or [h for h in topo.hosts if h != src]
    if not others:
        return pings_ok, lines + ["MRC flow: skipped (one host only)"]
    dst = others[0]
    cut = demo.spine_link(fn, src.name, dst.name)
    _say(f"demo: MRC-lite transfer {src.name} -> {dst.name}, {args.nbytes:,} bytes over every EV"
         + (f", cutting {cut} half-way" if cut else ""))
    from topologies import path_counts

    spines_before = path_counts.read_spines(topo, fn.inventory)
    flow = demo.run_flow(fn, src.name, dst.name, nbytes=args.nbytes, cut=cut, say=_say)
    per_path = path_counts.path_packets(topo, spines_before, path_counts.read_spines(topo, fn.inventory), src.leaf)
    if cut:
        from controller.cable_cuts import set_link

        asyncio.run(set_link(topo, fn.inventory, cut, down=False))
    lines += demo.format_flow(flow, topo.planes, f"{src.name} -> {dst.name}: {path_counts.summary(per_path)}",
                              path_counts.per_plane(per_path))
    if not cut:
        return pings_ok and demo.flow_ok(flow, topo.planes), lines
    _say(f"demo: RoCE baseline {src.name} -> {dst.name}, the same bytes on one QP whose path crosses {cut}, "
         "the same cut")
    roce = demo.run_roce(fn, src.name, dst.name, cut, nbytes=args.nbytes, say=_say)
    lines += demo.format_roce(roce, flow)
    return pings_ok and demo.flow_ok(flow, topo.planes) and (roce is None or demo.roce_ok(roce)), lines


def _usage(text: str) -> int:
    print(f"error: {text} (see {PROG} --help)", file=sys.stderr)
    return 2


def start(args: RunArgs) -> int:
    """Check the options, then run the network; the exit status."""
    # first: Mininet's log module makes the "mininet" logger of its own class, which
    # must exist before anything below asks for that logger
    from topologies.switch_group import parse_placement

    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    # Mininet prints its own messages (CLI output, `pingall` results) through its own
    # handler; passed on to the root handler too, each would be printed a second time.
    logging.getLogger("mininet").propagate = False
    if args.nbytes < 1:
        return _usage("--bytes must be at least 1")
    if (args.placement is not None or args.insecure) and not args.servers:
        return _usage("--placement and --insecure are about switches on servers: give --servers a,b,c too")
    if args.cli_script is not None and not args.cli_script.is_file():
        return _usage(f"--cli-script {args.cli_script}: no such file")
    try:
        args.switches_per_process = parse_placement(str(args.switches_per_process))
    except ValueError as exc:
        return _usage(f"--switches-per-process {exc}")
    try:
        check_prefix(args.prefix)
        topo = load_topology(args)
    except TopologyError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if os.geteuid() != 0:
        print("error: Mininet needs root (network namespaces and veths); run `make run` as root", file=sys.stderr)
        return 1
    try:
        import mininet.net  # noqa: F401
    except ImportError:
        print("error: Mininet is not importable; run `make deps` (Debian's mininet package and .venv made "
              "with --system-site-packages)", file=sys.stderr)
        return 1
    try:
        return run(args, topo)
    except KeyboardInterrupt:
        print("interrupted: the network is stopped", file=sys.stderr)
        return 130
    except Exception as exc:  # one clear line (switch errors quote their log below it)
        print(f"error: {_disk_full(exc, args) or exc}", file=sys.stderr)
        return 1


def _disk_full(exc: Exception, args: RunArgs) -> str | None:
    """The line for a run directory that cannot be written (full, read-only), or None."""
    if not (isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EROFS, errno.EDQUOT)):
        return None
    from controller.network_state import run_dir

    where = args.run_dir or run_dir()  # what the network writes there: logs, pid files, its state files
    return f"cannot write in the run directory {where} ({exc.strerror}); free space there, or give another --run-dir"


def main(argv: list[str] | None = None) -> int:
    return run_command(app, argv, prog=PROG)


if __name__ == "__main__":
    sys.exit(main())
