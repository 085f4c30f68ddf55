"""The type checker of statements (typecheck_stmt.py) makes typed statements
(ir_stmt.py) whose expressions are typed and converted to the type the statement
needs, and raises every error of a statement with its place; the generator
(emit_stmt.py) writes their code. The expected nodes, values and code are written
out here from the P4_16 rules."""

from __future__ import annotations

from pathlib import Path

import pytest

from p4target.compiler import ir, ir_stmt
from p4target.compiler.program import ProgramCompiler
from p4target.compiler.scope import Sym
from p4target.compiler.types import BitT, BoolT, StructT
from p4target.errors import P4Error
from p4target.frontend import ast as A
from p4target.frontend.lexer import tokenize
from p4target.frontend.parser import parse_tokens
from p4target.frontend.preprocessor import preprocess

SOURCE = """#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<16> b; }
struct headers_t { h_t h; }
struct meta_t { bit<8> m8; bool f; }
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action probe() {
        meta.m8 = 7;
        hdr.h.b[11:4] = 300;
        if (meta.m8 == 3) { meta.f = true; } else { meta.f = false; }
        bit<8> x = 300;
        const bit<4> c = 19;
        h_t fresh;
        return;
        exit;
        for (bit<8> j in {1, 2, 300}) { meta.m8 = j; }
    }
    apply {
        probe();
        switch (meta.m8) { 1: 2: { meta.f = true; } default: { } }
    }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


@pytest.fixture()
def compiled(tmp_path: Path) -> tuple[ProgramCompiler, list[A.Stmt], A.Switch]:
    """The compiled program, in a fresh scope of control I with its parameters, in an
    action; the statements of ``probe`` and the switch of I's apply block."""
    path = tmp_path / "stmts.p4"
    path.write_text(SOURCE)
    program = parse_tokens(tokenize(preprocess(path, (), {})))
    pc = ProgramCompiler(program, path)
    pc.compile()
    control = next(d for d in program.decls if isinstance(d, A.ControlDecl) and d.name == "I")
    action = next(d for d in control.locals if isinstance(d, A.ActionDecl))
    scope = pc.global_scope.child()
    scope.define("hdr", Sym("var", pc.type_names["headers_t"], "hdr"), control.loc)
    scope.define("meta", Sym("var", pc.type_names["meta_t"], "meta"), control.loc)
    pc.scope = scope
    pc.fn_kind, pc.action_outs = "action", []
    assert control.body is not None
    switch = control.body.stmts[1]
    assert isinstance(switch, A.Switch)
    return pc, action.body.stmts, switch


def emitted(pc: ProgramCompiler, node: ir_stmt.Stmt) -> list[str]:
    """The lines the generator writes for ``node``, without their indentation."""
    before = len(pc.out)
    pc.statements.emitter.emit(node)
    return [str(x).strip() for x in pc.out[before:]]


def test_an_unsized_literal_assigned_becomes_a_constant_of_the_targets_type(compiled):
    pc, stmts, _ = compiled
    node = pc.statements.checker.assign(stmts[0])  # meta.m8 = 7;
    assert isinstance(node, ir_stmt.Assign) and node.widths is None
    assert node.value == ir.Const(type=BitT(8), loc=stmts[0].value.loc, const=7)
    assert isinstance(node.target, ir.Field) and node.target.name == "m8" and node.target.type == BitT(8)
    assert isinstance(node.target.parent, StructT) and node.target.parent.name == "meta_t"
    assert emitted(pc, node) == ["meta.m8 = 7"]


def test_a_slice_assigned_keeps_the_other_bits(compiled):
    pc, stmts, _ = compiled
    node = pc.statements.checker.assign(stmts[1])  # hdr.h.b[11:4] = 300;
    assert isinstance(node.target, ir.Slice) and (node.target.hi, node.target.lo) == (11, 4)
    # 300 in bit<8> wraps to 300 - 256 = 44
    assert node.value == ir.Const(type=BitT(8), loc=stmts[1].value.loc, const=44)
    # bits 11..4 of a bit<16>: the mask keeps 0xf00f, the value moves up 4 bits
    assert emitted(pc, node) == ["hdr.h.b = ((hdr.h.b & 0xf00f) | (44 << 4))"]


def test_an_if_has_a_bool_condition_and_its_branches(compiled):
    pc, stmts, _ = compiled
    s = stmts[2]
    node = pc.statements.checker.if_(s)
    assert isinstance(node.cond, ir.Binary) and node.cond.op == "==" and node.cond.type == BoolT()
    assert node.cond.right == ir.Const(type=BitT(8), loc=node.cond.right.loc, const=3)
    assert node.then == tuple(s.then.stmts) and node.other == tuple(s.other.stmts)
    assert emitted(pc, node) == ["if (meta.m8 == 3):", "meta.f = True", "else:", "meta.f = False"]


def test_declarations_take_their_types(compiled):
    pc, stmts, _ = compiled
    checker = pc.statements.checker
    x = checker.var_decl(stmts[3])  # bit<8> x = 300;
    assert x.type == BitT(8) and x.local == "l_x" and x.init_width is None
    assert x.init == ir.Const(type=BitT(8), loc=stmts[3].init.loc, const=44)
    assert pc.scope.lookup("x") == Sym("var", BitT(8), "l_x")
    assert emitted(pc, x) == ["l_x = 44"]
    c = checker.const_decl(stmts[4])  # const bit<4> c = 19;  19 = 0b10011: 0b0011 in 4 bits
    assert c.value == ir.Const(type=BitT(4), loc=stmts[4].loc, const=3)
    sym = pc.scope.lookup("c")
    assert sym is not None and sym.kind == "const" and (sym.code, sym.const) == ("3", 3)
    assert emitted(pc, c) == []  # a constant runs nothing
    fresh = checker.var_decl(stmts[5])  # h_t fresh;  an invalid header
    assert fresh.init is None and emitted(pc, fresh) == [f"{fresh.local} = {pc.type_names['h_t'].pyname}()"]


def test_return_and_exit_in_an_action(compiled):
    pc, stmts, _ = compiled
    checker = pc.statements.checker
    ret = checker.return_(stmts[6])
    assert ret == ir_stmt.Return(loc=stmts[6].loc, value=None, in_function=False, outs=())
    assert emitted(pc, ret) == ["return"]
    pc.action_outs = ["o1", "o2"]  # an action with out parameters returns them
    assert emitted(pc, checker.return_(stmts[6])) == ["return (o1, o2, )"]
    ex = checker.exit(stmts[7])
    assert ex == ir_stmt.Exit(loc=stmts[7].loc) and emitted(pc, ex) == ["raise EXIT"]
    pc.fn_kind = "parser"
    with pytest.raises(P4Error, match="exit is not allowed in a parser; use transition reject"):
        checker.exit(stmts[7])


def test_statement_errors_are_the_checkers_with_their_place(compiled):
    pc, stmts, _ = compiled
    checker = pc.statements.checker
    m8, b = stmts[0].target, stmts[1].target.obj  # meta.m8 and hdr.h.b, at their places
    line = SOURCE.splitlines().index("        meta.m8 = 7;") + 1
    with pytest.raises(P4Error) as info:
        checker.if_(A.If(m8.loc, m8, A.Block(m8.loc, []), None))  # if (meta.m8) { }
    assert f"stmts.p4:{line}:9: error: if condition must be bool, not bit<8>; compare it, e.g. x != 0" \
        in str(info.value)
    with pytest.raises(P4Error) as info:
        checker.assign(A.Assign(m8.loc, m8, b))  # meta.m8 = hdr.h.b;
    assert "assignment to meta.m8: cannot convert bit<16> to bit<8> implicitly; add a cast (bit<8>)" \
        in str(info.value)


def test_a_switch_on_a_value_has_labels_of_its_type(compiled):
    pc, _, s = compiled
    pc.fn_kind = "apply"
    node = pc.statements.checker.switch(s)
    assert not node.action_run and node.subject.type == BitT(8)
    first, second, default = node.cases
    assert first.labels == (ir.Const(type=BitT(8), loc=s.cases[0].labels[0].loc, const=1),)
    assert first.body is None  # falls through to the next case's body
    assert second.labels == (ir.Const(type=BitT(8), loc=s.cases[1].labels[0].loc, const=2),)
    assert default.labels == (None,) and default.body == ()
    lines = emitted(pc, node)
    key = lines[0].split(" = ")[0]
    assert lines == [f"{key} = meta.m8", f"if {key} == 1 or {key} == 2:", "meta.f = True", "else:", "pass"]


def test_a_for_in_loop_over_a_list_takes_the_variables_type(compiled):
    pc, stmts, _ = compiled
    s = stmts[8]  # for (bit<8> j in {1, 2, 300}) { meta.m8 = j; }
    node = pc.statements.checker.for_in(s)
    assert node.existing is None and node.stack is None and node.lo is None and node.hi is None
    # 300 in bit<8>: 300 - 256 = 44
    assert [(x.type, x.const) for x in node.items] == [(BitT(8), 1), (BitT(8), 2), (BitT(8), 44)]
    assert pc.scope.lookup("j") is None  # the variable is the loop's
    assert node.scope.lookup("j") == Sym("var", BitT(8), node.local)
    assert emitted(pc, node) == [f"for {node.local} in (1, 2, 44, ):", f"meta.m8 = {node.local}"]
    with pytest.raises(P4Error, match="'break' outside a for loop; remove it"):
        pc.statements.checker.break_(A.Break(s.loc))
