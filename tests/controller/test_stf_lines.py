"""controller/stf.py: the controller's entries as STF ``add`` lines.

Why: switches started with ``p4target run --commands`` and fabric_basic.stf are filled
from these lines; each form is written out here, and entries STF cannot hold are refused.
"""

from __future__ import annotations

import pytest

from fabric.entries import GroupEntry, MemberEntry, TableEntry
from controller.stf import StfError, stf_add, stf_lines
from fabric.match import Exact, Lpm, Ternary


def test_each_match_kind_priority_and_params() -> None:
    lpm = TableEntry("FabricIngress.my_sid", (("hdr.ipv6.dst_addr", Lpm(0xFCBB_BB00_0100 << 80, 48)),),
                     "FabricIngress.usid_un")
    assert stf_add(lpm) == ("add FabricIngress.my_sid hdr.ipv6.dst_addr:0xfcbbbb00010000000000000000000000/48 "
                            "FabricIngress.usid_un()")
    tern = TableEntry("FabricIngress.dscp_priority", (("hdr.ipv6.traffic_class", Ternary(0xF8, 0xFC)),),
                      "FabricIngress.set_priority", (("prio", 7),), 10)
    assert stf_add(tern) == ("add FabricIngress.dscp_priority 10 hdr.ipv6.traffic_class:0xf8&&&0xfc "
                             "FabricIngress.set_priority(prio:0x7)")
    exact = TableEntry("FabricEgress.trim_config", (("standard_metadata.egress_port", Exact(3)),),
                       "FabricEgress.set_trim", (("threshold", 32), ("dscp", 62)))
    assert stf_lines([exact]) == ["add FabricEgress.trim_config standard_metadata.egress_port:0x3 "
                                  "FabricEgress.set_trim(threshold:0x20, dscp:0x3e)"]


@pytest.mark.parametrize("e", [
    MemberEntry("NicIngress.spray_selector", 1, "NicIngress.set_generated", (("plane", 0), ("spine", 0))),
    GroupEntry("NicIngress.spray_selector", 1, ((1, 1, 1),)),
    TableEntry("NicIngress.spray", (("hdr.ipv6.dst_addr", Lpm(0xFD00 << 112, 32)),), None, group=1),
], ids=["member", "group", "group-entry"])
def test_action_profiles_are_refused(e) -> None:
    with pytest.raises(StfError, match="STF has no action-profile members or groups; install it over P4Runtime"):
        stf_add(e)
