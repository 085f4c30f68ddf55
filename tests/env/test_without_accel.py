"""Deleting ``p4target/accel/`` changes speed, never behaviour.

The project is copied into a temporary directory without ``p4target/accel/`` (the
compiled fast paths, the compiled write path, the HTTP/2 transport), and there:

- a P4Runtime server comes up on ``grpc.server`` with one warning naming the cause,
  writes through ``write.py`` and answers as always;
- ``p4target compile --native`` refuses with one line naming the missing folder;
- a slice of the P4Runtime suite and the dataplane suites (fabric.p4, nic.p4 on the
  embedded target) passes, with the acceleration asked for (``P4TARGET_NATIVE=1``),
  so each part must take its plain path by itself.

The copy holds the sources only (no ``.venv``, no git, no results); this worktree's
interpreter runs them with the copy first on the path and without the editable
install's finder (``sitecustomize.py`` in the copy takes it off), which would
otherwise find this worktree's ``p4target/accel/`` for the copy's ``p4target``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
COPIED = ("p4target", "p4src", "tests", "docs", "controller", "fabric", "cli_common", "endpoints", "topologies", "conftest.py",
          "pyproject.toml")
# Representative and quick (about a minute together on a loaded machine): writes of
# every entity, errors, atomicity, pipeline changes, reads, finsy interop; the two
# project programs forwarding frames on the embedded target.
P4RUNTIME_SLICE = ("test_plain_insert.py", "test_server_entities.py", "test_server_errors.py",
                   "test_server_atomicity.py", "test_server_pipeline.py", "test_server_tables.py",
                   "test_read_encoding.py", "test_finsy_interop.py")
DATAPLANE_SLICE = ("tests/dataplane/fabric", "tests/dataplane/nic")

PROBE = """
import logging, sys
logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
import importlib.util
import p4target
assert p4target.__file__.startswith(sys.argv[1]), p4target.__file__
assert importlib.util.find_spec("p4target.accel") is None  # not reachable in any way
from p4target import optional_accel
from p4target.device import Device
from p4target.p4runtime.server import P4RuntimeServer
server = P4RuntimeServer(Device(device_id=1), "127.0.0.1:0")
server.start()
print(optional_accel.present(), server.transport, server.write_path)
server.stop()
"""
# The editable install's finder (a .pth of the venv puts it on sys.meta_path) maps
# ``p4target.*`` to the tree it was installed from; the copy's runs go without it.
SITECUSTOMIZE = """
import sys
sys.meta_path[:] = [f for f in sys.meta_path if not getattr(f, "__module__", "").startswith("__editable__")]
"""


@pytest.fixture(scope="module")
def without_accel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project's sources copied without ``p4target/accel/``."""
    root = tmp_path_factory.mktemp("no-accel") / "repo"
    skip = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache")
    for name in COPIED:
        src = REPO / name
        if src.is_dir():
            shutil.copytree(src, root / name, ignore=skip)
        else:
            root.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, root / name)
    shutil.rmtree(root / "p4target" / "accel")
    (root / "sitecustomize.py").write_text(SITECUSTOMIZE)
    return root


def _run(root: Path, *argv: str, timeout: float) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "P4TARGET_"))}
    env.update(PYTHONPATH=str(root), P4TARGET_NATIVE="1")  # acceleration asked for: it is not there
    return subprocess.run([sys.executable, *argv], cwd=root, env=env, capture_output=True, text=True,
                          timeout=timeout)


def test_the_server_falls_back_to_grpc_server_and_write_py(without_accel: Path) -> None:
    run = _run(without_accel, "-c", PROBE, str(without_accel), timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["False", "grpc.server", "python"]
    warnings = [line for line in run.stderr.splitlines() if line.startswith("WARNING")]
    assert warnings == ["WARNING p4target.p4runtime.transports: device 1: the P4Runtime server cannot use its "
                        "h2 transport and runs on grpc.server (single-entry writes slower): "
                        "p4target/accel/ is not installed"]


def test_compile_native_names_the_missing_folder(without_accel: Path) -> None:
    run = _run(without_accel, "-m", "p4target", "compile", "p4src/nic.p4", "--native", timeout=120)
    assert run.returncode == 1
    assert run.stderr.strip().splitlines() == [
        "p4target: error: p4src/nic.p4: this installation has no p4target/accel/ (the compiled fast path's "
        "builder); reinstall p4target with it"]


def test_the_p4runtime_and_dataplane_suites_pass_without_it(without_accel: Path) -> None:
    tests = [f"tests/p4runtime/{name}" for name in P4RUNTIME_SLICE] + list(DATAPLANE_SLICE)
    run = _run(without_accel, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider",
               "-m", "not root", "--rootdir", str(without_accel), *tests, timeout=300)
    tail = run.stdout[-3000:] + run.stderr[-2000:]
    assert run.returncode == 0, tail
    summary = run.stdout.strip().splitlines()[-1]
    assert " passed" in summary and "failed" not in summary and "error" not in summary, tail
