"""experiments/start_together.py on loopback: real mrc-send and mrc-recv processes,
the senders held at the barrier until the parent releases them.

Asserted: while held, no sender has sent anything (no receiver has a connection
report, no sender report exists); once released, every transfer is verified with
the bytes the test expects, and every sender's own start (``started_at_unix`` in its
report) is after the release (the ``go`` file's time). Bad launcher arguments exit
with one message naming the fix. No network namespace: no lock needed.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

from experiments.start_together import Barrier
from topologies.transfer import udp_listening

BIN = Path(sys.executable).parent
RNG = random.Random(os.getpid() ^ int(time.time()))
REPO = Path(__file__).resolve().parents[2]


def test_senders_wait_for_the_release_then_all_deliver(tmp_path: Path) -> None:
    a, b = RNG.randrange(1, 250), RNG.randrange(1, 250)
    rx, sx = f"127.{a}.{b}.1", f"127.{a}.{b}.2"
    ports = [RNG.randrange(20000, 60000) + k for k in range(2)]
    barrier = Barrier(tmp_path / "barrier", parties=2, timeout=60)
    recvs, sends = [], []
    for k, port in enumerate(ports):
        recvs.append(subprocess.Popen([str(BIN / "mrc-recv"), "--listen", rx, "--port", str(port), "--linger", "0.2",
                                       "--timeout", "60", "--report", str(tmp_path / f"r{k}.json"),
                                       "--out", str(tmp_path / f"out{k}")], stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, cwd=REPO))
    for k, port in enumerate(ports):
        sends.append(subprocess.Popen([*barrier.launcher(), str(BIN / "mrc-send"), "--to", rx, "--bind", sx,
                                       "--port", str(port), "--bytes", "60000", "--seed", str(k + 1),
                                       "--ev-list", f"{30000 + 16 * k}-{30015 + 16 * k}",
                                       "--report", str(tmp_path / f"s{k}.json"), "--quiet"],
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO))
    try:
        deadline = time.monotonic() + 60
        while barrier.ready() < 2:  # both imported the sender and wait
            assert time.monotonic() < deadline and all(p.poll() is None for p in sends)
            time.sleep(0.05)
        time.sleep(0.5)  # held: half a second in which a released sender would have finished its OPEN
        assert all(p.poll() is None for p in sends)
        assert not any((tmp_path / f"s{k}.json").exists() for k in range(2))
        assert barrier.release() >= 0
        go = (tmp_path / "barrier" / "go").stat().st_mtime
        codes = [p.wait(timeout=60) for p in [*sends, *recvs]]
    finally:
        for p in [*sends, *recvs]:
            if p.poll() is None:
                p.kill()
                p.wait()
    assert codes == [0, 0, 0, 0], [p.stderr.read() for p in [*sends, *recvs] if p.stderr]  # type: ignore[union-attr]
    for k in range(2):
        assert (tmp_path / f"out{k}").read_bytes() == random.Random(k + 1).randbytes(60000)
        rep = json.loads((tmp_path / f"s{k}.json").read_text())
        assert rep["ok"] and rep["started_at_unix"] >= go - 0.01  # file times: 10 ms granularity at worst


def test_release_gives_up_with_a_message_when_a_sender_never_comes(tmp_path: Path) -> None:
    barrier = Barrier(tmp_path / "b", parties=1, timeout=0.2)
    barrier.launcher()
    try:
        barrier.release()
    except RuntimeError as exc:
        assert "0 of 1 senders ready" in str(exc)
    else:
        raise AssertionError("release returned without its sender")
    assert not (tmp_path / "b" / "go").exists()


def test_bad_launcher_arguments_exit_with_the_fix(tmp_path: Path) -> None:
    (tmp_path / "b").mkdir()
    cases = [
        ([], "no '--'"),
        (["--barrier", str(tmp_path / "b"), "--", "ls"], "must be mrc-send"),
        (["--barrier", str(tmp_path / "none"), "--", "mrc-send"], "no such directory"),
        (["--barrier", str(tmp_path / "b"), "--timeout", "soon", "--", "mrc-send"], "not a number"),
        (["--wait", "1", "--", "mrc-send"], "bad options"),
    ]
    for args, said in cases:
        p = subprocess.run([sys.executable, "-m", "experiments.start_together", *args], capture_output=True,
                           text=True, cwd=REPO, timeout=60)
        assert p.returncode != 0 and said in p.stderr and "Traceback" not in p.stderr, (args, p.stderr)


def test_udp_listening_reads_the_local_port_of_proc_net() -> None:
    text = ("  sl  local_address                         remote_address                        st\n"
            "   5: 00000000000000000000000000000000:12B7 00000000000000000000000000000000:0000 07\n")
    assert udp_listening(text, 4791)
    assert not udp_listening(text, 4792)
    assert not udp_listening(text.replace(":12B7 ", ":0000 "), 4791)


def _launch(args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "experiments.start_together", *args], capture_output=True,
                          text=True, cwd=REPO, timeout=20)


def test_a_timeout_that_never_ends_or_never_waits_is_refused(tmp_path: Path) -> None:
    usage = "usage: python -m experiments.start_together --barrier DIR [--timeout S] -- mrc-send ARGS..."
    for value, shown in [("nan", "nan"), ("inf", "inf"), ("0", "0"), ("-1", "-1"), ("1e300", "1e+300")]:
        # nan and inf waited for ever
        p = _launch(["--barrier", str(tmp_path), "--timeout", value, "--", "mrc-send", "--to", "::1"])
        assert (p.returncode, p.stderr.splitlines()) == (1, [
            f"error: --timeout {shown}: give a number of seconds more than 0 and at most 86400 (a day)", usage]), p.stderr
    assert not list(tmp_path.iterdir())  # no sender said it was ready


def test_a_barrier_directory_it_cannot_write_is_one_line() -> None:
    p = _launch(["--barrier", "/proc", "--timeout", "1", "--", "mrc-send"])
    assert (p.returncode, p.stderr.splitlines()) == (1, [
        "error: --barrier /proc: cannot write a file there (No such file or directory); give the directory the "
        "experiment made"]), p.stderr


def test_the_senders_usage_errors_name_mrc_send(tmp_path: Path) -> None:
    (tmp_path / "go").touch()  # released at once
    p = _launch(["--barrier", str(tmp_path), "--timeout", "5", "--", str(BIN / "mrc-send"), "--bogus"])
    assert p.returncode == 2 and p.stderr.splitlines() == [
        "error: No such option: --bogus (Possible options: --gso, --no-gso, --verbose) (see mrc-send --help)"], p.stderr
