"""What every experiment does: start a programmed fabric, run transfers in its hosts,
read counters, write the results.

Why one module: the experiments differ in what they break or measure, not in how a
transfer is run or how a run ends. A transfer is ``mrc-recv`` in one Mininet host and
``mrc-send`` in another (docs/endpoints.md), each writing its JSON report;
``topologies.transfer.Transfer`` (shared with the `make run` demo) starts them without
waiting, so an experiment can cut a link or read counters while the data flows.
``main`` is every experiment's command line after its own options are parsed: the
fabric of its shape started on the chosen target (``--target``), programmed, the run
in a temporary directory, the figures printed, the raw numbers (JSON) and the plot
(PNG) written under ``results/``, and the exit status its acceptance gives.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import secrets
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from controller.counters import Counts, read_all
from cli_common.options import Target, VerboseOpt, finite
from fabric.resolve import Shape, resolve
from fabric.topology import Topology, TopologyError
from cli_common.command import new_app
from topologies.transfer import Transfer, TransferResult, run_transfer

# the experiments' transfers live in topologies/transfer.py; --verbose is every command's
__all__ = ["Transfer", "TransferResult", "VerboseOpt", "run_transfer"]

log = logging.getLogger(__name__)

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "results"
# The experiments' fabric: 4 planes x (2 leaves + 2 spines), 2 hosts per leaf (h1, h2
# on leaf 0; h3, h4 on leaf 1): 8 paths between hosts of different leaves.
SHAPE = dict(planes=4, spines=2, leaves=2, hosts_per_leaf=2)


# BMv2's fabric, unless an experiment gives its own: 2 planes x (2 leaves + 2 spines),
# 2 hosts per leaf, 12 switches (BMv2 forwards a few thousand packets/s per switch).
BMV2_SHAPE = {"planes": 2}


def topology(**overrides: Any) -> Topology:
    return resolve(shape=Shape(**{**SHAPE, **overrides})).topology


def shape_text(overrides: Mapping[str, int]) -> str:
    """``SHAPE`` with ``overrides``, in words: 2 planes x (2 leaves + 2 spines), 2 hosts per leaf."""
    s = {**SHAPE, **overrides}
    return (f"{s['planes']} plane{'s' * (s['planes'] != 1)} x ({s['leaves']} leaves + {s['spines']} spines), "
            f"{s['hosts_per_leaf']} hosts per leaf")


def _shown(value: Any) -> str:
    if value is None:  # a timer left to the transport
        return "the transport's"
    if isinstance(value, (tuple, list)):
        return ", ".join(map(_shown, value))
    return f"{value:g}" if isinstance(value, float) else str(value)


@dataclass(frozen=True)
class Defaults:
    """One experiment's defaults on each target, said in one place: ``embedded`` and
    ``bmv2`` map the keyword arguments of its ``run`` that its options set to their
    defaults; ``shape`` and ``bmv2_shape`` are its fabric's (overrides of ``SHAPE``).

    Why per target: BMv2 forwards a few thousand packets/s per switch and drops what it
    cannot take, so the embedded target's sizes overload it. The BMv2 defaults are what
    tests/experiments/test_bmv2_experiments.py runs each experiment at (it reads them
    from here), so `make experiments TARGET=bmv2` runs what that test checks. An option
    given on the command line wins on either target.
    """

    embedded: Mapping[str, Any]
    bmv2: Mapping[str, Any]
    shape: Mapping[str, int] = field(default_factory=dict)
    bmv2_shape: Mapping[str, int] = field(default_factory=lambda: dict(BMV2_SHAPE))

    def __post_init__(self) -> None:
        if set(self.embedded) != set(self.bmv2):
            raise ValueError(f"the defaults of both targets name the same options: {sorted(self.embedded)} "
                             f"against {sorted(self.bmv2)}")

    def sizes(self, target: str, given: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """``run``'s keyword arguments on ``target`` (``embedded`` or ``bmv2``): its
        defaults there, with the options ``given`` (those not None) over them."""
        base = self.bmv2 if target == "bmv2" else self.embedded
        return {**base, **{k: v for k, v in (given or {}).items() if v is not None}}

    def fabric_shape(self, target: str) -> dict[str, int]:
        return dict(self.bmv2_shape if target == "bmv2" else self.shape)

    def help(self, key: str, text: str) -> str:
        """An option's help: ``text``, its default, and its default on bmv2 where that differs."""
        a, b = self.embedded[key], self.bmv2[key]
        return f"{text} (default {_shown(a)}" + ("" if a == b else f"; on bmv2 {_shown(b)}") + ")"

    def epilog(self) -> str:
        """What --help says at its end about the defaults on BMv2."""
        on, off = shape_text(self.bmv2_shape), shape_text(self.shape)
        fabric = f"the fabric {on}" + (" as on the embedded target" if on == off else f" (embedded: {off})")
        return (f"On BMv2 (--target bmv2, or auto when BMv2 is on the PATH) the defaults are BMv2's, sized for "
                f"what it forwards: {fabric}, and the 'on bmv2' values above; an option given wins on either "
                "target.")


def target_of(target: str) -> str:
    """The target a run on ``target`` gets: ``auto`` resolved as the network resolves
    it (``choose_target``), ``embedded`` and ``bmv2`` as they are (a BMv2 not there is
    said later)."""
    if target != "auto":
        return target
    from topologies.p4switch import choose_target

    return choose_target("auto")


def private_prefix() -> str:
    """A node-name prefix of its own, so a network of another run is never touched."""
    return "mrcx" + secrets.token_hex(1)[:2]


@contextmanager
def programmed_fabric(topo: Topology, prefix: str | None = None, run_dir: Path | None = None,
                      target: str = "embedded") -> Iterator[Any]:
    """The fabric in Mininet (free gRPC ports) on ``target``, every table installed;
    always stopped and removed (run directory: a temporary one unless given)."""
    from topologies.fabric_net import programmed_network

    with tempfile.TemporaryDirectory(prefix="mrc-exp-") as tmp:
        with programmed_network(topo, prefix=prefix or private_prefix(), run_dir=run_dir or Path(tmp),
                                target=target) as fn:
            yield fn


def read_counters(fn: Any, names: Sequence[str] | None = None) -> dict[str, Counts]:
    """Every counter of every switch (or of ``names``), over P4Runtime."""
    names = list(names) if names is not None else list(fn.inventory.switches)
    return asyncio.run(read_all([fn.inventory.switches[n] for n in names]))


MAX_QDEPTH = "FabricEgress.max_qdepth"  # fabric.p4: per port, the deepest queue a packet found


async def _queue_depths(fn: Any, port: int, names: Sequence[str], reset: bool) -> dict[str, int]:
    from controller.codec import codec
    from controller.p4rt import Session

    out = {}
    for n in names:
        t = fn.inventory.switches[n]
        if t.target == "bmv2":  # its P4Runtime server has no register reads or writes: Thrift
            from topologies.bmv2_queues import read_register, write_register

            thrift, where = fn.switch(n).thrift_port, f"switch {n}"
            if reset:
                write_register(thrift, MAX_QDEPTH, port, 0, where)
            out[n] = read_register(thrift, MAX_QDEPTH, port, where)
            continue
        async with Session(t, primary=reset) as s:
            if reset:
                await s.write_register(codec(t.program, t.target), MAX_QDEPTH, port, 0)
            out[n] = (await s.read_register(codec(t.program, t.target), MAX_QDEPTH))[port]
    return out


def max_queue_depths(fn: Any, names: Sequence[str], port: int) -> dict[str, int]:
    """The deepest queue (packets) any packet found at ``port`` of each switch since its
    last reset, read over P4Runtime (fabric.p4's ``max_qdepth`` register)."""
    return asyncio.run(_queue_depths(fn, port, names, reset=False))


def reset_queue_depths(fn: Any, names: Sequence[str], port: int) -> None:
    """Set ``max_qdepth[port]`` of each switch to 0 over P4Runtime (read back: 0 or a
    packet's depth since)."""
    asyncio.run(_queue_depths(fn, port, names, reset=True))


# ---- figures ---------------------------------------------------------------------------


def mbps(bps: float | None) -> float:
    return round((bps or 0.0) / 1e6, 3)


def spread(values: Sequence[float]) -> float:
    """Largest relative distance from the mean (0.1: every value within 10%)."""
    if not values:
        return 0.0
    mean = sum(values) / len(values)
    return max(abs(v - mean) for v in values) / mean if mean else float("inf")


def write_results(name: str, data: dict[str, Any], figure: Any, out_dir: Path = RESULTS) -> tuple[Path, Path]:
    """``results/<name>.json`` (raw numbers) and ``results/<name>.png`` (the plot)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    js, png = out_dir / f"{name}.json", out_dir / f"{name}.png"
    js.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    figure.savefig(png, dpi=110, bbox_inches="tight")
    return js, png


def pyplot() -> Any:
    """matplotlib's pyplot on the Agg backend (no display in a Mininet run)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


# ---- the command line every experiment shares ----------------------------------------

TARGET_ENV = "MRC_P4_TARGET"  # the default of --target (make experiments TARGET=bmv2 passes --target)

def bytes_option(defaults: Defaults, what: str) -> Any:
    """The ``--bytes`` option of an experiment: its per-target default in the help."""
    return typer.Option("--bytes", min=1, help=defaults.help("nbytes", what))


def rate_option(defaults: Defaults) -> Any:
    """The ``--rate`` option of an experiment whose senders are paced."""
    return typer.Option("--rate", min=1, callback=finite, help=defaults.help("rate", "sender pacing, packets/s"))


def timer_args(nack_delay: float | None, rto_min: float | None) -> tuple[list[str], list[str]]:
    """The sender's and the receiver's arguments for the transport's timers:
    ``--rto-min`` and ``--nack-delay`` where given, nothing where None (the transport's
    own defaults, docs/transport.md)."""
    return ([] if rto_min is None else ["--rto-min", f"{rto_min:g}"],
            [] if nack_delay is None else ["--nack-delay", f"{nack_delay:g}"])


def timer_text(seconds: float | None) -> str:
    """A timer in a figure: ``100 ms``, or the transport's default when None."""
    return "the transport's default" if seconds is None else f"{seconds * 1000:g} ms"


def nack_delay_option(defaults: Defaults) -> Any:
    """The ``--nack-delay`` option (seconds a receiver's hole waits before its NACK) of
    an experiment whose defaults name ``nack_delay`` (None: the transport's)."""
    return typer.Option("--nack-delay", min=0, callback=finite, help=defaults.help(
        "nack_delay", "seconds a hole stays open before the receiver NACKs it"))


def rto_min_option(defaults: Defaults) -> Any:
    """The ``--rto-min`` option (the sender's retransmission timeout floor) of an
    experiment whose defaults name ``rto_min`` (None: the transport's)."""
    return typer.Option("--rto-min", min=0, callback=finite, help=defaults.help(
        "rto_min", "the sender's minimum retransmission timeout, seconds"))


OutDirOpt = Annotated[Path, typer.Option("--out-dir", help="where the JSON and PNG go (default results/)")]
PrefixOpt = Annotated[Optional[str], typer.Option(
    "--prefix", help="Mininet node-name prefix (default: a random mrcx..)")]
TargetOpt = Annotated[Target, typer.Option(
    "--target", envvar=TARGET_ENV, help="switch target: embedded, bmv2 (simple_switch_grpc and p4c-bm2-ss on the "
    "PATH), or auto (BMv2 when it is there); default $MRC_P4_TARGET, else embedded")]


@dataclass(frozen=True)
class Options:
    """The options every experiment takes (``OutDirOpt``, ``PrefixOpt``, ``TargetOpt``, ``VerboseOpt``)."""

    out_dir: Path = RESULTS
    prefix: str | None = None
    target: str = "embedded"
    verbose: bool = False


@dataclass(frozen=True)
class Experiment:
    """What tells one experiment's run from another's: its name (``results/<name>.*``),
    how its figures are printed and plotted, when its outcome is acceptable (the exit
    status), and its defaults on each target (the fabric's shape included)."""

    name: str
    figures: Callable[[dict[str, Any]], list[str]]
    plot: Callable[[dict[str, Any]], Any]
    acceptable: Callable[[dict[str, Any]], bool]
    defaults: Defaults


CLUSTER_HELP = ("On several servers: --servers A,B,C [--placement plane|round-robin|FILE], as `make run` "
                "takes them ($MRC_SERVERS, $MRC_PLACEMENT; docs/cluster.md).")


def app(help: str) -> typer.Typer:
    """One experiment's command line: one command, ``-h``/``--help``."""
    return new_app(help)


def cluster_options(argv: Sequence[str]) -> list[str]:
    """``argv`` without ``--servers`` and ``--placement``, whose values go to the
    environment the fabric's start reads (topologies/fabric_net.py ``programmed_network``)."""
    from topologies.fabric_net import PLACEMENT_ENV, SERVERS_ENV

    names = {"--servers": SERVERS_ENV, "--placement": PLACEMENT_ENV}
    rest: list[str] = []
    args = iter(argv)
    for arg in args:
        name, eq, value = arg.partition("=")
        if name not in names:
            rest.append(arg)
            continue
        value = value if eq else next(args, "")
        if not value:
            raise ValueError(f"{name} needs a value: {name} {'A,B,C' if name == '--servers' else 'plane'}")
        os.environ[names[name]] = value
    return rest


def command(cli: typer.Typer, module: str, argv: Sequence[str] | None, defaults: Defaults | None = None) -> int:
    """Run an experiment's command line with the project's error convention (and the
    cluster's options, ``cluster_options``); ``defaults``' BMv2 sizes said at the end
    of --help."""
    from cli_common.command import run_command

    try:
        rest = cluster_options(sys.argv[1:] if argv is None else argv)
    except ValueError as exc:
        print(f"error: {exc} (see python -m {module} --help)", file=sys.stderr)
        return 2
    for info in cli.registered_commands:  # said at the end of --help
        info.epilog = info.epilog or "\n\n".join([*([defaults.epilog()] if defaults else []), CLUSTER_HELP])
    return run_command(cli, rest, prog=f"python -m {module}")


def main(exp: Experiment, opts: Options, run: Callable[..., dict[str, Any]],
         given: Mapping[str, Any] | None = None) -> int:
    """Start ``exp``'s fabric on ``opts.target`` (its shape there), ``run(fabric,
    workdir, **sizes)`` in a temporary directory (``sizes``: ``exp``'s defaults on the
    target with the options ``given``, those not None, over them), print the figures,
    write results JSON + PNG; 0 when acceptable, 1 when not or when the run failed (one
    ``error:`` line), 2 for a bad option."""
    logging.basicConfig(level=logging.INFO if opts.verbose else logging.WARNING, format="%(name)s: %(message)s")
    if os.geteuid() != 0:
        print("error: the experiments run a Mininet network: run them as root", file=sys.stderr)
        return 2
    from topologies.p4switch import choose_target

    try:
        target = choose_target(opts.target)  # BMv2 asked for and not on the PATH: said before anything starts
    except ValueError as exc:
        print(f"error: --target: {exc}", file=sys.stderr)
        return 2
    sizes = exp.defaults.sizes(target, given)
    try:
        topo = topology(**exp.defaults.fabric_shape(target))
        with tempfile.TemporaryDirectory(prefix=f"mrc-{exp.name}-") as tmp, \
                programmed_fabric(topo, opts.prefix, target=target) as fn:
            data = run(fn, Path(tmp), **sizes)
    except (RuntimeError, TopologyError, OSError) as exc:  # a switch that would not start, an install refused
        print(f"error: experiments.{exp.name} on the {target} target: {exc}", file=sys.stderr)
        return 1
    data["target"] = target
    print("\n".join(exp.figures(data)))
    js, png = write_results(exp.name, data, exp.plot(data), opts.out_dir)
    print(f"results: {js}, {png}")
    return 0 if exp.acceptable(data) else 1


