"""The EV events file followed as it grows (webview/events.py), on real files.

The lines are written here in the events file's format (one JSON object a line:
``t``, ``host``, ``peer``, ``ev``, ``plane``, ``switches``, ``links``, ``old``, ``new``,
``cause``, ``dropped``, ``transport``; ``kind: "guard"`` for the controller's
actions), with malformed lines among them; the expected states are written out.
"""

from __future__ import annotations

import json
from pathlib import Path

from webview.events import EventLog


def ev_line(ev: int, new: str, *, t: float = 100.0, host: str = "h1", peer: str = "h3", plane: int = 0,
            old: str = "GOOD", transport: str = "mrc") -> str:
    return json.dumps({"t": t, "host": host, "peer": peer, "ev": ev, "plane": plane,
                       "switches": ["nic1", f"p{plane}-leaf0", f"p{plane}-spine0", f"p{plane}-leaf1", "nic3"],
                       "links": [f"p{plane}-leaf0:p{plane}-spine0"], "old": old, "new": new, "cause": "nack",
                       "dropped": 3, "transport": transport}) + "\n"


def test_a_missing_file_is_no_error_and_nothing_is_known(tmp_path: Path) -> None:
    log = EventLog(tmp_path / "events.jsonl")
    assert log.poll() == 0
    assert log.to_json()["exists"] is False and log.to_json()["transfers"] == []


def test_states_are_the_latest_per_ev_and_malformed_lines_are_counted(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_text(ev_line(0x1000, "ASSUMED_BAD") + ev_line(0x1001, "ASSUMED_BAD", plane=1)
                    + "not json\n" + '{"t": 1, "host": "h1"}\n' + ev_line(0x1002, "MAYBE")
                    + json.dumps({"kind": "guard", "t": 101.0, "new": "DENIED", "links": ["p0-leaf0:p0-spine0"],
                                  "cause": "deny"}) + "\n"
                    + ev_line(0x1000, "GOOD", t=102.0, old="ASSUMED_BAD")
                    + ev_line(0x2000, "DENIED", host="h2", peer="h4", transport="roce")
                    + ev_line(0x1003, "ERR")[:40])  # a line still being written: no newline yet
    log = EventLog(path)
    log.poll()
    j = log.to_json()
    assert (j["lines"], j["malformed"]) == (8, 3)  # the partial last line is not read yet
    assert [g["new"] for g in j["guard"]] == ["DENIED"]
    by = {(t["host"], t["peer"], t["transport"]): t for t in j["transfers"]}
    assert set(by) == {("h1", "h3", "mrc"), ("h2", "h4", "roce")}
    assert by["h1", "h3", "mrc"]["counts"] == {"GOOD": 1, "ASSUMED_BAD": 1, "DENIED": 0, "ERROR": 0}
    assert [(e["ev"], e["plane"], e["state"]) for e in by["h1", "h3", "mrc"]["not_good"]] == [(0x1001, 1, "ASSUMED_BAD")]
    assert by["h2", "h4", "roce"]["counts"]["DENIED"] == 1
    with path.open("a") as f:  # the rest of the partial line, and one more event
        f.write(ev_line(0x1003, "ERROR")[40:] + ev_line(0x1001, "GOOD", plane=1, t=103.0))
    log.poll()
    j = log.to_json()
    assert (j["lines"], j["malformed"]) == (10, 3)
    assert {t["host"]: t["counts"] for t in j["transfers"]}["h1"] == {"GOOD": 2, "ASSUMED_BAD": 0, "DENIED": 0,
                                                                       "ERROR": 1}


def test_a_file_written_anew_is_read_from_its_start(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_text(ev_line(1, "ASSUMED_BAD") * 5)
    log = EventLog(path)
    log.poll()
    path.write_text(ev_line(1, "DENIED"))  # shorter than what was read: a new file
    log.poll()
    assert log.to_json()["transfers"][0]["counts"]["DENIED"] == 1
    assert log.lines == 6
