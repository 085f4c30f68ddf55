"""Topology input errors: one line naming file:line, the field path and the fix.

Why: a topology is written by hand; each mistake below must come back as one clear
line (and a topology the address plan cannot hold must be refused
before anything is computed). Every expected line is written out here.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from fabric.topology import TopologyError, from_parameters, load_file

CLOS = """\
planes: 4
spines: 2
leaves: 2
hosts_per_leaf: 2
"""


def refused(tmp_path: Path, text: str) -> tuple[str, str]:
    path = tmp_path / "t.yaml"
    path.write_text(textwrap.dedent(text))
    with pytest.raises(TopologyError) as info:
        load_file(path)
    msg = str(info.value)
    assert "\n" not in msg
    return str(path), msg


@pytest.mark.parametrize("field,value,line,limit", [
    ("planes", 9, 1, 8), ("spines", 257, 2, 256), ("leaves", 513, 3, 512), ("hosts_per_leaf", 4096, 4, 4095),
])
def test_a_clos_larger_than_the_plan_names_the_line_the_field_and_the_limit(tmp_path, field, value, line, limit):
    text = CLOS.replace(f"{field}: ", f"{field}: {value} #")
    path, msg = refused(tmp_path, text)
    assert msg == f"{path}:{line}: {field}: {value} is more than the limit {limit}; give at most {limit}"


def test_zero_planes(tmp_path):
    path, msg = refused(tmp_path, CLOS.replace("planes: 4", "planes: 0"))
    assert msg == f"{path}:1: planes: 0 is less than 1; give at least 1"


def test_unknown_field(tmp_path):
    path, msg = refused(tmp_path, CLOS + "colour: blue\n")
    assert msg == (f"{path}:5: colour: Extra inputs are not permitted; "
                   "remove it (see topologies/README.md for the fields)")


def test_both_forms_given(tmp_path):
    path, msg = refused(tmp_path, """\
        planes: 2
        spines: 2
        graph:
          spines: [s0]
          leaves:
            - hosts: 1
        """)
    assert msg == f"{path}:3: graph: give either 'graph' or spines, not both"


def test_neither_form_given(tmp_path):
    path, msg = refused(tmp_path, "planes: 2\nspines: 2\n")
    assert msg == f"{path}: (top level): missing leaves, hosts_per_leaf (or describe the fabric with 'graph')"


def test_duplicate_leaf_names_in_a_graph(tmp_path):
    path, msg = refused(tmp_path, """\
        planes: 2
        graph:
          spines: [s0, s1]
          leaves:
            - name: a
              hosts: 2
            - name: a
              hosts: 1
        """)
    assert msg == f"{path}:7: graph.leaves.1.name: duplicate name 'a'; give every switch its own name"


def test_a_leaf_named_like_a_spine(tmp_path):
    path, msg = refused(tmp_path, """\
        planes: 1
        graph:
          spines: [s0]
          leaves:
            - name: s0
              hosts: 2
        """)
    assert msg == f"{path}:5: graph.leaves.0.name: duplicate name 's0'; give every switch its own name"


def test_duplicate_spine_names_in_a_graph(tmp_path):
    path, msg = refused(tmp_path, """\
        planes: 2
        graph:
          spines:
            - s0
            - s0
          leaves:
            - hosts: 2
        """)
    assert msg == f"{path}:5: graph.spines.1: duplicate spine name 's0'; give every spine its own name"


def test_an_uplink_to_a_missing_spine(tmp_path):
    path, msg = refused(tmp_path, """\
        planes: 2
        graph:
          spines: [s0, s1]
          leaves:
            - name: a
              hosts: 2
              uplinks:
                - s0
                - s7
        """)
    assert msg == f"{path}:9: graph.leaves.0.uplinks.1: no spine 's7'; spines are s0, s1"


def test_an_uplink_in_a_missing_plane(tmp_path):
    path, msg = refused(tmp_path, """\
        planes: 2
        graph:
          spines: [s0]
          leaves:
            - hosts: 2
              uplinks:
                - spine: s0
                  planes: [0, 2]
        """)
    assert msg == f"{path}:8: graph.leaves.0.uplinks.0.planes: plane 2 does not exist; planes are 0..1"


def test_a_graph_leaf_with_too_many_hosts(tmp_path):
    path, msg = refused(tmp_path, """\
        planes: 1
        graph:
          spines: [s0]
          leaves:
            - hosts: 4096
        """)
    assert msg == f"{path}:5: graph.leaves.0.hosts: 4096 is more than the limit 4095; give at most 4095"


def test_more_hosts_than_the_mac_plan_holds(tmp_path):
    path, msg = refused(tmp_path, CLOS.replace("leaves: 2", "leaves: 512").replace("hosts_per_leaf: 2",
                                                                                    "hosts_per_leaf: 4095"))
    assert msg == (f"{path}:4: hosts_per_leaf: 2096640 hosts, more than the address plan's 1048576 "
                   "(20-bit host index in MACs); use fewer leaves or hosts per leaf")


def test_not_yaml_and_not_a_mapping(tmp_path):
    path, msg = refused(tmp_path, "planes: [4\n")
    assert msg.startswith(f"{path}:2: not valid YAML (") and msg.endswith("); fix the syntax")
    path, msg = refused(tmp_path, "- 4\n")
    assert msg == f"{path}: a topology file is a mapping of fields (planes: 4, ...); see topologies/README.md"


def test_a_file_that_is_not_utf8_text(tmp_path):
    path = tmp_path / "bin.yaml"
    path.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(TopologyError) as info:
        load_file(path)
    assert str(info.value) == (f"{path}: not UTF-8 text (byte 0xff at offset 0); a topology file is YAML text, "
                               "see topologies/README.md")


def test_a_file_nested_too_deeply(tmp_path):
    path, msg = refused(tmp_path, "planes: " + "[" * 100000 + "]" * 100000 + "\n")
    assert msg == f"{path}: nested too deeply to read; a topology is a few levels of fields, see topologies/README.md"


def test_a_missing_file(tmp_path):
    with pytest.raises(TopologyError) as info:
        load_file(tmp_path / "nope.yaml")
    assert str(info.value) == (f"{tmp_path / 'nope.yaml'}: cannot read the topology file (No such file or directory); "
                               "give a file from topologies/ or the shape as parameters")


@pytest.mark.parametrize("params,line", [
    (dict(planes=9), "parameters: --planes: 9 is more than the limit 8; give at most 8"),
    (dict(spines=257), "parameters: --spines: 257 is more than the limit 256; give at most 256"),
    (dict(leaves=513), "parameters: --leaves: 513 is more than the limit 512; give at most 512"),
    (dict(hosts_per_leaf=4096), "parameters: --hosts-per-leaf: 4096 is more than the limit 4095; give at most 4095"),
    (dict(evs_per_nic=0), "parameters: --evs-per-nic: 0 is less than 1; give at least 1"),
    (dict(ev_mode="random"), "parameters: --ev-mode: Input should be 'explicit' or 'generated'"),
    (dict(leaves=512, hosts_per_leaf=4095),
     "parameters: --hosts-per-leaf: 2096640 hosts, more than the address plan's 1048576 "
     "(20-bit host index in MACs); use fewer leaves or hosts per leaf"),
])
def test_parameter_errors_name_the_option(params, line):
    with pytest.raises(TopologyError) as info:
        from_parameters(**params)
    assert str(info.value) == line


def test_the_edges_of_the_plan_are_accepted():
    topo = from_parameters(planes=8, spines=256, leaves=2, hosts_per_leaf=4095)
    assert (topo.planes, topo.spines, len(topo.leaves), topo.max_hosts_per_leaf) == (8, 256, 2, 4095)
    topo = from_parameters(planes=1, spines=1, leaves=512, hosts_per_leaf=2048)
    assert len(topo.hosts) == 512 * 2048 == 1 << 20


def test_trim_threshold_zero_is_kept_and_no_trim_turns_it_off():
    assert from_parameters(trim_threshold=0).trim_threshold == 0
    assert from_parameters(trim_threshold=7).trim_threshold == 7
    assert from_parameters().trim_threshold == 32
    assert from_parameters(no_trim=True).trim_threshold is None


TRIM = CLOS + "trim:\n  threshold: 8\n  classes: {}\n"  # classes on line 7


@pytest.mark.parametrize("classes,line", [
    ("[0, 64]", "7: trim.classes.1: 64 is more than the limit 63; give at most 63"),
    ("[-1]", "7: trim.classes.0: -1 is less than 0; give at least 0"),
    ('["af31"]', "7: trim.classes.0: Input should be a valid integer; write a whole number"),
    ("26", "7: trim.classes: Input should be a valid list; write a list: [first, second, ...]"),
    ("[]", "7: trim.classes: no traffic class to trim; list at least one DSCP (MRC-lite's is 0), "
           "or turn trimming off with 'enabled: false'"),
    ("[0, 26, 0]", "7: trim.classes: DSCP 0 is listed twice; list each traffic class once"),
    ("[0, 62]", "5: trim: DSCP 62 is both a trimmed class (classes) and the trim mark (dscp): trimmed and "
                "whole packets could not be told apart; give the mark another DSCP"),
])
def test_bad_trimmed_classes(tmp_path, classes, line):
    path, msg = refused(tmp_path, TRIM.format(classes))
    assert msg == f"{path}:{line}"


def test_trimmed_classes_default_to_mrc_lites_and_are_kept_as_given(tmp_path):
    assert from_parameters().trim_classes == (0,)
    assert from_parameters(trim_classes=[26, 0]).trim_classes == (26, 0)
    path = tmp_path / "t.yaml"
    path.write_text(TRIM.format("[26]"))
    assert load_file(path).trim_classes == (26,)
    with pytest.raises(TopologyError) as info:
        from_parameters(trim_classes=(62,))
    assert str(info.value).startswith("parameters: --trim: DSCP 62 is both a trimmed class")


def test_a_graph_leaves_out_the_cables_it_does_not_list(tmp_path):
    path = tmp_path / "g.yaml"
    path.write_text(textwrap.dedent("""\
        planes: 2
        graph:
          spines: [s0, s1]
          leaves:
            - name: a
              hosts: 2
              uplinks: [s0, {spine: s1, planes: [1]}]
            - name: b
              hosts: 1
        """))
    topo = load_file(path)
    assert topo.name == "g" and topo.spine_names == ("s0", "s1")
    assert [(lf.name, lf.hosts) for lf in topo.leaves] == [("a", 2), ("b", 1)]
    assert topo.missing == frozenset({(0, 0, 1)})
    assert list(topo.uplinks(0, 0)) == [0] and list(topo.uplinks(1, 0)) == [0, 1]
    assert list(topo.uplinks(0, 1)) == [0, 1]
