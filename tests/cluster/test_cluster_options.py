"""The experiments' cluster options (experiments/common.py): ``--servers`` and
``--placement`` reach the environment the fabric's start reads, the rest of the command
line reaches the experiment; a missing value is one error line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from experiments.common import cluster_options
from topologies.fabric_net import PLACEMENT_ENV, SERVERS_ENV

REPO = Path(__file__).resolve().parents[2]


def _unset(monkeypatch: pytest.MonkeyPatch, *names: str) -> None:
    """Remove ``names`` from the environment and have them put back as they were after
    the test, also when the code under test sets them: ``delenv`` of a name that is
    not set records nothing to undo, so set it first (else a value the test makes
    stays for every later test, and their fabrics go looking for those servers)."""
    for name in names:
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)


def test_the_cluster_options_go_to_the_environment_and_the_rest_stays(monkeypatch: pytest.MonkeyPatch) -> None:
    _unset(monkeypatch, SERVERS_ENV, PLACEMENT_ENV)
    rest = cluster_options(["--bytes", "1000", "--servers", "10.0.0.2,10.0.0.3", "--placement=round-robin", "-v"])
    assert rest == ["--bytes", "1000", "-v"]
    assert (os.environ[SERVERS_ENV], os.environ[PLACEMENT_ENV]) == ("10.0.0.2,10.0.0.3", "round-robin")


def test_no_cluster_option_changes_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    _unset(monkeypatch, SERVERS_ENV, PLACEMENT_ENV)
    assert cluster_options(["--rate", "10"]) == ["--rate", "10"]
    assert SERVERS_ENV not in os.environ


def test_a_cluster_option_without_its_value_is_one_error_line() -> None:
    r = subprocess.run([sys.executable, "-m", "experiments.spraying", "--servers"], cwd=REPO, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 2
    assert r.stderr.strip() == ("error: --servers needs a value: --servers A,B,C "
                                "(see python -m experiments.spraying --help)")
