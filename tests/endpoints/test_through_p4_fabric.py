"""The transport's packets through the project's P4 programs: every frame a host
sends is walked through its NIC (nic.p4), the leaves and spines (fabric.p4) and the
far NIC, all on the embedded target with the controller's entries
(tests/dataplane/fabric_net.py), and what the far NIC delivers is what the other
endpoint's state machine gets. So the EV set of the plan really names the paths the
NICs take, and a cut cable retires exactly the EVs whose path crosses it.
"""

from __future__ import annotations

import random
from collections import defaultdict, deque
from collections.abc import Callable
from typing import Any

from scapy.layers.inet import UDP
from scapy.packet import Raw

from fabric.plan import nic_evs
from fabric.topology import Host, from_parameters
from endpoints import wire
from endpoints.transport import Receiver, Sender, SenderConfig, Tx
from tests.dataplane.fabric_net import build, walk
from tests.endpoints.simnet import DATA_OPCODES
from tests.dataplane.nic.nic_case import NIC_HOST_PORT, nic_case
from tests.dataplane.nic.nic_frames import host_frame
from tests.dataplane.packets import addr, with_ev

TOPO = from_parameters(name="ep", planes=2, spines=2, leaves=2, hosts_per_leaf=1, evs_per_nic=8)
MTU = 1000


def delivered(frame: bytes) -> tuple[str, int, int, bytes]:
    """(source address, EV (BTH pkey), traffic class, UDP payload) of an IPv6/UDP frame."""
    ip = frame[14:54]
    assert ip[6] == 17, "UDP right after the IPv6 header"
    plen = int.from_bytes(ip[4:6], "big")
    udp = frame[54:54 + plen]
    tclass = ((ip[0] & 0x0F) << 4) | (ip[1] >> 4)
    return addr(int.from_bytes(ip[8:24], "big")), int.from_bytes(udp[10:12], "big"), tclass, udp[8:]


class Fabric:
    def __init__(self, src: Host, dst: Host, cut: tuple[str, str] | None = None) -> None:
        self.switches = build(TOPO, nics=True)
        self.src, self.dst = src, dst
        self.cut = cut
        self.spines_of: dict[int, set[str]] = defaultdict(set)  # data packets' EV -> spines crossed
        self.lost = 0

    def carry(self, frm: Host, to: Host, tx: Tx) -> tuple[str, int, int, bytes] | None:
        case = nic_case(TOPO, frm.leaf, frm.port)
        frame = bytes(host_frame(case, to.leaf, to.port, UDP(sport=4791, dport=4791) / Raw(with_ev(tx.payload, tx.ev))))
        hops = walk(TOPO, self.switches, frm.nic, NIC_HOST_PORT, frame)
        if self.cut and any({h.node, h.to} == set(self.cut) for h in hops):
            self.lost += 1
            return None
        assert hops and hops[-1].to == to.name, [h.node for h in hops]
        if tx.payload[0] in DATA_OPCODES and frm == self.src:
            self.spines_of[tx.ev] |= {h.node for h in hops if "spine" in h.node}
        return delivered(hops[-1].frame)


def run(fabric: Fabric, data: bytes, cfg: SenderConfig = SenderConfig()) -> tuple[Sender, Receiver]:  # noqa: B008 — a frozen dataclass: one shared default is safe
    evs = nic_evs(TOPO, fabric.src, fabric.dst)
    sender, receiver = Sender(data, evs, cfg), Receiver()
    exchange(fabric, sender, receiver)
    return sender, receiver


def exchange(fabric: Fabric, sender: Any, receiver: Any, limit: float = 10.0,
             hook: Callable[[Any], None] | None = None) -> list[int]:
    """Run ``sender`` and ``receiver`` (MRC-lite's or the RoCE baseline's) over the
    fabric in steps of 100 us to the sender's end or ``limit`` seconds; ``hook(sender)``
    before each step. The opcodes the sender was handed."""
    back: list[int] = []
    t = 0.0
    while not sender.finished and t < limit:
        if hook is not None:
            hook(sender)
        queue: deque[tuple[str, Tx]] = deque(("to_dst", tx) for tx in sender.poll(t))
        queue.extend(("to_src", tx) for tx in receiver.poll(t))
        while queue:
            way, tx = queue.popleft()
            if way == "to_dst":
                got = fabric.carry(fabric.src, fabric.dst, tx)
                if got:
                    peer, ev, tclass, payload = got
                    queue.extend(("to_src", r) for r in receiver.on_packet(payload, t, peer, ev, tclass))
            else:
                got = fabric.carry(fabric.dst, fabric.src, tx)
                if got:
                    back.append(got[3][0])
                    sender.on_packet(got[3], t)
        t += 1e-4
    return back


def test_each_ev_takes_the_path_the_plan_names() -> None:
    h1, h2 = TOPO.host("h1"), TOPO.host("h2")
    assert h1.leaf != h2.leaf
    data = random.Random(1).randbytes(100 * MTU + 7)
    fabric = Fabric(h1, h2)
    sender, receiver = run(fabric, data)
    assert sender.ok, sender.error
    (c,) = receiver.conns.values()
    assert bytes(c.buf) == data and c.state == wire.STATE_VERIFIED
    evs = nic_evs(TOPO, h1, h2)
    assert fabric.spines_of == {e.ev: {TOPO.spine_name(e.plane, e.spine)} for e in evs}
    assert sorted(sender.report()["per_plane_packets"].values()) == [50, 51]
    assert fabric.lost == 0 and sender.report()["retransmissions"]["total"] == 0


def test_a_cut_cable_retires_exactly_the_evs_across_it() -> None:
    h1, h2 = TOPO.host("h1"), TOPO.host("h2")
    cut = (TOPO.leaf_name(1, h1.leaf), TOPO.spine_name(1, 0))  # plane 1, h1's leaf to spine 0
    data = random.Random(2).randbytes(400 * MTU)
    fabric = Fabric(h1, h2, cut=cut)
    sender, receiver = run(fabric, data, SenderConfig(ev_min_active=2, rate_pps=20_000))
    assert sender.ok, sender.error
    (c,) = receiver.conns.values()
    assert bytes(c.buf) == data
    across = {e.ev for e in nic_evs(TOPO, h1, h2) if (e.plane, e.spine) == (1, 0)}
    assert len(across) == 2
    assert {e["ev"] for e in sender.events if e["event"] == "retired"} == across
    assert fabric.lost > 0
