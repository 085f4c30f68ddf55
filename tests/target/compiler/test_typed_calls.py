"""The call checker (typecheck_call.py, typecheck_packet.py) makes typed calls
(ir.py): the callee resolved, the arguments settled in the order of its
parameters and converted to their types, every error of a call raised with its
place; the call generator (emit_call.py) writes their code. The nodes recorded here
are those the checker made while compiling a real program; the expected nodes,
values, code and messages are written out from the P4_16 rules."""

from __future__ import annotations

from pathlib import Path

import pytest

from p4target.compiler import ir
from p4target.compiler.program import ProgramCompiler
from p4target.compiler.scope import Scope
from p4target.compiler.types import BitT, BoolT, ObjT, StructT, VoidT
from p4target.compiler.values import V
from p4target.errors import P4Error
from p4target.frontend import ast as A
from p4target.frontend.lexer import tokenize
from p4target.frontend.parser import parse_tokens
from p4target.frontend.preprocessor import preprocess

HEAD = """#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<16> b; }
struct headers_t { h_t h; }
struct meta_t { bit<8> m8; bool f; }
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control Sub(inout bit<8> x, in bool f) { apply { if (f) { x = x + 1; } } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action set8(bit<8> v) { meta.m8 = v; }
    action get(out bit<8> o, inout bit<16> io) { o = 1; io = io + 1; }
    table t { actions = { set8; NoAction; } default_action = NoAction(); }
    counter(4, CounterType.packets) c;
    Sub() sub;
    apply {
"""
CALLS = """        set8(300);
        hdr.h.setValid();
        if (t.apply().hit) { meta.f = true; }
        get(meta.m8, hdr.h.b);
        c.count(2);
        sub.apply(meta.m8, true);
"""
BAD = """        set8(1, 2);
        hdr.h.frob();
        get(3, hdr.h.b);
        c.count();
        sub.apply(meta.m8);
"""
TAIL = """    }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""
FIRST = HEAD.count("\n") + 1  # the line of the first call of I's apply block


class Recorded:
    """The program compiled, with every call the checker typed: its node, what the
    generator made of it (its value and the lines it wrote), and the scope and kind
    of function it was checked in."""

    def __init__(self, path: Path) -> None:
        path.write_text(HEAD + CALLS + TAIL)
        self.pc = ProgramCompiler(parse_tokens(tokenize(preprocess(path, (), {}))), path)
        self.nodes: dict[str, ir.Call] = {}
        self.code: dict[str, tuple[V | None, list[str]]] = {}
        self.scopes: dict[str, tuple[Scope, str]] = {}
        calls, emitter = self.pc.statements.calls, self.pc.statements.call_emitter
        check, emit = calls.check, emitter.emit
        texts: dict[int, str] = {}

        def checked(e: A.Call) -> ir.Call:
            node = check(e)
            text = f"{e.loc.line}:{e.loc.col}"
            self.nodes[text], self.scopes[text] = node, (self.pc.scope, self.pc.fn_kind)
            texts[id(node)] = text
            return node

        def emitted(node: ir.Call) -> V | None:
            before = len(self.pc.out)
            v = emit(node)
            if id(node) in texts:
                self.code[texts[id(node)]] = (v, [str(x).strip() for x in self.pc.out[before:]])
            return v

        calls.check, emitter.emit = checked, emitted  # type: ignore[method-assign]  # recording, not changing
        self.pc.compile()


@pytest.fixture(scope="module")
def rec(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    return Recorded(Path(tmp_path_factory.mktemp("calls")) / "calls.p4")


def test_an_action_calls_argument_is_converted_to_its_parameters_type(rec):
    node = rec.nodes[f"{FIRST}:9"]  # set8(300);
    assert isinstance(node, ir.ActionCall) and node.callee.p4name == "I.set8"
    assert node.ret is None and node.type == VoidT() and not node.exits
    (arg,) = node.args
    # 300 passed to bit<8> wraps to 300 - 256 = 44
    assert (arg.param, arg.direction, arg.type, arg.place) == ("v", "", BitT(8), None)
    assert arg.value == ir.Const(type=BitT(8), loc=arg.value.loc, const=44)
    v, lines = rec.code[f"{FIRST}:9"]
    assert v is not None and v.code == "a_I_set8(st, L, 44)" and lines == []


def test_out_and_inout_arguments_are_copied_back_in_order(rec):
    node = rec.nodes[f"{FIRST + 3}:9"]  # get(meta.m8, hdr.h.b);
    assert isinstance(node, ir.ActionCall) and node.callee.p4name == "I.get"
    o, io = node.args
    assert (o.param, o.direction, o.type, o.value) == ("o", "out", BitT(8), None)
    assert isinstance(o.place, ir.Field) and o.place.name == "m8" and o.place.parent.name == "meta_t"
    assert (io.param, io.direction, io.type) == ("io", "inout", BitT(16))
    assert isinstance(io.value, ir.Field) and io.value.name == "b" and io.place == io.value
    v, lines = rec.code[f"{FIRST + 3}:9"]
    # an out argument starts as 0; the results come back as a tuple, stored left to right
    assert v is None and len(lines) == 3
    r = lines[0].split(" = ")[0]
    # (a control's parameters are the locals p_<name> of its function)
    assert lines == [f"{r} = a_I_get(st, L, 0, p_hdr.h.b)", f"p_meta.m8 = {r}[0]", f"p_hdr.h.b = {r}[1]"]


def test_set_valid_names_the_header(rec):
    node = rec.nodes[f"{FIRST + 1}:9"]  # hdr.h.setValid();
    assert isinstance(node, ir.SetValidity) and node.valid and node.type == VoidT()
    assert isinstance(node.header, StructT) and (node.header.kind, node.header.name) == ("header", "h_t")
    assert isinstance(node.base, ir.Field) and node.base.name == "h"
    # a member of a struct, not of a union: no other member is made invalid
    assert isinstance(node.parent, ir.Ref) and node.member == "h"
    v, lines = rec.code[f"{FIRST + 1}:9"]
    assert v is not None and v.code == "p_hdr.h.set_valid()" and lines == []


def test_a_table_apply_names_the_table_and_its_hit_is_a_bool(rec):
    node = rec.nodes[f"{FIRST + 2}:13"]  # t.apply() in if (t.apply().hit)
    assert isinstance(node, ir.TableApply) and node.table.name == "I.t"
    assert isinstance(node.type, ObjT) and (node.type.kind, node.type.name) == ("tableresult", "I.t")
    scope, kind = rec.scopes[f"{FIRST + 2}:13"]
    rec.pc.scope, rec.pc.fn_kind = scope, kind
    hit = A.Member(node.loc, A.Call(node.loc, A.Member(node.loc, A.Name(node.loc, "t"), "apply"), [], []), "hit")
    checked = rec.pc.expressions.checker.check(hit)
    assert isinstance(checked, ir.TableResultMember) and checked.name == "hit" and checked.type == BoolT()


def test_extract_names_the_header_type(rec):
    node = next(n for n in rec.nodes.values() if isinstance(n, ir.Extract))  # pkt.extract(hdr.h)
    assert node.loc.line == 7 and node.type == VoidT()
    assert (node.header.kind, node.header.name) == ("header", "h_t")
    assert isinstance(node.place, ir.Field) and node.place.name == "h"
    assert node.stack is None and node.length is None and node.varbit is None
    emit = next(n for n in rec.nodes.values() if isinstance(n, ir.EmitHeaders))  # pkt.emit(hdr.h)
    assert isinstance(emit.value, ir.Field) and emit.value.type == node.header


def test_an_extern_method_names_its_instance(rec):
    node = rec.nodes[f"{FIRST + 4}:9"]  # c.count(2);
    assert isinstance(node, ir.ExternCall) and node.name == "count" and node.type == VoidT()
    assert node.instance is not None and (node.instance.kind, node.instance.name) == ("counter", "I.c")
    (index,) = node.args
    assert isinstance(index, ir.Const) and index.const == 2 and node.out is None
    v, lines = rec.code[f"{FIRST + 4}:9"]
    # (an extern instance is the module-level X_<control>_<name>, bound to the runtime's)
    assert node.code == "X_I_c" and v is not None and v.code == "X_I_c.count(st, 2)" and lines == []


def test_a_sub_blocks_apply_copies_its_arguments_in_and_out(rec):
    node = rec.nodes[f"{FIRST + 5}:9"]  # sub.apply(meta.m8, true);
    assert isinstance(node, ir.SubApply) and node.block.kind == "control" and node.block.path == "I.sub"
    x, f = node.args
    assert (x.param, x.direction, x.type) == ("x", "inout", BitT(8)) and node.attrs == ("p_x", "p_f")
    assert isinstance(x.value, ir.Field) and x.value.name == "m8" and x.place == x.value
    assert (f.param, f.direction, f.place) == ("f", "in", None)
    assert f.value == ir.Const(type=BoolT(), loc=f.value.loc, const=True)
    _, lines = rec.code[f"{FIRST + 5}:9"]
    # a fresh locals object, the arguments copied in, the body run, x copied back (also on exit)
    lv = lines[0].split(" = ")[0]
    assert lines[1:] == [f"{lv}.p_x = p_meta.m8", f"{lv}.p_f = True", "try:", f"c_I_sub(st, {lv})", "finally:",
                         f"p_meta.m8 = {lv}.p_x"]


def test_packet_errors_are_the_checkers_with_their_place(rec, tmp_path):
    """An extract into a header with no varbit field given a length."""
    node = next(n for n in rec.nodes.values() if isinstance(n, ir.Extract))
    rec.pc.scope, rec.pc.fn_kind = rec.scopes[f"{node.loc.line}:{node.loc.col}"]
    loc = node.loc
    pkt_extract = A.Member(loc, A.Name(loc, "pkt"), "extract")
    h = A.Member(loc, A.Name(loc, "hdr"), "h")
    call = A.Call(loc, pkt_extract, [], [A.Arg(None, h, loc), A.Arg(None, A.IntLit(loc, 8, None, False, "8"), loc)])
    with pytest.raises(P4Error) as info:
        rec.pc.statements.calls.check(call)
    assert f"calls.p4:7:{loc.col}: error: header h_t has no varbit field; call extract(hdr) with one argument" \
        in str(info.value)


@pytest.mark.parametrize("line, col, message", [
    # set8 takes one argument
    (FIRST, 9, "too many arguments: 'set8' takes 1"),
    # a header has three methods
    (FIRST + 1, 9, "header h_t has no method 'frob'; use isValid, setValid or setInvalid"),
    # an out argument must be a place
    (FIRST + 2, 13, "'3' cannot be assigned to"),
    # a counter counts one index
    (FIRST + 3, 9, "'c.count' takes 1 argument(s), got 0"),
    # Sub has two parameters, f has no default
    (FIRST + 4, 9, "missing argument for parameter 'f' of Sub"),
])
def test_call_errors_are_the_checkers_with_their_place(rec, tmp_path, line, col, message):
    """Calls that are wrong, parsed from their own file (at the same lines as the good
    ones), checked where ``set8(300)`` was."""
    bad = tmp_path / "bad.p4"
    bad.write_text(HEAD + BAD + TAIL)
    program = parse_tokens(tokenize(preprocess(bad, (), {})))
    control = next(d for d in program.decls if isinstance(d, A.ControlDecl) and d.name == "I")
    calls = [s.call for s in control.body.stmts]
    rec.pc.scope, rec.pc.fn_kind = rec.scopes[f"{FIRST}:9"]
    with pytest.raises(P4Error) as info:
        rec.pc.statements.calls.check(calls[line - FIRST])
    assert f"bad.p4:{line}:{col}: error: {message}" in str(info.value)
