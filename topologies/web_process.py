"""The web view of a running network as a process of its own, for `make run`.

Why a process: `mrcctl web` reads every switch's counters each second; in its own
process that work never holds up the demo's transfer, and the network runner needs
nothing of the web view's code (it starts the command a person would). Its log goes
to ``<run dir>/web.log``; a view that cannot start is one line, and the network runs
on without it.
"""

from __future__ import annotations

import ctypes
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

DEFAULT_PORT = 8790  # mrcctl web's default
LOG_NAME = "web.log"
START_TIMEOUT = 30.0


def free(port: int, host: str = "127.0.0.1") -> bool:
    """Can a server listen on ``host``:``port`` now?"""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


PR_SET_PDEATHSIG = 1  # prctl(2): the signal a process gets when its parent ends


def _end_with_parent() -> Callable[[], None]:
    """What the child runs before the command: SIGTERM to it when this process ends.
    The C function is looked up here, before the fork, so the child only calls it."""
    prctl = ctypes.CDLL(None, use_errno=True).prctl

    def child() -> None:
        prctl(PR_SET_PDEATHSIG, signal.SIGTERM)

    return child


@contextmanager
def web_view(state: Path, say: Callable[[str], None], port: int = DEFAULT_PORT) -> Iterator[str | None]:
    """`mrcctl --state STATE web` while the block runs; its URL (None: it did not
    start, and ``say`` told why). Another view on ``port`` already: any free port."""
    if not free(port):
        port = 0
    log = state.parent / LOG_NAME
    cmd = [sys.executable, "-m", "controller.cli", "--state", str(state), "web", "--port", str(port)]
    with log.open("w") as err:
        # its own session: a Ctrl-C in the Mininet CLI is not for it; and it ends with
        # this process even when this one is killed outright
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, stdin=subprocess.DEVNULL, text=True,
                                env={**os.environ, "MRC_P4_RUN_DIR": str(state.parent)}, start_new_session=True,
                                preexec_fn=_end_with_parent())
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        url = line.split()[1] if line.startswith("web: http") else None
        if url is None:
            proc.wait(timeout=START_TIMEOUT)
            tail = log.read_text().strip().splitlines()[-1:] or ["no message"]
            say(f"web: the live view did not start ({tail[0]}); the network runs without it")
        else:
            say(f"web: live view at {url} (its metrics at {url}metrics; no login: this machine only)")
        yield url
    finally:
        stop(proc)


def stop(proc: subprocess.Popen[str]) -> None:
    """Stop a web view's process as a person does (Ctrl-C), killed if it takes more than 10 s."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
