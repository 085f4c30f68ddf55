"""The NIC's entries written over P4Runtime, as the controller will write them.

Why: the controller talks P4Runtime, not the Switch API. This test pushes nic.p4 to
a Device behind the embedded P4Runtime server, writes the controller's entries for
the NIC (fabric/entries.py: members, a group with watch ports, table entries) as
P4Runtime updates, and checks on real packets that spraying and watch-port failover
work through that path too. The updates are the controller's own encoding
(controller/codec.py's Codec).
"""

from __future__ import annotations

from collections import Counter
import pytest
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Ether

from controller.codec import Codec
from tests.dataplane.fabric_net import NIC_P4
from tests.dataplane.nic.nic_case import TEST_FABRIC, carrier_ip, nic_case, nic_plane_port
from tests.dataplane.nic.nic_frames import mrc_frame


@pytest.fixture
def p4rt_nic():
    from p4target.device import Device
    from p4target.device_config import device_config_from_file, load_device_config
    from p4target.p4info import build_p4info
    from p4target.p4runtime.server import P4RuntimeServer
    from tests.p4runtime.p4rt_client import RawClient

    device = Device(device_id=1)
    outputs: list[tuple[int, bytes]] = []
    device.output_sink = lambda port, frame: outputs.append((port, frame))
    server = P4RuntimeServer(device, "127.0.0.1:0")
    server.start()
    client = RawClient(server.bound_port, device_id=1)
    try:
        client.arbitrate(1)
        data = device_config_from_file(NIC_P4)
        p4info = build_p4info(load_device_config(data).model)
        client.set_pipeline(p4info, data)
        cfg = nic_case(TEST_FABRIC, 0, 1)
        client.write(*Codec(p4info).write_request("insert", cfg.entries()).updates)
        yield device, outputs, cfg
    finally:
        client.close()
        server.stop()


def test_spray_group_written_over_p4runtime_fails_over_on_watch_ports(p4rt_nic):
    device, outputs, cfg = p4rt_nic
    dst = (1, 2)

    def spray(n: int) -> Counter:
        used: Counter = Counter()
        for _ in range(n):
            outputs.clear()
            device.receive(0, bytes(mrc_frame(cfg, *dst, 0xBEEF)))
            [(port, frame)] = outputs
            plane = port - 1
            carrier = Ether(frame)[IPv6].dst
            spine = next(s for s in range(cfg.spines)
                         if carrier_ip(plane, cfg.leaf, s, *dst) == carrier)
            used[(plane, spine)] += 1
        return used

    assert len(spray(64)) == 16
    device.set_port_status(nic_plane_port(1), False)
    down = spray(120)
    assert len(down) == 12 and all(plane != 1 for plane, _ in down)
    device.set_port_status(nic_plane_port(1), True)
    assert len(spray(64)) == 16
