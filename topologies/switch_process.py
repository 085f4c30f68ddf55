"""Start and stop one switch process: what a single switch node and a process holding
several switches (topologies/switch_group.py) do alike.

Why one place: both start their process in a session of its own (so a signal reaches
everything it started), log to a file that begins with what was started, carry the
node mark cleanup finds (topologies/node_marks.py), and stop with SIGTERM, then
SIGKILL after a grace period.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
from collections.abc import Sequence
from pathlib import Path

from topologies.node_marks import NODE_ENV

log = logging.getLogger(__name__)

REPO = Path(__file__).resolve().parents[1]


def spawn(cmd: Sequence[str], log_path: Path, title: str, node: str) -> subprocess.Popen[bytes]:
    """Start ``cmd`` (from the repository, in a new session, marked as node ``node``)
    with its output in ``log_path``, which first says ``title`` and the command."""
    env = dict(os.environ, **{NODE_ENV: node})
    with open(log_path, "wb") as logf:
        logf.write(f"# {title}\n# {' '.join(cmd)}\n".encode())
        logf.flush()
        return subprocess.Popen(list(cmd), stdin=subprocess.DEVNULL, stdout=logf, stderr=subprocess.STDOUT,
                                env=env, cwd=REPO, start_new_session=True)


def signal_stop(proc: subprocess.Popen[bytes] | None) -> None:
    """SIGTERM to the process's session, if it is still running."""
    if proc is not None and proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass


def reap(proc: subprocess.Popen[bytes], grace: float, who: str) -> None:
    """Wait for a signalled process; SIGKILL its session after ``grace`` seconds."""
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        log.warning("%s: no exit %.0f s after SIGTERM, killing it", who, grace)
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(timeout=grace)
