"""Run every benchmark script under bench/ in turn and print their figures.

Benchmarks are kept out of the test suite (speed targets never go in timed tests); this
runner is what `make bench` calls. Each script runs as its own process with the same
Python, from the repository root, with a time limit; its output is shown as it comes,
and at the end a table says which scripts passed, failed or ran out of time. A script
that fails never stops the others. Exit status: 0 when all passed, 1 otherwise.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent
DEFAULT_TIMEOUT = 600.0


@dataclass(frozen=True)
class BenchResult:
    """How one benchmark script ended."""

    script: str
    status: str  # "ok", "failed (exit N)", "timed out after Ns", "could not start: ..."
    seconds: float

    @property
    def ok(self) -> bool:
        return self.status == "ok"


def discover(directory: Path) -> list[Path]:
    """Benchmark scripts: every *.py in the directory but this runner and private files."""
    return sorted(
        p for p in directory.glob("*.py")
        if p.name != Path(__file__).name and not p.name.startswith("_")
    )


def run_one(script: Path, timeout: float, python: str) -> BenchResult:
    """Run one script in its own process group (so a timeout also stops its children)."""
    start = time.monotonic()
    try:
        # unbuffered: figures show as they are measured, even when output is a pipe/file
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        proc = subprocess.Popen([python, str(script)], cwd=REPO, env=env, start_new_session=True)
    except OSError as exc:
        return BenchResult(script.name, f"could not start: {exc}", 0.0)
    try:
        code = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                break
            try:
                proc.wait(timeout=5)
                break
            except subprocess.TimeoutExpired:
                continue
        return BenchResult(script.name, f"timed out after {timeout:g}s", time.monotonic() - start)
    status = "ok" if code == 0 else f"failed (exit {code})"
    return BenchResult(script.name, status, time.monotonic() - start)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run every bench/*.py benchmark and print their figures.")
    parser.add_argument("--dir", type=Path, default=BENCH_DIR, help="directory of benchmark scripts")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT,
                        help=f"time limit per script in seconds (default {DEFAULT_TIMEOUT:g})")
    parser.add_argument("--only", action="append", default=[], metavar="NAME",
                        help="run only this script (file name with or without .py; repeatable)")
    args = parser.parse_args(argv)
    if args.timeout <= 0:
        parser.error("--timeout must be positive")
    if not args.dir.is_dir():
        print(f"error: {args.dir} is not a directory", file=sys.stderr)
        return 2
    scripts = discover(args.dir)
    if args.only:
        wanted = {n if n.endswith(".py") else n + ".py" for n in args.only}
        unknown = wanted - {s.name for s in scripts}
        if unknown:
            print(f"error: no such benchmark in {args.dir}: {', '.join(sorted(unknown))}", file=sys.stderr)
            return 2
        scripts = [s for s in scripts if s.name in wanted]
    if not scripts:
        print(f"bench: no benchmark scripts in {args.dir}")
        return 0

    results: list[BenchResult] = []
    for script in scripts:
        print(f"=== {script.name} (limit {args.timeout:g}s)", flush=True)
        result = run_one(script, args.timeout, sys.executable)
        print(f"=== {script.name}: {result.status} in {result.seconds:.1f}s", flush=True)
        results.append(result)

    print("\nbench summary:")
    for r in results:
        print(f"  {r.script:<28} {r.status:<24} {r.seconds:8.1f}s")
    failed = [r.script for r in results if not r.ok]
    if failed:
        print(f"bench: {len(failed)} of {len(results)} failed: {', '.join(failed)}")
        return 1
    print(f"bench: all {len(results)} passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
