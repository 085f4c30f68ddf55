"""Trimming for real: the receiver's leaf port is rate-limited in every plane (the
embedded target's traffic manager, virtual clock), the sender bursts a window, the
queue grows past the topology's trim threshold (a first window of 128 packets, 64 per
plane, before any feedback: congestion control keeps later windows under it), fabric.p4 trims, the NIC hands the
mark to the host in the traffic class, the receiver sends trim NACKs and the sender
resends at once. Against the same run with trimming off (no trim_config entries).
"""

from __future__ import annotations

import random

from scapy.layers.inet import UDP
from scapy.packet import Raw

from fabric import plan as P
from fabric.entries import nodes
from fabric.paths import neighbour
from fabric.plan import nic_evs
from fabric.topology import Host, Topology, from_parameters
from endpoints import wire
from endpoints.transport import Receiver, Sender, SenderConfig
from tests.dataplane.fabric_net import build
from tests.dataplane.nic.nic_case import nic_case
from tests.dataplane.nic.nic_frames import host_frame
from tests.dataplane.packets import with_ev
from tests.endpoints.test_through_p4_fabric import delivered

MTU = 1000
RATE = 10_000  # packets/s of h2's leaf port, in each plane
DT = 100e-6
DEPTH = 100_000  # packets: nothing is dropped, a packet is only delayed or trimmed (trim threshold 32)


class TimedFabric:
    """Every switch on the target's virtual clock, advanced together ``DT`` at a time;
    a frame leaving a switch enters its neighbour at once (no link delay)."""

    def __init__(self, topo: Topology) -> None:
        self.topo = topo
        self.switches = build(topo, nics=True)
        self.nodes = {n.name: n for n in nodes(topo)}

    def _forward(self, name: str, outs: list[tuple[int, bytes]], got: list[tuple[str, bytes]]) -> None:
        pending = [(name, port, frame) for port, frame in outs]
        while pending:
            name, port, frame = pending.pop()
            other, other_port = neighbour(self.topo, self.nodes[name], port)
            if isinstance(other, Host):
                got.append((other.name, frame))
                continue
            pending += [(other.name, p, f) for p, f in self.switches[other.name].inject(other_port, frame)]

    def send(self, host: Host, frame: bytes, got: list[tuple[str, bytes]]) -> None:
        self._forward(host.nic, self.switches[host.nic].inject(P.NIC_HOST_PORT, frame), got)

    def advance(self, got: list[tuple[str, bytes]]) -> None:
        for name, sw in self.switches.items():
            self._forward(name, sw.advance(DT), got)


def transfer(trim: bool) -> tuple[Sender, Receiver, int]:
    topo = from_parameters(name="trim", planes=2, spines=2, leaves=2, hosts_per_leaf=1, evs_per_nic=8,
                           no_trim=not trim)
    h1, h2 = topo.host("h1"), topo.host("h2")
    fabric = TimedFabric(topo)
    for p in range(topo.planes):
        leaf = fabric.switches[topo.leaf_name(p, h2.leaf)]
        leaf.set_queue_rate(P.leaf_host_port(h2), RATE)
        leaf.set_queue_depth(P.leaf_host_port(h2), DEPTH)
    data = random.Random(3).randbytes(600 * MTU)
    sender, receiver = Sender(data, nic_evs(topo, h1, h2), SenderConfig(window=256, initial_window=128)), Receiver()
    cases = {h.name: nic_case(topo, h.leaf, h.port) for h in (h1, h2)}
    t = 0.0
    while not sender.finished and t < 2.0:
        got: list[tuple[str, bytes]] = []
        for frm, to, txs in ((h1, h2, sender.poll(t)), (h2, h1, receiver.poll(t))):
            for tx in txs:
                frame = host_frame(cases[frm.name], to.leaf, to.port, UDP(sport=4791, dport=4791) / Raw(with_ev(tx.payload, tx.ev)))
                fabric.send(frm, bytes(frame), got)
        fabric.advance(got)
        while got:
            host, frame = got.pop(0)
            peer, ev, tclass, payload = delivered(frame)
            if host == h2.name:
                for tx in receiver.on_packet(payload, t, peer, ev, tclass):
                    frame = host_frame(cases[h2.name], h1.leaf, h1.port, UDP(sport=4791, dport=4791) / Raw(with_ev(tx.payload, tx.ev)))
                    fabric.send(h2, bytes(frame), got)
            else:
                sender.on_packet(payload, t)
        t += DT
    (c,) = receiver.conns.values()
    assert sender.ok, sender.error
    assert bytes(c.buf) == data and c.state == wire.STATE_VERIFIED
    trimmed = sum(fabric.switches[topo.leaf_name(p, h2.leaf)].counter_read("FabricEgress.trimmed",
                                                                            P.leaf_host_port(h2))[0]
                  for p in range(topo.planes))
    return sender, receiver, trimmed


def test_trimmed_packets_are_resent_at_once_and_retire_nothing() -> None:
    sender, receiver, trimmed = transfer(trim=True)
    (c,) = receiver.conns.values()
    rep = sender.report()
    assert trimmed > 20
    # Every packet the leaves trimmed reached the receiver with the NIC's mark.
    assert c.counts["trimmed"] == c.counts["trimmed_marked"] == trimmed
    assert rep["retransmissions"] == {"total": trimmed, "timeout": 0, "nack": 0, "trim_nack": trimmed}
    assert rep["evs_retired"] == 0


def test_without_trimming_the_queue_only_delays() -> None:
    sender, receiver, trimmed = transfer(trim=False)
    (c,) = receiver.conns.values()
    assert trimmed == 0 and c.counts["trimmed"] == 0
    assert sender.report()["retransmissions"]["total"] == 0
