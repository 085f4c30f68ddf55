"""What a job shows while it runs (a rich progress bar on stderr) and the figures it
prints at the end."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from workloads.runner import Progress as Callback


@contextmanager
def bar(quiet: bool) -> Iterator[Callback]:
    """A progress bar of the flows arrived (none when ``quiet``): the callback to give the runner."""
    if quiet:
        yield lambda done, total, it: None
        return
    columns = (TextColumn("[bold]job[/] iteration {task.fields[it]}"), BarColumn(), MofNCompleteColumn(),
               TextColumn("flows"), TimeElapsedColumn())
    with Progress(*columns, console=Console(stderr=True), transient=True) as p:
        task = p.add_task("job", total=None, it=0)

        def update(done: int, total: int, it: int) -> None:
            p.update(task, completed=done, total=total, it=it)

        yield update


def _s(x: Any) -> str:
    return "-" if x is None else f"{x:.3f} s"


def summary_lines(rep: dict[str, Any]) -> list[str]:
    it, fct, sd = rep["iteration_s"], rep["fct_s"], rep["slowdown"]
    lines = [f"job: {rep['job']} over {len(rep['hosts'])} hosts ({','.join(rep['hosts'])}), transport "
             f"{rep['transport']}, {rep['iterations_done']} of {rep['iterations_asked']} iterations, "
             f"{'complete' if rep['complete'] else 'INCOMPLETE'}",
             f"  iteration time: p50 {_s(it.get('p50'))}, p99 {_s(it.get('p99'))}, max {_s(it.get('max'))}",
             f"  flows: {len(rep['flows'])}, FCT p50 {_s(fct.get('p50'))}, p99 {_s(fct.get('p99'))}; slowdown p50 "
             f"{sd.get('p50', 0):.2f}, p99 {sd.get('p99', 0):.2f} (path capacity "
             f"{(rep['capacity_bps'] or 0) / 1e6:.2f} Mb/s)",
             f"  bytes verified {rep['bytes_verified']:,} of {rep['bytes_scheduled']:,}: "
             f"{'every byte verified' if rep['all_verified'] else 'NOT ALL VERIFIED'}"
             + (f"; {rep['flows_failed']} flow(s) FAILED" if rep.get("flows_failed") else "")]
    if rep["step_s"]:
        lines.append("  steps (p50): " + " ".join(f"{s.get('p50', 0) * 1e3:.0f}" for s in rep["step_s"]) + " ms")
    raw = rep.get("raw", {})
    if raw.get("cut"):
        c = raw["cut"]
        lines.append(f"  cable {c['link']} cut at {c['at_s']:g} s; healthy EVs retired {raw['healthy_evs_retired']}")
    use = rep.get("link_use", {})
    for key in ("per_plane", "per_spine"):
        if use.get(key):
            lines.append(f"  packets {key.replace('_', ' ')}: " + ", ".join(f"{k} {v}" for k, v in use[key].items()))
    lines += [f"  error: {e}" for e in rep["errors"][:5]]
    return lines
