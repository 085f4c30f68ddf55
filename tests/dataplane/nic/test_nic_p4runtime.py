"""The NIC's entries written over P4Runtime, as the controller will write them.

Why: the controller talks P4Runtime, not the Switch API. This test pushes nic.p4 to
a Device behind the embedded P4Runtime server, writes the same entries nic_plan
computes (members, a group with watch ports, table entries) as P4Runtime updates,
and checks on real packets that spraying and watch-port failover work through that
path too.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Ether

from p4target.runtime.entries import Exact, Group, Lpm, Ternary
from tests.dataplane.nic.conftest import FABRIC
from tests.dataplane.nic.nic_frames import mrc_frame
from tests.dataplane.nic.nic_plan import NicConfig, explicit_evs, install_nic, nic_plane_port, path_carrier

NIC_P4 = Path(__file__).resolve().parents[3] / "p4src" / "nic.p4"


@dataclass
class Recorder:
    """Stands in for a Switch while install_nic runs: keeps every call in order."""

    calls: list[tuple[str, tuple, dict]] = field(default_factory=list)

    def __getattr__(self, name: str) -> Any:
        def record(*args: Any, **kwargs: Any) -> None:
            self.calls.append((name, args, kwargs))
        return record


def to_updates(calls, names) -> list:
    """The recorded Switch calls as P4Runtime updates (model names -> P4Info ids)."""
    from finsy.proto.p4.v1 import p4runtime_pb2

    from tests.p4runtime.p4rt_client import enc, ins, update

    out = []
    for name, args, kwargs in calls:
        if name == "table_add":
            table, match, action = args[0], args[1], args[2]
            params = args[3] if len(args) > 3 else {}
            m: dict[str, Any] = {}
            for fname, v in match.items():
                if isinstance(v, Lpm):
                    m[fname] = ("lpm", v.value, v.prefix_len)
                elif isinstance(v, Ternary):
                    m[fname] = ("ternary", v.value, v.mask)
                elif isinstance(v, Exact):
                    m[fname] = v.value
                else:
                    m[fname] = v
            prio = kwargs.get("priority") or 0
            if isinstance(action, Group):
                e = names.entry(table, m, priority=prio)
                e.action.action_profile_group_id = action.group_id
            else:
                e = names.entry(table, m, action, priority=prio, **params)
            out.append(ins(e))
        elif name == "act_prof_add_member":
            profile, mid, action, params = args
            mem = p4runtime_pb2.ActionProfileMember(
                action_profile_id=names.id_of("action_profiles", profile), member_id=mid)
            mem.action.CopyFrom(names.act(action, **params))
            out.append(update("m", action_profile_member=mem))
        elif name == "act_prof_add_group":
            profile, gid, members = args
            g = p4runtime_pb2.ActionProfileGroup(
                action_profile_id=names.id_of("action_profiles", profile), group_id=gid)
            for mid, weight, watch in members:
                g.members.add(member_id=mid, weight=weight, watch_port=enc(watch))
            out.append(update("g", action_profile_group=g))
        else:
            raise AssertionError(f"install_nic called {name}, which this test cannot translate")
    return out


@pytest.fixture
def p4rt_nic():
    pytest.importorskip("finsy")
    from p4target.device import Device
    from p4target.device_config import device_config_from_file, load_device_config
    from p4target.p4info import build_p4info
    from p4target.p4runtime.server import P4RuntimeServer
    from tests.p4runtime.p4rt_client import Names, RawClient

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
        cfg = NicConfig(FABRIC, 0, 1, explicit=explicit_evs(FABRIC, 0, 1))
        rec = Recorder()
        install_nic(rec, cfg)
        client.write(*to_updates(rec.calls, Names(p4info)))
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
            spine = next(s for s in range(cfg.fabric.spines)
                         if path_carrier(plane, cfg.leaf, s, *dst) == carrier)
            used[(plane, spine)] += 1
        return used

    assert len(spray(64)) == 16
    device.set_port_status(nic_plane_port(1), False)
    down = spray(120)
    assert len(down) == 12 and all(plane != 1 for plane, _ in down)
    device.set_port_status(nic_plane_port(1), True)
    assert len(spray(64)) == 16
