"""The type checker of expressions (typecheck_expr.py) makes typed nodes (ir.py) with
their types, folded constants and resolved names, and the general generator
(emit_expr.py) writes their code; the statement checker (typecheck_stmt.py) makes
typed statements (ir.py) of them and the statement generator (emit_stmt.py)
writes theirs. The expected types, values and code are written out here from the
P4_16 rules."""

from __future__ import annotations

from pathlib import Path

import pytest

from p4target.compiler import ir
from p4target.compiler.program import ProgramCompiler
from p4target.compiler.scope import Sym
from p4target.compiler.typecheck_call import CallChecker
from p4target.compiler.types import BitT, BoolT, StructT
from p4target.errors import P4Error
from p4target.frontend import ast as A
from p4target.frontend.lexer import tokenize
from p4target.frontend.parser import parse_tokens
from p4target.frontend.preprocessor import preprocess

SOURCE = """#include <core.p4>
#include <v1model.p4>
const bit<8> K = 5;
enum bit<8> Color { RED = 1, BLUE = 2 }
header h_t { bit<8> a; bit<16> b; }
struct headers_t { h_t h; }
struct meta_t { bit<16> m16; bit<4> m4; bool f; bit<24> m24; bit<8> m8; }
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
bit<8> bump(inout bit<8> x) { x = x + 1; return x; }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action probe() {
        meta.m16 = 3 + hdr.h.b;
        meta.m4 = (bit<4>)(K * 8w5);
        meta.m4 = hdr.h.a[7:4];
        meta.f = Color.BLUE == 2;
        meta.m24 = hdr.h.b ++ 8w0;
        meta.m8 = K - 6;
        meta.m8 = hdr.h.a + bump(meta.m8);
        meta.f = meta.f && bump(meta.m8) == 8w1;
        meta.m8 = meta.f ? bump(meta.m8) : 8w7;
    }
    apply { probe(); }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


def compiled_in_control(path: Path, source: str) -> tuple[ProgramCompiler, A.ControlDecl]:
    """``source`` written to ``path`` and compiled; the compiler is left in a fresh
    scope of the control ``I`` with its parameters ``hdr`` and ``meta``."""
    path.write_text(source)
    program = parse_tokens(tokenize(preprocess(path, (), {})))
    pc = ProgramCompiler(program, path)
    pc.compile()
    control = next(d for d in program.decls if isinstance(d, A.ControlDecl) and d.name == "I")
    scope = pc.global_scope.child()
    scope.define("hdr", Sym("var", pc.type_names["headers_t"], "hdr"), control.loc)
    scope.define("meta", Sym("var", pc.type_names["meta_t"], "meta"), control.loc)
    pc.scope = scope
    return pc, control


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> tuple[ProgramCompiler, list[A.Assign]]:
    pc, control = compiled_in_control(Path(tmp_path_factory.mktemp("ir")) / "probe.p4", SOURCE)
    action = next(d for d in control.locals if isinstance(d, A.ActionDecl))
    return pc, [s for s in action.body.stmts if isinstance(s, A.Assign)]


def test_an_unsized_literal_takes_the_width_of_the_field_beside_it(compiled):
    pc, stmts = compiled
    node = pc.expressions.checker.check(stmts[0].value)  # 3 + hdr.h.b
    assert isinstance(node, ir.Binary) and node.op == "+"
    assert node.type == BitT(16) and node.operand_type == BitT(16) and node.const is None
    assert node.left == ir.Const(type=BitT(16), loc=node.left.loc, const=3)
    field = node.right
    assert isinstance(field, ir.Field) and field.name == "b" and field.type == BitT(16)
    assert isinstance(field.parent, StructT) and field.parent.name == "h_t"
    holder = field.base
    assert isinstance(holder, ir.Field) and holder.name == "h"
    assert isinstance(holder.base, ir.Ref) and holder.base.sym.kind == "var" and holder.base.sym.code == "hdr"
    # bit<16> addition wraps at 16 bits
    assert pc.expressions.emitter.emit(node).code == "((3 + hdr.h.b) & 0xffff)"


def test_constants_fold_at_their_width(compiled):
    pc, stmts = compiled
    check = pc.expressions.checker.check
    # K * 8w5 = 25 = 0b11001; (bit<4>) keeps the low 4 bits: 0b1001
    assert check(stmts[1].value) == ir.Const(type=BitT(4), loc=stmts[1].value.loc, const=9)
    # the serializable enum's member is its value: 2 == 2
    assert check(stmts[3].value) == ir.Const(type=BoolT(), loc=stmts[3].value.loc, const=True)
    # 5 - 6 in bit<8> wraps to 255
    assert check(stmts[5].value) == ir.Const(type=BitT(8), loc=stmts[5].value.loc, const=255)
    assert pc.expressions.value(stmts[5].value).code == "255"


def test_slices_and_concatenations_have_their_widths(compiled):
    pc, stmts = compiled
    check = pc.expressions.checker.check
    s = check(stmts[2].value)  # hdr.h.a[7:4]
    assert isinstance(s, ir.Slice) and (s.hi, s.lo) == (7, 4) and s.type == BitT(4)
    # the top 4 bits of a bit<8>: nothing above them to mask
    assert pc.expressions.emitter.emit(s).code == "(hdr.h.a >> 4)"
    c = check(stmts[4].value)  # hdr.h.b ++ 8w0
    assert isinstance(c, ir.Binary) and c.op == "++" and c.type == BitT(24)
    assert pc.expressions.emitter.emit(c).code == "(hdr.h.b << 8)"


def test_a_type_error_is_the_checkers_with_its_place(compiled):
    pc, stmts = compiled
    bad = A.Binary(stmts[0].value.loc, "+", stmts[2].value.obj, stmts[0].value.right)  # hdr.h.a + hdr.h.b
    with pytest.raises(P4Error) as info:
        pc.expressions.checker.check(bad)
    assert "operands of '+' have different types bit<8> and bit<16>" in str(info.value)
    line = SOURCE.splitlines().index("        meta.m16 = 3 + hdr.h.b;") + 1
    assert f"probe.p4:{line}:" in str(info.value)


def checked_then_written(pc: ProgramCompiler, e: A.Expr) -> tuple[ir.Expr, list[str], list[str], str]:
    """``e`` checked (the lines written meanwhile: none), then written: the node, both
    lists of lines (indented relative to the function's body) and the value's code.
    Temporaries are numbered from 1."""
    pc.tmp_count = 0
    n = len(pc.out)
    node = pc.expressions.checker.check(e)
    checked = pc.out[n:]
    code = pc.expressions.emitter.emit(node).code
    return node, checked, [line[len(pc.ind):] for line in pc.out[n + len(checked):]], code


def test_an_operand_before_a_call_with_effects_is_kept_first(compiled):
    """P4_16 8.1: ``hdr.h.a + bump(meta.m8)`` reads ``hdr.h.a`` before ``bump`` runs:
    the node keeps it in a ``Spill``, which the generator writes into a temporary
    before the call's statements; the checker writes nothing."""
    pc, stmts = compiled
    node, checked, written, code = checked_then_written(pc, stmts[6].value)
    assert checked == []
    assert isinstance(node, ir.Binary) and node.type == BitT(8) and node.op == "+"
    assert isinstance(node.left, ir.Spill) and node.left.how == "value" and node.left.type == BitT(8)
    assert isinstance(node.left.value, ir.Field) and node.left.value.name == "a"
    assert isinstance(node.right, ir.CallResult) and node.right.type == BitT(8)
    assert node.right.call is stmts[6].value.right
    assert isinstance(node.right.node, ir.ActionCall) and node.right.node.callee.decl.name == "bump"
    # hdr.h.a first; then bump, whose inout argument is copied back; the sum wraps at 8 bits
    assert written == ["_v1 = hdr.h.a", "_r2 = f_bump(st, L, meta.m8)", "meta.m8 = _r2[1]"]
    assert code == "((_v1 + _r2[0]) & 0xff)"


def test_a_short_circuit_with_effects_is_a_node(compiled):
    """P4_16 8.6: ``meta.f && bump(meta.m8) == 8w1`` calls ``bump`` only when
    ``meta.f`` holds: a ``ShortCircuit`` node, written as an if block."""
    pc, stmts = compiled
    node, checked, written, code = checked_then_written(pc, stmts[7].value)
    assert checked == []
    assert isinstance(node, ir.ShortCircuit) and node.op == "&&" and node.type == BoolT()
    assert isinstance(node.left, ir.Field) and node.left.name == "f"
    assert isinstance(node.right, ir.Binary) and node.right.op == "=="
    assert isinstance(node.right.left, ir.CallResult)
    assert node.right.right == ir.Const(type=BitT(8), loc=node.right.right.loc, const=1)
    assert written == ["_b1 = meta.f",
                       "if _b1:",
                       "    _r2 = f_bump(st, L, meta.m8)",
                       "    meta.m8 = _r2[1]",
                       "    _b1 = (_r2[0] == 1)"]
    assert code == "_b1"


def test_a_conditional_with_effects_is_a_node(compiled):
    """P4_16 8.5.1: ``meta.f ? bump(meta.m8) : 8w7`` evaluates only the chosen branch:
    a ``Conditional`` node, written as an if/else block into a temporary."""
    pc, stmts = compiled
    node, checked, written, code = checked_then_written(pc, stmts[8].value)
    assert checked == []
    assert isinstance(node, ir.Conditional) and node.type == BitT(8)
    assert isinstance(node.cond, ir.Field) and node.cond.name == "f"
    assert isinstance(node.then, ir.CallResult) and node.then.type == BitT(8)
    assert node.other == ir.Const(type=BitT(8), loc=node.other.loc, const=7)
    assert written == ["if meta.f:",
                       "    _r2 = f_bump(st, L, meta.m8)",
                       "    meta.m8 = _r2[1]",
                       "    _c1 = _r2[0]",
                       "else:",
                       "    _c1 = 7"]
    assert code == "_c1"


def test_a_call_without_a_value_is_refused_by_the_checker(compiled):
    """``hdr.h.setValid()`` gives nothing: used as a value, the checker refuses it at
    its place, before anything is written."""
    pc, stmts = compiled
    loc = stmts[0].value.loc
    h = A.Member(loc, A.Name(loc, "hdr"), "h")
    call = A.Call(loc, A.Member(loc, h, "setValid"), [], [])
    n = len(pc.out)
    with pytest.raises(P4Error) as info:
        pc.expressions.checker.check(A.Binary(loc, "+", call, A.IntLit(loc, 1, None, False, "1")))
    line = SOURCE.splitlines().index("        meta.m16 = 3 + hdr.h.b;") + 1
    assert f"probe.p4:{line}:{loc.col}: error: 'hdr.h.setValid' does not return a value" in str(info.value)
    assert pc.out[n:] == []


def test_the_fast_paths_call_checker_checks_a_functions_arguments(compiled):
    """The fast path's call checker (``in_place``) checks a P4 function's arguments
    too, though its generator gives up on the call: ``bump(meta.m8)`` has its one
    inout argument, the place ``meta.m8``, nothing kept in a temporary."""
    pc, stmts = compiled
    in_place = CallChecker(pc, pc.expressions, pc.statements.checker, pc.statements, in_place=True)
    node = in_place.check(stmts[6].value.right)
    assert isinstance(node, ir.ActionCall) and node.ret == BitT(8) and node.type == BitT(8)
    (arg,) = node.args
    assert (arg.param, arg.direction, arg.type, arg.pre) == ("x", "inout", BitT(8), ())
    assert isinstance(arg.value, ir.Field) and arg.value.name == "m8"
    assert isinstance(arg.place, ir.Field) and arg.place.name == "m8"


def test_a_node_with_effects_is_written_once(compiled):
    """Writing the same node twice writes its statements once (a call's, a spill's)."""
    pc, stmts = compiled
    node, _, written, code = checked_then_written(pc, stmts[6].value)
    n = len(pc.out)
    assert pc.expressions.emitter.emit(node).code == code
    assert pc.out[n:] == [] and len(written) == 3


def test_keysets_are_constants_of_the_key_type(compiled):
    """A select case's or table entry's keysets, checked against the key's type."""
    pc, stmts = compiled
    check_keyset = pc.expressions.checker.keysets.check
    loc = stmts[0].value.loc

    def lit(value: int, width: int | None = None, signed: bool = False) -> A.IntLit:
        return A.IntLit(loc, value, width, signed, str(value))

    assert check_keyset(A.DefaultExpr(loc), BitT(8)) == ir.AnyKey(type=BitT(8), loc=loc)
    # 0x1234 &&& 0xff00 for a bit<16> key: both unsized literals take the key's width
    mask = check_keyset(A.Mask(loc, lit(0x1234), lit(0xFF00)), BitT(16))
    assert mask == ir.MaskKey(type=BitT(16), loc=loc, value=0x1234, mask=0xFF00)
    # -1 .. 5 for an int<8> key: the signed values as they are
    rng = check_keyset(A.Range(loc, A.Unary(loc, "-", lit(1)), lit(5)), BitT(8, True))
    assert rng == ir.RangeKey(type=BitT(8, True), loc=loc, lo=-1, hi=5)
    # 300 for a bit<8> key wraps to 300 - 256 = 44; the enum member BLUE is its value 2
    assert check_keyset(lit(300), BitT(8)) == ir.Const(type=BitT(8), loc=loc, const=44)
    blue = stmts[3].value.left  # Color.BLUE
    assert check_keyset(blue, BitT(8), select=True) == ir.Const(type=BitT(8), loc=blue.loc, const=2)
    with pytest.raises(P4Error, match="keyset values must be compile-time constants"):
        check_keyset(stmts[0].value.right, BitT(16))  # hdr.h.b
    with pytest.raises(P4Error, match="select case values must be compile-time constants"):
        check_keyset(stmts[0].value.right, BitT(16), select=True)


# ---------------------------------------------------------------------- statements
# The type checker of statements (typecheck_stmt.py) makes typed statements
# (ir.py) whose expressions are typed and converted to the type the statement
# needs, and raises every error of a statement with its place; the statement
# generator (emit_stmt.py) writes their code.

STMT_SOURCE = """#include <core.p4>
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
        for (bit<8> k = 0; k < 4; k = k + 1) { continue; }
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
def stmts_compiled(tmp_path: Path) -> tuple[ProgramCompiler, list[A.Stmt], A.Switch]:
    """The compiled program, in a fresh scope of control I, in an action; the
    statements of ``probe`` and the switch of I's apply block."""
    pc, control = compiled_in_control(tmp_path / "stmts.p4", STMT_SOURCE)
    action = next(d for d in control.locals if isinstance(d, A.ActionDecl))
    pc.fn_kind, pc.action_outs = "action", []
    assert control.body is not None
    switch = control.body.stmts[1]
    assert isinstance(switch, A.Switch)
    return pc, action.body.stmts, switch


def emitted(pc: ProgramCompiler, node: ir.Stmt) -> list[str]:
    """The lines the generator writes for ``node``, without their indentation."""
    before = len(pc.out)
    pc.statements.emitter.emit(node)
    return [str(x).strip() for x in pc.out[before:]]


def test_an_unsized_literal_assigned_becomes_a_constant_of_the_targets_type(stmts_compiled):
    pc, stmts, _ = stmts_compiled
    node = pc.statements.checker.assign(stmts[0])  # meta.m8 = 7;
    assert isinstance(node, ir.Assign) and node.widths is None
    assert node.value == ir.Const(type=BitT(8), loc=stmts[0].value.loc, const=7)
    assert isinstance(node.target, ir.Field) and node.target.name == "m8" and node.target.type == BitT(8)
    assert isinstance(node.target.parent, StructT) and node.target.parent.name == "meta_t"
    assert emitted(pc, node) == ["meta.m8 = 7"]


def test_a_slice_assigned_keeps_the_other_bits(stmts_compiled):
    pc, stmts, _ = stmts_compiled
    node = pc.statements.checker.assign(stmts[1])  # hdr.h.b[11:4] = 300;
    assert isinstance(node.target, ir.Slice) and (node.target.hi, node.target.lo) == (11, 4)
    # 300 in bit<8> wraps to 300 - 256 = 44
    assert node.value == ir.Const(type=BitT(8), loc=stmts[1].value.loc, const=44)
    # bits 11..4 of a bit<16>: the mask keeps 0xf00f, the value moves up 4 bits
    assert emitted(pc, node) == ["hdr.h.b = ((hdr.h.b & 0xf00f) | (44 << 4))"]


def test_an_if_has_a_bool_condition_and_its_branches(stmts_compiled):
    pc, stmts, _ = stmts_compiled
    s = stmts[2]
    node = pc.statements.checker.if_(s)
    assert isinstance(node.cond, ir.Binary) and node.cond.op == "==" and node.cond.type == BoolT()
    assert node.cond.right == ir.Const(type=BitT(8), loc=node.cond.right.loc, const=3)
    assert node.then == tuple(s.then.stmts) and node.other == tuple(s.other.stmts)
    assert emitted(pc, node) == ["if (meta.m8 == 3):", "meta.f = True", "else:", "meta.f = False"]


def test_declarations_take_their_types(stmts_compiled):
    pc, stmts, _ = stmts_compiled
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


def test_return_and_exit_in_an_action(stmts_compiled):
    pc, stmts, _ = stmts_compiled
    checker = pc.statements.checker
    ret = checker.return_(stmts[6])
    assert ret == ir.Return(loc=stmts[6].loc, value=None, in_function=False, outs=())
    assert emitted(pc, ret) == ["return"]
    pc.action_outs = ["o1", "o2"]  # an action with out parameters returns them
    assert emitted(pc, checker.return_(stmts[6])) == ["return (o1, o2, )"]
    ex = checker.exit(stmts[7])
    assert ex == ir.Exit(loc=stmts[7].loc) and emitted(pc, ex) == ["raise EXIT"]
    pc.fn_kind = "parser"
    with pytest.raises(P4Error, match="exit is not allowed in a parser; use transition reject"):
        checker.exit(stmts[7])


def test_statement_errors_are_the_checkers_with_their_place(stmts_compiled):
    pc, stmts, _ = stmts_compiled
    checker = pc.statements.checker
    m8, b = stmts[0].target, stmts[1].target.obj  # meta.m8 and hdr.h.b, at their places
    line = STMT_SOURCE.splitlines().index("        meta.m8 = 7;") + 1
    with pytest.raises(P4Error) as info:
        checker.if_(A.If(m8.loc, m8, A.Block(m8.loc, []), None))  # if (meta.m8) { }
    assert f"stmts.p4:{line}:9: error: if condition must be bool, not bit<8>; compare it, e.g. x != 0" \
        in str(info.value)
    with pytest.raises(P4Error) as info:
        checker.assign(A.Assign(m8.loc, m8, b))  # meta.m8 = hdr.h.b;
    assert "assignment to meta.m8: cannot convert bit<16> to bit<8> implicitly; add a cast (bit<8>)" \
        in str(info.value)


def test_a_switch_on_a_value_has_labels_of_its_type(stmts_compiled):
    pc, _, s = stmts_compiled
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


def test_a_for_in_loop_over_a_list_takes_the_variables_type(stmts_compiled):
    pc, stmts, _ = stmts_compiled
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


def test_a_three_clause_loop_tests_a_bool_in_its_own_scope(stmts_compiled):
    pc, stmts, _ = stmts_compiled
    s = stmts[9]  # for (bit<8> k = 0; k < 4; k = k + 1) { continue; }
    node = pc.statements.checker.for_(s)
    assert node.init == tuple(s.init) and node.cond is s.cond and node.update == tuple(s.update)
    lines = emitted(pc, node)
    k = node.scope.lookup("k")
    assert k is not None and k.type == BitT(8) and pc.scope.lookup("k") is None
    # the test first, then the body (continue runs the update first), then the update
    step = f"{k.code} = (({k.code} + 1) & 0xff)"
    assert lines == [f"{k.code} = 0", "while True:", f"if not (({k.code} < 4)): break",
                     step, "continue", step]
    test = pc.statements.checker.loop_test(A.Binary(s.cond.loc, "<", A.IntLit(s.cond.loc, 1, None, False, "1"),
                                                    A.IntLit(s.cond.loc, 4, None, False, "4")))
    assert test.cond == ir.Const(type=BoolT(), loc=s.cond.loc, const=True)  # 1 < 4, folded
    with pytest.raises(P4Error, match="for condition must be bool, not bit<8>; compare it, e.g. i < 4"):
        pc.statements.checker.loop_test(stmts[0].target)
