"""The workload experiments' command lines reach the shared runner with their options
and defaults; a bad option is one error line (status 2), before any network exists."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import pytest

from experiments import common as C

NAMES = ("workload_cut", "workload_alltoall", "workload_matrix")


@pytest.mark.parametrize("name", NAMES)
def test_the_runner_gets_the_options(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mod = importlib.import_module(f"experiments.{name}")
    got: list[tuple[Any, ...]] = []
    monkeypatch.setattr(C, "main", lambda exp, opts, run, given=None: got.append((exp, opts, given)) or 7)
    monkeypatch.delenv(C.TARGET_ENV, raising=False)
    assert mod.main(["--out-dir", str(tmp_path), "--prefix", "mrcx1"]) == 7
    ((exp, opts, given),) = got
    assert exp.name == name and opts == C.Options(out_dir=tmp_path, prefix="mrcx1", target="embedded")
    sizes = exp.defaults.sizes("embedded", given)
    assert set(exp.defaults.embedded) <= set(sizes)


@pytest.mark.parametrize(("name", "argv", "says"), [
    ("workload_cut", ["--iterations", "0"], "--iterations"),
    ("workload_alltoall", ["--link-rate", "0"], "--link-rate"),
    ("workload_matrix", ["--matrix", "/nonexistent.cm"], "--matrix"),
])
def test_a_bad_option(name: str, argv: list[str], says: str, capsys: pytest.CaptureFixture[str]) -> None:
    mod = importlib.import_module(f"experiments.{name}")
    assert mod.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and says in err and err.count("\n") == 1
