"""Start several ``mrc-send`` processes at the same moment, after their start-up.

Why: an experiment that compares flows started "at once" (experiments/ecmp.py) starts
one Python process per sender, one after the other, on a machine with fewer cores
than processes. Each spends most of a second importing before its first packet, so
without a barrier the flows start up to a second apart: the first ones have the
links to themselves for a while and the last one finds them loaded, and the flows'
completion times then differ by the machine's scheduling, not by the network. Here
each sender is started as ``python -m experiments.start_together --barrier DIR --
mrc-send ARGS...``: it imports the sender, writes ``DIR/ready-<token>``, and waits
for ``DIR/go``; the experiment (``Barrier.release``) writes ``go`` once every
sender is ready and every receiver is listening, so the first packets of all flows
leave within a few milliseconds of each other.
"""

from __future__ import annotations

import secrets
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import typer

from cli_common.options import seconds
from cli_common.command import run_command
from topologies.transfer import BIN

POLL = 0.001  # seconds between looks at the barrier directory


@dataclass(frozen=True)
class Barrier:
    """The parent's side: the launcher for ``Transfer(launcher=...)`` and the release."""

    directory: Path
    parties: int
    timeout: float = 60.0

    def launcher(self) -> list[str]:
        self.directory.mkdir(parents=True, exist_ok=True)
        return [str(BIN / "python"), "-m", "experiments.start_together", "--barrier", str(self.directory),
                "--timeout", f"{self.timeout:g}", "--"]

    def ready(self) -> int:
        return len(list(self.directory.glob("ready-*")))

    def release(self, listening: Callable[[], bool] = lambda: True) -> float:
        """Wait until every party is ready and ``listening()`` holds (the receivers
        bound), then let them go; the seconds waited. RuntimeError after ``timeout``."""
        t0 = time.monotonic()
        while self.ready() < self.parties or not listening():
            if time.monotonic() - t0 > self.timeout:
                raise RuntimeError(f"start barrier {self.directory}: {self.ready()} of {self.parties} senders ready "
                                   f"(receivers listening: {listening()}) after {self.timeout:g} s")
            time.sleep(POLL * 10)
        (self.directory / "go").touch()
        return time.monotonic() - t0


def _wait(directory: Path, timeout: float) -> bool:
    try:
        (directory / f"ready-{secrets.token_hex(6)}").touch()
    except OSError as exc:
        raise SystemExit(f"error: --barrier {directory}: cannot write a file there ({exc.strerror}); give the "
                         "directory the experiment made") from None
    deadline = time.monotonic() + timeout
    while not (directory / "go").exists():
        if time.monotonic() > deadline:
            return False
        time.sleep(POLL)
    return True


def _parse(argv: Sequence[str]) -> tuple[Path, float, list[str]]:
    usage = "usage: python -m experiments.start_together --barrier DIR [--timeout S] -- mrc-send ARGS..."
    args = list(argv)
    if "--" not in args:
        raise SystemExit(f"error: no '--' before the sender's command\n{usage}")
    cut = args.index("--")
    opts, cmd = args[:cut], args[cut + 1:]
    values = dict(zip(opts[::2], opts[1::2], strict=False))
    if len(opts) % 2 or set(values) - {"--barrier", "--timeout"} or "--barrier" not in values:
        raise SystemExit(f"error: bad options before '--': {' '.join(opts)}\n{usage}")
    if not cmd or Path(cmd[0]).name != "mrc-send":
        raise SystemExit(f"error: the command after '--' must be mrc-send (it runs in this process), not "
                         f"{cmd[:1]}\n{usage}")
    try:
        timeout = seconds(values.get("--timeout", "60"))
    except typer.BadParameter as exc:
        raise SystemExit(f"error: --timeout {exc.message}\n{usage}") from None
    directory = Path(values["--barrier"])
    if not directory.is_dir():
        raise SystemExit(f"error: --barrier {directory}: no such directory (the experiment makes it)")
    return directory, timeout, cmd


def main(argv: Sequence[str] | None = None) -> int:
    directory, timeout, cmd = _parse(sys.argv[1:] if argv is None else argv)
    from endpoints.cli import send_app  # the start-up: before the barrier

    if not _wait(directory, timeout):
        print(f"error: start barrier {directory}: no 'go' within {timeout:g} s", file=sys.stderr)
        return 1
    return run_command(send_app, cmd[1:], prog=Path(cmd[0]).name)  # its usage errors name mrc-send


if __name__ == "__main__":
    raise SystemExit(main())
