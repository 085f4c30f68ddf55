"""The program compiler: one Python module per P4 program. ``ProgramCompiler`` holds
the compilation's state, the function being generated (``emit``, ``begin_fn``,
``end_fn``), actions, block locals and controls, and composes the parts for the
rest (declarations, expressions, statements, parser states, tables, packet I/O,
externs, sub-blocks, the module's assembly; context.py lists them); its one-line
methods hand the other parts' calls to the part that owns them.

The generated module defines header/struct classes (``__slots__``, one attribute per
field plus ``_v`` for validity), a ``PacketState`` class and ``build(rt)``; ``build``
binds tables and externs from the runtime ``Bindings`` to local names once, defines
the parser states, actions, tables and controls as closures over them, and returns
the ``Pipeline`` object (docs/target-internals.md, section 1).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from p4target import model as M
from p4target.compiler import ir
from p4target.compiler.expressions import ExpressionCompiler
from p4target.compiler.values import V
from p4target.compiler.extern_calls import ExternCalls
from p4target.compiler.naming import pyfield, pyident
from p4target.compiler.declarations import Declarations
from p4target.compiler.model_build import program_model
from p4target.compiler.packet_io import PacketIO
from p4target.compiler.parser_states import ParserCompiler
from p4target.compiler.scope import Scope, Sym
from p4target.compiler.context import CompilerContext
from p4target.compiler.statements import StatementCompiler
from p4target.compiler.tables import TableCompiler
from p4target.compiler.assembly import ModuleAssembler
from p4target.compiler.subblocks import SubBlockCompiler
from p4target.compiler.entities import (
    ActionInfo, InstanceInfo, TableInfo,
)
from p4target.compiler.types import (
    BitT, ExternT, StructT, Type, VarbitT, VoidT,
)
from p4target.frontend import ast as A
from p4target.errors import P4Error
from p4target.frontend.source import Loc, error, unsupported

log = logging.getLogger(__name__)

SM_FIELDS = ("ingress_port", "egress_spec", "egress_port", "instance_type", "packet_length",
             "enq_timestamp", "enq_qdepth", "deq_timedelta", "deq_qdepth",
             "ingress_global_timestamp", "egress_global_timestamp", "mcast_grp", "egress_rid",
             "checksum_error", "parser_error", "priority")

class ProgramCompiler(CompilerContext):
    table_helpers = True  # emit the per-table helper function (the fast path does not)

    def __init__(self, program: A.Program, source: Path):
        self.program = program
        self.source = source
        self.global_scope = Scope()
        self.scope = self.global_scope
        self.type_names: dict[str, Type] = {}
        self.varbit_locals: set[str] = set()  # code of each varbit variable (its width: length_place)
        self.errors_by_name: dict[str, int] = {}
        self.match_kinds: set[str] = set()
        self.struct_types: list[StructT] = []
        self.extern_decls: dict[str, A.ExternDecl] = {}
        self.parsers: dict[str, A.ParserDecl] = {}
        self.controls: dict[str, A.ControlDecl] = {}
        self.main: A.Instance | None = None
        self.actions: dict[str, ActionInfo] = {}  # by model name
        self.used_actions: list[str] = []
        self.tables: list[M.Table] = []
        self.externs: list[InstanceInfo] = []
        self.digests: dict[str, M.Digest] = {}
        self.warnings: list[str] = []
        self.value_sets: list[M.ValueSet] = []
        self.deferred: list[P4Error] = []  # errors raised only if nothing else is wrong (limits of BMv2's)
        self.pending_actions = []
        self.pending_functions: list[ActionInfo] = []
        # code generation state
        self.out: list[Any] = []  # code lines (the fast compiler's also holds Deferred items)
        self.ind = ""
        self.tmp_count = 0
        self.locals_used: set[str] = set()
        self.fn_kind = ""
        self.action_outs: list[str] = []
        self.build_lines: list[str] = []  # body of build(rt)
        self.bind_lines: list[str] = []  # table/extern bindings at the top of build(rt)
        self.module_lines: list[str] = []  # classes at module level
        self.control_prefix: str | None = None
        self.last_loc: Loc | None = None  # for internal-error messages
        self.param_targets: dict[str, str] = {}  # p_<name> -> PacketState attribute
        self.params_used: set[str] = set()  # block parameters the current function uses
        self.exit_memo: dict[int, bool] = {}  # may_exit() of each action (by id)
        self.loops = []
        self.sub_stack = []  # the control/parser declarations being instantiated
        self.sub_parent_kind = ""
        self.sub_reject_defined = False
        self.checking_alone = False  # check_block is compiling a block only for its errors
        self.table_compiler = TableCompiler(self)
        self.packet_io = PacketIO(self)  # (the fast compiler's: FastPacketIO)
        self.extern_calls = ExternCalls(self)  # (the fast compiler's: FastExterns)
        self.sub_blocks = SubBlockCompiler(self)
        self.expressions = ExpressionCompiler(self)  # (the fast compiler's writes with FastPlaceCode)
        self.statements = StatementCompiler(self, self.expressions)  # (FastStatementCompiler)
        self.parser_compiler = ParserCompiler(self)  # (the fast compiler's parser: FastParser)
        self.declarations = Declarations(self)

    # ================================================================== declarations (Declarations)
    def declare_all(self, require_main: bool = True) -> None:
        self.declarations.declare_all(require_main)

    def resolve_type(self, t: A.TypeRef) -> Type:
        return self.declarations.resolve_type(t)

    def declare_struct(self, d: A.StructLike) -> None:
        self.declarations.declare_struct(d)

    def declare_const(self, d: A.ConstDecl, scope: Scope) -> None:
        self.declarations.declare_const(d, scope)

    def declare_action(self, d: A.ActionDecl, control: str | None, scope: Scope) -> ActionInfo:
        return self.declarations.declare_action(d, control, scope)

    def wire_struct(self, t: Type) -> bool:
        return self.declarations.wire_struct(t)

    def wire_width(self, t: Type, loc: Loc) -> int:
        return self.declarations.wire_width(t, loc)

    def note_digest(self, t: StructT, loc: Loc) -> None:
        self.declarations.note_digest(t, loc)

    # ================================================================== output (the function being generated)
    def emit(self, line: str) -> None:
        self.out.append(self.ind + line)

    def indent(self) -> None:
        self.ind += "    "

    def dedent(self) -> None:
        self.ind = self.ind[:-4]

    def emit_lines(self, items: list) -> None:
        """Emit code compiled apart at indentation "" (strings, or the fast path's
        deferred nodes, which carry their own indentation) at ``self.ind``."""
        for x in items:
            if isinstance(x, str):
                self.emit(x)
            else:
                x.ind = self.ind + x.ind
                self.out.append(x)

    def tmp(self, base: str = "t") -> str:
        self.tmp_count += 1
        return f"_{base}{self.tmp_count}"

    # ================================================================== statements (StatementCompiler)
    def stmts(self, stmts: list[A.Stmt]) -> None:
        self.statements.stmts(stmts)

    def block_body(self, stmts: list[A.Stmt]) -> None:
        self.statements.block_body(stmts)

    def call_stmt(self, e: A.Call) -> None:
        self.statements.call_stmt(e)

    def call_expr(self, e: A.Call) -> V:
        return self.statements.call_expr(e)

    def check_call(self, e: A.Call) -> ir.Call:
        return self.statements.calls.check(e)

    def call_value(self, node: ir.Call, e: A.Call) -> V:
        return self.statements.call_value(node, e)

    def has_effects(self, e: A.Expr | None) -> bool:
        return self.statements.has_effects(e)

    def zero(self, t: Type, loc: Loc) -> str:
        return self.statements.zero(t, loc)

    def bind_args(self, e: A.Call, params: list[A.Param]) -> list[A.Expr | None]:
        return self.statements.bind_args(e, params)

    def nargs(self, e: A.Call, *counts: int) -> None:
        self.statements.nargs(e, *counts)

    def may_exit(self, act: object) -> bool:
        return self.statements.may_exit(act)

    def store_node(self, target: ir.Expr, code: str) -> None:
        self.statements.store_node(target, code)

    # ================================================================== expressions (ExpressionCompiler)
    def value(self, e: A.Expr) -> V:
        return self.expressions.value(e)

    def const_int(self, e: A.Expr, what: str = "value") -> int:
        return self.expressions.const_int(e, what)

    def expr_as(self, e: A.Expr, t: Type, what: str = "value") -> str:
        return self.expressions.expr_as(e, t, what)

    def coerce(self, v: V, t: Type, loc: Loc, what: str = "value") -> str:
        return self.expressions.coerce(v, t, loc, what)


    def emit_expr(self, node: ir.Expr) -> V:
        return self.expressions.emitter.emit(node)  # the code of a checked expression

    def emit_bits(self, node: ir.Bits) -> tuple[str, int | str, list[tuple[str, int | str]]]:
        return self.expressions.emitter.flatten_bits(node)  # the code of a checked bit string

    # ================================================================== parser (ParserCompiler)
    def gen_parser(self, d: A.ParserDecl) -> None:
        self.parser_compiler.gen_parser(d)

    def gen_state(self, s: A.ParserState, pre: list[str]) -> None:
        self.parser_compiler.gen_state(s, pre)

    def case_conds(self, case: A.SelectCase, kvars: list[tuple[str, V]]) -> list[str]:
        return self.parser_compiler.case_conds(case, kvars)

    def check_keyset(self, e: A.Expr, t: Type, select: bool = False) -> ir.Expr:
        return self.expressions.checker.keysets.check(e, t, select)

    def declare_value_set(self, d: A.ValueSetDecl, block: str, scope: Scope) -> None:
        self.parser_compiler.declare_value_set(d, block, scope)

    # ================================================================== tables (TableCompiler)
    def declare_instance(self, d: A.Instance, control: str | None, scope: Scope) -> None:
        self.table_compiler.declare_instance(d, control, scope)

    def gen_table(self, t: A.TableDecl, control: str, scope: Scope, pre: list[str]) -> None:
        self.table_compiler.gen_table(t, control, scope, pre)

    def bound_action_call(self, info: TableInfo, i: int, cp: str, signed: bool = False) -> A.Call:
        return self.table_compiler.bound_action_call(info, i, cp, signed)

    def inline_table_apply(self, info: TableInfo) -> bool:
        return self.table_compiler.inline_table_apply(info)

    # ================================================================== packet_in/packet_out (PacketIO)
    def packet_call(self, node: ir.Call) -> V | None:
        return self.packet_io.write(node)  # CallEmitter's packet methods

    def field_from(self, shifted: str, ft: Type, w: int, need_mask: bool) -> str:
        return self.packet_io.field_from(shifted, ft, w, need_mask)

    def unpack_lines(self, t: StructT, h: str, x: str) -> list[str]:
        return self.packet_io.unpack_lines(t, h, x)

    # ================================================================== externs (ExternCalls)
    def extern_call(self, node: ir.ExternCall) -> V | None:
        return self.extern_calls.write(node)  # CallEmitter's extern calls

    def enum_member_name(self, e: A.Expr, enum: str) -> str:
        return self.statements.calls.externs.enum_member_name(e, enum)

    def sm_store(self, field: str, code: str) -> str:
        return self.statements.sm_store(field, code)

    def param_type(self, p: A.Param) -> Type:
        return self.resolve_type(p.type)

    # ================================================================== sub-blocks (SubBlockCompiler)
    def sub_block_decl(self, d: A.Instance) -> A.ControlDecl | A.ParserDecl | None:
        return self.sub_blocks.sub_block_decl(d)

    def declare_sub_block(self, d: A.Instance, decl: A.ControlDecl | A.ParserDecl, parent: str,
                          scope: Scope, in_parser: bool) -> None:
        self.sub_blocks.declare_sub_block(d, decl, parent, scope, in_parser)

    def check_block(self, decl: A.ControlDecl | A.ParserDecl) -> None:
        self.sub_blocks.check_block(decl)

    def ctor_bindings(self, d: A.Instance, decl: A.ControlDecl | A.ParserDecl,
                      scope: Scope) -> list[tuple[str, Sym, Loc]]:
        return self.sub_blocks.ctor_bindings(d, decl, scope)

    def sub_apply(self, node: ir.SubApply) -> V | None:
        return self.sub_blocks.sub_apply(node)  # CallEmitter's sub-block applications

    # ================================================================== main
    def main_args(self, main: A.Instance) -> list[A.Expr | None]:
        """V1Switch's arguments in the order of its parameters (they may be passed by name)."""
        if not any(a.name for a in main.args):
            return [a.value for a in main.args]
        package = next((d for d in self.program.decls if isinstance(d, A.PackageDecl) and d.name == "V1Switch"), None)
        if package is None:
            raise error(main.loc, "V1Switch is not declared; #include <v1model.p4>")
        values = self.bind_args(A.Call(main.loc, A.Name(main.loc, "V1Switch"), [], main.args), package.params)
        missing = [p.name for p, v in zip(package.params, values, strict=True) if v is None]
        if missing:
            raise error(main.loc, f"V1Switch: missing argument '{missing[0]}'")
        return values

    def compile(self) -> tuple[str, M.ProgramModel, dict[str, int]]:
        self.declare_all()
        main = self.main
        assert main is not None
        if len(main.args) != 6:
            raise error(main.loc, "V1Switch takes 6 arguments: parser, verifyChecksum, ingress, "
                        "egress, computeChecksum, deparser")
        blocks = []
        self.block_ctor_args: dict[str, A.Instance] = {}  # V1Switch block -> its constructor call
        for a, v in zip(main.args, self.main_args(main), strict=True):
            if not (isinstance(v, A.Call) and isinstance(v.func, A.Name)):
                raise unsupported(a.loc, "this V1Switch argument", "pass a block constructor like MyIngress()")
            blocks.append((v.func.name, v.loc))
            self.block_ctor_args[v.func.name] = A.Instance(v.func.name, v.loc, [], A.NamedType(v.loc, v.func.name),
                                                           v.args)
        pname, ploc = blocks[0]
        if pname not in self.parsers:
            raise error(ploc, f"'{pname}' is not a parser declared in this program")
        parser = self.parsers[pname]
        if len(parser.params) != 4:
            raise error(parser.loc, "a v1model parser has 4 parameters: (packet_in, out H, inout M, "
                        "inout standard_metadata_t)")
        self.sm_t = self.type_names.get("standard_metadata_t")
        self.hdr_t = self.resolve_type(parser.params[1].type)
        self.meta_t = self.resolve_type(parser.params[2].type)
        for t, what in ((self.hdr_t, "headers"), (self.meta_t, "metadata")):
            if not isinstance(t, StructT) or t.kind != "struct":
                # placed where V1Switch is given the parser, as p4c places it
                raise error(ploc, f"V1Switch's parser {pname}: its {what} parameter must be a struct, not {t}")
        if not isinstance(self.sm_t, StructT):
            raise error(main.loc, "standard_metadata_t is missing; #include <v1model.p4>")
        self.pending_top_actions = [pa for pa in self.pending_actions]
        self.pending_actions = []
        # top-level functions and actions
        for info in self.pending_functions:
            self.gen_action(info, self.global_scope, None, function=True)
        for info, scope in self.pending_top_actions:
            self.gen_action(info, scope, None)
        self.gen_parser(parser)
        roles = ["verify", "ingress", "egress", "compute", "deparser"]
        self.control_funcs: dict[str, str] = {}
        self.empty_controls: set[str] = set()
        for (cname, cloc), role in zip(blocks[1:], roles, strict=False):
            if cname not in self.controls:
                raise error(cloc, f"'{cname}' is not a control declared in this program")
            self.control_funcs[role] = self.gen_control(self.controls[cname], role)
        if self.deferred:
            raise self.deferred[0]
        source = self.assemble()
        model = program_model(self)
        return source, model, dict(self.errors_by_name)

    def assemble(self) -> str:
        """The generated module's text (the fast compiler assembles its own)."""
        return ModuleAssembler(self).assemble()

    # ================================================================== functions
    def begin_fn(self, kind: str) -> None:
        self.out = []
        self.ind = "    "
        self.locals_used = set()
        self.params_used = set()
        self.fn_kind = kind
        self.loops = []

    def note_use(self, sym: Sym) -> None:
        self.params_used.add(sym.code)

    def end_fn(self) -> None:
        # bind only the block parameters this function reads or writes
        kept = []
        for line in self.out:
            s = line.strip()
            if s.startswith("p_") and " = st." in s and s.split(" = ")[0] not in self.params_used:
                continue
            kept.append(line)
        self.out = kept
        self.build_lines.extend(self.out)
        self.build_lines.append("")
        self.out = []

    def param_bindings(self, params: list[A.Param], targets: list[str | None],
                       scope: Scope) -> list[str]:
        """Bind a block's parameters to the PacketState parts; returns preamble lines."""
        pre = []
        for p, tgt in zip(params, targets, strict=False):
            t = self.resolve_type(p.type)
            if tgt is None:
                continue
            if tgt in ("packet_in", "packet_out"):
                if not (isinstance(t, ExternT) and t.name == tgt):
                    raise error(p.loc, f"parameter '{p.name}' must be a {tgt}")
                scope.define(p.name, Sym(tgt, t, ""), p.loc)
                continue
            want = {"hdr": getattr(self, "hdr_t", None), "meta": getattr(self, "meta_t", None),
                    "sm": self.sm_t}[tgt]
            if want is not None and t is not want:
                raise error(p.loc, f"parameter '{p.name}' has type {t} but V1Switch passes {want} "
                            "here; use the parser's header/metadata types")
            py = f"p_{p.name}"
            scope.define(p.name, Sym("var", t, py, obj="ro" if p.direction == "in" else None, param=True), p.loc)
            self.param_targets[py] = tgt
            pre.append(f"{py} = st.{tgt}")
        return pre

    def gen_action(self, info: ActionInfo, scope: Scope, preamble: list[str] | None,
                   function: bool = False) -> None:
        """An action (or a P4 function: same calling convention, plus a return value)."""
        d = info.decl
        self.begin_fn("function" if function else "action")
        self.function_ret = getattr(info, "ret", None)
        ascope = scope.child()
        args = []
        outs = []
        signed: list[tuple[str, BitT]] = []
        for p in d.params:
            t = self.resolve_type(p.type)
            py = f"ap_{p.name}"
            args.append(py)
            ascope.define(p.name, Sym("var", t, py, obj="ro" if p.direction in ("", "in") else None, param=True),
                          p.loc)
            if p.direction in ("out", "inout"):
                outs.append(py)
            if not p.direction and isinstance(t, BitT) and t.signed:
                signed.append((py, t))
        self.action_outs = outs
        self.emit(f"def {info.pyfunc}(st, L{''.join(', ' + a for a in args)}):")
        self.indent()
        self.emit(f'"""{"function" if function else "action"} {info.p4name} ({d.loc})"""')
        for py, t in signed:
            # the control plane gives int<W> arguments as unsigned bit strings
            h = 1 << (t.width - 1)
            self.emit(f"{py} = (({py} & {t.mask:#x}) ^ {h}) - {h}")
        for line in preamble or []:
            self.emit(line)
        saved = self.scope
        self.scope = ascope
        # an action with results that can exit: they are copied out all the same
        # (P4_16 12.5); it returns a flag after them that tells its caller to exit
        exits = bool(outs) and not function and self.may_exit(info)
        if exits:
            self.action_outs = outs + ["False"]
            self.emit("try:")
            self.indent()
        n = len(self.out)
        self.stmts(d.body.stmts)
        info.empty = len(self.out) == n and not function and not outs
        if exits:
            if len(self.out) == n:
                self.emit("pass")
            self.dedent()
            self.emit("except ExitControl:")
            self.emit("    return (" + "".join(o + ", " for o in outs) + "True)")
        self.scope = saved
        if function and not isinstance(self.function_ret, VoidT):
            # p4c rejects a function that can end without return; be safe anyway
            zero = self.zero(self.function_ret, d.loc)  # type: ignore[arg-type]  # a function's return type (function is true)
            self.emit(f"return {zero}" if not outs else
                      f"return ({zero}, " + "".join(o + ", " for o in outs) + ")")
        elif outs:
            self.emit("return (" + ("None, " if function else "") + "".join(o + ", " for o in self.action_outs) + ")")
        self.dedent()
        start = len(self.build_lines)
        self.end_fn()
        info.lines = self.build_lines[start:]
        self.action_outs = []

    # ------------------------------------------------------------------ parser
    def block_scope(self, d: A.ControlDecl | A.ParserDecl) -> Scope:
        """The scope of a V1Switch block: its constructor parameters bound to the
        constants ``main`` passes (``V1Switch(..., MyIngress(5), ...)``)."""
        scope = self.global_scope.child()
        inst = self.block_ctor_args.get(d.name)
        if d.ctor_params or (inst is not None and inst.args):
            call = inst or A.Instance(d.name, d.loc, [], A.NamedType(d.loc, d.name), [])
            for name, sym, loc in self.ctor_bindings(call, d, self.global_scope):
                scope.define(name, sym, loc)
        return scope

    def block_locals(self, block: str, decls: list[object], scope: Scope, parser: bool,
                     extra: list[tuple[str, str]] | None = None) -> str | None:
        """Declare a parser's/control's locals; returns the name of its locals class
        (``extra``: more (attribute, initial value) fields, an instance's parameters)."""
        fields: list[tuple[str, str]] = list(extra or [])
        inits: list[str] = []
        for d in decls:
            if isinstance(d, A.ConstDecl):
                self.declare_const(d, scope)
            elif isinstance(d, A.VarDecl):
                t = self.resolve_type(d.type)
                py = pyfield(d.name)
                zero = self.zero(t, d.loc)
                code = self.block_local_code(block, py, zero)
                scope.check_not_param(d.name, d.loc)
                scope.define(d.name, Sym("var", t, code), d.loc)
                fields.append((py, zero))
                if isinstance(t, VarbitT):
                    fields.append((f"_len_{py}", "0"))
                    self.varbit_locals.add(code)
                if d.init is not None:
                    # compiled apart: a call in the initializer emits statements (its
                    # copy-out), which run with the assignment where the block starts
                    self.scope = scope
                    saved = self.out, self.ind
                    self.out, self.ind = [], ""
                    if isinstance(t, VarbitT):  # its width too
                        self.statements.assign(A.Name(d.loc, d.name), d.init, d.loc)
                    else:
                        self.emit(f"{code} = {self.expr_as(d.init, t, f'initializer of {d.name}')}")
                    inits.extend(self.out)
                    self.out, self.ind = saved
            elif isinstance(d, A.Instance):
                sub = self.sub_block_decl(d)
                if sub is not None:
                    self.declare_sub_block(d, sub, block, scope, parser)
                else:
                    self.declare_instance(d, None if parser else block, scope)
            elif isinstance(d, A.ValueSetDecl):
                if not parser:
                    raise error(d.loc, "a value_set can only be declared in a parser")
                self.declare_value_set(d, block, scope)
            elif isinstance(d, A.ActionDecl) and not parser:
                self.declare_action(d, block, scope)
            elif isinstance(d, A.TableDecl) and not parser:
                pass  # declared after actions by gen_control
            else:
                raise unsupported(getattr(d, "loc", Loc(str(self.source), 0, 0)),
                                  f"{type(d).__name__} here", "move it")
        if not fields:
            self.locals_inits = inits
            return None
        cls = pyident("L", block)
        lines = [f"class {cls}:", f"    __slots__ = ({''.join(repr(f) + ', ' for f, _ in fields)})",
                 "    def __init__(self):"]
        lines += [f"        self.{f} = {z}" for f, z in fields]
        self.module_lines.extend(lines + [""])
        self.locals_inits = inits
        return cls

    def block_local_code(self, block: str, py: str, zero: str) -> str:
        """Code of a parser's/control's local variable (an attribute of its locals object)."""
        return f"L.{py}"

    # ------------------------------------------------------------------ controls
    def control_setup(self, d: A.ControlDecl, role: str) -> tuple[Scope, list[str], str | None,
                                                                   list[str], set[str]]:
        """Declare a control's parameters, locals, actions and tables (shared by the
        general output and the fast path); returns (scope, parameter preamble, locals
        class, local initialisers, parameters the initialisers use)."""
        targets: dict[str, list[str | None]] = {
            "ingress": ["hdr", "meta", "sm"], "egress": ["hdr", "meta", "sm"],
            "verify": ["hdr", "meta"], "compute": ["hdr", "meta"], "deparser": ["packet_out", "hdr"],
        }
        want = targets[role]
        if len(d.params) != len(want):
            raise error(d.loc, f"control {d.name} is used as the {role} block and must have "
                        f"{len(want)} parameters")
        scope = self.block_scope(d)
        pre = self.param_bindings(d.params, want, scope)
        self.scope = scope
        self.control_prefix = d.name
        self.params_used = set()
        locals_cls = self.block_locals(d.name, d.locals, scope, parser=False)
        inits = self.locals_inits
        init_params = self.params_used
        for info, ascope in self.pending_actions:
            self.gen_action(info, ascope, pre)
        self.pending_actions = []
        for t in d.locals:
            if isinstance(t, A.TableDecl):
                self.scope = scope
                self.gen_table(t, d.name, scope, pre)
        return scope, pre, locals_cls, inits, init_params

    def gen_control(self, d: A.ControlDecl, role: str) -> str:
        scope, pre, locals_cls, inits, init_params = self.control_setup(d, role)
        fn = pyident("c", d.name)
        self.begin_fn("deparser" if role == "deparser" else "apply")
        self.params_used |= init_params
        self.scope = scope.child()
        args = "st, ap" if role == "deparser" else "st"
        self.emit(f"def {fn}({args}):")
        self.indent()
        self.emit(f'"""control {d.name} ({d.loc})"""')
        for line in pre:
            self.emit(line)
        self.emit(f"L = {locals_cls}()" if locals_cls else "L = None")
        self.emit_lines(inits)
        n = len(self.out)
        assert d.body is not None
        self.stmts(d.body.stmts)
        if len(self.out) == n:
            self.emit("pass")
            if not inits:
                self.empty_controls.add(fn)
        self.dedent()
        self.end_fn()
        self.scope = self.global_scope
        self.control_prefix = None
        return fn

