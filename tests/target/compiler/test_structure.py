"""The program compilers are composed, not mixed in (docs/target-internals.md, step 5).

``ProgramCompiler`` and ``FastCompiler`` have no mixin bases: their only other bases
are ``CompilerContext`` and ``FastContext``, declarations for the type checker with
nothing in them at run time. The parts they compose are plain objects (the fast
ones extend the general ones), held under the names the other parts use. Each
name the declarations list (read from context.py's source, since they exist only
for mypy) is there at run time on a compiler that compiled a real program, so a
declaration without a definition (a hand-over forgotten in a move) fails here
rather than in the middle of compiling some program.
"""

from __future__ import annotations

import ast
from pathlib import Path

from p4target.compiler import context, fast_compiler, fastgen, program
from p4target.compiler.declarations import Declarations
from p4target.compiler.emit_expr import ExprEmitter, PlaceCode
from p4target.compiler.expressions import ExpressionCompiler
from p4target.compiler.extern_calls import ExternCalls
from p4target.compiler.fast_place_code import FastPlaceCode
from p4target.compiler.fast_externs import FastExterns
from p4target.compiler.fast_packet_io import FastPacketIO
from p4target.compiler.fast_prune import prune_for_fast
from p4target.compiler.fast_statements import FastStatementCompiler
from p4target.compiler.packet_io import PacketIO
from p4target.compiler.parser_states import ParserCompiler
from p4target.compiler.statements import StatementCompiler
from p4target.compiler.emit_call import CallEmitter
from p4target.compiler.emit_stmt import StmtEmitter
from p4target.compiler.fast_calls import FastCallEmitter
from p4target.compiler.typecheck_call import CallChecker
from p4target.compiler.typecheck_expr import ExprChecker
from p4target.compiler.typecheck_stmt import StmtChecker
from p4target.frontend.lexer import tokenize
from p4target.frontend.parser import parse_tokens
from p4target.frontend.preprocessor import preprocess

ROOT = Path(__file__).resolve().parents[3]
FABRIC = ROOT / "p4src" / "fabric.p4"
ProgramCompiler = program.ProgramCompiler
FastCompiler = fast_compiler.FastCompiler
CompilerContext, FastContext = context.CompilerContext, context.FastContext


def declared(cls: str, methods: bool | None = None) -> set[str]:
    """The attributes and methods context.py's class ``cls`` declares (only the
    methods, or only the attributes, when ``methods`` says so)."""
    tree = ast.parse(Path(context.__file__).read_text())
    body = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls)
    names = set()
    for node in ast.walk(body):
        if isinstance(node, ast.FunctionDef) and methods is not False:
            names.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and methods is not True:
            names.add(node.target.id)
    return names


# set by the general parser's and actions' code generation, which the fast compiler
# replaces (FastParser; actions compiled where they run)
GENERAL_ONLY = {"function_ret", "parser_init_params", "parser_inits", "parser_locals", "parser_start",
                "state_funcs", "state_lines"}


def parsed(path: Path):
    return parse_tokens(tokenize(preprocess(path, (), {})))


def test_the_compilers_have_no_mixin_bases():
    assert ProgramCompiler.__mro__ == (ProgramCompiler, CompilerContext, object)
    assert FastCompiler.__mro__ == (FastCompiler, ProgramCompiler, FastContext, CompilerContext, object)
    for part in (ExpressionCompiler, ExprChecker, ExprEmitter, PlaceCode, FastPlaceCode,
                 StatementCompiler, StmtChecker, StmtEmitter, CallChecker, CallEmitter, ParserCompiler,
                 Declarations, PacketIO, ExternCalls):
        assert part.__mro__ == (part, object), part
    assert FastStatementCompiler.__mro__ == (FastStatementCompiler, StatementCompiler, object)
    assert FastCallEmitter.__mro__ == (FastCallEmitter, CallEmitter, object)


def test_the_declarations_hold_nothing_at_run_time():
    for cls in (CompilerContext, FastContext):
        own = {n for n in vars(cls) if not (n.startswith("__") and n.endswith("__"))}
        assert own == set(), (cls.__name__, own)
    assert len(declared("CompilerContext")) > 100  # read from the source: they are there for mypy


def test_every_declared_name_is_there_on_a_compiler_that_compiled_a_program():
    pc = ProgramCompiler(parsed(FABRIC), FABRIC)
    pc.compile()
    missing = sorted(n for n in declared("CompilerContext") if not hasattr(pc, n))
    assert missing == []
    fc = FastCompiler(prune_for_fast(parsed(FABRIC)), FABRIC)
    fc.compile()
    wanted = declared("CompilerContext", methods=True) | declared("FastContext") \
        | (declared("CompilerContext", methods=False) - GENERAL_ONLY)
    missing = sorted(n for n in wanted if not hasattr(fc, n))
    assert missing == []


def test_the_fast_compiler_composes_the_fast_parts_everywhere():
    """The statements hold the same expression compiler the compiler hands calls to,
    and the fast compiler's parts are the fast ones, each given the fast compiler."""
    pc = ProgramCompiler(parsed(FABRIC), FABRIC)
    assert type(pc.expressions) is ExpressionCompiler and type(pc.statements) is StatementCompiler
    assert pc.statements.expressions is pc.expressions
    assert pc.expressions.ctx is pc and pc.statements.ctx is pc
    assert pc.expressions.checker.emitter is pc.expressions.emitter
    assert type(pc.expressions.emitter.places) is PlaceCode
    fc = FastCompiler(prune_for_fast(parsed(FABRIC)), FABRIC)
    assert type(fc.expressions) is ExpressionCompiler and type(fc.statements) is FastStatementCompiler
    # the same checker and generator; the fast path gives only how places are written
    assert fc.expressions.checker.emitter is fc.expressions.emitter
    assert fc.expressions.emitter.places is fc.fast_place_code is fc.statements.places
    assert type(fc.fast_place_code) is FastPlaceCode
    assert fc.statements.expressions is fc.expressions
    # one call checker for both paths; the fast path writes a header's validity its own way
    assert type(pc.statements.calls) is CallChecker is type(fc.statements.calls)
    assert type(pc.statements.call_emitter) is CallEmitter and type(fc.statements.call_emitter) is FastCallEmitter
    assert fc.statements.call_emitter.places is fc.fast_place_code
    assert type(fc.extern_calls) is FastExterns and type(fc.packet_io) is FastPacketIO
    for part in (fc.expressions, fc.expressions.checker, fc.expressions.emitter, fc.fast_place_code, fc.statements, fc.extern_calls, fc.packet_io, fc.fast_tables, fc.fast_parser):
        assert part.ctx is fc, part
    # and the fast path generated through them is fabric.p4's: its locals, no PacketState
    text = fastgen.generate_fast(parsed(FABRIC), FABRIC).text
    assert "def _fast(data, ingress_port, now):" in text and "PacketState" not in text


def raises_p4_errors(path: Path) -> list[str]:
    """The places in ``path`` that raise a P4 error (``error(``, ``unsupported(``,
    ``P4Error(``) or import the functions that make them."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
            if name in ("error", "unsupported", "P4Error"):
                found.append(f"{path.name}:{node.lineno} calls {name}")
        elif isinstance(node, ast.ImportFrom):
            found += [f"{path.name}:{node.lineno} imports {a.name}" for a in node.names
                      if a.name in ("error", "unsupported", "P4Error")]
    return found


def test_the_expression_generators_only_emit():
    """Every error of an expression is the type checker's: the general generator, the
    fast path's and the IR (``ir.py``: expression, call and statement nodes) neither
    raise a P4 error nor import what makes one (the fast path may still give up with
    NoFast, which is no error of the program)."""
    compiler = ROOT / "p4target" / "compiler"
    for name in ("emit_expr.py", "fast_place_code.py", "ir.py"):
        assert raises_p4_errors(compiler / name) == [], name
    # and the check finds them where they are
    assert any("calls error" in x for x in raises_p4_errors(compiler / "typecheck_expr.py"))
    assert any("imports unsupported" in x for x in raises_p4_errors(compiler / "typecheck_expr.py"))


def test_the_statement_generator_only_emits():
    """Every error of a statement is the statement checker's (or, in what it compiles
    of an expression, the expression checker's): the statement generator neither
    raises a P4 error nor imports what makes one."""
    compiler = ROOT / "p4target" / "compiler"
    assert raises_p4_errors(compiler / "emit_stmt.py") == []
    assert any("calls error" in x for x in raises_p4_errors(compiler / "typecheck_stmt.py"))
    assert any("calls unsupported" in x for x in raises_p4_errors(compiler / "typecheck_stmt.py"))


def test_the_call_generators_only_emit():
    """Every error of a call is the call checker's (typecheck_call.py, with
    typecheck_packet.py for the packet's methods and typecheck_extern.py for the
    externs): the call generators (the general one and the fast path's, the packet
    methods' and the externs' of both) neither raise a P4 error nor import what
    makes one."""
    compiler = ROOT / "p4target" / "compiler"
    for name in ("emit_call.py", "fast_calls.py", "packet_io.py", "fast_packet_io.py",
                 "extern_calls.py", "fast_externs.py"):
        assert raises_p4_errors(compiler / name) == [], name
    for name in ("typecheck_call.py", "typecheck_packet.py", "typecheck_extern.py"):
        assert any("calls error" in x for x in raises_p4_errors(compiler / name)), name
        assert any("calls unsupported" in x for x in raises_p4_errors(compiler / name)), name


_WRITERS = ("emit", "emit_lines", "tmp", "indent", "dedent", "call_expr", "call_stmt")


def writes_code(source: str, name: str) -> list[str]:
    """The places in ``source`` (module ``name``) that write code into the function
    being generated: a call of the compiler's ``emit``, ``emit_lines``, ``tmp``,
    ``indent``, ``dedent``, ``call_expr`` or ``call_stmt`` (``ctx.emit(...)``), or a
    use of its ``out``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute) \
                and node.value.attr == "ctx" and (node.attr in _WRITERS or node.attr == "out"):
            found.append(f"{name}:{node.lineno} uses ctx.{node.attr}")
    return found


def test_the_checkers_write_no_code():
    """The checkers make typed nodes only: a value kept in a temporary, a
    short-circuit or a conditional with side effects, a call inside an expression is
    a node the generators write (docs/target-internals.md)."""
    compiler = ROOT / "p4target" / "compiler"
    checkers = sorted(compiler.glob("typecheck_*.py"))
    assert len(checkers) >= 6
    for path in checkers:
        assert writes_code(path.read_text(), path.name) == [], path.name
    # and the check finds them where they are
    sample = "def f(self):\n    t = self.ctx.tmp('v')\n    self.ctx.emit(t)\n    self.ctx.out[0] = ''\n"
    assert writes_code(sample, "x.py") == ["x.py:2 uses ctx.tmp", "x.py:3 uses ctx.emit", "x.py:4 uses ctx.out"]
