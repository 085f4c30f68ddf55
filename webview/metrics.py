"""``/metrics``: the latest reading in Prometheus' text exposition format.

Why a collector over the latest reading: a scrape never reaches a switch; it
exports what the poller (webview/poller.py) read last, the switches' own counters
as Prometheus counters (a switch that restarts counts from zero again, which
Prometheus' rate() handles), the links' states and the EVs' states as gauges.
Names and labels: docs/web.md.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import cast

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from controller import counters as C
from webview.events import STATES
from webview.poller import Poller

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

# counter of the program -> (metric name without _total, help), per port (fabric) or plane (NIC)
FABRIC_PORT_METRICS = {
    "FabricIngress.rx_port": ("mrc_port_received", "packets and bytes a fabric switch port received"),
    "FabricEgress.tx_port": ("mrc_port_transmitted", "packets and bytes a fabric switch port sent"),
    "FabricEgress.trimmed": ("mrc_port_trimmed", "packets a fabric switch port trimmed to their headers"),
    "FabricEgress.ecn_marked": ("mrc_port_ce_marked", "packets a fabric switch port marked CE"),
}
NIC_PLANE_METRICS = {
    "NicIngress.plane_rx": ("mrc_nic_plane_received", "packets and bytes a NIC received from a plane"),
    "NicEgress.plane_tx": ("mrc_nic_plane_transmitted", "packets and bytes a NIC sent into a plane"),
}
PORT_LABELS = ["switch", "port", "plane", "link", "peer"]


class FabricCollector(Collector):
    """The metrics of one poller's latest reading."""

    def __init__(self, poller: Poller) -> None:
        self.poller = poller

    def collect(self) -> Iterator[Metric]:
        yield from self._ports()
        yield from self._drops()
        yield from self._queues()
        yield from self._links()
        yield from self._evs()
        yield from self._health()

    def _port_labels(self, switch: str, port: int) -> list[str]:
        end = self.poller.drawing.ports.get((switch, port))
        return [switch, str(port), str(end.plane) if end else "", end.link if end else "", end.peer if end else ""]

    def _ports(self) -> Iterator[Metric]:
        counts = self.poller.counts
        for table, index_is_plane in ((FABRIC_PORT_METRICS, False), (NIC_PLANE_METRICS, True)):
            for counter, (name, what) in table.items():
                packets = CounterMetricFamily(f"{name}_packets", f"{what}: packets", labels=PORT_LABELS)
                octets = CounterMetricFamily(f"{name}_bytes", f"{what}: bytes", labels=PORT_LABELS)
                for switch in sorted(counts):
                    for index, (p, b) in sorted(counts[switch].get(counter, {}).items()):
                        port = index + 1 if index_is_plane else index  # a NIC's plane p is its port p + 1
                        labels = self._port_labels(switch, port)
                        packets.add_metric(labels, p)
                        if counter not in ("FabricEgress.trimmed", "FabricEgress.ecn_marked"):
                            octets.add_metric(labels, b)
                yield packets
                if octets.samples:
                    yield octets

    def _drops(self) -> Iterator[Metric]:
        m = CounterMetricFamily("mrc_switch_dropped_packets", "packets a switch dropped, by its program's reason",
                                labels=["switch", "plane", "stage", "reason"])
        planes = self.poller.drawing.planes_of
        for switch in sorted(self.poller.counts):
            program = self.poller.drawing.programs.get(switch, "fabric")
            for row in C.drop_rows(program, self.poller.counts[switch]):
                stage = "ingress" if "Ingress" in str(row["counter"]) else "egress"
                m.add_metric([switch, planes.get(switch, ""), stage, str(row["name"]).lower()], cast(int, row["packets"]))
        yield m

    def _queues(self) -> Iterator[Metric]:
        m = GaugeMetricFamily("mrc_port_max_queue_depth_packets",
                              "deepest egress queue a packet found at a fabric switch port since the register was "
                              "last reset (packets)", labels=PORT_LABELS)
        for switch, cells in sorted(self.poller.qdepth.items()):
            for port, depth in sorted((cells or {}).items()):
                if (switch, port) in self.poller.drawing.ports or depth:
                    m.add_metric(self._port_labels(switch, port), depth)
        yield m

    def _links(self) -> Iterator[Metric]:
        up = GaugeMetricFamily("mrc_link_up", "1 when the link's cable is up, 0 when it is cut",
                               labels=["link", "plane", "kind"])
        denied = GaugeMetricFamily("mrc_link_denied", "1 when the NICs are told to avoid the link (deny)",
                                   labels=["link", "plane", "kind"])
        for k in self.poller.drawing.links:
            labels = [k.name, str(k.plane), k.kind]
            up.add_metric(labels, 0 if k.name in self.poller.down else 1)
            denied.add_metric(labels, 1 if k.name in self.poller.denied else 0)
        yield up
        yield denied

    def _evs(self) -> Iterator[Metric]:
        state = GaugeMetricFamily("mrc_ev_state", "1 for an EV's current state (one series per state)",
                                  labels=["host", "peer", "transport", "ev", "plane", "state"])
        count = GaugeMetricFamily("mrc_transfer_evs", "EVs of a transfer in each state",
                                  labels=["host", "peer", "transport", "state"])
        for tr in self.poller.events.transfers.values():
            for ev in tr.evs.values():
                for s in STATES:
                    state.add_metric([tr.host, tr.peer, tr.transport, str(ev.ev), str(ev.plane), s],
                                     1 if ev.state == s else 0)
            for s, n in tr.counts().items():
                count.add_metric([tr.host, tr.peer, tr.transport, s], n)
        yield state
        yield count

    def _health(self) -> Iterator[Metric]:
        p = self.poller
        answered = GaugeMetricFamily("mrc_switch_answered", "1 when the switch answered the last counter reading",
                                     labels=["switch"])
        for name in sorted(p.readers):
            answered.add_metric([name], 0 if name in p.silent else 1)
        yield answered
        yield CounterMetricFamily("mrc_web_counter_read_errors", "switch readings that failed", value=p.read_errors)
        yield CounterMetricFamily("mrc_web_event_lines", "lines read from the EV events file", value=p.events.lines)
        yield CounterMetricFamily("mrc_web_event_lines_malformed", "lines of the EV events file skipped as not events",
                                  value=p.events.malformed)
        yield GaugeMetricFamily("mrc_web_last_reading_timestamp_seconds", "unix time of the latest reading",
                                value=p.latest["t"])


def registry(poller: Poller) -> CollectorRegistry:
    """A registry of the fabric's metrics only (not the process's default ones)."""
    r = CollectorRegistry(auto_describe=False)
    r.register(FabricCollector(poller))
    return r


def exposition(r: CollectorRegistry) -> bytes:
    return generate_latest(r)


__all__ = ["CONTENT_TYPE", "FabricCollector", "exposition", "registry"]
