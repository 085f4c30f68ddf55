"""What a cable cut and a restore cost, on one machine and on a namespace cluster.

The link-failure experiment cuts a spine link's cable and restores it while a
transfer runs (controller/cable_cuts.py ``set_cable``: both ends' interfaces down, then
up). Each end's command runs where the end is; on a cluster that is another server.
This times one cable's cut and restore three ways, each 10 times with the fabric
idle and 6 times during a transfer h1 -> h3 (24 MB at 4,000 packets/s):

- **processes, one end after the other**: each end a process here (``nsenter``, or
  ``ssh`` to the end's server over its shared connection), started and waited for in
  turn (how ``set_cable`` did it before);
- **processes, both at once**: both started, then both waited for (``set_cable``
  without the nodes, as ``mrcctl fail`` does it);
- **node shells, both at once**: each end's command in its Mininet node's shell,
  already open there (``set_cable`` with the nodes, as the experiment does it).

The cable is ``p0-leaf0:p0-spine0``; on the cluster (tools/ns_cluster.py, made for
the run when there is none: plane p on server p+1, plane 3 here, and p0-spine0 on
the second server) its ends are on two servers. Needs root, Mininet and sshd.
Prints only; never asserts.
"""

from __future__ import annotations

import os
import random
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

LINK = "p0-leaf0:p0-spine0"
IDLE_ROUNDS = 5  # each a cut and a restore
BUSY_ROUNDS = 3
TRANSFER_BYTES = 24_000_000


def _one_after_the_other(ends: Any, up: bool) -> None:
    from controller import cable_cuts

    for pid, intf, server in ((ends.a_pid, ends.a_intf, ends.a_server), (ends.b_pid, ends.b_intf, ends.b_server)):
        failure = cable_cuts._EndCommand(pid, intf, up, False, server).wait()
        if failure:
            raise RuntimeError(failure)


def _ways(fn: Any) -> dict[str, Callable[[Any, bool], object]]:
    from controller.cable_cuts import set_cable

    return {"processes, one end after the other": _one_after_the_other,
            "processes, both at once": lambda ends, up: set_cable(ends, up),
            "node shells, both at once": lambda ends, up: set_cable(ends, up, nodes=fn.net.nameToNode)}


def _time(fn: Any, tag: str, rounds: int) -> None:
    ends = fn.inventory.links[LINK]
    for name, way in _ways(fn).items():
        took = []
        for _ in range(rounds):
            for up in (False, True):
                t = time.monotonic()
                way(ends, up)
                took.append(time.monotonic() - t)
            time.sleep(0.05)
        took.sort()
        print(f"{tag}: {name}: {len(took)} commands, min {took[0] * 1000:.0f} ms, median "
              f"{took[len(took) // 2] * 1000:.0f} ms, max {took[-1] * 1000:.0f} ms", flush=True)


def measure(label: str) -> None:
    from experiments import common as C

    with C.programmed_fabric(C.topology()) as fn:
        ends = fn.inventory.links[LINK]
        tag = f"cable cut [{label}]"
        print(f"{tag}: {LINK}: {ends.a_intf} on {ends.a_server or 'this machine'}, {ends.b_intf} on "
              f"{ends.b_server or 'this machine'}", flush=True)
        _time(fn, f"{tag} idle", IDLE_ROUNDS)
        with tempfile.TemporaryDirectory(prefix="mrc-bench-") as tmp:
            data = Path(tmp) / "data.bin"
            data.write_bytes(random.Random(1).randbytes(TRANSFER_BYTES))
            tr = C.Transfer(fn, "h1", "h3", TRANSFER_BYTES, Path(tmp), ["--rate", "4000", "--in", str(data)],
                            ["--bytes", str(TRANSFER_BYTES)])
            tr.start()
            try:
                time.sleep(0.5)
                _time(fn, f"{tag} during a transfer", BUSY_ROUNDS)
            finally:
                tr.kill()


def main() -> int:
    if os.geteuid() != 0:
        print("cable_cut: needs root (Mininet, namespaces); skipped")
        return 0
    from tools import ns_cluster
    from topologies.fabric_net import PLACEMENT_ENV, SERVERS_ENV

    if not Path(ns_cluster.SSHD).is_file():
        print("cable_cut: no sshd (apt-get install openssh-server); skipped")
        return 0
    measure("one machine")
    try:
        with ns_cluster.servers(3) as (s1, s2, s3), tempfile.TemporaryDirectory(prefix="mrc-bench-") as tmp:
            placement = Path(tmp) / "placement.yaml"
            placement.write_text(f"plane0: {s1}\nplane1: {s2}\nplane2: {s3}\nplane3: localhost\np0-spine0: {s2}\n")
            os.environ[SERVERS_ENV] = f"{s1},{s2},{s3},localhost"
            os.environ[PLACEMENT_ENV] = str(placement)
            measure("3 namespace servers")
    finally:
        os.environ.pop(SERVERS_ENV, None)
        os.environ.pop(PLACEMENT_ENV, None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
