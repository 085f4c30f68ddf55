"""Parity of the embedded target with p4c over p4c's own test programs.

``python -m p4target.parity P4C_CHECKOUT`` reads a p4c checkout's testdata and prints:

- samples: the v1model programs of ``testdata/p4_16_samples`` (and its sub-folders)
  that p4c accepts, and how many of them the embedded target accepts;
- errors: the v1model and core-only programs of ``testdata/p4_16_errors``, how many
  the target rejects, how many make it fail with an internal error, and for how many
  its first error is on the line of p4c's first error;
- stf: the samples with an ``.stf`` file that pass on BMv2 in p4c's own test suite
  (every v1model one, less the ``XFAIL_TESTS`` of ``backends/bmv2/CMakeLists.txt``),
  and how many pass here.

p4c's verdict is ``p4c-bm2-ss`` run on each program (found on the PATH), cached by
the program's text under ``--cache`` because it takes about half a second a program.
The target's side runs in worker processes, one program at a time each, with a time
limit per program (a program over it counts as an internal error).
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated

import typer

_INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.M)
_P4C_ERROR = re.compile(r"^(?P<file>[^\s()]+)\((?P<line>\d+)\):[^\n]*?\berror\b", re.M)


@dataclass
class Outcome:
    """What one compiler made of one program."""

    verdict: str  # "accepted", "rejected" or "internal"
    where: tuple[str, int] | None = None  # (file name, line) of the first error
    message: str = ""


@dataclass
class Figures:
    """The counts the script prints."""

    samples: int = 0
    samples_accepted: int = 0
    refused: list[tuple[str, str]] = field(default_factory=list)
    errors: int = 0
    errors_rejected: int = 0
    errors_internal: list[tuple[str, str]] = field(default_factory=list)
    errors_accepted: list[str] = field(default_factory=list)
    errors_p4c_rejects: int = 0
    errors_rejected_of_p4c: int = 0
    errors_with_line: int = 0
    errors_same_line: int = 0
    other_line: list[tuple[str, str]] = field(default_factory=list)
    stf: int = 0
    stf_passed: int = 0
    stf_failed: list[tuple[str, str]] = field(default_factory=list)


def includes(path: Path, seen: set[Path] | None = None) -> set[str]:
    """The names of the files ``path`` includes, following quoted includes it can find."""
    seen = seen if seen is not None else set()
    if path in seen or not path.is_file():
        return set()
    seen.add(path)
    names: set[str] = set()
    for name in _INCLUDE.findall(path.read_text(errors="replace")):
        names.add(Path(name).name)
        names |= includes((path.parent / name).resolve(), seen)
    return names


def sample_programs(testdata: Path) -> list[Path]:
    """The v1model programs of p4_16_samples, sub-folders included."""
    root = testdata / "p4_16_samples"
    return [p for p in sorted(root.rglob("*.p4")) if p.is_file() and "v1model.p4" in includes(p)]


def error_programs(testdata: Path) -> list[Path]:
    """The programs of p4_16_errors that include v1model.p4, or core.p4 and no other architecture."""
    out = []
    for p in sorted((testdata / "p4_16_errors").glob("*.p4")):
        base = {Path(n).name for n in _INCLUDE.findall(p.read_text(errors="replace"))}
        if "v1model.p4" in base or base == {"core.p4"}:
            out.append(p)
    return out


def xfail_programs(checkout: Path) -> set[str]:
    """The sample file names p4c's BMv2 suite expects to fail (``XFAIL_TESTS``)."""
    cmake = checkout / "backends" / "bmv2" / "CMakeLists.txt"
    if not cmake.is_file():
        return set()
    text = cmake.read_text()
    block = text.split("set (XFAIL_TESTS", 1)[-1].split(")", 1)[0]
    return {Path(m).name for m in re.findall(r"testdata/p4_16_samples/(\S+\.p4)", block)}


def first_p4c_error(stderr: str) -> tuple[str, int] | None:
    m = _P4C_ERROR.search(stderr)
    return (Path(m["file"]).name, int(m["line"])) if m else None


def p4c_outcome(program: Path, cache: Path, p4c: str) -> Outcome:
    """p4c-bm2-ss's verdict on ``program``, from the cache when it was run before."""
    key = hashlib.sha256(program.read_bytes() + str(program).encode()).hexdigest()[:32]
    entry = cache / f"{key}.json"
    if entry.is_file():
        data = json.loads(entry.read_text())
    else:
        with tempfile.TemporaryDirectory(prefix="p4c-parity-") as tmp:
            proc = subprocess.run([p4c, "--std", "p4-16", "-o", f"{tmp}/out.json", program.name],
                                  cwd=program.parent, capture_output=True, text=True, timeout=300, check=False)
        data = {"rc": proc.returncode, "stderr": proc.stderr[-4000:]}
        entry.write_text(json.dumps(data))
    if data["rc"] == 0:
        return Outcome("accepted")
    return Outcome("rejected", first_p4c_error(data["stderr"]), data["stderr"].strip().splitlines()[0]
                   if data["stderr"].strip() else "")


def _alarm(signum: int, frame: object) -> None:
    raise TimeoutError("over the time limit")


def _where(location: str | None) -> tuple[str, int] | None:
    if not location:
        return None
    parts = location.rsplit(":", 2)
    if len(parts) == 3 and parts[1].isdigit():
        return Path(parts[0]).name, int(parts[1])
    if len(parts) >= 2 and parts[-1].isdigit():
        return Path(parts[-2]).name, int(parts[-1])
    return None


def target_outcome(program: str, limit: int) -> Outcome:
    """The embedded target's verdict on ``program`` (run in a worker process)."""
    from p4target.compiler import compile_file
    from p4target.errors import P4Error

    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(limit)
    try:
        compile_file(program)
    except P4Error as exc:
        kind = "internal" if exc.message.startswith("internal error") else "rejected"
        return Outcome(kind, _where(exc.location), str(exc))
    except Exception as exc:  # what the script measures
        return Outcome("internal", None, f"{type(exc).__name__}: {exc}")
    finally:
        signal.alarm(0)
    return Outcome("accepted")


def target_stf(program: str, stf: str, limit: int) -> str:
    """'' when the STF file passes here, else why not (run in a worker process)."""
    from p4target.errors import P4Error
    from p4target.stf import run_stf_program

    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(limit)
    try:
        result = run_stf_program(program, stf)
    except P4Error as exc:
        return str(exc).splitlines()[0]
    except Exception as exc:  # what the script measures
        return f"{type(exc).__name__}: {exc}".splitlines()[0]
    finally:
        signal.alarm(0)
    return "" if result.passed else (result.failures[0].splitlines()[0] if result.failures else "failed")


def measure(checkout: Path, cache: Path, jobs: int, limit: int, p4c: str) -> Figures:
    testdata = checkout / "testdata"
    cache.mkdir(parents=True, exist_ok=True)
    samples = sample_programs(testdata)
    errors = error_programs(testdata)
    fig = Figures()
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        ours_s = {p: pool.submit(target_outcome, str(p), limit) for p in samples}
        ours_e = {p: pool.submit(target_outcome, str(p), limit) for p in errors}
        theirs_s = {p: p4c_outcome(p, cache, p4c) for p in samples}
        theirs_e = {p: p4c_outcome(p, cache, p4c) for p in errors}
        xfail = xfail_programs(checkout)
        stf_jobs = {}
        for p in samples:
            if theirs_s[p].verdict != "accepted":
                continue
            fig.samples += 1
            mine = ours_s[p].result()
            if mine.verdict == "accepted":
                fig.samples_accepted += 1
            else:
                fig.refused.append((str(p.relative_to(testdata)), mine.message.splitlines()[0] if mine.message else ""))
            stf = p.with_suffix(".stf")
            if stf.is_file() and p.name not in xfail and p.parent.name == "p4_16_samples":
                fig.stf += 1
                stf_jobs[p] = pool.submit(target_stf, str(p), str(stf), limit)
        for p in errors:
            _count_error(fig, p, ours_e[p].result(), theirs_e[p], testdata)
        for p, job in stf_jobs.items():
            why = job.result()
            if why:
                fig.stf_failed.append((p.name, why))
            else:
                fig.stf_passed += 1
    return fig


def _count_error(fig: Figures, p: Path, mine: Outcome, theirs: Outcome, testdata: Path) -> None:
    fig.errors += 1
    fig.errors_p4c_rejects += theirs.verdict != "accepted"
    fig.errors_rejected_of_p4c += theirs.verdict != "accepted" and mine.verdict == "rejected"
    name = str(p.relative_to(testdata))
    if mine.verdict == "internal":
        fig.errors_internal.append((name, mine.message.splitlines()[0] if mine.message else ""))
        return
    if mine.verdict == "accepted":
        fig.errors_accepted.append(name)
        return
    fig.errors_rejected += 1
    if theirs.where is not None:
        fig.errors_with_line += 1
        if mine.where == theirs.where:
            fig.errors_same_line += 1
        else:
            fig.other_line.append((name, f"p4c {theirs.where}, here {mine.where}"))


def _share(part: int, whole: int) -> str:
    return f"{part}/{whole} ({100.0 * part / whole:.1f}%)" if whole else f"{part}/0"


def report(fig: Figures, verbose: bool) -> str:
    lines = [
        f"samples: v1model programs p4c accepts: {fig.samples}; accepted here: "
        f"{_share(fig.samples_accepted, fig.samples)}",
        f"errors: v1model/core programs: {fig.errors}; rejected here: {_share(fig.errors_rejected, fig.errors)}; "
        f"of the {fig.errors_p4c_rejects} p4c rejects: {_share(fig.errors_rejected_of_p4c, fig.errors_p4c_rejects)}; "
        f"internal errors: {len(fig.errors_internal)}; accepted: {len(fig.errors_accepted)}",
        f"errors: first error on p4c's line: {_share(fig.errors_same_line, fig.errors_with_line)} (of those "
        "p4c places on a line)",
        f"stf: programs whose STF passes on BMv2 in p4c's suite: {fig.stf}; pass here: "
        f"{_share(fig.stf_passed, fig.stf)}",
    ]
    lists: list[tuple[str, list[tuple[str, str]]]] = [
        ("refused sample", fig.refused), ("internal error", fig.errors_internal),
        ("accepted error program", [(n, "") for n in fig.errors_accepted]), ("stf failure", fig.stf_failed)]
    if verbose:
        lists.append(("other line", fig.other_line))
    for what, items in lists:
        lines.extend(f"  {what}: {name}: {why}" for name, why in items)
    return "\n".join(lines)


def main(checkout: Annotated[Path, typer.Argument(help="a p4c checkout (its testdata/ and backends/bmv2/)")],
         cache: Annotated[Path, typer.Option(help="where p4c-bm2-ss's verdicts are kept")] = Path(
             "/tmp/p4c-parity-cache"),
         jobs: Annotated[int, typer.Option(min=1, help="worker processes for the target's side")] = 2,
         limit: Annotated[int, typer.Option(min=1, help="seconds allowed per program")] = 120,
         verbose: Annotated[bool, typer.Option(help="also list the errors placed on another line")] = False) -> None:
    """Print the embedded target's parity figures against p4c's testdata."""
    if not (checkout / "testdata" / "p4_16_samples").is_dir():
        typer.echo(f"parity: error: {checkout} has no testdata/p4_16_samples; give the root of a p4c checkout",
                   err=True)
        raise typer.Exit(2)
    p4c = shutil.which("p4c-bm2-ss")
    if p4c is None:
        typer.echo("parity: error: p4c-bm2-ss is not on the PATH; source the BMv2 bundle's env.sh first", err=True)
        raise typer.Exit(2)
    typer.echo(report(measure(checkout, cache, jobs, limit, p4c), verbose))


if __name__ == "__main__":
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10000))
    typer.run(main)
