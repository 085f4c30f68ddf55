"""Fixtures for the P4Runtime tests: rt_all.p4 on a Device behind a real server.

Why: every server test needs the same thing a controller sees: a P4Runtime server
on a loopback TCP port (ephemeral), a device running the pipeline the client pushed,
and the frames the device sent out of its ports, to check that entries written over
P4Runtime really steer packets.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from tests.p4runtime.p4rt_client import Names, RawClient

HERE = Path(__file__).parent
RT_ALL = HERE / "p4" / "rt_all.p4"
RT_V2 = HERE / "p4" / "rt_v2.p4"
CPU_PORT = 255
# ``compiled_write`` of the servers these tests make. The suite's autouse fixture sets
# P4TARGET_NATIVE=0 in every test (for the switches' fast paths), which the server's
# default would follow; these follow the environment the run was started with instead:
# the compiled write path when it is built, unless that environment says 0.
WRITE_COMPILED = os.environ.get("P4TARGET_NATIVE", "1") != "0"
ETH_TEST = 0x88B5
T_FMT = "!IHBHBHB"  # key32 k16 k8 sel mark out colour


def tframe(dst: int = 0x0A0000000001, src: int = 0x0A00000000FE, key32: int = 0, k16: int = 0, k8: int = 0,
           sel: int = 0, mark: int = 0, ether_type: int = ETH_TEST) -> bytes:
    """A test frame: Ethernet + test_t (scapy builds the Ethernet header)."""
    mac = lambda v: ":".join(f"{b:02x}" for b in v.to_bytes(6, "big"))  # noqa: E731
    body = struct.pack(T_FMT, key32, k16, k8, sel, mark, 0, 0) if ether_type == ETH_TEST else b"\x00" * 13
    return bytes(Ether(dst=mac(dst), src=mac(src), type=ether_type) / Raw(body))


def t_out(frame: bytes) -> int:
    """The ``out`` field of test_t in a frame the pipeline sent."""
    return struct.unpack(T_FMT, frame[14:14 + 13])[5]


@dataclass
class Rig:
    device: object
    server: object
    outputs: list = field(default_factory=list)

    def send(self, port: int, frame: bytes) -> list[tuple[int, bytes]]:
        """Frame into ``port``; returns what came out (port, bytes), CPU port excluded."""
        self.outputs.clear()
        self.device.receive(port, frame)
        return list(self.outputs)


@pytest.fixture(scope="session")
def rt_config() -> tuple[object, bytes]:
    """(P4Info, device config) of rt_all.p4, built once."""
    from p4target.device_config import device_config_from_file, load_device_config
    from p4target.p4info import build_p4info

    data = device_config_from_file(RT_ALL)
    compiled = load_device_config(data)
    return build_p4info(compiled.model), data


@pytest.fixture
def rig():
    from p4target.device import Device
    from p4target.p4runtime.server import P4RuntimeServer

    device = Device(device_id=1, cpu_port=CPU_PORT)
    r = Rig(device=device, server=None)
    device.output_sink = lambda port, frame: r.outputs.append((port, frame))
    server = P4RuntimeServer(device, "127.0.0.1:0", compiled_write=WRITE_COMPILED)
    server.start()
    r.server = server
    yield r
    server.stop()


@pytest.fixture
def client(rig: Rig, rt_config) -> RawClient:
    """Primary client (election id 10) with rt_all.p4 pushed."""
    c = RawClient(rig.server.bound_port, device_id=1)
    c.arbitrate(10)
    c.set_pipeline(rt_config[0], rt_config[1])
    yield c
    c.close()


@pytest.fixture
def names(rt_config) -> Names:
    return Names(rt_config[0])


def pytest_sessionstart(session: pytest.Session) -> None:
    """``P4TARGET_EXPECT_COMPILED=0/1`` (set by test_compiled_modules for the run it
    starts): refuse to run unless the servers of ``rig`` take the write path asked."""
    expect = os.environ.get("P4TARGET_EXPECT_COMPILED")
    if expect is None:
        return
    from p4target.p4runtime.write_choice import choose_apply_update

    kind = choose_apply_update(WRITE_COMPILED)[1]
    if kind != ("compiled" if expect == "1" else "python"):
        raise pytest.UsageError(f"P4TARGET_EXPECT_COMPILED={expect}, but the write path is {kind}")
