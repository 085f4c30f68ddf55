"""`make run` interrupted (SIGINT to its process group, as Ctrl-C does) in each of its
phases: while the switches start, while the tables are installed, during the demo,
and in the CLI. Each time nothing may be left: ``tools/cleanup.py --check`` finds
nothing of the run's prefix, and the test looks for itself: no interface named with
the prefix, no process whose command line names the prefix or the run directory, no
state file.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.mininet.net_prefix import assert_nothing_left, private_prefix

pytestmark = pytest.mark.root

REPO = Path(__file__).resolve().parents[2]
SHAPE = "--planes 1 --spines 1 --leaves 2 --hosts-per-leaf 1"
# phase -> (the first stdout line of the phase, seconds after it before the SIGINT)
PHASES = {"start": ("network: ", 0.0), "install": ("network: ", None), "demo": ("demo: ", 0.3),
          "cli": ("ready:", 1.0)}


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")}


def _processes_naming(*words: str) -> list[str]:
    """Command lines of the processes that name any of ``words``."""
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) == os.getpid():
            continue
        try:
            cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if any(w in cmd for w in words):
            out.append(f"{d.name}: {cmd[:200]}")
    return out


def _interrupt_at(phase: str, run_dir: Path, prefix: str, cli: Path) -> tuple[int, str]:
    """`make run` of a small fabric, SIGINT once ``phase`` has begun; (exit status, stdout)."""
    marker, delay = PHASES[phase]
    args = f"{SHAPE} --prefix {prefix} --grpc-base 0 --bytes 400000"
    args += f" --no-demo --cli-script {cli}" if phase == "cli" else " --no-cli"
    proc = subprocess.Popen(["make", "--no-print-directory", "run", f"RUN_DIR={run_dir}", f"RUN_ARGS={args}"],
                            cwd=REPO, env=_env(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    seen, lines = 0, []
    try:
        for line in proc.stdout:  # type: ignore[union-attr]  # a pipe was asked for
            lines.append(line)
            if line.startswith(marker):
                seen += 1
                # install: the second "network:" line says every switch answers; the install follows at once
                if phase != "install" or seen == 2:
                    time.sleep(delay or 0.0)
                    os.killpg(proc.pid, signal.SIGINT)
                    break
        rest, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return proc.returncode, "".join(lines) + rest


@pytest.mark.parametrize("phase", list(PHASES))
def test_make_run_interrupted_leaves_nothing(phase: str, tmp_path: Path) -> None:
    prefix = private_prefix()
    run_dir = tmp_path / "run"
    cli = tmp_path / "cli"
    cli.write_text("sh sleep 20\n")
    try:
        code, out = _interrupt_at(phase, run_dir, prefix, cli)
        assert code != 0, out[-3000:]  # interrupted: not a success
        assert "Traceback" not in out, out
        check = subprocess.run([sys.executable, "tools/cleanup.py", "--check", "--prefix", prefix, "--run-dir",
                                str(run_dir)], cwd=REPO, capture_output=True, text=True, timeout=60)
        assert check.returncode == 0, (out[-3000:], check.stdout, check.stderr)
        links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True, timeout=20).stdout
        assert [ln for ln in links.splitlines() if prefix in ln] == [], out
        assert _processes_naming(prefix, str(run_dir)) == [], out
        assert not (run_dir / "network.json").exists(), out
    finally:
        assert_nothing_left(prefix, run_dir)
