"""One ``simple_switch_grpc`` on veths whose peers a test reads and writes directly.

Why: the BMv2 dataplane tests put frames into a real BMv2 switch port by port and read
what leaves each port, in order, as the embedded target's ``Switch.inject`` does in
process. The switch starts without a program; the test pushes the pipeline and the
controller's entries over P4Runtime (controller.reconcile), as a user's switch gets
them. It runs with BMv2's priority queues, as the fabric does (topologies/p4switch.py).
"""

from __future__ import annotations

import errno
import os
import select
import shutil
import socket
import subprocess
import time
from pathlib import Path

from controller.targets import SwitchTarget

ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4


def _run(*cmd: str) -> None:
    subprocess.run(cmd, check=True, capture_output=True, timeout=20)


class Bmv2Leaf:
    """simple_switch_grpc with ``ports`` on veths whose peers this test reads and writes."""

    def __init__(self, tmp: Path, ports: tuple[int, ...], name: str, program: str = "fabric",
                 tag: str = "d") -> None:
        from topologies.p4switch import free_port

        tag = f"p4t{tag}{os.getpid() % 4096:03x}"
        self.ports, self.name, self.program = ports, name, program
        self.sw_if = {p: f"{tag}a{p}" for p in ports}
        self.peer_if = {p: f"{tag}b{p}" for p in ports}
        self.grpc = f"127.0.0.1:{free_port()}"
        self.thrift = free_port()
        self.tmp = tmp
        self.proc: subprocess.Popen[bytes] | None = None
        self.socks: dict[int, socket.socket] = {}

    def __enter__(self) -> Bmv2Leaf:
        from topologies.p4switch import BMV2_PRIORITY_QUEUES, grpc_answers

        try:
            for p in self.ports:
                _run("ip", "link", "add", self.sw_if[p], "type", "veth", "peer", "name", self.peer_if[p])
                for intf in (self.sw_if[p], self.peer_if[p]):
                    Path(f"/proc/sys/net/ipv6/conf/{intf}/disable_ipv6").write_text("1\n")
                    _run("ip", "link", "set", intf, "up")
            cmd = [shutil.which("simple_switch_grpc") or "simple_switch_grpc", "--device-id", "1",
                   "--thrift-port", str(self.thrift), "--no-p4", "--log-console", "--log-level", "warn",
                   "--notifications-addr", f"ipc://{self.tmp / (self.name + '.ipc')}"]
            for p in self.ports:
                cmd += ["-i", f"{p}@{self.sw_if[p]}"]
            cmd += ["--", "--grpc-server-addr", self.grpc, "--priority-queues", str(BMV2_PRIORITY_QUEUES)]
            self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                         start_new_session=True)
            deadline = time.monotonic() + 30
            while not grpc_answers(self.grpc, 0.5):
                assert self.proc.poll() is None and time.monotonic() < deadline, "simple_switch_grpc did not start"
            for p in self.ports:
                s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
                s.bind((self.peer_if[p], 0))
                self.socks[p] = s
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        for s in self.socks.values():
            s.close()
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for p in self.ports:
            subprocess.run(["ip", "link", "delete", self.sw_if[p]], capture_output=True, timeout=20)

    @property
    def target(self) -> SwitchTarget:
        return SwitchTarget(self.name, self.grpc, 1, self.program, "bmv2")

    def set_queue_rate(self, port: int, pps: float) -> None:
        """The port's egress rate, over BMv2's Thrift API as the fabric sets it."""
        from topologies.bmv2_queues import QueueSettings, apply_queues

        apply_queues(self.thrift, QueueSettings(rates={port: pps}), f"switch {self.name}")

    def drain(self) -> None:
        while select.select(list(self.socks.values()), [], [], 0.05)[0]:
            for s in select.select(list(self.socks.values()), [], [], 0)[0]:
                try:
                    s.recv(65535)
                except OSError as exc:
                    if exc.errno != errno.ENETDOWN:
                        raise

    def set_link(self, port: int, up: bool) -> None:
        """Carrier of ``port`` (the peer end of its veth goes down or up)."""
        _run("ip", "link", "set", self.peer_if[port], "up" if up else "down")

    def inject(self, port: int, frame: bytes, expect: int) -> list[tuple[int, bytes]]:
        """Send ``frame`` into switch port ``port``; what leaves the other ports, in order
        of arrival (waits for ``expect`` frames, then a little more for any extra)."""
        return self.burst(port, [frame], expect)

    def burst(self, port: int, frames: list[bytes], expect: int, wait: float = 2.0) -> list[tuple[int, bytes]]:
        """Send ``frames`` back to back into ``port``; what leaves, in order of arrival."""
        for frame in frames:
            self.socks[port].send(frame)
        got: list[tuple[int, bytes]] = []
        by_sock = {s.fileno(): p for p, s in self.socks.items()}
        deadline = time.monotonic() + (wait if expect else 0.3)
        while time.monotonic() < deadline:
            ready = select.select(list(self.socks.values()), [], [], 0.02)[0]
            for s in ready:
                try:
                    data, addr = s.recvfrom(65535)
                except OSError as exc:  # a port whose peer is (or was) down reports it once
                    if exc.errno != errno.ENETDOWN:
                        raise
                    continue
                if addr[2] != PACKET_OUTGOING:
                    got.append((by_sock[s.fileno()], data))
            if len(got) >= expect and expect:
                deadline = min(deadline, time.monotonic() + 0.1)
        return got
