"""`make native` builds the compiled fast paths; a failed build or a broken install
stops make, a machine without a C compiler goes on without them.

The tests run the real Makefile against the project's programs. A failing build is
provoked with a cache directory that cannot exist (`P4TARGET_CACHE` under /dev/null),
a missing compiler with `CC` naming a file that does not exist: neither builds
anything, so both take about a second.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _make_native(**env: str) -> subprocess.CompletedProcess[str]:
    # P4TARGET_NATIVE: the suite turns it off for every test (tests/conftest.py)
    base = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS", "P4TARGET_NATIVE")}
    return subprocess.run(["make", "--no-print-directory", "native"], cwd=REPO, env={**base, **env},
                          capture_output=True, text=True, timeout=300)


def test_a_failed_native_build_stops_make_and_names_what_failed() -> None:
    res = _make_native(P4TARGET_CACHE="/dev/null/cache")
    assert res.returncode != 0, res.stdout + res.stderr
    last = res.stderr.strip().splitlines()
    summary = next(line for line in last if line.startswith("error: native:"))
    for part in ("p4src/fabric.p4", "p4src/nic.p4", "p4target.accel.write_path", "p4target.accel.h2_server"):
        assert part in summary, summary
    assert "P4TARGET_NATIVE=0" in summary  # the way out is named
    assert "/dev/null/cache" in res.stderr  # each step's own message says why
    assert "Traceback" not in res.stderr


def test_no_c_compiler_skips_with_one_line_and_succeeds() -> None:
    res = _make_native(CC="/nonexistent/bin/cc")
    assert res.returncode == 0, res.stdout + res.stderr
    lines = [line for line in res.stdout.splitlines() if line.startswith("native:")]
    assert len(lines) == 1 and "no C compiler (/nonexistent/bin/cc)" in lines[0], res.stdout
    assert "interpreted fast path" in lines[0]
    assert "building" not in res.stdout + res.stderr


def test_native_off_by_choice_skips_and_succeeds() -> None:
    res = _make_native(P4TARGET_NATIVE="0")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "native: skipped (P4TARGET_NATIVE=0)" in res.stdout
    assert res.stderr == ""


def test_native_builds_each_program_and_the_server_loop() -> None:
    res = _make_native()
    assert res.returncode == 0, res.stdout + res.stderr
    for program in ("p4src/fabric.p4", "p4src/nic.p4"):
        assert f"{program}: compiled fast path ready" in res.stdout, res.stdout
    assert "HTTP/2 loop: built" in res.stdout


def test_a_project_that_does_not_import_is_an_error_not_a_skip(tmp_path: Path) -> None:
    # a venv whose python cannot import p4target (a broken install), its set-up stamp
    # fresh so that `make deps` leaves it alone
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    python = venv / "bin" / "python"
    python.write_text("#!/bin/sh\necho \"ModuleNotFoundError: No module named 'p4target'\" >&2\nexit 1\n")
    python.chmod(0o755)
    (venv / ".stamp-project").touch()
    base = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS", "P4TARGET_NATIVE")}
    res = subprocess.run(["make", "--no-print-directory", "native", f"VENV={venv}"], cwd=REPO, env=base,
                         capture_output=True, text=True, timeout=300)
    assert res.returncode != 0, res.stdout + res.stderr
    assert f"error: native: {venv} cannot load p4target; run 'make distclean deps'" in res.stderr, res.stderr
    assert "skipped" not in res.stdout
