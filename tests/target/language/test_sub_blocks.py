"""Sub-controls and sub-parsers (P4_16 13.8, 14) through STF, scapy and P4Runtime.

Expectations are worked out by hand from the spec (copy-in/copy-out, left-to-right
copy-out, one instance = one set of tables) and from p4c's naming of objects in
instantiated controls: the instance path (``MyIngress.lk.t``).
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from p4target import Switch
from p4target.compiler import compile_file
from p4target.p4info import build_p4info
from p4target.runtime.entries import Exact
from p4target.stf import run_stf_program

P4 = Path(__file__).parent / "p4"


PROG = P4 / "sub_blocks.p4"


def test_stf() -> None:
    res = run_stf_program(PROG, P4 / "sub_blocks.stf")
    assert res.failures == [] and res.passed


def frame(ether_type: int, a: int, b: int, tail: bytes = b"\xca\xfe") -> bytes:
    return bytes(Ether(dst="00:00:00:00:00:02", src="00:00:00:00:00:01", type=ether_type)
                 / Raw(bytes([a, b, 0, 0, 0, 0, 0]) + tail))


def test_names_are_instance_paths() -> None:
    m = compile_file(PROG).model
    assert [t.name for t in m.tables] == ["MyIngress.lk.t", "MyIngress.lk2.t"]
    assert [k.name for k in m.table("MyIngress.lk.t").keys] == ["d.a"]
    assert {a.name for a in m.actions} == {"MyIngress.lk.set", "MyIngress.lk.miss",
                                           "MyIngress.lk2.set", "MyIngress.lk2.miss"}
    assert [e.name for e in m.externs] == ["MyIngress.lk.hits", "MyIngress.lk2.hits"]
    info = build_p4info(m)
    # p4c's alias: the shortest unique suffix
    assert {t.preamble.name: t.preamble.alias for t in info.tables} == {
        "MyIngress.lk.t": "lk.t", "MyIngress.lk2.t": "lk2.t"}


def test_scapy_two_instances_and_copy_semantics() -> None:
    sw = Switch.load(PROG)
    sw.table_add("MyIngress.lk.t", {"d.a": Exact(9)}, "MyIngress.lk.set", {"val": 0x11})
    # only lk2's table holds a=3
    sw.table_add("MyIngress.lk2.t", {"d.a": Exact(3)}, "MyIngress.lk2.set", {"val": 0x22})
    (port, out), = sw.inject(1, frame(0x1234, 9, 1))
    # a=9: lk hit 0x11, lk2 miss 0xee, r3 = 1+16, r4 = 36, p = 1; a -> 10, b -> 9
    assert port == 2 and out[14:] == bytes([10, 9, 0x11, 0xee, 17, 36, 1]) + b"\xca\xfe"
    (port, out), = sw.inject(1, frame(0x1234, 3, 200))
    # r3 = 216; r4 = 12
    assert out[14:] == bytes([4, 3, 0xee, 0x22, 216, 12, 1]) + b"\xca\xfe"
    assert sw.counter_read("MyIngress.lk.hits", 0)[0] == 1
    assert sw.counter_read("MyIngress.lk2.hits", 0)[0] == 1


def test_parser_instance_from_two_states_and_its_error() -> None:
    sw = Switch.load(PROG)
    d2 = bytes([1, 2, 3, 4, 5, 6, 7])
    (port, out), = sw.inject(1, frame(0x1235, 0, 0, d2 + b"zz"))
    assert out[14:21] == bytes([1, 0, 0xee, 0xee, 16, 0, 2]) and out[21:] == d2 + b"zz"
    # the error in the second application: none of its arguments is copied out (d2
    # stays invalid, meta.n stays 1: p = 1), the first one's were; payload after d2
    bad = bytes([1, 0xff, 3, 4, 5, 6, 7])
    (port, out), = sw.inject(1, frame(0x1235, 0, 0, bad + b"zz"))
    assert out[12:14] == b"\xba\xd0" and out[14:21] == bytes([1, 0, 0xee, 0xee, 16, 0, 1])
    assert out[21:] == b"zz"


def test_fast_path_gives_up_and_says_so(caplog) -> None:
    with caplog.at_level(logging.DEBUG, logger="p4target.compiler.fastgen"):
        assert compile_file(PROG).fast_source() is None
    assert any("no fast path (DataParser instantiated at" in r.getMessage() for r in caplog.records)


def test_p4runtime_writes_reach_the_instance_table() -> None:
    from p4target.device import Device
    from p4target.device_config import device_config_from_file
    from p4target.p4runtime.server import P4RuntimeServer
    from tests.p4runtime.p4rt_client import Names, RawClient, ins

    device = Device(device_id=1, cpu_port=255)
    outputs: list[tuple[int, bytes]] = []
    device.output_sink = lambda port, f: outputs.append((port, f))
    server = P4RuntimeServer(device, "127.0.0.1:0")
    server.start()
    try:
        info = build_p4info(compile_file(PROG).model)
        c = RawClient(server.bound_port, device_id=1)
        c.arbitrate(10)
        c.set_pipeline(info, device_config_from_file(PROG))
        n = Names(info)
        c.write(ins(n.entry("MyIngress.lk2.t", {"d.a": 7}, "MyIngress.lk2.set", val=0x5a)))
        device.receive(1, frame(0x1234, 7, 0))
        assert outputs[-1][1][14:18] == bytes([8, 7, 0xee, 0x5a])
        c.close()
    finally:
        server.stop()


HEAD = """#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; }
struct H { h_t h; }
struct M { }
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t s) { state start { p.extract(h.h); transition accept; } }
control V(inout H h, inout M m) { apply { } }
control E(inout H h, inout M m, inout standard_metadata_t s) { apply { } }
control C(inout H h, inout M m) { apply { } }
control D(packet_out p, in H h) { apply { } }
control T(inout bit<8> x);
control K(inout bit<8> x)(bit<8> k) { apply { x = x + k; } }
"""
TAIL = """
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


@pytest.mark.parametrize(("body", "needle", "message"), [
    ("control I(inout H h, inout M m, inout standard_metadata_t s) { T() t; apply { } }",
     "t;", "'T' is a control type without a body"),
    ("control I(inout H h, inout M m, inout standard_metadata_t s) { I() i; apply { } }",
     "i;", "instantiated inside itself"),
    ("control I(inout H h, inout M m, inout standard_metadata_t s) { K(h.h.a) k; apply { } }",
     "h.h.a", "constructor argument 'k' must be a compile-time constant"),
    ("control I(inout H h, inout M m, inout standard_metadata_t s) { K(1) k; apply { k.apply(3); } }",
     "3)", "cannot be assigned to"),
    ("control I(inout H h, inout M m, inout standard_metadata_t s) { P() p; apply { } }",
     "p;", "a parser cannot be instantiated in a control"),
    ("control G<T>(inout T x) { apply { } }\n"
     "control I(inout H h, inout M m, inout standard_metadata_t s) { G<bit<8>>() g; apply { } }",
     "g;", "instantiating the generic control G<...> is not supported"),
])
def test_refusals_name_the_place(refusal, body, needle, message) -> None:
    err = refusal(HEAD + body + TAIL)
    line = (HEAD + body).count("\n") + 1
    col = body.splitlines()[-1].index(needle) + 1
    assert err.location.endswith(f":{line}:{col}"), str(err)
    assert message in str(err)


def test_action_called_from_an_instance_apply_block_is_in_the_p4info(tmp_path) -> None:
    # p4c keeps an action an apply block calls (docs/p4runtime.md); in an instance it
    # is named by the instance path
    body = """control B(inout bit<8> x) {
    action bump() { x = x + 1; }
    apply { bump(); }
}
control I(inout H h, inout M m, inout standard_metadata_t s) {
    B() b1;
    @name("second") B() b2;
    apply { b1.apply(h.h.a); b2.apply(h.h.a); }
}"""
    p = tmp_path / "direct.p4"
    p.write_text(HEAD + body + TAIL)
    m = compile_file(p).model
    assert [a.name for a in m.actions] == ["I.b1.bump", "I.second.bump"]


def test_reject_in_a_sub_parser_ends_the_parse(tmp_path) -> None:
    text = HEAD.replace("parser P(packet_in p, out H h, inout M m, inout standard_metadata_t s) "
                        "{ state start { p.extract(h.h); transition accept; } }", """
parser Sub(packet_in p, out h_t x) {
    state start { p.extract(x); transition select(x.a) { 0: reject; default: accept; } }
}
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t s) {
    Sub() sub;
    state start { sub.apply(p, h.h); transition next; }
    state next { h.h.a = h.h.a + 1; transition accept; }
}""").replace("control D(packet_out p, in H h) { apply { } }",
              "control D(packet_out p, in H h) { apply { p.emit(h.h); } }")
    p = tmp_path / "rej.p4"
    p.write_text(text + "control I(inout H h, inout M m, inout standard_metadata_t s) "
                 "{ apply { s.egress_spec = 1; } }" + TAIL)
    sw = Switch.load(p)
    # a=5: accepted, copied out, incremented by the caller's next state
    assert sw.inject(0, b"\x05rest") == [(1, b"\x06rest")]
    # a=0: reject inside Sub ends the parse: nothing copied out, h.h invalid, the byte consumed
    assert sw.inject(0, b"\x00rest") == [(1, b"rest")]


def test_exit_in_an_instance_copies_out_then_ends_the_control(tmp_path) -> None:
    # spec 12.5 (as for actions): the copy-out of the instance's
    # arguments happens, then nothing after the apply runs
    body = """control X(inout bit<8> v) {
    apply { v = 0x77; exit; }
}
control I(inout H h, inout M m, inout standard_metadata_t s) {
    X() x;
    apply {
        s.egress_spec = 1;
        x.apply(h.h.a);
        h.h.a = 0x55;
    }
}"""
    text = (HEAD + body + TAIL).replace("control D(packet_out p, in H h) { apply { } }",
                                        "control D(packet_out p, in H h) { apply { p.emit(h.h); } }")
    p = tmp_path / "exit.p4"
    p.write_text(text)
    assert Switch.load(p).inject(0, b"\x01tail") == [(1, b"\x77tail")]


def test_constructor_arguments_of_v1switch_blocks(tmp_path) -> None:
    text = """#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; }
struct H { h_t h; }
struct M { }
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t s)(bit<8> skip) {
    state start { p.extract(h.h); transition select(h.h.a) { skip: accept; default: more; } }
    state more { h.h.a = h.h.a + 1; transition accept; }
}
control V(inout H h, inout M m) { apply { } }
control I(inout H h, inout M m, inout standard_metadata_t s)(bit<9> port, bit<8> add) {
    apply { s.egress_spec = port; h.h.a = h.h.a + add; }
}
control E(inout H h, inout M m, inout standard_metadata_t s) { apply { } }
control C(inout H h, inout M m) { apply { } }
control D(packet_out p, in H h) { apply { p.emit(h.h); } }
V1Switch(P(9), V(), I(4, 0x10), E(), C(), D()) main;
"""
    p = tmp_path / "ctor.p4"
    p.write_text(text)
    sw = Switch.load(p)
    # a=1 goes through state more (+1), then ingress adds 0x10, out on port 4
    assert sw.inject(0, b"\x01x") == [(4, b"\x12x")]
    # a = skip = 9 accepts at once
    assert sw.inject(0, b"\x09x") == [(4, b"\x19x")]
