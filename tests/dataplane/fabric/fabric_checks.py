"""Names and counter helpers for the fabric.p4 tests.

Why: the drop reasons and counter names are fabric.p4's public interface
(docs/fabric.md); the tests read them by these names, so a renumbering in the P4
shows up as failing tests rather than silently wrong counts.
"""

from __future__ import annotations

from dataclasses import dataclass

DROP_PARSER_ERROR = 1
DROP_NOT_IPV6 = 2
DROP_HOP_LIMIT = 3
DROP_BAD_SRH = 4
DROP_NO_ROUTE = 5
DROP_UNKNOWN_USID = 6
DROP_NOT_FOR_ME = 7
DROP_BAD_LENGTH = 8
DROP_NO_PORT_MAC = 9
DROP_REASONS = 16
PORTS = 512

INGRESS_DROPS = "FabricIngress.drops"
EGRESS_DROPS = "FabricEgress.drops"
RX_PORT = "FabricIngress.rx_port"
TX_PORT = "FabricEgress.tx_port"
TRIMMED = "FabricEgress.trimmed"


@dataclass(frozen=True)
class Count:
    packets: int
    bytes: int


def counter(sw: object, name: str, index: int) -> Count:
    packets, nbytes = sw.counter_read(name, index)  # type: ignore[attr-defined]
    return Count(packets, nbytes)


def drops(sw: object, name: str = INGRESS_DROPS) -> dict[int, int]:
    """Non-zero drop counts (packets) by reason."""
    out = {}
    for reason in range(DROP_REASONS):
        packets = counter(sw, name, reason).packets
        if packets:
            out[reason] = packets
    return out


def total(sw: object, name: str, size: int) -> Count:
    packets = nbytes = 0
    for i in range(size):
        c = counter(sw, name, i)
        packets += c.packets
        nbytes += c.bytes
    return Count(packets, nbytes)
