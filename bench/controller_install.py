"""The controller's install rate into embedded-target P4Runtime servers.

``p4target run`` NIC switches (each on one veth in a private namespace
``p4t-bench-...``), a topology whose NICs each get about 16,300 entries (1 plane, 4
leaves, 64 hosts per leaf, 64 EXPLICIT EVs: 255 destinations x 64 EVs). Two rounds,
one switch and four switches written in parallel, each with two figures from the
same run, summed over the switches, in each of ``--repeat`` repetitions on freshly
started switches (other work on the machine moves single figures a lot; the
medians and every repetition's ratio are printed):

- server-side: the same entries, encoded beforehand, written in batches of 1,000
  (what the servers can take from this client);
- controller: ``Reconciler.run`` on as many other switches, started with nic.p4 loaded as
  a Mininet network starts them (pipeline check, encode, read, diff, write), the way
  ``mrcctl install`` does it.

Targets: controller >= 20,000 entries/s summed over the switches and >=
0.8x "the server-side rate of bench/p4runtime_rate.py measured in the same run":
that script's batch-1000 write rate into one server (another program: one
exact-match table) is measured at the end and each round's controller rate printed
against it. The same-entries ratio above is stricter (a NIC entry costs the server
more than that table's, and four servers share the cores with the client) and is
printed as the first figure. Needs root (namespaces). Prints only; never asserts.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from statistics import median

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from controller.codec import codec  # noqa: E402
from fabric.entries import entries_of, nodes  # noqa: E402
from controller.network_state import default_inventory  # noqa: E402
from controller.p4rt import Session  # noqa: E402
from controller.pipeline import pipeline  # noqa: E402
from controller.reconcile import BATCH, Reconciler  # noqa: E402
from fabric.topology import from_parameters  # noqa: E402

P4TARGET = REPO / ".venv" / "bin" / "p4target"


def free_base(count: int) -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return min(s.getsockname()[1], 60000 - count)


async def raw_write(targets, wanted) -> float:
    """Seconds to write pre-encoded updates to every target (in parallel): the
    requests are serialised before the clock starts, so the client does nothing
    but hand bytes to gRPC while it runs."""
    async def prep(t):
        s = Session(t)
        await s.open()
        await s.set_pipeline(pipeline(t.program))
        c = codec(t.program)
        es = [c.canonical(e) for e in wanted[t.name]]
        return s, [[c.updates("insert", es[k:k + BATCH])] for k in range(0, len(es), BATCH)]

    ready = await asyncio.gather(*(prep(t) for t in targets))

    async def push(s, batches):
        for b in batches:
            await s.write_updates(b)

    t0 = time.perf_counter()
    await asyncio.gather(*(push(s, b) for s, b in ready))
    dt = time.perf_counter() - t0
    await asyncio.gather(*(s.close() for s, _ in ready))
    return dt


ROUNDS = ((1, "1 switch: the client on one core, the server on the other, as in bench/p4runtime_rate.py"),
          (4, "4 switches in parallel: 4 servers and the client share the 2 cores"))


@dataclass
class Figure:
    """One round of one repetition: both rates, from the same switches' start."""

    raw_rate: float
    ctl_rate: float
    ctl_seconds: float
    ctl_cpu: float  # this process's CPU seconds during the controller's run
    ctl_entries: int

    @property
    def ratio(self) -> float:
        return self.ctl_rate / self.raw_rate

    @property
    def cpu_us(self) -> float:
        return 1e6 * self.ctl_cpu / self.ctl_entries


@contextmanager
def switches(topo, nics, inv, ctl_names: set[str]) -> Iterator[None]:
    """Start one ``p4target run`` per NIC (on a veth of a private namespace); those of
    ``ctl_names`` with nic.p4 loaded, as a Mininet network starts them, the others empty."""
    ns = f"p4t-bench-{uuid.uuid4().hex[:6]}"
    subprocess.run(["ip", "netns", "add", ns], check=True)
    procs = []
    try:
        for k, n in enumerate(nics):
            dev = f"p4tbd{k}a"
            subprocess.run(["ip", "-n", ns, "link", "add", dev, "type", "veth", "peer", "name", f"p4tbd{k}b"],
                           check=True)
            subprocess.run(["ip", "-n", ns, "link", "set", dev, "up"], check=True)
            t = inv.switches[n.name]
            program = [str(REPO / "p4src" / "nic.p4")] if n.name in ctl_names else ["--no-p4"]
            procs.append(subprocess.Popen([str(P4TARGET), "run", *program, "--netns", ns, "-i", f"0@{dev}",
                                           "--grpc-addr", t.address, "--device-id", str(t.device_id)],
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        for n in nics:
            host, port = inv.switches[n.name].address.rsplit(":", 1)
            for _ in range(600):
                try:
                    socket.create_connection((host, int(port)), timeout=0.2).close()
                    break
                except OSError:
                    time.sleep(0.1)
        yield
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait()
        subprocess.run(["ip", "netns", "del", ns], check=False)


def p4runtime_rate_batch1000(rounds: int = 3) -> list[float]:
    """bench/p4runtime_rate.py's batch-1000 write rate (one exact-match table), for reference."""
    import tempfile

    sys.path.insert(0, str(REPO / "bench"))
    import p4runtime_rate as R

    with tempfile.TemporaryDirectory(prefix="p4t-bench-") as tmp:
        server = R.start_embedded(Path(tmp), "auto")  # placed as p4target run places it
        try:
            side = R.Side(server)
            try:
                for _ in range(rounds):
                    side.batches()
                return side.figures.batch1000
            finally:
                side.close()
        finally:
            server.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3, help="repetitions, each on freshly started switches")
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("controller install rate: skipped (needs root for the switches' namespace)")
        return
    topo = from_parameters(name="bench", planes=1, spines=1, leaves=4, hosts_per_leaf=64, evs_per_nic=64)
    # Per round: n empty switches for the raw writes, n started with nic.p4 for the controller.
    count = sum(2 * n for n, _ in ROUNDS)
    nics = [n for n in nodes(topo) if n.program == "nic"][:count]
    inv = default_inventory(topo, {"parameters": {}}, base_port=free_base(len(nodes(topo))))
    groups, k = [], 0
    for n, _ in ROUNDS:
        groups.append((nics[k:k + n], nics[k + n:k + 2 * n]))
        k += 2 * n
    ctl_names = {x.name for _, ctl in groups for x in ctl}
    wanted = {n.name: entries_of(topo, n) for n in nics}
    figures: dict[int, list[Figure]] = {n: [] for n, _ in ROUNDS}
    print(f"controller install rate (NIC switches of ~16,300 entries each, batches of {BATCH}, "
          f"{args.repeat} repetitions on freshly started switches):")
    for rep in range(args.repeat):
        with switches(topo, nics, inv, ctl_names):
            for (n, _), (raw_nodes, ctl_nodes) in zip(ROUNDS, groups, strict=False):
                raw_targets = [inv.switches[x.name] for x in raw_nodes]
                ctl_targets = [inv.switches[x.name] for x in ctl_nodes]
                raw_n = sum(len(wanted[t.name]) for t in raw_targets)
                raw_s = asyncio.run(raw_write(raw_targets, wanted))
                cpu0 = time.process_time()
                run = Reconciler(ctl_targets).run({t.name: wanted[t.name] for t in ctl_targets})
                result = asyncio.run(run)
                ctl_cpu = time.process_time() - cpu0
                if result.failed:
                    print(f"controller install rate: FAILED: {result.failed[0].error}")
                    sys.exit(1)
                f = Figure(raw_n / raw_s, result.writes / result.seconds, result.seconds, ctl_cpu, result.writes)
                figures[n].append(f)
                print(f"  repetition {rep + 1}, {n} switch{'es' if n > 1 else ''}: server-side {f.raw_rate:,.0f}, "
                      f"controller {f.ctl_rate:,.0f} entries/s ({f.ctl_seconds:.2f} s, {f.cpu_us:.1f} us of this "
                      f"process's CPU per entry): ratio {f.ratio:.2f}")
    for n, what in ROUNDS:
        fs = figures[n]
        print(f"  {what} (median of {len(fs)}):")
        print(f"    server-side (pre-encoded writes): {median(f.raw_rate for f in fs):,.0f} entries/s")
        print(f"    controller (Reconciler: pipeline check, encode, read, diff, write): "
              f"{median(f.ctl_rate for f in fs):,.0f} entries/s (target >= 20,000), "
              f"{median(f.cpu_us for f in fs):.1f} us of this process's CPU per entry")
        print(f"    ratio controller / server-side: {median(f.ratio for f in fs):.2f} "
              f"(each repetition: {', '.join(f'{f.ratio:.2f}' for f in fs)}; target >= 0.8)")
    ref = p4runtime_rate_batch1000()
    best = max(ref)
    print(f"  the reference, bench/p4runtime_rate.py's batch-1000 writes into one server (one "
          f"exact-match table, another program): {min(ref):,.0f}-{best:,.0f} entries/s over {len(ref)} rounds")
    for n, _ in ROUNDS:
        rate = median(f.ctl_rate for f in figures[n])
        print(f"    controller, {n} switch{'es' if n > 1 else ''} (summed): {rate / best:.2f}x its best round "
              f"(target >= 0.8x; the stricter same-entries ratio is above)")


if __name__ == "__main__":
    main()
