"""Connection matrices of this project's own making, in htsim's format (``htsim.py``).

- ``permutation``: every node sends ``size`` bytes to one other node, each node
  receiving once (a random derangement), all at time 0.
- ``mixed``: ``flows`` flows between random pairs, sizes drawn log-uniformly between
  ``min_size`` and ``max_size`` (many small flows, few large ones, as data-centre
  traces have them), starts uniform over ``spread_us`` microseconds.
- ``ring``: a ring all-reduce as htsim's own generators write it: each flow starts
  when the flow into its source has arrived (one trigger each).

The same seed gives the same file.
"""

from __future__ import annotations

import math
import random
from pathlib import Path
from typing import Annotated

import typer

from cli_common.command import run_command
from workloads import htsim
from workloads.collectives import ring_allreduce
from workloads.schedule import Flow, Schedule, ScheduleError


def permutation(nodes: int, size: int, seed: int) -> Schedule:
    if nodes < 2:
        raise ScheduleError(f"a permutation needs 2 or more nodes, not {nodes}")
    rng = random.Random(seed)
    dst = list(range(nodes))
    while any(d == s for s, d in enumerate(dst)):
        rng.shuffle(dst)
    return Schedule("permutation", nodes, tuple(Flow(s + 1, s, d, size, 0.0) for s, d in enumerate(dst)))


def mixed(nodes: int, flows: int, min_size: int, max_size: int, spread_us: float, seed: int) -> Schedule:
    if nodes < 2 or flows < 1 or not 1 <= min_size <= max_size or spread_us < 0:
        raise ScheduleError("mixed: give 2+ nodes, 1+ flows, 1 <= min size <= max size and a spread of 0+ us")
    rng = random.Random(seed)
    out = []
    lo, hi = math.log(min_size), math.log(max_size)
    for i in range(flows):
        src = rng.randrange(nodes)
        dst = rng.choice([d for d in range(nodes) if d != src])
        size = int(round(math.exp(rng.uniform(lo, hi))))
        out.append(Flow(i + 1, src, dst, min(max(size, min_size), max_size), round(rng.uniform(0, spread_us), 1)))
    return Schedule("mixed", nodes, tuple(out))


def ring(nodes: int, size: int) -> Schedule:
    """The ring all-reduce with each flow waiting only for its input (the format's
    one trigger per connection)."""
    s = ring_allreduce(nodes, size)
    flows = tuple(Flow(f.id, f.src, f.dst, f.size, f.start_us, f.deps[:1], None, f.step) for f in s.flows)
    return Schedule("ring", nodes, flows, s.steps)


app = typer.Typer(add_completion=False, pretty_exceptions_enable=False,
                  context_settings={"help_option_names": ["-h", "--help"]},
                  help="Write a connection matrix in htsim's format (docs/workloads.md).")

OutOpt = Annotated[Path, typer.Option("--out", help="the .cm file to write")]
NodesOpt = Annotated[int, typer.Option("--nodes", min=2, help="nodes (hosts)")]
SeedOpt = Annotated[int, typer.Option("--seed", help="random seed")]


def _write(s: Schedule, out: Path) -> None:
    try:
        out.write_text(htsim.write(s))
    except OSError as exc:
        typer.echo(f"error: --out {out}: {exc.strerror}; give a writable path", err=True)
        raise typer.Exit(1) from None
    typer.echo(f"{out}: {s.name}, {s.nodes} nodes, {len(s.flows)} flows, {s.total_bytes():,} bytes")


@app.command("permutation")
def permutation_cmd(out: OutOpt, nodes: NodesOpt = 16, seed: SeedOpt = 1,
                    size: Annotated[int, typer.Option("--size", min=1, help="bytes per flow")] = 2_000_000) -> None:
    """Every node sends to one other, each receiving once."""
    _write(permutation(nodes, size, seed), out)


@app.command("mixed")
def mixed_cmd(out: OutOpt, nodes: NodesOpt = 16, seed: SeedOpt = 1,
              flows: Annotated[int, typer.Option("--flows", min=1, help="flows")] = 64,
              min_size: Annotated[int, typer.Option("--min-size", min=1, help="smallest flow, bytes")] = 10_000,
              max_size: Annotated[int, typer.Option("--max-size", min=1, help="largest flow, bytes")] = 1_000_000,
              spread: Annotated[float, typer.Option("--spread-us", min=0, help="starts over this many us")] = 0.0,
              ) -> None:
    """Random pairs, log-uniform sizes, starts spread over a window."""
    try:
        s = mixed(nodes, flows, min_size, max_size, spread, seed)
    except ScheduleError as exc:
        raise typer.BadParameter(str(exc)) from None
    _write(s, out)


@app.command("ring")
def ring_cmd(out: OutOpt, nodes: NodesOpt = 8,
             size: Annotated[int, typer.Option("--size", min=1, help="the all-reduce's message, bytes")] = 8_000_000,
             ) -> None:
    """A ring all-reduce, each flow triggered by the one into its source."""
    try:
        s = ring(nodes, size)
    except ScheduleError as exc:
        raise typer.BadParameter(str(exc)) from None
    _write(s, out)


def main() -> int:
    return run_command(app, prog="python -m workloads.generate")


if __name__ == "__main__":
    raise SystemExit(main())
