"""`mrcctl web` on a running Mininet fabric, in headless Chromium (root).

A small fabric (2 planes x (2 leaves + 1 spine), 1 host per leaf: 6 fabric switches
and 2 NICs) is started under a private prefix and run directory and programmed;
`mrcctl --state <its state file> web` serves it as a person starts it. The page must
show every switch; a cable this test cuts must show down in the first reading after
the cut and up again after the restore; a link this test denies must show denied.
``/metrics``, parsed with prometheus_client's parser, must agree with the counters
this test reads from the switches itself, before and after the scrape.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from controller import counters as C
from controller.repair import set_denied
from fabric.topology import from_parameters
from tests.mininet.net_prefix import assert_nothing_left, private_prefix
from tests.web.browser import chromium, chromium_paths, get, link_states, page_ready, switches_drawn, wait_for, \
    web_server
from controller.cable_cuts import set_link
from topologies.fabric_net import FabricNetwork, programmed_network

pytestmark = pytest.mark.root

SHAPE = dict(planes=2, spines=1, leaves=2, hosts_per_leaf=1)
SWITCHES = {"p0-leaf0", "p0-leaf1", "p0-spine0", "p1-leaf0", "p1-leaf1", "p1-spine0", "nic1", "nic2"}
CUT = "p0-leaf0:p0-spine0"
DENY = "p1-leaf1:p1-spine0"


@pytest.fixture(scope="module")
def fabric(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FabricNetwork]:
    if os.geteuid() != 0:
        pytest.skip("needs root (network namespaces, veths, Mininet): run `make test` as root")
    chromium_paths()  # skip before starting a network the test could not look at
    prefix = private_prefix()
    run_dir = tmp_path_factory.mktemp("web-run")
    try:
        with programmed_network(from_parameters(**SHAPE), prefix=prefix, run_dir=run_dir, target="embedded") as fn:
            yield fn
    finally:
        assert_nothing_left(prefix, run_dir)


def _after(d: Any, t: float) -> bool:
    """The page shows a reading whose state file was read after unix time ``t``."""
    return bool(d.execute_script(f"return Number(document.body.dataset.stateRead) > {t}"))


def _change(d: Any, what: str, link: str, expected: str, act: Any) -> float:
    """Do ``act``; the page's first reading after it must show ``link`` as ``expected``;
    seconds from the act's end until the page showed it (measured, not bounded)."""
    act()
    t = time.time()
    wait_for(f"a reading after {what}", lambda: _after(d, t))
    assert link_states(d)[link] == {expected}, what
    return time.time() - t


def _metric_cells(text: str) -> dict[tuple[str, str, str], float]:
    """(metric sample name, switch, port) -> value, for the per-port packet counters."""
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name.endswith("_packets_total") and "port" in s.labels:
                out[(s.name, s.labels["switch"], s.labels["port"])] = s.value
    return out


def _read(fn: FabricNetwork) -> dict[str, C.Counts]:
    return asyncio.run(C.read_all(list(fn.inventory.switches.values())))


def test_the_page_follows_cuts_and_denials_and_metrics_match_the_switches(fabric: FabricNetwork,
                                                                         tmp_path: Path) -> None:
    fn = fabric
    assert fn.ping("h1", "h2", count=3).ok
    with web_server(["--state", str(fn.state_path)], {"MRC_P4_RUN_DIR": str(fn.run_dir)}) as url, chromium() as d:
        # nobody looked yet, so nothing was read: a scrape waits for a reading of its own
        first = _metric_cells(get(url + "metrics"))
        assert sum(v for (m, sw, _), v in first.items()
                   if (m, sw) == ("mrc_nic_plane_transmitted_packets_total", "nic1")) >= 3  # h1's pings
        d.get(url)
        wait_for("the page drew the fabric", lambda: page_ready(d))
        assert switches_drawn(d) == SWITCHES
        assert set(link_states(d)) == {"p0-leaf0:p0-spine0", "p0-leaf1:p0-spine0", "p1-leaf0:p1-spine0",
                                       "p1-leaf1:p1-spine0", "nic1:p0-leaf0", "nic2:p0-leaf1", "nic1:p1-leaf0",
                                       "nic2:p1-leaf1"}
        seconds = {
            "cut": _change(d, "the cut", CUT, "down",
                           lambda: asyncio.run(set_link(fn.topo, fn.inventory, CUT, down=True))),
            "restore": _change(d, "the restore", CUT, "up",
                               lambda: asyncio.run(set_link(fn.topo, fn.inventory, CUT, down=False))),
            "deny": _change(d, "the deny", DENY, "denied",
                            lambda: asyncio.run(set_denied(fn.topo, fn.inventory, DENY, denied=True))),
        }
        d.save_screenshot(str(tmp_path / "denied.png"))
        seconds["undeny"] = _change(d, "the undeny", DENY, "up",
                                    lambda: asyncio.run(set_denied(fn.topo, fn.inventory, DENY, denied=False)))
        print(f"seconds from the change to the page: {seconds}; screenshot {tmp_path / 'denied.png'}")
        d.find_element("css selector", "g.node[data-switch='p0-leaf0']").click()
        wait_for("p0-leaf0's ports", lambda: d.find_elements("css selector", "#details tr[data-port]"))
        ports = {int(r.get_attribute("data-port")) for r in d.find_elements("css selector", "#details tr[data-port]")}
        assert ports == {1, 2}  # the leaf's NIC port (1) and its port to spine 0 (1 host per leaf: 1 + 1 + 0)
        # /metrics against the switches' own counters, read before and after the scrape: the
        # poller's second reading after ours began after ours ended
        before = _read(fn)
        seq = json.loads(get(url + "api/state"))["seq"]
        wait_for("two readings after ours", lambda: json.loads(get(url + "api/state"))["seq"] >= seq + 2)
        state = json.loads(get(url + "api/state"))
        scraped = _metric_cells(get(url + "metrics"))
        after = _read(fn)
    assert state["counters"] is True and state["silent"] == {}
    checked = 0
    for sw, counters in after.items():
        for counter, metric in (("FabricEgress.tx_port", "mrc_port_transmitted_packets_total"),
                                ("FabricIngress.rx_port", "mrc_port_received_packets_total"),
                                ("NicEgress.plane_tx", "mrc_nic_plane_transmitted_packets_total")):
            for index, (packets, _) in counters.get(counter, {}).items():
                port = index + 1 if counter.startswith("Nic") else index
                low = before.get(sw, {}).get(counter, {}).get(index, (0, 0))[0]
                value = scraped.get((metric, sw, str(port)), 0.0)
                assert low <= value <= packets, (sw, counter, index, low, value, packets)
                checked += 1
    assert checked >= 8
    nic1_sent = sum(v for (m, sw, _), v in scraped.items() if m == "mrc_nic_plane_transmitted_packets_total"
                    and sw == "nic1")
    assert nic1_sent >= 3  # the three echo requests h1 sent at least
