"""Where the P4Runtime server's threads run: ``cpu=`` / ``p4target run --cpu``.

The choice rule (``auto``: CPU number device id modulo the CPUs the process may use;
``any``: not pinned; a number: that CPU if the process may use it) is checked on
given CPU lists. Then real processes: a server started with a CPU has every thread
of its process (gRPC's own, the pool's, the stream reader, the packet I/O loop of
``p4target run``) on that CPU while it serves calls, and one started with ``any``
does not. The servers run in child processes so the test process is never pinned.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest
from finsy.proto.p4.v1 import p4runtime_pb2

from p4target.p4runtime.placement import PlacementError, parse_cpu, resolve_cpu
from tests.p4runtime.p4rt_client import RawClient

REPO = Path(__file__).resolve().parents[2]
CPUS = sorted(os.sched_getaffinity(0))
needs_two_cpus = pytest.mark.skipif(len(CPUS) < 2, reason="this process may use only one CPU")


# ---- the rule --------------------------------------------------------------------------


@pytest.mark.parametrize("text, want", [("auto", "auto"), ("any", "any"), (" AUTO ", "auto"), ("0", 0), ("13", 13)])
def test_parse_cpu_accepts(text: str, want: int | str) -> None:
    assert parse_cpu(text) == want


@pytest.mark.parametrize("text, says", [("x", "'x' is not a CPU: give a CPU number"), ("-1", "CPU numbers start at 0"),
                                        ("1.5", "is not a CPU"), ("", "is not a CPU")])
def test_parse_cpu_refuses(text: str, says: str) -> None:
    with pytest.raises(ValueError, match=re.escape(says)):
        parse_cpu(text)


def test_auto_spreads_consecutive_device_ids_over_the_allowed_cpus() -> None:
    assert [resolve_cpu("auto", d, [0, 1]) for d in (1, 2, 3, 4)] == [1, 0, 1, 0]
    assert [resolve_cpu("auto", d, [7, 2, 5]) for d in (0, 1, 2, 3)] == [2, 5, 7, 2]
    assert resolve_cpu("auto", 5, [3]) is None  # already on one CPU: left as it is


def test_any_none_and_numbers() -> None:
    assert resolve_cpu("any", 1, [0, 1]) is None
    assert resolve_cpu(None, 1, [0, 1]) is None
    assert resolve_cpu(1, 4, [0, 1]) == 1
    assert resolve_cpu(0, 3, [0, 1]) == 0


def test_a_cpu_the_process_may_not_use_is_refused_naming_those_it_may() -> None:
    with pytest.raises(PlacementError, match=r"^CPU 4 is not available to this process \(it may use CPU 0, 2\); "
                                             r"give one of those, 'auto' or 'any'$"):
        resolve_cpu(4, 0, [0, 2])
    with pytest.raises(PlacementError, match="is not a CPU number"):
        resolve_cpu("2", 0, [0, 2])


# ---- real processes ----------------------------------------------------------------------


def thread_cpus(pid: int) -> dict[int, set[int]]:
    """Each thread of ``pid`` -> the CPUs it may run on."""
    out = {}
    for t in os.listdir(f"/proc/{pid}/task"):
        try:
            out[int(t)] = os.sched_getaffinity(int(t))
        except ProcessLookupError:
            pass
    return out


SERVE = textwrap.dedent("""
    import sys
    from p4target.device import Device
    from p4target.p4runtime.server import P4RuntimeServer
    cpu = sys.argv[1]
    server = P4RuntimeServer(Device(device_id=1), "127.0.0.1:0", cpu=int(cpu) if cpu.isdigit() else cpu)
    server.start()
    print(server.bound_port, server.cpu, flush=True)
    sys.stdin.readline()
    server.stop()
""")


def serving(cpu: str) -> tuple[subprocess.Popen, int, str]:
    proc = subprocess.Popen([sys.executable, "-c", SERVE, cpu], cwd=REPO, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    port, chosen = proc.stdout.readline().split()
    return proc, int(port), chosen


def busy(port: int, device_id: int) -> RawClient:
    """A primary client that made calls: the stream reader and pool workers exist."""
    c = RawClient(port, device_id=device_id)
    c.arbitrate(1)
    c.stub.Capabilities(p4runtime_pb2.CapabilitiesRequest(), timeout=10)
    return c


@needs_two_cpus
def test_server_keeps_every_thread_of_its_process_on_the_cpu_asked_for() -> None:
    want = CPUS[-1]
    pinned, port, chosen = serving(str(want))
    loose, port2, chosen2 = serving("any")
    clients = []
    try:
        assert (chosen, chosen2) == (str(want), "None")
        clients = [busy(port, 1), busy(port2, 1)]
        threads = thread_cpus(pinned.pid)
        assert len(threads) >= 4  # main, the transport's loop, a pool worker, the stream reader
        assert {t: c for t, c in threads.items() if c != {want}} == {}
        others = thread_cpus(loose.pid)
        assert len(others) >= 4
        assert all(c == set(CPUS) for c in others.values())  # any: untouched
    finally:
        for c in clients:
            c.close()
        for p in (pinned, loose):
            p.communicate("\n", timeout=20)


def run_error(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "p4target", "run", "--no-p4", "-i", "1@p4t-none0", *args],
                          cwd=REPO, capture_output=True, text=True, timeout=60)


def test_run_refuses_a_cpu_it_may_not_use_in_one_line_before_opening_anything() -> None:
    bad = max(CPUS) + 64
    done = run_error("--cpu", str(bad))
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert lines == [f"p4target: error: --cpu {bad}: CPU {bad} is not available to this process "
                     f"(it may use CPU {', '.join(map(str, CPUS))}); give one of those, 'auto' or 'any'"]
    # the interface does not exist: the CPU was checked first, nothing was opened


@pytest.mark.parametrize("value, says", [("fast", "argument --cpu: 'fast' is not a CPU"),
                                         ("-2", "argument --cpu: '-2' is not a CPU: CPU numbers start at 0")])
def test_run_refuses_a_malformed_cpu_with_its_usage(value: str, says: str) -> None:
    done = run_error(f"--cpu={value}")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1].startswith(f"p4target run: error: {says}")


def test_run_refuses_cpu_without_the_server() -> None:
    done = subprocess.run([sys.executable, "-m", "p4target", "run", "x.p4", "--no-grpc", "-i", "1@p4t-none0",
                           "--cpu", "0"], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1] == ("p4target run: error: --cpu places the P4Runtime server's "
                                                    "threads; drop it with --no-grpc")


def ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True)


def start_run(ns: str, iface: str, device_id: int, *extra: str) -> tuple[subprocess.Popen, int]:
    proc = subprocess.Popen([sys.executable, "-m", "p4target", "run", "--no-p4", "--netns", ns, "-i", f"1@{iface}",
                             "--device-id", str(device_id), "--grpc-addr", "127.0.0.1:0", *extra],
                            cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    for _ in range(100):
        line = proc.stderr.readline()
        m = re.search(r"P4Runtime on [0-9.]+:(\d+)", line)
        if m:
            return proc, int(m.group(1))
        if not line and proc.poll() is not None:
            break
    proc.kill()
    raise AssertionError(f"p4target run did not start: {proc.stderr.read()}")


@pytest.mark.root
@needs_two_cpus
def test_run_places_the_whole_switch_auto_by_device_id_or_as_asked() -> None:
    ns = f"p4t-cpu-{uuid.uuid4().hex[:6]}"
    ip("netns", "add", ns)
    procs: list[subprocess.Popen] = []
    clients: list[RawClient] = []
    try:
        for i in range(3):
            ip("-n", ns, "link", "add", f"p4tc{i}", "type", "veth", "peer", "name", f"p4td{i}")
            ip("-n", ns, "link", "set", f"p4tc{i}", "up")
            ip("-n", ns, "link", "set", f"p4td{i}", "up")
        # device 1, auto: CPUS[1 % n] = CPUS[1]; device 4, CPU given: CPUS[0]; device 5, any: not pinned
        runs = [(1, (), {CPUS[1]}), (4, ("--cpu", str(CPUS[0])), {CPUS[0]}), (5, ("--cpu", "any"), None)]
        for i, (dev, extra, _) in enumerate(runs):
            proc, port = start_run(ns, f"p4tc{i}", dev, *extra)
            procs.append(proc)
            clients.append(busy(port, dev))
        for proc, (dev, _, want) in zip(procs, runs, strict=False):
            threads = thread_cpus(proc.pid)
            assert len(threads) >= 4, dev  # the packet I/O loop, the transport's loop, a worker, a reader
            if want is None:
                assert all(c == set(CPUS) for c in threads.values()), dev
            else:  # the packet I/O loop (the main thread) included
                assert all(c == want for c in threads.values()), (dev, threads)
                assert os.sched_getaffinity(proc.pid) == want
    finally:
        for c in clients:
            c.close()
        for p in procs:
            p.terminate()
            p.wait(timeout=20)
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)
