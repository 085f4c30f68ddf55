"""A whole fabric of real ``p4target run`` switches on veths, for controller tests.

Why: the controller's acceptance is against real P4Runtime servers whose ports are
real interfaces, so that entries read back and packets forwarded end to end are the
switches' own doing. One private namespace (``p4t-ctl-...``, tests/target/cli's
NetLab) holds one veth pair per cable; each switch process opens its ports there
(``--netns``) and serves P4Runtime on loopback. Host ports are left as raw sockets
for the test to send and receive frames.
"""

from __future__ import annotations

import socket
import subprocess
import time
from pathlib import Path

from fabric import plan as P
from fabric.entries import Node, nodes
from controller.targets import SwitchTarget
from controller.network_state import Inventory, default_inventory
from fabric.paths import links
from fabric.topology import Topology
from tests.target.cli.p4t_netlab import NetLab

REPO = Path(__file__).resolve().parents[2]
P4TARGET = REPO / ".venv" / "bin" / "p4target"


def free_port_base(count: int) -> int:
    """A base port with ``count`` free TCP ports after it on loopback."""
    for _ in range(50):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            base = s.getsockname()[1]
        if base + count >= 65000:
            continue
        ok = True
        for k in range(count):
            with socket.socket() as s:
                try:
                    s.bind(("127.0.0.1", base + k))
                except OSError:
                    ok = False
                    break
        if ok:
            return base
    raise RuntimeError("no free port range on loopback")


class FabricLab:
    """Start every switch of ``topo`` (empty, ``--no-p4``) with its cabling on veths."""

    def __init__(self, topo: Topology, tag: str = "ctl", *, load_program: bool = False,
                 source: dict | None = None) -> None:
        """``source``: how the state file names the topology (default: the default fabric's
        parameters), so that ``mrcctl --state`` sees ``topo``."""
        self.topo = topo
        self.net = NetLab(tag)
        self.nodes = nodes(topo)
        self.inventory: Inventory = default_inventory(topo, source or {"parameters": {}},
                                                      base_port=free_port_base(len(self.nodes)))
        self.ports: dict[str, list[tuple[int, str]]] = {n.name: [] for n in self.nodes}
        self.host_if: dict[str, str] = {}
        self.procs: dict[str, subprocess.Popen] = {}
        self.load_program = load_program
        self.logs = Path("/tmp") / f"{self.net.ns}-logs"

    def __enter__(self) -> FabricLab:
        self.net.__enter__()
        try:
            self._cable()
            self.logs.mkdir(exist_ok=True)
            for n in self.nodes:
                self.start(n.name)
            for n in self.nodes:
                self.wait_ready(n.name)
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _cable(self) -> None:
        k = 0
        for link in links(self.topo):
            a, b = f"p4tc{k}a", f"p4tc{k}b"
            k += 1
            self.net.veth(a, b)
            self.ports[link.a].append((link.a_port, a))
            self.ports[link.b].append((link.b_port, b))
        for h in self.topo.hosts:
            a, b = f"p4tc{k}a", f"p4tc{k}b"
            k += 1
            self.net.veth(a, b)
            self.ports[h.nic].append((P.NIC_HOST_PORT, a))
            self.host_if[h.name] = b

    def target(self, name: str) -> SwitchTarget:
        return self.inventory.switches[name]

    def start(self, name: str) -> None:
        t = self.target(name)
        cmd = [str(P4TARGET), "run", "--netns", self.net.ns, "--grpc-addr", t.address, "--device-id", str(t.device_id)]
        for port, ifname in sorted(self.ports[name]):
            cmd += ["-i", f"{port}@{ifname}"]
        cmd += [str(REPO / "p4src" / f"{t.program}.p4")] if self.load_program else ["--no-p4"]
        log = open(self.logs / f"{name}.log", "ab")
        self.procs[name] = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)

    def wait_ready(self, name: str, timeout: float = 60.0) -> None:
        host, port = self.target(name).address.rsplit(":", 1)
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if self.procs[name].poll() is not None:
                raise RuntimeError(f"{name} exited: {(self.logs / f'{name}.log').read_text()[-2000:]}")
            try:
                with socket.create_connection((host, int(port)), timeout=0.5):
                    return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError(f"{name} did not open its gRPC port within {timeout} s")

    def kill(self, name: str) -> None:
        p = self.procs.pop(name)
        p.kill()
        p.wait()

    def restart(self, name: str) -> None:
        self.kill(name)
        self.start(name)
        self.wait_ready(name)

    def node(self, name: str) -> Node:
        return next(n for n in self.nodes if n.name == name)

    def close(self) -> None:
        for p in self.procs.values():
            p.terminate()
        for p in self.procs.values():
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        self.procs.clear()
        self.net.close()
