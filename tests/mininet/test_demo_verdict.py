"""The `make run` demo's verdict on one transfer and its summary lines (no root, no network).

The verdict is what `make run` exits with: a transfer passes when every byte verified
and every plane carried packets, and, with a cable cut, when the fabric tables read back
unchanged, some plane still carried packets after the cut and no EV off the cut was
retired. "Tables unchanged" must be a yes: a comparison never made (None) is no pass.
"""

from __future__ import annotations

from typing import Any

import pytest

from topologies import path_counts
from topologies.demo import FlowResult, flow_ok, format_flow

PLANES = 2


def _flow(**changes: Any) -> FlowResult:
    """A transfer that went well over two planes, with a cut of p0's first uplink."""
    base: dict[str, Any] = dict(
        src="h1", dst="h3", nbytes=4000, verified=True,
        report={"packets_sent": 4, "retransmissions": {"total": 1, "nack": 1}},
        evs=4, planes_before={0: 2, 1: 2}, planes_after={1: 2},
        delivered_before={0: 2, 1: 2}, delivered_after={1: 2},
        cut="p0-leaf0-spine0", fabric_unchanged=True, crossing=[4096], retired=[4096])
    base.update(changes)
    return FlowResult(**base)


def test_a_good_transfer_with_a_cut_passes() -> None:
    assert flow_ok(_flow(), PLANES) is True


def test_a_good_transfer_without_a_cut_passes() -> None:
    assert flow_ok(_flow(cut=None, fabric_unchanged=None, planes_after={}, retired=[]), PLANES) is True


@pytest.mark.parametrize("changes", [
    {"verified": False},
    {"planes_before": {0: 4}},  # plane 1 carried nothing
    {"planes_before": {0: 2, 1: 0}},
    {"fabric_unchanged": False},
    {"fabric_unchanged": None},  # the tables were never compared
    {"planes_after": {}},  # nothing flowed after the cut
    {"planes_after": {0: 0, 1: 0}},
    {"retired": [4096, 4097]},  # 4097 does not cross the cut
])
def test_a_failed_promise_fails(changes: dict[str, Any]) -> None:
    assert flow_ok(_flow(**changes), PLANES) is False


def test_the_summary_names_the_cut_and_its_consequences() -> None:
    lines = format_flow(_flow(), PLANES, "h1 -> h3: 4 of 4 paths carried packets")
    assert lines[0] == "MRC-lite transfer h1 -> h3: 4,000 bytes, every byte verified (SHA-256)"
    assert lines[1] == ("  4 data packets over 4 EVs, 1 retransmitted (0 timeout, 1 NACK, 0 trim NACK), "
                        "0 EVs retired, 0 recovered")
    assert lines[2] == "  per-plane split (source NIC's counters) before the cut: plane 0: 2 (50%), plane 1: 2 (50%)"
    assert lines[4] == "  paths h1 -> h3: 4 of 4 paths carried packets"
    assert lines[5] == "  after cutting p0-leaf0-spine0: plane 0: 0 (0%), plane 1: 2 (100%)"
    assert "fabric tables unchanged" in lines[6]
    assert lines[7].startswith("  EVs retired 1 of 1 across the cut (healthy EVs retired 0)")
    assert len(lines) == 8


def test_an_unverified_transfer_shows_its_last_errors() -> None:
    lines = format_flow(_flow(cut=None, verified=False, errors=["a", "b", "c"]), PLANES, "-")
    assert "NOT verified" in lines[0]
    assert lines[-2:] == ["  error: b", "  error: c"]


def test_every_paths_packets_are_listed_under_the_paths_line_a_plane_a_line() -> None:
    counts = {(0, 0): 5, (0, 1): 0, (0, 2): 7, (1, 0): 4, (1, 1): 6, (1, 2): 3, (2, 0): 9}
    assert path_counts.per_plane(counts) == ["plane 0: 5 0 7 (spines 0-2)", "plane 1: 4 6 3 (spines 0-2)",
                                             "plane 2: 9 (spine 0)"]
    assert path_counts.summary(counts) == ("6 of 7 paths carried packets (counted at the spines: min 0, max 9 "
                                           "packets per path)")
    lines = format_flow(_flow(), PLANES, "h1 -> h3: 2 of 2 paths", ["plane 0: 5 (spine 0)", "plane 1: 4 (spine 0)"])
    assert lines[4:7] == ["  paths h1 -> h3: 2 of 2 paths", "    plane 0: 5 (spine 0)", "    plane 1: 4 (spine 0)"]
    assert lines[7].startswith("  after cutting")
