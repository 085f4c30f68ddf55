"""Bad or unsupported input: one P4Error naming file:line:col and the fix, never a traceback."""

from __future__ import annotations

import pytest

from p4target.compiler import compile_file
from p4target.errors import P4Error, UnsupportedError

TEMPLATE = """#include <core.p4>
#include <v1model.p4>
header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
struct headers_t { ethernet_t eth; }
struct meta_t { bit<8> m8; bit<16> m16; }
DECLS
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    PARSER_LOCALS
    state start {
        pkt.extract(hdr.eth);
        START
    }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action a(bit<9> port) { sm.egress_spec = port; }
    INGRESS_LOCALS
    apply {
        APPLY
    }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.eth);
        DEPARSE
    }
}
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


def program(**parts: str) -> str:
    text = TEMPLATE
    for key in ("DECLS", "PARSER_LOCALS", "START", "INGRESS_LOCALS", "APPLY", "DEPARSE"):
        text = text.replace(key, parts.get(key.lower(), "transition accept;" if key == "START" else ""))
    return text


def where(text: str, needle: str, occurrence: int = 1) -> tuple[int, int]:
    """1-based line and column of the n-th occurrence of ``needle``."""
    pos = -1
    for _ in range(occurrence):
        pos = text.index(needle, pos + 1)
    line = text.count("\n", 0, pos) + 1
    col = pos - (text.rfind("\n", 0, pos) + 1) + 1
    return line, col


CASES = [
    # (id, parts, needle the error points at, expected message)
    ("unknown-field", dict(apply="hdr.eth.nope = 1;"), "hdr.eth.nope",
     "header ethernet_t has no field 'nope'; the fields are dst, src, ether_type"),
    ("unknown-name", dict(apply="meta.m8 = missing;"), "missing",
     "unknown name 'missing'; declare it before use"),
    ("width-mismatch", dict(apply="meta.m16 = meta.m8 + meta.m16;"), "+",
     "operands of '+' have different types bit<8> and bit<16>; cast one side so both have the "
     "same width and signedness"),
    ("implicit-widen", dict(apply="meta.m16 = meta.m8;"), "meta.m8;",
     "assignment to meta.m16: cannot convert bit<8> to bit<16> implicitly; add a cast (bit<16>)"),
    ("bool-condition", dict(apply="if (meta.m8) { }"), "meta.m8)",
     "if condition must be bool, not bit<8>; compare it, e.g. x != 0"),
    ("unknown-type", dict(apply="foo_t x;"), "foo_t",
     "unknown type 'foo_t'; declare it before use"),
    ("unknown-state", dict(start="transition nowhere;"), "transition nowhere",
     "unknown parser state 'nowhere'; declare it or use accept/reject"),
    ("slice-range", dict(apply="meta.m8 = meta.m16[16:9];"), "meta.m16[16:9]",
     "slice [16:9] is out of range for bit<16>; bounds must satisfy 15 >= hi >= lo >= 0"),
    ("in-param", dict(deparse="hdr.eth.ether_type = 1;"), "hdr.eth.ether_type = 1",
     "cannot assign to 'hdr': it is an 'in' parameter"),
    ("extract-in-control", dict(apply="bit<8> x = 1; x = x |+| 8w1; sm.egress_spec = (bit<9>)x; "
                                      "a(1); a(2, 3);"), "a(2, 3)",
     "too many arguments: 'a' takes 1"),
    ("default-not-listed", dict(ingress_locals="table t { key = { meta.m8: exact; } actions = { a; } "
                                               "default_action = NoAction(); }"), "NoAction()",
     "action 'NoAction' is not in the actions of table I.t"),
    ("match-kind", dict(ingress_locals="table t { key = { meta.m8: fuzzy; } actions = { a; } }"),
     "meta.m8: fuzzy", "unknown match kind 'fuzzy'"),
    ("two-lpm-keys", dict(ingress_locals="table t { key = { meta.m8: lpm; meta.m16: lpm; } actions = { a; } }"),
     "meta.m16: lpm", "table 't' has a second lpm key; BMv2 takes one lpm key per table (make the others "
     "ternary)"),
    ("header-bytes", dict(decls="header odd_t { bit<7> x; } struct holder_t { odd_t o; }"), "odd_t",
     "header odd_t is 7 bits long; headers must be a whole number of bytes (add padding bits)"),
    ("const-prio", dict(ingress_locals="table t { key = { meta.m8: ternary; } actions = { a; } "
                                       "const entries = { priority=5: 1 &&& 1: a(1); } }"), "priority=5",
     "a table with 'const entries' cannot have entry priorities (as in p4c); remove 'priority=' or the const"),
    ("syntax", dict(apply="meta.m8 = 1"), "\n    }\n}\ncontrol E",
     None),
    ("stack-last-in-control", dict(decls="header item_t { bit<8> v; }\nstruct s_t { item_t[2] st; }",
                                   ingress_locals="s_t s;", apply="meta.m8 = s.st.last.v;"),
     "s.st.last", "'last' of a header stack can only be used in a parser (as in p4c); use an index "
     "or keep the value in metadata"),
    ("duplicate", dict(ingress_locals="action a(bit<9> p) { }"), "a(bit<9> p) { }",
     "'a' is already declared in this scope; rename one of them"),
    ("selector-without-selector-impl",
     dict(ingress_locals="action_profile(4) ap; table t { key = { meta.m8: exact; meta.m16: selector; } "
                         "actions = { a; } implementation = ap; }"), "t { key",
     "table t has a selector key but no action_selector implementation; add implementation = "
     "<an action_selector>"),
    ("action-order", dict(ingress_locals="table t { key = { meta.m8: exact; } actions = { b; } } "
                                         "action b() { }"), "b; }",
     None),
    ("int-param-with-direction", dict(ingress_locals="action b(in int v) { bool t = 8w1 == v; }"), "v) {",
     "v: parameters with type int must be directionless; remove 'in' or give it a width (int<W>, bit<W>)"),
    ("two-default-labels",
     dict(ingress_locals="table t { key = { meta.m8: exact; } actions = { a; NoAction; } }",
          apply="switch (t.apply().action_run) { default: { meta.m8 = 1; } default: { meta.m8 = 2; } }"),
     "switch (", "switch has multiple 'default' labels; keep one"),
    # what p4c (or its BMv2 back end) refuses too
    ("switch-in-action", dict(ingress_locals="action b() { switch (meta.m8) { 1: { } } }"), "switch (meta",
     "a switch statement in an action; BMv2 cannot run one there (p4c-bm2-ss refuses it): use if/else"),
    ("two-actions-one-name", dict(ingress_locals='@name("a") action b() { }'), "b() { }", None),
    ("table-in-action-argument",
     dict(ingress_locals="table u { key = { meta.m8: exact; } actions = { NoAction; } } "
                         "action c(in bit<8> x) { meta.m16 = (bit<16>)x; } "
                         "table t { key = { meta.m8: exact; } actions = { c(u.apply().hit ? 8w1 : 8w2); } }"),
     "u.apply().hit ?", "a table applied in an action's argument; BMv2 cannot do that (p4c-bm2-ss refuses it): "
     "apply the table before"),
    ("key-expression-unnamed", dict(ingress_locals="table t { key = { meta.m8 + 1: exact; } actions = { a; } }"),
     "meta.m8 + 1", 'key meta.m8 + 1 is an expression; give it a control-plane name with @name("...") '
     "(p4c requires one)"),
    ("parser-without-end", dict(start="transition start;"), "P(packet_in",
     "parser P never reaches accept or reject from start; add a transition to accept"),
    ("for-in-untyped", dict(apply="bit<8> i = 0; for (i in 1 .. 3) { }"), "in 1 .. 3",
     "a for-in loop declares its variable: for (bit<W> i in ...)"),
    ("static-assert", dict(decls='const bool ok = static_assert(V1MODEL_VERSION < 20000101, "too new");'),
     "static_assert(V1", "static_assert failed: too new"),
    # placed where p4c places them
    ("priorities-without-ternary-key",
     dict(ingress_locals="table t { key = { meta.m8: exact; } actions = { a; } entries = { priority=5: 1: a(1); } }"),
     "key = { meta.m8: exact; } actions = { a; } entries", None),
    ("entries-without-key", dict(ingress_locals="table t { actions = { a; } const entries = { _ : a(1); } }"),
     "t { actions", "table t has entries but no key; remove the entries or add a key"),
    ("two-varbit-fields", dict(decls="header v_t { varbit<8> x; varbit<8> y; } struct hv_t { v_t v; }"),
     "x; varbit<8> y", None),
    # p4c reports its errors in source order, BMv2's byte-aligned headers last
    ("header-bytes-last", dict(decls="header odd_t { bit<7> x; } struct holder_t { odd_t o; }", apply="meta.m8 = missing;"), "missing",
     "unknown name 'missing'; declare it before use"),
    ("unused-control", dict(decls="control Unused(inout bit<8> x) { apply { x = 16w1; } }"), "16w1",
     "assignment to x: cannot convert bit<16> to bit<8> implicitly; add a cast (bit<8>)"),
    ("before-an-unsupported-one", dict(decls="control Early(inout bit<8> x) { apply { x = nothing; } }",
                                       ingress_locals="Checksum16() ck;"), "nothing",
     "unknown name 'nothing'; declare it before use"),
    # checks p4c's type checker makes, at the place it reports them
    ("local-shadows-parameter", dict(apply="bit<8> meta = 1;"), "bit<8> meta = 1",
     "declaration of 'meta' shadows a parameter 'meta'; rename the local"),
    ("type-of-a-header", dict(decls="type ethernet_t eth_again_t;"), "eth_again_t",
     "'type' can only be applied to base types (bit<W>, int<W>, bool), not header ethernet_t; use typedef"),
    ("type-of-an-unsized-int", dict(decls="type int any_size_t;"), "any_size_t",
     "'type' can only be applied to base types (bit<W>, int<W>, bool), not int; use typedef"),
    ("enum-over-a-new-type", dict(decls="type bit<8> small_t;\ntypedef small_t also_small_t;\n"
                                        "enum also_small_t Colour { RED = 1 }"), "Colour",
     "enum Colour: its underlying type also_small_t is declared with 'type'; an enum's underlying type must "
     "be bit<W> or int<W> (or a typedef of one)"),
    ("match-annotation-not-a-kind", dict(decls="struct vs_t { @match(1 + 1) bit<8> f; }"), "@match",
     "@match(1 + 1): the value must be a match_kind (exact, lpm, optional, range, selector, ternary)"),
    ("main-not-an-instance", dict(decls="extern main { }"), "main { }",
     "'main' must be the package instance (V1Switch(...) main;); rename this declaration"),
    ("lookahead-of-a-varbit-header", dict(decls="header opts_t { bit<8> len; varbit<32> data; }",
                                          start="opts_t o = pkt.lookahead<opts_t>(); transition accept;"),
     "pkt.lookahead", "lookahead<opts_t>: the header has a varbit field; lookahead needs a fixed-size type"),
    ("duplicate-case-label", dict(apply="switch (meta.m8) { 1: { } 2: { } 8w1: { } }"), "8w1",
     "duplicate case label 8w1"),
    ("entries-before-key", dict(ingress_locals="table t { const entries = { 1: a(1); } key = { meta.m8: exact; } "
                                               "actions = { a; } }"), "entries = { 1",
     "the entries of table t come before its key; move them after the key"),
    ("defaultonly-action-in-entry", dict(ingress_locals="table t { key = { meta.m8: exact; } actions = { a; "
                                                        "@defaultonly NoAction; } const entries = { 1: NoAction(); } "
                                                        "default_action = NoAction(); }"), "1: NoAction()",
     "action NoAction is @defaultonly and cannot be used in an entry"),
    ("shift-wider-than-p4c", dict(apply="meta.m8 = (bit<8>)(3 << 4000);"), "<< 4000",
     "shifting an unsized integer left by 4000 bits; integers are at most 2048 bits wide (as in p4c)"),
    ("hash-max-without-width", dict(apply="hash(meta.m16, HashAlgorithm.crc16, 16w0, { hdr.eth.src }, 1024);"),
     "1024", "1024: could not infer a width for hash's base or max; give it one, e.g. (bit<32>)1024"),
    ("parser-as-control-argument", dict(decls="parser Sub(packet_in p) { state start { transition accept; } }\n"
                                              "control Holder(inout bit<8> x)(Sub s) { apply { } }"), "Sub s",
     "s: a control cannot instantiate a parser; pass the parser to the package instead"),
    ("control-as-extern-argument", dict(decls="control Inner(inout bit<8> x);\nextern Wrapper { Wrapper(Inner c); }"),
     "Inner c", "c: an extern's parameter cannot have type control Inner; pass values, headers or structs"),
    ("struct-expression-field-twice", dict(apply="meta = { m8 = 1, m16 = 2, m8 = 3 };"), "m8 = 3",
     "field 'm8' is given twice in this structure expression; keep one"),
    # BMv2's limits on entries come after the type checker's errors, as in p4c-bm2-ss
    ("entry-wildcard-on-exact", dict(ingress_locals="table t { key = { meta.m8: exact; } actions = { a; } "
                                                    "const entries = { _: a(1); } }"), "_: a(1)",
     "key meta.m8 is exact; '_' is not allowed"),
    ("entry-key-count-before-wildcard", dict(ingress_locals="table t { key = { meta.m8: exact; } actions = { a; } "
                                                            "const entries = { _: a(1); (1, 2): a(2); } }"),
     "(1, 2)", "entry has 2 key value(s) but table t has 1 key(s)"),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_bad_programs_are_refused_with_their_location(p4file, case) -> None:
    _, parts, needle, message = case
    text = program(**parts)
    path = p4file(text)
    with pytest.raises(P4Error) as ei:
        compile_file(path)
    err = ei.value
    line, col = where(text, needle)
    if needle.startswith("\n"):
        line, col = line + 1, 5          # the token after the missing ';'
    assert err.location == f"{path}:{line}:{col}", str(err)
    if message is not None:
        assert str(err) == f"{path}:{line}:{col}: error: {message}"


UNSUPPORTED = [
    ("checksum16", dict(ingress_locals="Checksum16() ck;"), "ck;",
     "extern 'Checksum16' is not supported by the embedded target; use counter, meter, register, "
     "direct_counter, direct_meter, action_profile or action_selector"),
    ("unknown-extern", dict(decls="extern void magic(in bit<8> x);", apply="magic(1);"), "magic(1)",
     "extern function 'magic' is not supported by the embedded target; use the v1model/core "
     "functions the embedded target implements"),
    ("macro-stringify", dict(decls="#define STR(x) #x"), "#define",
     "the # or ## operator (in macro STR) is not supported by the embedded target; write the "
     "text out without them"),
    ("packet-length", dict(start="bit<32> n = pkt.length(); transition accept;"), "pkt.length",
     "packet_in.length() is not supported by the embedded target; v1model (BMv2) does not support "
     "it either"),
    # of two limits, the first in the source is reported (here in a block V1Switch does not name)
    ("earlier-limit-first", dict(decls="extern void magic(in bit<8> x);\n"
                                       "control Early(inout bit<8> x) { apply { magic(x); } }",
                                 ingress_locals="Checksum16() ck;"), "magic(x)",
     "extern function 'magic' is not supported by the embedded target; use the v1model/core "
     "functions the embedded target implements"),
]


@pytest.mark.parametrize("case", UNSUPPORTED, ids=[c[0] for c in UNSUPPORTED])
def test_unsupported_constructs_say_what_to_do(p4file, case) -> None:
    _, parts, needle, message = case
    text = program(**parts)
    path = p4file(text)
    with pytest.raises(UnsupportedError) as ei:
        compile_file(path)
    line, col = where(text, needle)
    assert str(ei.value) == f"{path}:{line}:{col}: error: {message}"


def test_errors_in_included_files_name_the_included_file(p4file, tmp_path) -> None:
    inc = tmp_path / "inc.p4"
    inc.write_text("// shared\nconst bit<8> X = 8w1 + 16w2;\n")
    path = p4file(program(decls='#include "inc.p4"'))
    with pytest.raises(P4Error) as ei:
        compile_file(path)
    assert str(ei.value).startswith(f"{inc}:2:22: error: operands of '+' have different types")


def test_preprocessor_errors(p4file) -> None:
    path = p4file(program(decls='#include "nowhere.p4"'))
    with pytest.raises(P4Error, match=r"prog\.p4:6:1: error: cannot find include file 'nowhere.p4'"):
        compile_file(path)
    path = p4file(program(decls="/* never closed"))
    with pytest.raises(P4Error, match=r"prog\.p4:6:1: error: unterminated /\* comment"):
        compile_file(path)
    path = p4file(program(decls="#if 1\nconst bit<8> Y = 1;"))
    with pytest.raises(P4Error, match="missing #endif"):
        compile_file(path)
    path = p4file(program(decls="#error stop here"))
    with pytest.raises(P4Error, match=r"prog\.p4:6:1: error: #error stop here"):
        compile_file(path)


def test_defines_from_the_caller_select_code(p4file) -> None:
    text = program(decls="#ifndef PORT\n#define PORT 3\n#endif",
                   apply="sm.egress_spec = PORT;")
    path = p4file(text)
    assert compile_file(path) is not None
    assert compile_file(path, defines={"PORT": "9w4"}) is not None
    with pytest.raises(P4Error, match="cannot convert bit<16> to bit<9>"):
        compile_file(path, defines={"PORT": "16w4"})


def test_a_program_without_v1switch_is_checked_in_source_order(p4file) -> None:
    text = """#include <core.p4>
control C(inout bit<8> x) { apply { x = x + 1; } }
control D(inout bit<8> x) { apply { x = y; } }
control E(inout bit<8> x) { apply { x = z; } }
package top(C c);
top(C()) main;
"""
    path = p4file(text)
    with pytest.raises(P4Error) as ei:
        compile_file(path)
    assert str(ei.value) == f"{path}:3:41: error: unknown name 'y'; declare it before use"
    path = p4file(text.replace("y;", "x;").replace("z;", "x;").replace("top(C()) main;\n", ""))
    with pytest.raises(P4Error) as ei:
        compile_file(path)
    assert str(ei.value).startswith(f"{path}:6:1: error: the program has no 'main'")  # where it is missing


def test_an_unused_header_may_have_any_width(p4file) -> None:
    """p4c leaves types nothing names out of BMv2's JSON: BMv2's byte rule does not apply."""
    assert compile_file(p4file(program(decls="header odd_t { bit<7> x; }"))) is not None


def test_keys_p4c_names_without_an_annotation(p4file) -> None:
    """A field, a slice of one, one masked with a constant: no @name needed (p4c neither)."""
    text = program(ingress_locals="table t { key = { meta.m8 & 0x0f: ternary; hdr.eth.src[7:0]: exact; "
                                  "hdr.eth.isValid(): exact; } actions = { a; } }", apply="t.apply();")
    keys = [k.name for k in compile_file(p4file(text)).model.table("I.t").keys]
    assert keys == ["meta.m8 & 0x0f", "hdr.eth.src[7:0]", "hdr.eth.isValid()"]


def test_static_assert_that_holds_is_true(p4file) -> None:
    text = program(decls='const bool ok = static_assert(V1MODEL_VERSION >= 20160101, "old");',
                   apply="static_assert(ok); if (static_assert(true)) { meta.m8 = 1; }")
    assert compile_file(p4file(text)) is not None


def test_a_serializable_enum_indexes_a_stack(p4file) -> None:
    from p4target import Switch
    text = program(decls="enum bit<2> Slot { A = 0, B = 1 }\nheader item_t { bit<8> v; }\nstruct s_t { item_t[2] st; }",
                   ingress_locals="s_t s;",
                   apply="Slot k = Slot.B; s.st[k].setValid(); s.st[k].v = 3; s.st[Slot.A].v = 5; "
                         "hdr.eth.ether_type = (bit<16>)s.st[k].v;")
    frame = bytes(12) + b"\x08\x00" + b"rest"
    assert Switch.load(p4file(text)).inject(0, frame) == [(0, bytes(12) + b"\x00\x03" + b"rest")]


def test_a_generic_extern_function_may_return_a_generic_extern(p4file) -> None:
    """``extern W<T> f<T>(...)`` is a function declaration, not the start of an extern object."""
    text = program(decls="extern widget<T> { widget(); }\nextern widget<T> make_widget<T>(in T seed);")
    assert compile_file(p4file(text)) is not None


def test_an_action_named_like_an_extern_function_calls_the_extern(p4file) -> None:
    """Inside ``action mark_to_drop()``, ``mark_to_drop(sm)`` (one argument) is v1model's
    extern function: p4c tells callables of one name apart by their number of arguments."""
    from p4target import Switch
    text = program(ingress_locals="action mark_to_drop() { mark_to_drop(sm); }",
                   apply="sm.egress_spec = 2; if (hdr.eth.ether_type == 0x0800) { mark_to_drop(); }")
    sw = Switch.load(p4file(text))
    assert sw.inject(0, bytes(12) + b"\x08\x00" + b"x") == []  # the extern dropped it
    assert sw.inject(0, bytes(12) + b"\x86\xdd" + b"x") == [(2, bytes(12) + b"\x86\xdd" + b"x")]


def test_an_indexed_slice_takes_width_bits_from_its_low_bit(p4file) -> None:
    """``x[lo +: w]`` is ``x[lo + w - 1 : lo]``."""
    from p4target import Switch
    sw = Switch.load(p4file(program(apply="hdr.eth.ether_type = hdr.eth.src[8 +: 16];")))
    src = bytes([0, 0, 0, 0xAB, 0xCD, 0])  # bits 23..8 of the 48-bit field are 0xABCD
    assert sw.inject(0, bytes(6) + src + b"\x08\x00" + b"x") == [(0, bytes(6) + src + b"\xab\xcd" + b"x")]


def test_a_typedef_may_declare_its_header_inline(p4file) -> None:
    from p4target import Switch
    text = program(decls="typedef header extra_t { bit<8> v; } extra_alias_t;", ingress_locals="extra_alias_t x;",
                   apply="x.setValid(); x.v = 7; hdr.eth.ether_type = (bit<16>)x.v;")
    sw = Switch.load(p4file(text))
    assert sw.inject(0, bytes(12) + b"\x08\x00" + b"x") == [(0, bytes(12) + b"\x00\x07" + b"x")]


def test_missing_file() -> None:
    with pytest.raises(P4Error, match="no such file"):
        compile_file("/nonexistent/x.p4")


def test_control_parameters_must_have_the_pipeline_types(p4file) -> None:
    text = program(decls="struct other_t { bit<8> x; }").replace(
        "control E(inout headers_t hdr, inout meta_t meta", "control E(inout headers_t hdr, inout other_t meta")
    path = p4file(text)
    line, col = where(text, "inout other_t meta")
    with pytest.raises(P4Error) as ei:
        compile_file(path)
    assert str(ei.value) == (f"{path}:{line}:{col}: error: parameter 'meta' has type struct other_t but "
                             "V1Switch passes struct meta_t here; use the parser's header/metadata types")


def test_parser_types_are_checked_where_v1switch_gets_the_parser(p4file) -> None:
    """After the blocks' own errors, which come first in the source (as in p4c)."""
    text = program().replace("out headers_t hdr", "out ethernet_t hdr").replace("pkt.extract(hdr.eth);",
                                                                               "pkt.extract(hdr);")
    path = p4file(text)
    line, col = where(text, "P(), VC()")
    with pytest.raises(P4Error) as ei:
        compile_file(path)
    assert str(ei.value) == (f"{path}:{line}:{col}: error: V1Switch's parser P: its headers parameter must be a "
                             "struct, not header ethernet_t")
    path = p4file(text.replace("pkt.extract(hdr);", "pkt.extract(_);"))
    line, col = where(text, "pkt.extract(hdr)")
    with pytest.raises(P4Error) as ei:
        compile_file(path)
    assert ei.value.location == f"{path}:{line}:{col}", str(ei.value)


def test_include_dirs_are_searched(p4file, tmp_path) -> None:
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "consts.p4").write_text("const bit<9> OUT_PORT = 5;\n")
    path = p4file(program(decls="#include <consts.p4>", apply="sm.egress_spec = OUT_PORT;"))
    with pytest.raises(P4Error, match="cannot find include file 'consts.p4'"):
        compile_file(path)
    assert compile_file(path, include_dirs=[lib]) is not None


def test_a_parser_loop_that_consumes_nothing_times_out(p4file) -> None:
    from p4target import Switch
    # accept is reachable (p4c refuses a parser that never reaches it), never reached: m8 stays 0
    text = program(start="transition spin; } state spin { transition select(meta.m8) { 1: accept; default: spin; }")
    sw = Switch.load(p4file(text))
    # inject returns: the frame goes on to ingress (egress_spec 0) on the parser-error path
    assert sw.inject(0, bytes(range(20))) == [(0, bytes(range(20)))]
    st = sw.pipeline.parse(bytes(range(20)), 0)
    assert st.sm.parser_error == sw.pipeline.errors["ParserTimeout"]


def test_next_index_counts_the_extracted_elements(p4file) -> None:
    from p4target import Switch
    text = program(decls="header item_t { bit<8> v; }\nstruct s_t { item_t[3] st; }",
                   start="transition more; } state more { meta.m8 = (bit<8>)s.st.nextIndex; "
                         "pkt.extract(s.st.next); transition select(s.st.last.v) { 0: accept; "
                         "default: more; }",
                   parser_locals="s_t s;",
                   apply="hdr.eth.ether_type = (bit<16>)meta.m8;")
    sw = Switch.load(p4file(text))
    frame = bytes(12) + b"\x00\x00" + b"\x05\x06\x00" + b"rest"
    out = sw.inject(0, frame)
    # the stack is a parser local: its elements are consumed, not emitted
    assert out == [(0, bytes(12) + b"\x00\x02" + b"rest")]


def test_functions_return_values_and_out_parameters(p4file) -> None:
    from p4target import Switch
    decls = """
bit<16> mix(in bit<16> a, in bit<16> b) {
    if (a > b) {
        return a - b;
    }
    return b - a;
}
bit<8> split(in bit<16> v, out bit<8> low) {
    low = v[7:0];
    return v[15:8];
}
"""
    text = program(decls=decls, apply="bit<8> lo; bit<8> hi = split(hdr.eth.ether_type, lo); "
                                      "hdr.eth.ether_type = mix((bit<16>)hi, (bit<16>)lo);")
    sw = Switch.load(p4file(text))
    frame = bytes(12) + b"\x12\x80" + b"data"
    assert sw.inject(0, frame) == [(0, bytes(12) + b"\x00\x6e" + b"data")]


def test_windows_line_endings_and_continued_defines(p4file) -> None:
    text = program(decls="#define OUT \\\n    9w3", apply="sm.egress_spec = OUT;").replace("\n", "\r\n")
    path = p4file(text)
    assert "p_sm.egress_spec = 3" in compile_file(path).python_source


def test_block_local_initializers_may_read_parameters(p4file) -> None:
    from p4target import Switch
    text = program(parser_locals="bit<9> first_port = sm.ingress_port;",
                   start="meta.m16 = (bit<16>)first_port; transition accept;",
                   ingress_locals="bit<9> in_port = sm.ingress_port;",
                   apply="sm.egress_spec = in_port + 1; hdr.eth.ether_type = meta.m16;")
    sw = Switch.load(p4file(text))
    assert sw.inject(4, bytes(14) + b"x") == [(5, bytes(12) + b"\x00\x04" + b"x")]


def test_a_control_named_like_a_v1model_type_is_a_redeclaration(p4file) -> None:
    """p4c refuses ``control Ingress`` in a v1model program: v1model.p4 declares that type."""
    decl = ("control Ingress(inout headers_t hdr, inout meta_t meta, "
            "inout standard_metadata_t sm) { apply { } }")
    text = program(decls=decl)
    path = p4file(text)
    with pytest.raises(P4Error) as ei:
        compile_file(path)
    line, col = where(text, "Ingress(")
    assert ei.value.location == f"{path}:{line}:{col}"
    assert "'Ingress' is already declared (first declared at " in str(ei.value)
    assert "v1model.p4:" in str(ei.value) and "e.g. 'MyIngress'" in str(ei.value)
