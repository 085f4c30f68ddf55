"""fabric.p4's ``FabricEgress.max_qdepth`` register: per egress port, the deepest queue
(``enq_qdepth``, packets) a packet found at enqueue since the cell was last written.

The queue is made as in test_fabric_trim.py: the uplink is rate limited on the
traffic manager's virtual clock and a burst is sent at once; on the virtual clock
nothing leaves before the whole burst is queued, so packet k of the burst finds
exactly k packets ahead of it and a burst of n leaves n - 1 in the register.
"""

from __future__ import annotations

from tests.dataplane.fabric.test_fabric_trim import UPLINK, data, tiny
from tests.dataplane.fabric_net import switch_entries

MAX_QDEPTH = "FabricEgress.max_qdepth"
PORTS = 512


def burst(sw, n: int) -> None:
    for psn in range(n):
        sw.send(1, data(psn))
    out = sw.run_until_idle() + sw.advance(1.0)
    assert [p for p, _ in out] == [UPLINK] * n


def cells(sw) -> dict[int, int]:
    """The non-zero cells of the register."""
    return {i: v for i in range(PORTS) if (v := sw.register_read(MAX_QDEPTH, i))}


def test_the_register_keeps_the_deepest_queue_a_packet_found_per_port(fabric_switch_factory) -> None:
    sw = fabric_switch_factory(switch_entries(tiny(None), "p0-leaf0"))
    assert cells(sw) == {}
    sw.set_queue_rate(UPLINK, 1000.0)
    burst(sw, 10)
    assert cells(sw) == {UPLINK: 9}
    burst(sw, 4)  # a shallower queue later leaves the maximum as it was
    assert cells(sw) == {UPLINK: 9}
    sw.register_write(MAX_QDEPTH, UPLINK, 0)  # the reset the experiments do over P4Runtime
    burst(sw, 4)
    assert cells(sw) == {UPLINK: 3}


def test_a_port_without_a_queue_records_nothing(fabric_switch_factory) -> None:
    """No rate limit: every packet leaves at once, found an empty queue (depth 0)."""
    sw = fabric_switch_factory(switch_entries(tiny(None), "p0-leaf0"))
    burst(sw, 10)
    assert cells(sw) == {}
