"""`python -m topologies.run --target`: which switch target the network would use.

Argument handling only; no network is started. ``auto`` takes BMv2 when both
``simple_switch_grpc`` and ``p4c-bm2-ss`` are on the PATH, else the embedded target;
``bmv2`` without them is one error line before anything exists; anything else is a
usage error.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

from tools.cleanup import find_leftovers
from topologies.p4switch import choose_target
from topologies.run import parse_args

REPO = Path(__file__).resolve().parents[2]


def _path_with(tmp_path: Path, tools: tuple[str, ...]) -> str:
    """A PATH of the system's directories (no BMv2 bundle) plus fake ``tools``."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    for tool in tools:
        exe = bin_dir / tool
        exe.write_text("#!/bin/sh\nexit 0\n")
        exe.chmod(0o755)
    return os.pathsep.join([str(bin_dir), "/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"])


@pytest.mark.parametrize("given", ["auto", "embedded", "bmv2"])
def test_the_three_targets_are_accepted(given: str) -> None:
    assert parse_args(["--target", given]).target == given


def test_auto_is_the_default() -> None:
    assert parse_args([]).target == "auto"


def test_auto_takes_bmv2_only_with_both_tools(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", _path_with(tmp_path, ()))
    assert choose_target("auto") == "embedded"
    monkeypatch.setenv("PATH", _path_with(tmp_path / "one", ("simple_switch_grpc",)))
    assert choose_target("auto") == "embedded"
    monkeypatch.setenv("PATH", _path_with(tmp_path / "both", ("simple_switch_grpc", "p4c-bm2-ss")))
    assert choose_target("auto") == "bmv2"
    assert choose_target("embedded") == "embedded"  # asked for: even with BMv2 there


def test_an_unknown_target_is_a_usage_error() -> None:
    r = subprocess.run([sys.executable, "-m", "topologies.run", "--target", "tofino", "--no-cli"], cwd=REPO,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2
    assert r.stderr.startswith("error: Invalid value for '--target': "), r.stderr
    assert "'tofino' is not one of 'auto', 'embedded', 'bmv2'" in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr


@pytest.mark.root
def test_bmv2_without_its_tools_is_one_line_and_starts_nothing(tmp_path: Path) -> None:
    prefix = "mrc" + secrets.token_hex(1)
    env = {**os.environ, "PATH": _path_with(tmp_path, ("p4c-bm2-ss",)), "MRC_P4_RUN_DIR": str(tmp_path / "run")}
    r = subprocess.run([sys.executable, "-m", "topologies.run", "--target", "bmv2", "--no-cli", "--no-demo",
                        "--planes", "1", "--leaves", "1", "--spines", "1", "--hosts-per-leaf", "1",
                        "--prefix", prefix, "--run-dir", str(tmp_path / "run")],
                       cwd=REPO, capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 1, r.stdout + r.stderr
    assert r.stderr.strip().splitlines() == [
        "error: target bmv2: simple_switch_grpc not on the PATH; install BMv2 and p4c, "
        "or use the embedded target (--target embedded)"]
    left = find_leftovers((prefix,), tmp_path / "run")
    assert left.empty(), left.describe()
