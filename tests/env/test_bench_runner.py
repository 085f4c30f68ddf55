"""bench/run.py runs every benchmark script, shows their figures, names the failures."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
RUNNER = REPO / "bench" / "run.py"


def _run(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(RUNNER), *args], cwd=REPO,
                          capture_output=True, text=True, timeout=timeout)


def test_runs_each_script_and_reports_failures_and_timeouts(tmp_path: Path) -> None:
    (tmp_path / "a_fast.py").write_text("print('fast: 123.4 packets/s')\n")
    (tmp_path / "b_broken.py").write_text("import sys\nprint('broken: starting')\nsys.exit(3)\n")
    (tmp_path / "c_slow.py").write_text("import time\nprint('slow: starting', flush=True)\ntime.sleep(60)\n")
    (tmp_path / "_helper.py").write_text("raise SystemExit('helpers are not benchmarks')\n")
    (tmp_path / "run.py").write_text("raise SystemExit('the runner never runs itself')\n")
    start = time.monotonic()
    res = _run("--dir", str(tmp_path), "--timeout", "2")
    assert time.monotonic() - start < 30, "a slow script is stopped at its limit"
    assert res.returncode == 1
    out = res.stdout
    assert "fast: 123.4 packets/s" in out and "broken: starting" in out and "slow: starting" in out
    assert "a_fast.py: ok" in out
    assert "b_broken.py: failed (exit 3)" in out
    assert "c_slow.py: timed out after 2s" in out
    assert "2 of 3 failed: b_broken.py, c_slow.py" in out
    assert "helpers are not benchmarks" not in res.stdout + res.stderr
    assert "the runner never runs itself" not in res.stdout + res.stderr


def test_all_passing_exits_zero_and_only_selects(tmp_path: Path) -> None:
    (tmp_path / "one.py").write_text("print('one: 1 Mpps')\n")
    (tmp_path / "two.py").write_text("raise SystemExit(1)\n")
    res = _run("--dir", str(tmp_path), "--only", "one")
    assert res.returncode == 0, res.stdout
    assert "one: 1 Mpps" in res.stdout and "two.py" not in res.stdout
    assert "all 1 passed" in res.stdout


def test_bad_input_gives_one_clear_error(tmp_path: Path) -> None:
    res = _run("--dir", str(tmp_path / "missing"))
    assert res.returncode == 2 and "is not a directory" in res.stderr
    res = _run("--dir", str(tmp_path), "--only", "nosuch")
    assert res.returncode == 2 and "no such benchmark" in res.stderr
    res = _run("--timeout", "0")
    assert res.returncode == 2 and "Traceback" not in res.stderr


def test_make_bench_passes_each_name_of_bench_to_the_runner() -> None:
    """``make bench BENCH='a b'`` runs only those scripts (``make -n``: what it would run)."""
    # not the flags of a make this test may run under (`make test`)
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")}
    res = subprocess.run(["make", "--no-print-directory", "-n", "bench", "BENCH=fabric_net scale_fabric"], cwd=REPO, env=env,
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip().splitlines()[-1].endswith("bench/run.py --only fabric_net --only scale_fabric"), res.stdout
    res = subprocess.run(["make", "--no-print-directory", "-n", "bench"], cwd=REPO, env=env, capture_output=True, text=True, timeout=60)
    assert res.stdout.strip().splitlines()[-1].endswith("bench/run.py"), res.stdout
