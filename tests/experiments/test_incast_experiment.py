"""The incast experiment end to end (experiments/incast.py) on its own small Mininet
fabric: 1 plane x (2 leaves + 2 spines), 3 hosts per leaf, embedded target.

Why its own fabric: an incast of 4 senders needs 5 hosts, the shared experiments'
fabric has 4; one plane, so that the limited port is the only queue (with several
planes, adaptive spraying moves a window between the planes' queues) and the fabric
costs the shared cores less. Asserted: every byte of every sender (the received
files against the generated data), no timeout, no EV retired, Jain's fairness of the
four goodputs >= 0.9, CE marks on the limited port (its queue passed 16) and its
deepest queue after the start-up, read from fabric.p4's ``max_qdepth`` register over
P4Runtime, at most 16 + a margin derived below; nothing trimmed over the whole run;
the port and the entries put back after.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.experiments.roce_outcomes import assert_incast_roce

pytestmark = pytest.mark.root
pytest.importorskip("mininet.net")

FABRIC_SHAPE = {"planes": 1, "hosts_per_leaf": 3}  # the fabric fixture's (tests/experiments/conftest.py)


def test_four_senders_share_a_limited_port_fairly_with_a_bounded_queue(fabric, tmp_path: Path) -> None:
    from experiments import incast
    from topologies.fabric_net import install_tables

    d = incast.run(fabric, tmp_path, nbytes=300_000, port_rate=500)
    assert_incast_roce(d)
    assert d["initial_window"] == 4  # 4 senders x 4 = 16 packets into the one queue at the start
    assert d["ok"], d["summaries"]
    assert d["received_files_match"], "every received file is the data generated for its sender"
    assert d["retransmissions"]["timeout"] == 0, d["retransmissions"]
    assert d["evs_retired"] == 0
    assert d["jain"] >= 0.9, d["goodput_bps"]
    assert d["ce_marked"] > 0  # the queue passed the marking threshold: the limit was reached
    # The margin: a packet that finds more than 16 queued leaves marked, and its ACK
    # reaches its sender about one queue delay later, about one of the sender's round
    # trips (one smoothed RTT, mostly that queue); so each sender's window ends at most
    # 2 round trips with an increase after the queue first passes 16, each of one
    # packet (the fair increase: the RTT is above the configured base RTT + its target
    # whenever 2 packets or more are queued at 500 packets/s), before a round trip that
    # decreases. 4 senders x 2 round trips x 1 packet = 8 packets above 16.
    assert d["startup_s"] == 1.0
    assert d["max_queue_after_startup"] == {"p0-leaf1": d["max_queue_after_startup"]["p0-leaf1"]}
    assert 16 < d["max_queue_after_startup"]["p0-leaf1"] <= 16 + 4 * 2 * 1, d["windows"]
    assert d["trimmed"] == 0, (d["max_queue_startup"], d["windows"])  # never above 32, start-up included
    assert d["sent_through_port"] >= 4 * 300  # 300 KB in 1000-byte payloads per sender, all through the port
    assert fabric.topo.trim_threshold == 32
    assert all(fabric.switch(n).extra_args == [] for n in incast.shaped_leaves(fabric, incast.DST)[0])
    assert install_tables(fabric).writes == 0
