"""`make run` and Mininet's own command line, end to end, as a person runs them.

`make run` with no shape runs the default fabric (4 planes x (2 leaves + 2 spines),
2 hosts per leaf: 20 P4 switches), so this is also the test of the default fabric:
with no terminal it must print the summary and exit 0. It runs once per target
(embedded; BMv2 when on the PATH), each asserting from the state file which target
ran, and reading every table itself while the demo's cable is cut. Each run gets a
private node prefix, run directory and free gRPC ports, and nothing of them may be
left after.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.mininet.net_prefix import assert_nothing_left, private_prefix
from tests.observe import CutWatch, Tables, read_tables

pytestmark = pytest.mark.root

REPO = Path(__file__).resolve().parents[2]
DEMO_CUT = "p0-leaf0:p0-spine0"  # the cable the demo cuts half-way through its transfer
MN_WITHOUT_GLOBAL_CLEANUP = (
    "import runpy, sys, mininet.clean; mininet.clean.cleanup = lambda: None; "
    "sys.argv = ['mn'] + sys.argv[1:]; runpy.run_path('/usr/bin/mn', run_name='__main__')")


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")}


def _watched_make_run(tmp_path: Path, prefix: str, target: str) -> tuple[subprocess.CompletedProcess[str], Any,
                                                                         Tables, CutWatch]:
    """`make run` of the default fabric on ``target``, with the test's own eyes: once it
    says it is ready, the state file as it is then, every table of every switch read,
    and a ``CutWatch`` on the demo's cable (p0-leaf0:p0-spine0). The run's result
    (stdout whole), the state, the tables before, the watch."""
    from controller.network_state import load

    err = tmp_path / "stderr"
    argv = ["make", "--no-print-directory", "run", f"RUN_DIR={tmp_path}",
            f"RUN_ARGS=--prefix {prefix} --grpc-base 0 --bytes 1000000 --target {target}"]
    with err.open("w") as stderr:
        proc = subprocess.Popen(argv, cwd=REPO, env=_env(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=stderr, text=True)
        try:
            head = []
            for line in proc.stdout:  # type: ignore[union-attr]  # a pipe was asked for
                head.append(line)
                if line.startswith("ready:"):
                    break
            assert head and head[-1].startswith("ready:"), "".join(head) + err.read_text()
            state = load(tmp_path / "network.json")
            before = read_tables(state.switches)
            watch = CutWatch(state.switches, state.links[DEMO_CUT]).start()
            rest, _ = proc.communicate(timeout=240)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    watch.join()
    return subprocess.CompletedProcess(argv, proc.returncode, "".join(head) + rest, err.read_text()), state, \
        before, watch


@pytest.mark.parametrize("target", ["embedded", pytest.param("bmv2", marks=pytest.mark.bmv2)])
def test_make_run_runs_the_default_fabric_and_exits_0_without_a_terminal(target: str, tmp_path: Path) -> None:
    prefix = private_prefix()
    try:
        res, state, before, watch = _watched_make_run(tmp_path, prefix, target)
        out = res.stdout
        assert res.returncode == 0, out + res.stderr
        # which target ran, as the network's state file said while it ran: every switch
        assert {(t.target, t.program) for t in state.switches.values()} == {(target, "fabric"), (target, "nic")}
        assert len(state.switches) == 20
        assert "network: default: 4 planes x (2 leaves + 2 spines), 4 hosts" in out
        assert f"20 P4 switches ({target} target)" in out
        assert re.search(r"^web: live view at http://127\.0\.0\.1:\d+/ ", out, re.M), out  # docs/web.md
        assert re.search(r"hosts 4, switches 8 leaves \+ 8 spines \+ 4 NICs, entries installed \d+, "
                         r"seconds to ready [\d.]+", out), out
        for row in ("h1         -    2/2    2/2    2/2", "h4       2/2    2/2    2/2      -"):
            assert row in out, out
        split = re.search(r"before the cut: plane 0: (\d+) .*, plane 1: (\d+) .*, plane 2: (\d+) .*, "
                          r"plane 3: (\d+) ", out)
        assert split, out
        per_plane = [int(x) for x in split.groups()]
        # EV k is on plane k mod 4 and the sender sprays its GOOD EVs round robin: an
        # even split, give or take the retransmissions of the moment
        mean = sum(per_plane) / 4
        assert min(per_plane) > 0 and all(abs(n - mean) <= 0.2 * mean + 2 for n in per_plane), per_plane
        assert "MRC-lite transfer h1 -> h3: 1,000,000 bytes, every byte verified (SHA-256)" in out
        # every path's packets, counted at the spines: 8 paths (4 planes x 2 spines), all used
        # (the cut comes half-way); each of the 1,000 data packets (1,000,000 bytes in
        # 1,000-byte payloads) crossed a spine at least once to be delivered
        assert "  paths h1 -> h3: 8 of 8 paths carried packets (counted at the spines" in out, out
        rows = re.findall(r"^ +plane (\d): (\d+) (\d+) \(spines 0-1\)$", out, re.M)
        assert [int(p) for p, _, _ in rows] == [0, 1, 2, 3], out
        on_paths = [int(n) for _, a, b in rows for n in (a, b)]
        assert min(on_paths) > 0 and sum(on_paths) >= 1000, on_paths
        # the demo says the fabric tables did not change; the test read them itself,
        # every switch's, before and all through the cut
        assert f"cutting {DEMO_CUT} half-way" in out, out
        watch.check(before)
        assert "result: OK" in out
        assert not (tmp_path / "network.json").exists()
    finally:
        assert_nothing_left(prefix, tmp_path)


def test_make_run_refuses_a_bad_shape_in_one_line(tmp_path: Path) -> None:
    res = subprocess.run(["make", "--no-print-directory", "run", f"RUN_DIR={tmp_path}",
                          "RUN_ARGS=--planes 9 --no-cli"], cwd=REPO, env=_env(), stdin=subprocess.DEVNULL,
                         capture_output=True, text=True, timeout=120)
    assert res.returncode != 0
    errors = [line for line in res.stderr.splitlines() if line.startswith("error:")]
    assert errors and "--planes" in errors[0] and "8" in errors[0], res.stderr


def test_mininet_command_line_with_the_custom_file(tmp_path: Path) -> None:
    """`mn --custom topologies/mn_custom.py --topo mrcclos,... --switch p4embedded`, driven through its CLI.

    `mn` runs Mininet's global cleanup (`mn -c`: every Mininet node and `*-ethN` link on
    the machine) when anything raises; the test runs it with that cleanup switched off
    so a failure here never touches another run's network (ours is removed by
    tools/cleanup.py's prefix below)."""
    prefix = private_prefix()
    script = (f"install\npingmatrix\npaths h1 h2\nsh kill -9 $(cat {tmp_path}/{prefix}p1s0.pid); sleep 0.5\n"
              "links\nexit\n")
    try:
        res = subprocess.run(
            [str(REPO / ".venv" / "bin" / "python"), "-c", MN_WITHOUT_GLOBAL_CLEANUP, "--custom",
             "topologies/mn_custom.py",
             "--topo", f"mrcclos,planes=2,spines=1,leaves=2,hosts=1,prefix={prefix},grpc_base=0",
             "--switch", "p4embedded", "--controller", "none"],
            cwd=REPO, env=dict(_env(), MRC_P4_RUN_DIR=str(tmp_path)), input=script, capture_output=True,
            text=True, timeout=120)
        out = res.stdout + res.stderr
        assert res.returncode == 0, out
        # 212 forwarding entries + one ecn_config entry per switch port: 2 planes x
        # (2 leaves x (1 spine + 1 host port) + 1 spine x 2 leaf ports) = 12, + two
        # trim_class entries (DSCP 0, the trim mark 62) per fabric switch: 2 x 3 x 2 = 12
        assert "8 switches, 236 entries wanted, 236 written" in out, out
        assert "h1         -    2/2" in out and "h2       2/2      -" in out, out
        assert "plane 0: nic1 -> p0-leaf0 -> p0-spine0 -> p0-leaf1 -> nic2  up  32 EVs" in out, out
        # a switch killed behind the CLI's back is reported before the next command, with its log
        assert f"warning: switch p1-spine0 ({prefix}p1s0, embedded" in out, out
        assert "was killed by SIGKILL while running; restart it (the CLI's `restart p1-spine0`) and run " \
            "`mrcctl install`; last lines of" in out, out
        assert out.count("warning: switch") == 1, "reported once"
        assert not (tmp_path / "network.json").exists()
    finally:
        assert_nothing_left(prefix, tmp_path)
