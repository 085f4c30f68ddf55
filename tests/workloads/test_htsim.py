"""The connection-matrix reader on good and bad files, the writer and the generator."""

from __future__ import annotations

from pathlib import Path

import pytest

from workloads import htsim
from workloads.generate import mixed, permutation, ring
from workloads.schedule import Flow

GOOD = """\
# a comment, then a blank line

Nodes 8
Connections 4
Triggers 2
0->5 id 1 start 0 size 2000000 send_done_trigger 1
5->7 id 2 trigger 1 size 1000
3->4 id 3 start 12.5 size 400000 recv_done_trigger 2 prio 3
6->2 id 4 trigger 2 size 7
trigger id 1 oneshot
trigger id 2 barrier count 1
"""


def test_a_good_file() -> None:
    s = htsim.parse(GOOD)
    assert s.nodes == 8
    assert s.flows == (Flow(1, 0, 5, 2_000_000, 0.0), Flow(2, 5, 7, 1000, None, (1,), 1),
                       Flow(3, 3, 4, 400_000, 12.5), Flow(4, 6, 2, 7, None, (3,), 1))


def test_htsims_own_permutation_lines() -> None:
    s = htsim.parse("Nodes 4\nConnections 2\n2->1 id 1 start 0 size 2000000\n1->3 id 2 start 0 size 2000000\n")
    assert [(f.src, f.dst, f.size) for f in s.flows] == [(2, 1, 2_000_000), (1, 3, 2_000_000)]


def test_a_barrier_waits_for_its_count() -> None:
    s = htsim.parse("Nodes 3\n0->1 id 1 start 0 size 5 send_done_trigger 9\n2->1 id 2 start 0 size 5 "
                    "send_done_trigger 9\n1->0 id 3 trigger 9 size 5\ntrigger id 9 barrier count 2\n")
    assert s.by_id[3].deps == (1, 2) and s.by_id[3].needed == 2


@pytest.mark.parametrize(("text", "line", "words"), [
    ("Connections 1\n", 1, "start with a Nodes"),
    ("Nodes 4\n0->1 id 1 start 0\n", 2, "no size"),
    ("Nodes 4\n0->1 id 1 size 10\n", 2, "either start"),
    ("Nodes 4\n0->1 id 1 start 0 trigger 1 size 10\ntrigger id 1 oneshot\n", 2, "either start"),
    ("Nodes 4\n0->9 id 1 start 0 size 10\n", 2, "destination 9 is not one of the Nodes 4"),
    ("Nodes 4\n0->x id 1 start 0 size 10\n", 2, "destination 'x' is not a whole number"),
    ("Nodes 4\n1->1 id 1 start 0 size 10\n", 2, "to itself"),
    ("Nodes 4\n0->1 id 1 start 0 size -5\n", 2, "size -5: give 1 or more"),
    ("Nodes 4\n0->1 id 1 start soon size 5\n", 2, "start 'soon'"),
    ("Nodes 4\n0->1 id 1 start 0 size 5\n1->2 id 1 start 0 size 5\n", 3, "id 1 is used twice (first on line 2)"),
    ("Nodes 4\n0->1 id 1 start 0 size 5 colour red\n", 2, "unknown key 'colour'"),
    ("Nodes 4\n0->1 id 1 start 0 size\n", 2, "'size' has no value"),
    ("Nodes 4\nConnections 2\n0->1 id 1 start 0 size 5\n", 2, "Connections 2, but the file has 1"),
    ("Nodes 4\n0->1 id 1 trigger 3 size 5\n", 2, "trigger 3 has no 'trigger id 3"),
    ("Nodes 4\n0->1 id 1 start 0 size 5\n1->2 id 2 trigger 3 size 5\ntrigger id 3 oneshot\n", 3,
     "never starts"),
    ("Nodes 4\n0->1 id 1 start 0 size 5\ntrigger id 3 multishot\n", 3, "multishot"),
    ("Nodes 4\n0->1 id 1 start 0 size 5\ntrigger id 3\n", 3, "no type"),
    ("Nodes 4\nFailures 1\n", 2, "not supported"),
    ("Nodes 4\n0->1 id 1 start 0 size 5\nfailure switch_type TOR switch_id 1 link_id 1\n", 3, "not supported"),
    ("Nodes 4\nNodes 5\n", 2, "second Nodes"),
    ("Nodes 4\nhello world\n", 2, "'hello' starts no known line"),
    ("Nodes 4\n", 1, "no connections"),
])
def test_a_bad_file_is_one_error_naming_its_line(text: str, line: int, words: str) -> None:
    with pytest.raises(htsim.HtsimError) as err:
        htsim.parse(text, "m.cm")
    msg = str(err.value)
    assert msg.startswith(f"m.cm:{line}: ") and words in msg and "\n" not in msg


def test_a_cycle_of_triggers_is_refused() -> None:
    text = ("Nodes 3\n0->1 id 1 trigger 2 size 5 send_done_trigger 1\n1->2 id 2 trigger 1 size 5 "
            "send_done_trigger 2\ntrigger id 1 oneshot\ntrigger id 2 oneshot\n")
    with pytest.raises(htsim.HtsimError, match="cycle"):
        htsim.parse(text, "c.cm")


def test_read_names_the_file(tmp_path: Path) -> None:
    with pytest.raises(htsim.HtsimError, match="cannot read it"):
        htsim.read(tmp_path / "missing.cm")
    (tmp_path / "m.cm").write_text("Nodes 2\n0->1 id 4 start 1.5 size 9\n")
    assert htsim.read(tmp_path / "m.cm").flows == (Flow(4, 0, 1, 9, 1.5),)


@pytest.mark.parametrize("schedule", [permutation(16, 2_000_000, 3), mixed(8, 40, 1000, 100_000, 500.0, 2),
                                      ring(5, 5000)])
def test_what_is_written_reads_back_the_same(schedule: object) -> None:
    from workloads.schedule import Schedule

    assert isinstance(schedule, Schedule)
    back = htsim.parse(htsim.write(schedule))
    assert [(f.id, f.src, f.dst, f.size, f.start_us, f.deps, f.needed) for f in back.flows] == \
        [(f.id, f.src, f.dst, f.size, f.start_us, f.deps, f.needed) for f in schedule.flows]


def test_the_generators() -> None:
    p = permutation(6, 100, 1)
    assert sorted(f.dst for f in p.flows) == list(range(6)) and all(f.src != f.dst for f in p.flows)
    m = mixed(4, 50, 1000, 8000, 100.0, 7)
    assert all(1000 <= f.size <= 8000 and 0 <= (f.start_us or 0) <= 100 for f in m.flows)
    assert mixed(4, 50, 1000, 8000, 100.0, 7) == m  # same seed, same matrix
    r = ring(3, 9)  # each flow waits for the one into its source, one step before
    assert r.by_id[4].deps == (3,) and (r.by_id[3].src, r.by_id[3].dst) == (2, 0)
    text = htsim.write(r)
    assert "0->1 id 1 start 0 size 3 send_done_trigger 5" in text and "trigger id 5 oneshot" in text


def test_the_generator_command(tmp_path: Path) -> None:
    import subprocess
    import sys

    out = tmp_path / "p.cm"
    r = subprocess.run([sys.executable, "-m", "workloads.generate", "permutation", "--nodes", "4", "--size", "1000",
                        "--out", str(out)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    s = htsim.read(out)
    assert len(s.flows) == 4 and s.total_bytes() == 4000
    r = subprocess.run([sys.executable, "-m", "workloads.generate", "mixed", "--min-size", "9", "--max-size", "2",
                        "--out", str(out)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and r.stderr.startswith("error: ") and r.stderr.count("\n") == 1
