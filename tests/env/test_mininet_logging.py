"""Importing the Mininet package leaves the other loggers alone.

Mininet's log module makes every logger created after it a ``MininetLogger`` with a
console handler of its own and a fixed level; ``topologies`` puts the standard class
back. Each check runs in a fresh interpreter (the import order is the point); the
same script with Mininet imported directly shows what the check catches.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

SCRIPT = """
import json, logging, sys
{first}
from p4target.compiler import fastgen
records = []
class Keep(logging.Handler):
    def emit(self, record):
        records.append(record.levelname)
root = logging.getLogger()
root.addHandler(Keep())
root.setLevel(logging.DEBUG)
fastgen.log.debug("a debug line")
made_after = logging.getLogger("a.logger.made.after.mininet")
print(json.dumps({{"class": type(made_after).__name__, "handlers": len(made_after.handlers),
                  "level": made_after.level, "records": records,
                  "mininet": type(logging.getLogger("mininet")).__name__}}))
"""


def _run(first: str) -> dict[str, object]:
    out = subprocess.run([sys.executable, "-c", SCRIPT.format(first=first)], cwd=REPO,
                         capture_output=True, text=True, timeout=60, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_logger_made_after_the_mininet_package_is_a_standard_one() -> None:
    got = _run("import topologies.p4switch, topologies.cluster, mininet.net")
    assert got == {"class": "Logger", "handlers": 0, "level": 0, "records": ["DEBUG"],
                   "mininet": "MininetLogger"}


def test_mininet_imported_directly_is_what_the_package_prevents() -> None:
    got = _run("import mininet.net")
    assert got["class"] == "MininetLogger" and got["handlers"] == 1 and got["level"] != 0
