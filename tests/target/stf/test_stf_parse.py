"""Parsing STF text into commands: the syntax of p4c's STF files, and clear errors."""

from __future__ import annotations

import pytest

from p4target.errors import P4Error
from p4target.stf import match_pattern, parse_stf_text, parse_wildcard


def one(text: str):
    cmds = parse_stf_text(text, "t.stf")
    assert len(cmds) == 1
    return cmds[0]


def test_add_with_priority_keys_action_and_name():
    c = one("add MyIngress.tern 10 hdr.h.f1:0x****0101 f2:0x0A0B/16 "
            "MyIngress.setb1(val:0x7f, port:2) = A  # comment\n")
    assert c.kind == "add" and c.table == "MyIngress.tern" and c.priority == 10
    assert [(k.name, k.value) for k in c.keys] == [("hdr.h.f1", "0x****0101"), ("f2", "0x0A0B/16")]
    assert c.action.name == "MyIngress.setb1"
    assert [(a.name, a.value) for a in c.action.args] == [("val", "0x7f"), ("port", "2")]
    assert c.entry_name == "A" and c.line == 1


def test_add_without_priority_and_with_mask_and_range_forms():
    c = one("ADD t data.$valid$:1 k:0x0800&&&0xff00 r:10->20 a()")
    assert c.priority is None
    assert [(k.name, k.value) for k in c.keys] == [
        ("data.$valid$", "1"), ("k", "0x0800&&&0xff00"), ("r", "10->20")]
    assert c.action.name == "a" and c.action.args == ()


def test_setdefault_packet_expect_and_wait():
    cmds = parse_stf_text(
        "setdefault t drop()\n"
        "packet 0 01010101 03030303 9999\n"
        "expect 1 *1010101 03030303 99 99 $\n"
        "expect 5\n"
        "wait\n"
        "\n# only a comment\n", "t.stf")
    assert [c.kind for c in cmds] == ["setdefault", "packet", "expect", "expect", "wait"]
    assert cmds[1].port == 0 and cmds[1].data == bytes.fromhex("01010101030303039999")
    assert cmds[2].port == 1 and cmds[2].pattern == "*101010103030303" + "9999"
    assert cmds[2].exact_length
    assert cmds[3].pattern is None
    assert cmds[4].line == 5


def test_check_counter_forms():
    a, b, c = parse_stf_text("check_counter cnt(10) packets == 2\n"
                             "check_counter cnt($A)\n"
                             "check_counter cnt(3) bytes >= 100\n", "t.stf")
    assert (a.name, a.index, a.count_type, a.op, a.value) == ("cnt", "10", "packets", "==", 2)
    assert (b.index, b.count_type, b.op, b.value) == ("$A", None, "==", 0)
    assert (c.count_type, c.op, c.value) == ("bytes", ">=", 100)


def test_cli_pass_through_commands():
    cmds = parse_stf_text(
        "mc_mgrp_create 1\nmc_node_create 0 1 2 3\nmc_node_associate 1 0\n"
        "mirroring_add 5 3\nregister_write MyIngress.r 2 0x10\nregister_reset r\n"
        "meter_set_rates m 0 0.5:10 1:20\ncounter_write c 1 2 3\n", "t.stf")
    assert [c.kind for c in cmds] == ["mc_mgrp_create", "mc_node_create", "mc_node_associate",
                                      "mirroring_add", "register_write", "register_reset",
                                      "meter_set_rates", "counter_write"]
    assert cmds[1].numbers == (0, 1, 2, 3)
    assert cmds[4].name == "MyIngress.r" and cmds[4].numbers == (2, 16)
    assert cmds[6].rates == ((0.5, 10), (1.0, 20))


@pytest.mark.parametrize("text,where,what", [
    ("frobnicate 1\n", "t.stf:1:1", "unknown STF command 'frobnicate'"),
    ("packet 0 0102 0g\n", "t.stf:1:16", "invalid packet data character 'g'"),
    ("packet 0 012\n", "t.stf:1:10", "odd number of hex digits"),
    ("\n  add t k:1\n", "t.stf:2:12", "add without an action"),
    ("add t k:1 a(p 1)\n", "t.stf:1:15", "expected ':' after parameter 'p'"),
    ("expect\n", "t.stf:1:7", "expect needs a port number"),
    ("check_counter c(1) furlongs == 1\n", "t.stf:1:20", "unknown count type"),
    ("remove 3\n", "t.stf:1:8", "expected 'all'"),
    ("add t k:1 a() junk\n", "t.stf:1:15", "unexpected 'junk'"),
])
def test_errors_name_file_line_col(text, where, what):
    with pytest.raises(P4Error) as e:
        parse_stf_text(text, "t.stf")
    assert e.value.location == where
    assert what in e.value.message


def test_wildcard_literals():
    assert parse_wildcard("0x****0101") == (0x0101, 0x0000FFFF, 32)
    assert parse_wildcard("0b1*0") == (0b100, 0b101, 3)
    assert parse_wildcard("17") == (17, -1, 0)


def test_expect_patterns():
    pkt = bytes.fromhex("0102030405")
    assert match_pattern("0102", False, pkt) is None  # a prefix is enough
    assert match_pattern("01*2", False, pkt) is None
    assert "too long" in match_pattern("0102", True, pkt)
    assert match_pattern("0102030405", True, pkt) is None
    assert "byte 1" in match_pattern("0103", False, pkt)
    assert "too short" in match_pattern("010203040506", False, pkt)
