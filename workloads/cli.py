"""``mrc-workload``: a collective or a traffic matrix run as a job on the Mininet
fabric, with per-iteration, per-step and per-flow figures (docs/workloads.md).

It starts the fabric (the shape options or ``--topology``, on ``--target``), one
workload agent per host (workloads/agent.py), runs ``--iterations`` of the job on
``--transport``, optionally with a cable cut part-way (``--cut``), a degraded link
(``--queue-rate``) or background flows, and prints the figures (``--json``: the raw
numbers), writing them to ``--out`` and a plot to ``--plot``.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from cli_common.options import HostsPerLeafOpt, LeavesOpt, PlanesOpt, SpinesOpt, Target, TopologyOpt, finite
from cli_common.command import new_app, run_command
from fabric.resolve import Shape, resolve
from fabric.topology import Topology, TopologyError
from workloads import htsim
from workloads.collectives import COLLECTIVES, collective, ring_order
from workloads.figures import report
from workloads.runner import Cut, JobSpec
from workloads.schedule import Schedule, ScheduleError
from workloads.transports import TRANSPORTS, transport

app = new_app(__doc__.split("\n\n")[0])


class Usage(ValueError):
    """A usage mistake: one line, exit status 2."""


def hosts_in_ring(topo: Topology, given: str | None, n: int | None) -> list[str]:
    """The job's hosts in rank order: ``given`` (comma-separated, in that order) or
    the topology's hosts, one leaf after the other in turn (``ring_order``); the first
    ``n`` when the job needs fewer."""
    names = [h.name for h in topo.hosts]
    if given:
        out = [x.strip() for x in given.split(",") if x.strip()]
        bad = [x for x in out if x not in names]
        if bad or len(set(out)) != len(out) or len(out) < 2:
            raise Usage(f"--hosts {given}: give 2 or more different hosts of the fabric ({', '.join(names[:8])}...)")
    else:
        by_leaf: dict[int, list[str]] = {}
        for h in topo.hosts:
            by_leaf.setdefault(h.leaf, []).append(h.name)
        out = ring_order([by_leaf[k] for k in sorted(by_leaf)])
    if n is not None:
        if n > len(out):
            raise Usage(f"the job has {n} nodes but {len(out)} hosts are given; give a larger fabric "
                        "(--hosts-per-leaf, --leaves) or --hosts")
        out = out[:n]
    return out


def job(coll: str | None, matrix: Path | None, size: int, topo: Topology, hosts: str | None,
        nhosts: int | None) -> tuple[Schedule, list[str]]:
    if (coll is None) == (matrix is None):
        raise Usage(f"give the job as --collective ({'|'.join(COLLECTIVES)}) or --matrix FILE (one of them)")
    if matrix is not None:
        try:
            s = htsim.read(matrix)
        except htsim.HtsimError as exc:
            raise Usage(str(exc)) from None
        return s, hosts_in_ring(topo, hosts, s.nodes)
    assert coll is not None
    ranks = hosts_in_ring(topo, hosts, nhosts)
    try:
        return collective(coll, len(ranks), size), ranks
    except ScheduleError as exc:
        raise Usage(f"--collective {coll}: {exc}") from None


def pairs(text: str | None, topo: Topology) -> tuple[tuple[str, str], ...]:
    if not text:
        return ()
    names = {h.name for h in topo.hosts}
    out = []
    for part in text.split(","):
        a, _, b = part.strip().partition(":")
        if a not in names or b not in names or a == b:
            raise Usage(f"--background {part!r}: give SRC:DST pairs of two hosts of the fabric, e.g. h1:h3")
        out.append((a, b))
    return tuple(out)


@dataclass
class Fabric:
    topo: Topology
    target: str
    prefix: str | None
    switches_per_process: str | int


def run(spec: JobSpec, fab: Fabric, queue_rate: tuple[str, float] | None, capacity: float | None,
        quiet: bool) -> dict[str, Any]:
    """Start the fabric, run the job, stop the fabric; the report."""
    from topologies.fabric_net import programmed_network
    from workloads import degrade
    from workloads.calibrate import capacity_bps
    from workloads.progress import bar
    from workloads.runner import run_job

    with tempfile.TemporaryDirectory(prefix="mrc-workload-") as tmp, \
            programmed_network(fab.topo, prefix=fab.prefix or _prefix(), run_dir=Path(tmp) / "run",
                               target=fab.target, switches_per_process=fab.switches_per_process) as fn:
        if queue_rate is not None:
            degrade.limit(fn, *queue_rate)
        cap = capacity if capacity is not None else capacity_bps(fn, spec, Path(tmp) / "calibrate")
        with bar(quiet) as progress:
            raw = run_job(fn, spec, Path(tmp) / "job", progress)
    rep = report(raw, cap)
    rep.update(target=fab.target, queue_rate=None if queue_rate is None else list(queue_rate), raw=raw)
    return rep


def _prefix() -> str:
    """A node-name prefix of its own, so that no other run's network is touched."""
    import secrets

    return "mrcw" + secrets.token_hex(1)


def _queue_rate(text: str | None) -> tuple[str, float] | None:
    if not text:
        return None
    link, eq, rate = text.partition("=")
    try:
        pps = float(rate)
    except ValueError:
        pps = 0.0
    if not eq or not 0 < pps < float("inf"):
        raise Usage(f"--queue-rate {text}: give LINK=PACKETS_PER_SECOND, e.g. p0-leaf0:p0-spine0=300")
    return link, pps


def _topology(topology: Path | None, shape: Shape) -> Topology:
    try:
        return resolve(topology, shape).topology
    except TopologyError as exc:
        raise Usage(str(exc)) from None


def _cut(topo: Topology, link: str | None, at: float, down_for: float | None) -> Cut | None:
    if link is None:
        return None
    from fabric.paths import find_link

    try:
        find_link(topo, link)
    except TopologyError as exc:
        raise Usage(f"--cut {exc}") from None
    return Cut(link, at, down_for)


def _check_links(topo: Topology, queue_rate: tuple[str, float] | None) -> None:
    if queue_rate is None:
        return
    from workloads.degrade import ends

    try:
        ends(topo, queue_rate[0])
    except (TopologyError, ValueError) as exc:
        raise Usage(f"--queue-rate {exc}") from None


def print_report(rep: dict[str, Any]) -> None:
    from workloads.progress import summary_lines

    for line in summary_lines(rep):
        typer.echo(line)


@app.command()
def workload(
    coll: Annotated[Optional[str], typer.Option("--collective", help=f"{' | '.join(COLLECTIVES)}")] = None,
    matrix: Annotated[Optional[Path], typer.Option("--matrix", help="an htsim connection matrix (.cm) to run")] = None,
    size: Annotated[int, typer.Option("--size", min=1, help="the collective's message, bytes (S)")] = 400_000,
    iterations: Annotated[int, typer.Option("--iterations", "-k", min=1, help="iterations of the job (K)")] = 3,
    hosts: Annotated[Optional[str], typer.Option(
        "--hosts", help="the job's hosts in ring (rank) order, e.g. h1,h3,h2,h4 (default: every host, one leaf "
                        "after the other in turn)")] = None,
    nhosts: Annotated[Optional[int], typer.Option("--nhosts", min=2, help="the first N hosts of that order")] = None,
    transport_name: Annotated[str, typer.Option("--transport", help=" | ".join(TRANSPORTS))] = "mrc",
    cut: Annotated[Optional[str], typer.Option("--cut", help="cut this leaf-spine cable part-way, e.g. "
                                               "p0-leaf0:p0-spine0")] = None,
    cut_at: Annotated[float, typer.Option("--cut-at", min=0, callback=finite, help="seconds after the job's start")] = 1.0,
    down_for: Annotated[Optional[float], typer.Option("--down-for", min=0, callback=finite,
                                                      help="restore the cable after this many seconds "
                                                           "(default: at the job's end)")] = None,
    queue_rate: Annotated[Optional[str], typer.Option("--queue-rate", help="degrade one link: LINK=PPS, both "
                                                      "directions limited to PPS packets/s")] = None,
    background: Annotated[Optional[str], typer.Option("--background", help="flows back to back through the job "
                                                      "between these pairs, e.g. h1:h3,h2:h4")] = None,
    background_bytes: Annotated[int, typer.Option("--background-bytes", min=1)] = 500_000,
    seed: Annotated[int, typer.Option("--seed", help="the senders' seeds (spraying, QPs) and data")] = 0,
    timeout: Annotated[float, typer.Option("--timeout", min=1, callback=finite,
                                           help="give the job up after this many seconds without an arrival")] = 60.0,
    rto_min: Annotated[float, typer.Option("--rto-min", min=0.001, callback=finite,
                                           help="the senders' RTO floor, s")] = JobSpec.rto_min,
    nack_delay: Annotated[float, typer.Option("--nack-delay", min=0, callback=finite)] = 0.005,
    capacity: Annotated[Optional[float], typer.Option(
        "--capacity", min=1, callback=finite, help="a path's capacity, b/s, for the slowdowns (default: measured, "
                                                  "one flow alone on the idle fabric)")] = None,
    topology: TopologyOpt = None, planes: PlanesOpt = None, spines: SpinesOpt = None, leaves: LeavesOpt = None,
    hosts_per_leaf: HostsPerLeafOpt = None,
    target: Annotated[Target, typer.Option("--target", help="embedded | bmv2 | auto")] = "embedded",
    switches_per_process: Annotated[str, typer.Option(
        "--switches-per-process", help="embedded target: N|cpu|plane (as make run; 1 with --queue-rate)")] = "cpu",
    prefix: Annotated[Optional[str], typer.Option("--prefix", help="Mininet node-name prefix")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print the raw numbers (JSON) instead of the figures")] = False,
    out: Annotated[Optional[Path], typer.Option("--out", help="write the JSON here too")] = None,
    plot: Annotated[Optional[Path], typer.Option("--plot", help="write the plots here (PNG)")] = None,
) -> int:
    """Run a collective or a traffic matrix as a job on the fabric and report its times."""
    try:
        topo = _topology(topology, Shape(planes, spines, leaves, hosts_per_leaf))
        schedule, ranks = job(coll, matrix, size, topo, hosts, nhosts)
        tr = transport(transport_name) if transport_name in TRANSPORTS else None
        if tr is None:
            raise Usage(f"--transport {transport_name!r}: one of {', '.join(TRANSPORTS)}")
        spec = JobSpec(schedule, tuple(ranks), tr, iterations, timeout, _cut(topo, cut, cut_at, down_for),
                       pairs(background, topo), background_bytes, rto_min, nack_delay, seed)
        rate = _queue_rate(queue_rate)
        _check_links(topo, rate)
        from topologies.p4switch import choose_target
        from topologies.switch_group import parse_placement

        placement = 1 if rate is not None else parse_placement(switches_per_process)
        chosen = choose_target(target)
    except (Usage, ValueError) as exc:
        typer.echo(f"error: {exc} (see mrc-workload --help)", err=True)
        return 2
    if os.geteuid() != 0:
        typer.echo("error: mrc-workload runs a Mininet network: run it as root", err=True)
        return 2
    try:
        rep = run(spec, Fabric(topo, chosen, prefix, placement), rate, capacity, quiet=as_json)
    except (RuntimeError, OSError, TopologyError) as exc:
        typer.echo(f"error: mrc-workload on the {chosen} target: {exc}", err=True)
        return 1
    return finish(rep, as_json, out, plot)


def finish(rep: dict[str, Any], as_json: bool, out: Path | None, plot: Path | None) -> int:
    text = json.dumps(rep, indent=1, sort_keys=True)
    if out is not None:
        out.write_text(text + "\n")
    if plot is not None:
        from workloads.plots import job_figure

        job_figure(rep).savefig(plot, dpi=110, bbox_inches="tight")
    if as_json:
        print(text)
    else:
        print_report(rep)
    return 0 if rep["complete"] and rep["all_verified"] else 1


def main(argv: list[str] | None = None) -> int:
    return run_command(app, sys.argv[1:] if argv is None else argv, prog="mrc-workload")

