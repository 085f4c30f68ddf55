"""One experiment on BMv2 exactly as `make experiments TARGET=bmv2` runs it: its
command line with ``--target bmv2`` and no size option (only ``--out-dir``, so that
``results/`` is left alone), in a process of its own.

Why one, and why spraying: what the others would add is each experiment's BMv2
defaults reaching its run, which tests/experiments/test_experiment_cli.py checks for
all eight without a network, and their outcomes at those defaults, which
tests/experiments/test_bmv2_experiments.py asserts; spraying is among the quickest of
the eight on BMv2 (two short transfers, no switch restarted; the whole run is mostly
the fabric's start). Why a module of its own: no
other fabric of these tests is running beside the one the command starts.

Skipped with the reason when BMv2 is not on the PATH (the ``bmv2`` marker,
conftest.py).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from experiments import common as C
from tests.experiments.outcomes import assert_spraying_outcome

pytestmark = [pytest.mark.root, pytest.mark.bmv2]
pytest.importorskip("mininet.net")


def test_make_experiments_target_bmv2_runs_spraying_at_its_bmv2_defaults(tmp_path: Path) -> None:
    from experiments import spraying

    r = subprocess.run([sys.executable, "-m", "experiments.spraying", "--target", "bmv2", "--out-dir", str(tmp_path)],
                       cwd=C.REPO, capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, (r.stdout[-3000:], r.stderr[-3000:])
    size = spraying.DEFAULTS.sizes("bmv2")
    assert r.stdout.splitlines()[-1] == f"results: {tmp_path / 'spraying.json'}, {tmp_path / 'spraying.png'}"
    d = json.loads((tmp_path / "spraying.json").read_text())
    assert d["target"] == "bmv2" and (d["bytes"], d["rate_pps"]) == (size["nbytes"], size["rate"])
    shape = C.topology(**spraying.DEFAULTS.fabric_shape("bmv2"))
    assert_spraying_outcome(d, size["nbytes"] // 1000, planes=shape.planes, spines=shape.spines)
