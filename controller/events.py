"""The fabric's event collector and its log (docs/mrcctl.md, "Events").

Why one collector per network: every sender publishes its EV state changes
(endpoints/events.py) to ``<run dir>/events.sock``, a Unix datagram socket every
Mininet host reaches through the file system; the collector appends each, one JSON
object per line, to ``<run dir>/events.jsonl``, which ``mrcctl events``, ``locate``,
``guard`` and the browser view read. The guard's own actions go to the same file
(``kind: "guard"``). A datagram that is not a JSON object is counted and skipped.

``python -m controller.events RUN_DIR`` runs the collector until SIGTERM/SIGINT (the
Mininet network starts it, topologies/fabric_net.py).
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SOCKET_NAME = "events.sock"  # endpoints/events.py names the same files
LOG_NAME = "events.jsonl"
MAX_DATAGRAM = 65536
RCVBUF = 4 << 20


def socket_path(run_dir: Path) -> Path:
    return run_dir / SOCKET_NAME


def log_path(run_dir: Path) -> Path:
    return run_dir / LOG_NAME


def append(path: Path, record: Mapping[str, Any]) -> None:
    """Append one record as a line (one write: lines of concurrent writers never mix)."""
    line = json.dumps(dict(record), separators=(",", ":")) + "\n"
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


class Collector:
    """The socket and the log of one run directory."""

    def __init__(self, run_dir: Path) -> None:
        run_dir.mkdir(parents=True, exist_ok=True)
        self.sock_path = socket_path(run_dir)
        self.log = log_path(run_dir)
        self.sock_path.unlink(missing_ok=True)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        try:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RCVBUF)
        except OSError:
            pass
        self.sock.bind(str(self.sock_path))
        os.chmod(self.sock_path, 0o666)  # any process of the network may publish
        self.received = 0
        self.rejected = 0
        # a new network's log starts empty (the last one's stays readable until then)
        self._fd = os.open(self.log, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_TRUNC, 0o644)

    def take(self, data: bytes) -> None:
        """Store one datagram (a JSON object with ``t``), else count it as rejected."""
        try:
            event = json.loads(data)
        except ValueError:
            event = None
        if not isinstance(event, dict) or not isinstance(event.get("t"), (int, float)):
            self.rejected += 1
            return
        event.setdefault("received", time.time())
        os.write(self._fd, (json.dumps(event, separators=(",", ":")) + "\n").encode())
        self.received += 1

    def run(self, stop: Callable[[], bool], poll: float = 0.2) -> None:
        while not stop():
            ready, _, _ = select.select([self.sock], [], [], poll)
            if not ready:
                continue
            while True:
                try:
                    data = self.sock.recv(MAX_DATAGRAM, socket.MSG_DONTWAIT)
                except (BlockingIOError, InterruptedError):
                    break
                self.take(data)

    def close(self) -> None:
        self.sock.close()
        os.close(self._fd)
        self.sock_path.unlink(missing_ok=True)


# ---- reading the log ----------------------------------------------------------------


@dataclass(frozen=True)
class Filter:
    """Which records ``mrcctl events`` shows: since a unix time, of a host (as sender or
    peer), crossing a link, reaching a state; ``kind`` "ev", "guard" or None (both)."""

    since: float | None = None
    host: str | None = None
    link: str | None = None
    state: str | None = None
    kind: str | None = None

    def __call__(self, e: Mapping[str, Any]) -> bool:
        kind = e.get("kind", "ev")
        if self.kind is not None and kind != self.kind:
            return False
        if self.since is not None and float(e.get("t", 0.0)) < self.since:
            return False
        if self.host is not None and self.host not in (e.get("host"), e.get("peer")):
            return False
        links = e.get("links") or ([e["link"]] if "link" in e else [])
        if self.link is not None and not _same_link(self.link, links):
            return False
        return self.state is None or str(e.get("new", e.get("action", ""))).upper() == self.state.upper()


def _same_link(name: str, links: Iterable[str]) -> bool:
    ends = set(name.split(":"))
    return any(set(k.split(":")) == ends for k in links)


def parse(lines: Iterable[str]) -> Iterator[dict[str, Any]]:
    """The records of a log's lines (a damaged line, say half-written, is skipped)."""
    for line in lines:
        try:
            e = json.loads(line)
        except ValueError:
            continue
        if isinstance(e, dict):
            yield e


def read(path: Path, keep: Callable[[Mapping[str, Any]], bool] = lambda e: True) -> list[dict[str, Any]]:
    """Every record of the log at ``path`` that ``keep`` keeps ([] when there is none)."""
    try:
        with path.open() as f:
            return [e for e in parse(f) if keep(e)]
    except FileNotFoundError:
        return []


def follow(path: Path, keep: Callable[[Mapping[str, Any]], bool], poll: float = 0.2,
           stop: Callable[[], bool] = lambda: False) -> Iterator[dict[str, Any]]:
    """The records ``keep`` keeps, those already there then each new one as it comes."""
    while not path.exists() and not stop():
        time.sleep(poll)
    with path.open() as f:
        partial = ""
        while not stop():
            chunk = f.readline()
            if not chunk:
                time.sleep(poll)
                continue
            partial += chunk
            if not partial.endswith("\n"):
                continue
            for e in parse([partial]):
                if keep(e):
                    yield e
            partial = ""


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m controller.events RUN_DIR", file=sys.stderr)
        return 2
    stopping = False

    def stop(*_: Any) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        c = Collector(Path(args[0]))
    except OSError as exc:
        print(f"error: event collector: cannot listen on {socket_path(Path(args[0]))}: {exc.strerror}",
              file=sys.stderr)
        return 1
    try:
        c.run(lambda: stopping)
    finally:
        c.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
