"""mrc-workload's usage mistakes: one error line naming the option (or the matrix's
line) and exit status 2, before anything is started."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN / "mrc-workload"), *args], capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize(("args", "words"), [
    ((), "give the job as --collective"),
    (("--collective", "broadcast"), "one of allreduce"),
    (("--collective", "allreduce", "--matrix", "x.cm"), "one of them"),
    (("--collective", "allreduce", "--transport", "tcp"), "--transport 'tcp'"),
    (("--collective", "allreduce", "--hosts", "h1,h99"), "--hosts h1,h99"),
    (("--collective", "allreduce", "--nhosts", "9"), "the job has 9 nodes but 4 hosts"),
    (("--collective", "allreduce", "--cut", "p0-leaf0:p9-spine9"), "--cut no link"),
    (("--collective", "allreduce", "--queue-rate", "p0-leaf0:p0-spine0"), "LINK=PACKETS_PER_SECOND"),
    (("--collective", "allreduce", "--queue-rate", "nic1:p0-leaf0=100"), "leaf-spine link"),
    (("--collective", "allreduce", "--background", "h1:h1"), "--background 'h1:h1'"),
    (("--collective", "allreduce", "--iterations", "0"), "--iterations"),
])
def test_a_usage_mistake_is_one_line(args: tuple[str, ...], words: str) -> None:
    r = run(*args)
    assert r.returncode == 2, r.stderr
    assert r.stderr.count("\n") == 1 and r.stderr.startswith("error: ") and words in r.stderr, r.stderr


def test_a_malformed_matrix_names_its_line(tmp_path: Path) -> None:
    m = tmp_path / "bad.cm"
    m.write_text("Nodes 4\nConnections 1\n0->1 id 1 start 0 size ten\n")
    r = run("--matrix", str(m))
    assert r.returncode == 2
    assert r.stderr.startswith(f"error: {m}:3: size 'ten' is not a whole number") and r.stderr.count("\n") == 1


def test_a_matrix_larger_than_the_fabric(tmp_path: Path) -> None:
    m = tmp_path / "big.cm"
    m.write_text("Nodes 16\n0->15 id 1 start 0 size 10\n")
    r = run("--matrix", str(m))
    assert r.returncode == 2 and "the job has 16 nodes but 4 hosts" in r.stderr
