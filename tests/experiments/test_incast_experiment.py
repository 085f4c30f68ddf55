"""The incast experiment end to end (experiments/incast.py) on its own small Mininet
fabric: 2 planes x (2 leaves + 2 spines), 3 hosts per leaf, embedded target.

Why its own fabric: an incast of 4 senders needs 5 hosts, the shared experiments'
fabric has 4. Asserted: every byte of every sender (the received files against the
generated data), no timeout, no EV retired, Jain's fairness of the four goodputs
>= 0.9, the limited ports marked CE (the queue passed 16) and trimmed nothing with the
trim threshold at 16 + 8 (the queue never held more than 24 packets); the port and
the entries put back after.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.mininet.net_prefix import assert_nothing_left

pytestmark = pytest.mark.root
pytest.importorskip("mininet.net")

from experiments import common as C  # noqa: E402


@pytest.fixture(scope="module")
def fabric(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    if os.geteuid() != 0:
        pytest.skip("needs root (network namespaces, veths, Mininet): run `make test` as root")
    prefix = C.private_prefix()
    run_dir = tmp_path_factory.mktemp("incast-run")
    try:
        with C.programmed_fabric(C.topology(planes=2, hosts_per_leaf=3), prefix, run_dir) as fn:
            yield fn
    finally:
        assert_nothing_left(prefix, run_dir)


def test_four_senders_share_a_limited_port_fairly_with_a_bounded_queue(fabric, tmp_path: Path) -> None:
    from experiments import incast
    from topologies.fabric_net import install_tables

    d = incast.run(fabric, tmp_path, nbytes=300_000, port_rate=500)
    assert d["initial_window"] == 8  # 4 senders x 8 = 16 per plane's queue at the start
    assert d["ok"], d["summaries"]
    assert d["received_files_match"], "every received file is the data generated for its sender"
    assert d["retransmissions"]["timeout"] == 0, d["retransmissions"]
    assert d["evs_retired"] == 0
    assert d["jain"] >= 0.9, d["goodput_bps"]
    assert d["ce_marked"] > 0  # the queue passed the marking threshold: the limit was reached
    assert d["trimmed"] == 0, d["windows"]  # ... and never held more than 16 + 8 packets
    assert fabric.topo.trim_threshold == 32
    assert all(fabric.switch(n).extra_args == [] for n in incast.shaped_leaves(fabric, incast.DST)[0])
    assert install_tables(fabric).writes == 0
