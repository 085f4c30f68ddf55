"""The page of the 276-switch scale fabric in a real browser, without starting it.

`mrcctl --topology topologies/hundreds.yaml web` with no network running serves the
drawing from the topology file alone (no counters), and the EV events of a file this
test writes in the events format. Expected values come from the topology file's
shape (8 planes x (2 leaves + 32 spines), 2 hosts per leaf), written out here.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from tests.web.browser import (chromium, get, link_states, page_ready, row_cells, switches_drawn, wait_for,
                               web_server)
from tests.web.test_web_events import ev_line

PLANES, LEAVES, SPINES, HOSTS = 8, 2, 32, 4
EXPECTED_SWITCHES = ({f"p{p}-leaf{i}" for p in range(PLANES) for i in range(LEAVES)}
                     | {f"p{p}-spine{j}" for p in range(PLANES) for j in range(SPINES)}
                     | {f"nic{h}" for h in range(1, HOSTS + 1)})
EXPECTED_LINKS = PLANES * (LEAVES * SPINES + HOSTS)


def test_the_scale_fabric_is_drawn_with_collapsible_planes_and_its_evs(tmp_path: Path) -> None:
    assert len(EXPECTED_SWITCHES) == 276
    events = tmp_path / "events.jsonl"
    events.write_text(ev_line(0x1000, "ASSUMED_BAD") + ev_line(0x1001, "DENIED", plane=1) + "garbage\n")
    with web_server(["--topology", "topologies/hundreds.yaml"], {"MRC_P4_RUN_DIR": str(tmp_path)}) as url, \
            chromium() as d:
        t0 = time.monotonic()
        d.get(url)
        wait_for("the page drew the fabric", lambda: page_ready(d))
        drawn = time.monotonic() - t0
        assert switches_drawn(d) == EXPECTED_SWITCHES
        states = link_states(d)
        assert len(states) == EXPECTED_LINKS and all(s == {"up"} for s in states.values())
        opened = d.execute_script("return [...document.querySelectorAll('details.plane')].map(x => x.open)")
        assert opened == [True] + [False] * (PLANES - 1)  # a large fabric opens with plane 0 only
        d.find_element("css selector", "details.plane[data-plane='5'] > summary").click()
        assert d.execute_script("return document.querySelector(\"details.plane[data-plane='5']\").open") is True
        tip = d.execute_script("return document.querySelector(\"line[data-link='p1-leaf0:p1-spine0'] title\")"
                               ".textContent")
        assert tip == "p1-leaf0:p1-spine0: up (no counters); 1 EVs over it not GOOD"  # EV 0x1001's link
        row = row_cells(d, "tr[data-transfer='h1-h3']")
        assert row is not None and row[-4:] == ["0", "1", "1", "0"]  # GOOD, ASSUMED_BAD, DENIED, ERROR
        with events.open("a") as f:  # EV 0x1000 comes back: the page follows the file
            f.write(ev_line(0x1000, "GOOD", old="ASSUMED_BAD", t=101.0))
        wait_for("the page showed the new event", lambda: (row_cells(
            d, "tr[data-transfer='h1-h3']") or [])[-4:] == ["1", "0", "1", "0"])
        d.save_screenshot(str(tmp_path / "hundreds.png"))
        print(f"page drawn {drawn:.1f} s after it was asked for; screenshot {tmp_path / 'hundreds.png'}")
        assert (tmp_path / "hundreds.png").stat().st_size > 10_000
        metrics = {m.name: m for m in text_string_to_metric_families(get(url + "metrics"))}
        assert json.loads(get(url + "api/state"))["counters"] is False  # no network: no counters, none made up
    up = metrics["mrc_link_up"].samples
    assert len(up) == EXPECTED_LINKS and {s.value for s in up} == {1.0}
    ev_state = {(s.labels["ev"], s.labels["state"]): s.value for s in metrics["mrc_ev_state"].samples}
    assert ev_state[(str(0x1000), "GOOD")] == 1.0 and ev_state[(str(0x1000), "ASSUMED_BAD")] == 0.0
    assert ev_state[(str(0x1001), "DENIED")] == 1.0
    assert [s.value for s in metrics["mrc_web_event_lines_malformed"].samples if s.name.endswith("_total")] == [1.0]
