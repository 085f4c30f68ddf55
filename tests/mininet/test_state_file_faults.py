"""The run directory and its state file when the disk fails them: a filesystem that is
full, one that is read-only, a state file edited by hand into nonsense. Each is one
error line naming the file and the fix, a non-zero exit, and nothing half-done: the
state file as it was, no temporary file left, no network left behind.

Why in a mount namespace of its own (``unshare --mount``): the full and the read-only
filesystems are small tmpfs mounts over the test's directory, which no one else sees
and which go with the namespace.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fabric.topology import from_parameters
from tests.mininet.net_prefix import assert_nothing_left, private_prefix
from controller.network_state import default_inventory

pytestmark = pytest.mark.root

REPO = Path(__file__).resolve().parents[2]
MRCCTL = REPO / ".venv" / "bin" / "mrcctl"
SHAPE = {"planes": 1, "spines": 1, "leaves": 2, "hosts_per_leaf": 1}
LINK = "p0-leaf0:p0-spine0"


def _state(directory: Path) -> Path:
    """A state file of the small shape, nothing down (no network runs: a cable change
    is only recorded)."""
    directory.mkdir(parents=True, exist_ok=True)
    return default_inventory(from_parameters(**SHAPE), {"parameters": SHAPE}).save(directory / "network.json")


def _in_mount_ns(script: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    if shutil.which("unshare") is None:
        pytest.fail("unshare (util-linux) is missing: it is part of every Debian system")
    return subprocess.run(["unshare", "--mount", "bash", "-c", "set -u\n" + script], cwd=REPO, capture_output=True,
                          text=True, timeout=timeout)


def _errors(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.strip()]


@pytest.mark.parametrize("fault, make", [
    ("No space left on device", "dd if=/dev/zero of=$d/fill bs=4k 2>/dev/null || true"),
    ("Read-only file system", "mount -o remount,ro $d"),
])
def test_mrcctl_fail_on_a_state_file_it_cannot_write(fault: str, make: str, tmp_path: Path) -> None:
    saved = _state(tmp_path / "src").read_text()
    d = tmp_path / "mnt"
    d.mkdir()
    r = _in_mount_ns(f"""
        d={d}
        mount -t tmpfs -o size=64k tmpfs $d
        cp {tmp_path / 'src' / 'network.json'} $d/
        {make}
        MRC_P4_RUN_DIR=$d {MRCCTL} fail {LINK}; echo "exit $?"
        echo "== files"; ls $d
        echo "== state"; cat $d/network.json
        """)
    out = r.stdout
    assert out.split("exit ")[1].split()[0] == "1", (out, r.stderr)
    assert _errors(r.stderr) == [f"mrcctl: error: {d}/network.json: cannot write the network state file ({fault}); "
                                 "free space on its filesystem or make it writable, then run the command again"]
    assert "network.tmp" not in out.split("== files")[1].split("== state")[0], out
    assert out.split("== state\n")[1] == saved  # as it was: nothing recorded down


@pytest.mark.parametrize("nonsense", ["{\"topology\": {\"parameters\": {\"planes\": 1", "[1, 2, 3]",
                                      "{\"topology\": {\"parameters\": {}}, \"switches\": 7}"])
def test_a_state_file_edited_into_nonsense_is_one_error_line(nonsense: str, tmp_path: Path) -> None:
    state = _state(tmp_path)
    state.write_text(nonsense)
    for argv in (["links"], ["fail", LINK], ["install", "--dry-run"]):
        r = subprocess.run([str(MRCCTL), *argv], cwd=REPO, capture_output=True, text=True, timeout=60,
                           env={"MRC_P4_RUN_DIR": str(tmp_path), "PATH": "/usr/bin:/bin"})
        assert r.returncode == 1, (argv, r.stdout, r.stderr)
        lines = _errors(r.stderr)
        assert len(lines) == 1 and lines[0].startswith(f"mrcctl: error: {state}: damaged network state file ("), \
            (argv, r.stderr)
        assert lines[0].endswith("restart the network or delete the file"), lines
        assert state.read_text() == nonsense  # left alone
        assert sorted(p.name for p in tmp_path.iterdir()) == ["network.json"]


def test_a_network_started_on_a_full_run_directory_stops_with_one_error_and_leaves_nothing(tmp_path: Path) -> None:
    d = tmp_path / "run"
    d.mkdir()
    prefix = private_prefix()
    shape = " ".join(f"--{k.replace('_', '-')} {v}" for k, v in SHAPE.items())
    try:
        r = _in_mount_ns(f"""
            d={d}
            mount -t tmpfs -o size=64k tmpfs $d
            dd if=/dev/zero of=$d/fill bs=4k 2>/dev/null || true
            {sys.executable} -m topologies.run {shape} --prefix {prefix} --grpc-base 0 --run-dir $d --no-demo \\
                --no-cli --target embedded; echo "exit $?"
            rm -f $d/fill
            echo "== files"; ls $d
            """, timeout=180)
        out = r.stdout
        assert out.split("exit ")[1].split()[0] == "1", (out, r.stderr)
        errors = [line for line in r.stderr.splitlines() if line.startswith("error:")]
        assert len(errors) == 1 and "No space left on device" in errors[0], r.stderr
        assert str(d) in errors[0], errors
        assert out.split("== files")[1].split() == [], out  # nothing half-written
    finally:
        assert_nothing_left(prefix, d)
