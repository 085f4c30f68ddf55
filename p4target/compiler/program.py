"""The program compiler: declarations, parser/control/deparser code generation, and
assembly of one Python module per P4 program.

The generated module defines header/struct classes (``__slots__``, one attribute per
field plus ``_v`` for validity), a ``PacketState`` class and ``build(rt)``; ``build``
binds tables and externs from the runtime ``Bindings`` to local names once, defines
the parser states, actions, tables and controls as closures over them, and returns
the ``Pipeline`` object (docs/target-internals.md, section 1).
"""

from __future__ import annotations

import copy
import dataclasses
import logging
from pathlib import Path
from typing import Any, cast

from p4target import model as M
from p4target.compiler.expressions import ExpressionCompiler, to_type_const, expr_text
from p4target.compiler.values import V
from p4target.compiler.extern_calls import ExternCalls
from p4target.compiler.naming import pyfield, pyident
from p4target.compiler.packet_io import PacketIO
from p4target.compiler.scope import Scope, Sym
from p4target.compiler.statements import StatementCompiler
from p4target.compiler.tables import TableCompiler
from p4target.compiler.assembly import ModuleAssembler
from p4target.compiler.subblocks import SUB_REJECT, SubBlockCompiler
from p4target.compiler.entities import (
    ActionInfo, InstanceInfo, TableInfo, annos_dict, anno_strs, qualify,
)
from p4target.compiler.types import (
    BitT, BoolT, EnumT, ErrorT, ExternT, IntT, MatchKindT, StackT, StringT, StructT, TupleT,
    Type, VarbitT, VoidT,
)
from p4target.frontend import ast as A
from p4target.frontend.bmv2_warnings import bmv2_warnings
from p4target.frontend.control_plane import p4info_action_names
from p4target.errors import P4Error, UnsupportedError
from p4target.frontend.source import Loc, error, unsupported

log = logging.getLogger(__name__)

SM_FIELDS = ("ingress_port", "egress_spec", "egress_port", "instance_type", "packet_length",
             "enq_timestamp", "enq_qdepth", "deq_timedelta", "deq_qdepth",
             "ingress_global_timestamp", "egress_global_timestamp", "mcast_grp", "egress_rid",
             "checksum_error", "parser_error", "priority")

def reaches_an_end(d: A.ParserDecl) -> bool:
    """Whether some path of states from ``start`` ends in accept or reject (a select
    without a default case may end in reject: no case matched)."""
    states = {s.name: s for s in d.states}
    seen, todo = set(), ["start"]
    while todo:
        name = todo.pop()
        if name in ("accept", "reject") or name not in states:
            return True  # an unknown state is reported where it is named
        if name in seen:
            continue
        seen.add(name)
        tr = states[name].transition
        if tr is None or tr.state is not None:
            todo.append(tr.state if tr is not None and tr.state is not None else "reject")
            continue
        cases = [c.state for c in tr.cases]
        if not any(isinstance(c.keyset, A.DefaultExpr) for c in tr.cases):
            return True
        todo.extend(cases)
    return False


class ProgramCompiler(ExpressionCompiler, StatementCompiler):
    table_helpers = True  # emit the per-table helper function (the fast path does not)

    def __init__(self, program: A.Program, source: Path):
        self.program = program
        self.source = source
        self.global_scope = Scope()
        self.scope = self.global_scope
        self.type_names: dict[str, Type] = {}
        self.new_types: set[str] = set()
        self.varbit_locals: set[str] = set()  # code of each varbit variable (its width: length_place)
        self.generic_structs: dict[str, A.StructLike] = {}  # struct S<T>: made concrete where named S<bit<8>>
        self.block_kinds: dict[str, str] = {}  # control and parser (type) names: "control" or "parser"  # names declared with 'type' (or typedefs of one)
        self._types: dict[int, tuple[A.TypeRef, Type]] = {}  # resolve_type's cache
        self.errors_by_name: dict[str, int] = {}
        self.match_kinds: set[str] = set()
        self.struct_types: list[StructT] = []
        self.extern_decls: dict[str, A.ExternDecl] = {}
        self.parsers: dict[str, A.ParserDecl] = {}
        self.block_locs: dict[str, Loc] = {}  # where each parser/control/package name was declared
        self.controls: dict[str, A.ControlDecl] = {}
        self.main: A.Instance | None = None
        self.actions: dict[str, ActionInfo] = {}  # by model name
        self.used_actions: list[str] = []
        self.tables: list[M.Table] = []
        self.externs: list[InstanceInfo] = []
        self.digests: dict[str, M.Digest] = {}
        self.warnings: list[str] = []
        self.value_sets: list[M.ValueSet] = []
        self._named_types: dict[str, set[int]] | None = None  # type name -> the declarations naming it
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
    def packet_in_method(self, e: A.Call, name: str) -> V | None:
        return self.packet_io.packet_in_method(e, name)

    def emit_header(self, v: V, loc: Loc) -> None:
        self.packet_io.emit_header(v, loc)

    def field_from(self, shifted: str, ft: Type, w: int, need_mask: bool) -> str:
        return self.packet_io.field_from(shifted, ft, w, need_mask)

    def unpack_lines(self, t: StructT, h: str, x: str) -> list[str]:
        return self.packet_io.unpack_lines(t, h, x)

    # ================================================================== externs (ExternCalls)
    def extern_method(self, e: A.Call, sym: Sym, name: str) -> V | None:
        return self.extern_calls.extern_method(e, sym, name)

    def extern_function(self, e: A.Call, name: str) -> V | None:
        return self.extern_calls.extern_function(e, name)

    def index_arg(self, e: A.Call, i: int) -> str:
        return self.extern_calls.index_arg(e, i)

    def out_assign(self, target: A.Expr, code: str, t: Type | None, loc: Loc, below: int | None = None) -> None:
        self.extern_calls.out_assign(target, code, t, loc, below)

    def enum_member_name(self, e: A.Expr, enum: str) -> str:
        return self.extern_calls.enum_member_name(e, enum)

    def sm_store(self, field: str, code: str) -> str:
        """A statement setting standard_metadata.<field> where no block parameter names it."""
        return f"st.sm.{field} = {code}"

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

    def sub_apply(self, e: A.Call, sym: Sym, name: str) -> V | None:
        return self.sub_blocks.sub_apply(e, sym, name)

    # ================================================================== types
    def resolve_type(self, t: A.TypeRef) -> Type:
        """The type a type reference names (cached per node: parameters and
        variables are resolved again each time their block is compiled)."""
        if isinstance(t, A.NamedType) and t.name in self.generic_structs:
            return self.specialize(t)
        cached = self._types.get(id(t))
        if cached is not None and cached[0] is t:
            return cached[1]
        r = self._resolve_type(t)
        self._types[id(t)] = (t, r)
        return r

    def _resolve_type(self, t: A.TypeRef) -> Type:
        if isinstance(t, A.BitsType):
            if t.width is None:
                return IntT()
            w = self.const_int(t.width, "type width")
            if t.kind == "varbit":
                if w <= 0:
                    raise error(t.loc, "varbit width must be positive")
                return VarbitT(w)
            if w <= 0 or (t.kind == "int" and w < 1):
                raise error(t.loc, f"{t.kind}<{w}>: width must be at least 1")
            return BitT(w, t.kind == "int")
        if isinstance(t, A.NamedType):
            simple = {"bool": BoolT(), "error": ErrorT(), "void": VoidT(), "string": StringT(),
                      "match_kind": MatchKindT()}
            if t.name in simple:
                return simple[t.name]
            rt = self.type_names.get(t.name)
            if rt is None:
                raise error(t.loc, f"unknown type '{t.name}'; declare it before use")
            if isinstance(rt, ExternT):  # a typedef of a specialized extern keeps its arguments
                return ExternT(rt.name, tuple(self.resolve_type(a) for a in t.args) if t.args else rt.args)
            if t.args:
                raise unsupported(t.loc, f"a type argument on '{t.name}'", "use a concrete type")
            return rt
        if isinstance(t, A.StackType):
            elem = self.resolve_type(t.elem)
            if not isinstance(elem, StructT) or elem.kind not in ("header", "header_union"):
                raise error(t.loc, f"header stacks hold headers, not {elem}")
            n = self.const_int(t.size, "stack size")
            if n <= 0:
                raise error(t.size.loc, "stack size must be positive")
            return StackT(elem, n)
        if isinstance(t, A.TupleType):
            return TupleT(tuple(self.resolve_type(e) for e in t.elems))
        raise unsupported(t.loc, f"type {type(t).__name__}", "use a concrete type")

    # ================================================================== declarations
    def declare_all(self, require_main: bool = True) -> None:
        """Declare every top-level declaration; with ``require_main`` False (the source-order
        check), top-level instances the target does not support (another architecture's
        package) are left out instead of refused."""
        for d in self.program.decls:
            try:
                self.declare(d)
            except UnsupportedError:
                if require_main or not isinstance(d, A.Instance):
                    raise
        if self.main is None and require_main:  # placed at the end, where main is missing
            end = len(self.source.read_text(errors="replace").splitlines()) + 1
            raise error(Loc(str(self.source), end, 1), "the program has no 'main'; add "
                        "V1Switch(MyParser(), ..., MyDeparser()) main;")

    def declare(self, d: object) -> None:
        """Declare one top-level declaration (its kind's ``_declare_*`` method)."""
        self.last_loc = getattr(d, "loc", self.last_loc)
        how = getattr(self, f"_declare_{type(d).__name__}", None)
        if getattr(d, "name", None) == "main" and not isinstance(d, A.Instance):
            raise error(d.loc, "'main' must be the package instance (V1Switch(...) main;); rename this declaration")  # type: ignore[attr-defined]  # every named declaration has a loc
        if how is None:
            raise unsupported(getattr(d, "loc", Loc(str(self.source), 1, 1)),
                              f"top-level {type(d).__name__}", "remove it")
        how(d)

    def _declare_ErrorDecl(self, d: A.ErrorDecl) -> None:
        for n, _loc in d.members:
            if n not in self.errors_by_name:
                self.errors_by_name[n] = len(self.errors_by_name)

    def _declare_MatchKindDecl(self, d: A.MatchKindDecl) -> None:
        self.match_kinds.update(n for n, _ in d.members)

    def _declare_TypedefDecl(self, d: A.TypedefDecl) -> None:
        self.check_new_name(d.name, d.loc)
        t = self.resolve_type(d.type)
        if d.new_type and not isinstance(t, (BitT, BoolT)):
            raise error(d.loc, f"'type' can only be applied to base types (bit<W>, int<W>, bool), not {t}; "
                        "use typedef")
        if d.new_type or (isinstance(d.type, A.NamedType) and d.type.name in self.new_types):
            self.new_types.add(d.name)
        if d.new_type and isinstance(t, BitT):
            t = BitT(t.width, t.signed, d.name)
        self.type_names[d.name] = t

    def _declare_StructLike(self, d: A.StructLike) -> None:
        self.declare_struct(d)

    def _declare_EnumDecl(self, d: A.EnumDecl) -> None:
        self.declare_enum(d)

    def _declare_ConstDecl(self, d: A.ConstDecl) -> None:
        self.declare_const(d, self.global_scope)

    def _declare_ExternDecl(self, d: A.ExternDecl) -> None:
        for p in (p for m in d.methods for p in m.params):
            kind = self.block_kind(p.type)
            if kind in ("control", "parser"):
                raise error(p.loc, f"{p.name}: an extern's parameter cannot have type {kind} "
                            f"{p.type.name}; pass values, headers or structs")  # type: ignore[attr-defined]  # block_kind found a NamedType
        self.extern_decls[d.name] = d
        self.type_names[d.name] = ExternT(d.name)

    def _declare_ExternFunc(self, d: A.ExternFunc) -> None:
        self.global_scope.names[d.name] = Sym("function", None, obj=d)

    def _declare_ActionDecl(self, d: A.ActionDecl) -> None:
        self.declare_action(d, None, self.global_scope)

    def _declare_ParserDecl(self, d: A.ParserDecl) -> None:
        self.check_new_block(d.name, d.loc)
        self.block_kinds[d.name] = "parser"
        if not d.is_type:
            self.parsers[d.name] = d
        self.type_names[d.name] = ExternT(d.name)

    def _declare_ControlDecl(self, d: A.ControlDecl) -> None:
        self.check_new_block(d.name, d.loc)
        self.block_kinds[d.name] = "control"
        for p in d.ctor_params:
            if self.block_kind(p.type) == "parser":
                raise error(p.loc, f"{p.name}: a control cannot instantiate a parser; pass the parser to "
                            "the package instead")
        if not d.is_type:
            self.controls[d.name] = d
        self.type_names[d.name] = ExternT(d.name)

    def _declare_PackageDecl(self, d: A.PackageDecl) -> None:
        self.check_new_block(d.name, d.loc)
        self.type_names[d.name] = ExternT(d.name)

    def _declare_Instance(self, d: A.Instance) -> None:
        if isinstance(d.type, A.NamedType) and d.type.name == "V1Switch":
            if d.name != "main":
                raise error(d.loc, "the V1Switch instance must be called 'main'")
            self.main = d
        else:
            self.declare_instance(d, None, self.global_scope)

    def _declare_FunctionDecl(self, d: A.FunctionDecl) -> None:
        info = ActionInfo(d.name, d.name, d, pyident("f", d.name), None)  # type: ignore[arg-type]  # the function's ActionInfo: its table-facing parts stay unset
        info.ret = self.resolve_type(d.ret)  # type: ignore[attr-defined]  # functions carry their return type on the same record
        self.global_scope.define(d.name, Sym("func", None, info.pyfunc, obj=info), d.loc)
        self.pending_functions.append(info)

    def _declare_VarDecl(self, d: A.VarDecl) -> None:
        raise error(d.loc, "global variables are not allowed in P4; declare a const or "
                    "move the variable into a control")

    def block_kind(self, t: A.TypeRef) -> str | None:
        """"control" or "parser" when ``t`` names a control or parser type declared so far."""
        return self.block_kinds.get(t.name) if isinstance(t, A.NamedType) else None

    def check_new_block(self, name: str, loc: Loc) -> None:
        """Refuse a parser, control or package whose name is already a type.

        p4c rejects a redeclaration such as ``control Ingress(...)`` in a v1model
        program, because v1model.p4 declares the control type ``Ingress``.
        """
        if name in self.type_names:
            where = self.block_locs.get(name)
            origin = f" (first declared at {where})" if where else ""
            raise error(loc, f"'{name}' is already declared{origin}; choose another name, "
                        f"e.g. 'My{name}'")
        self.block_locs[name] = loc

    def check_new_name(self, name: str, loc: Loc) -> None:
        if name in self.type_names and not isinstance(self.type_names[name], ExternT):
            raise error(loc, f"'{name}' is already declared; choose another name")

    def specialize(self, t: A.NamedType) -> StructT:
        """The concrete type ``S<args>`` of a generic struct or header ``S``, declared
        once per distinct argument list (its type parameters bound to the arguments)."""
        d = self.generic_structs[t.name]
        if len(t.args) != len(d.type_params):
            raise error(t.loc, f"{d.kind} {d.name} takes {len(d.type_params)} type argument(s), not {len(t.args)}")
        args = [self.resolve_type(a) for a in t.args]
        name = f"{d.name}<{', '.join(map(str, args))}>"
        done = self.type_names.get(name)
        if isinstance(done, StructT):
            return done
        saved = {p: self.type_names.get(p) for p in d.type_params}
        self.type_names.update(zip(d.type_params, args, strict=True))
        try:  # a copy: resolve_type caches per node, and another specialization binds T anew
            self.declare_struct(dataclasses.replace(copy.deepcopy(d), name=name, type_params=[]))
        finally:
            for p, old in saved.items():
                if old is None:
                    self.type_names.pop(p, None)
                else:
                    self.type_names[p] = old
        return cast(StructT, self.type_names[name])

    def declare_struct(self, d: A.StructLike) -> None:
        self.check_new_name(d.name, d.loc)
        if d.type_params:
            self.generic_structs[d.name] = d
            return
        prefix = {"header": "H", "header_union": "U", "struct": "S"}[d.kind]
        t = StructT(d.kind, d.name, [], annos_dict(d.annotations), {}, pyident(prefix, d.name))
        seen = set()
        for f in d.fields:
            if f.name in seen:
                raise error(f.loc, f"field '{f.name}' is declared twice in {d.kind} {d.name}")
            seen.add(f.name)
            self.check_match_annotation(f.annotations)
            ft = self.resolve_type(f.type)
            if d.kind == "header":
                if not isinstance(ft, (BitT, BoolT, VarbitT)) and not (
                        isinstance(ft, EnumT) and ft.underlying is not None) and not self.wire_struct(ft):
                    raise error(f.loc, f"header field '{f.name}' has type {ft}; header fields must be "
                                "bit<W>, int<W>, varbit<W>, bool, a serializable enum or a struct of those")
                if isinstance(ft, EnumT):
                    ft = ft.underlying  # type: ignore[assignment]  # a serializable enum: its underlying bit<W>
            elif d.kind == "header_union":
                if not isinstance(ft, StructT) or ft.kind != "header":
                    raise error(f.loc, f"header_union members must be headers, not {ft}")
            t.fields.append((f.name, ft))
            t.field_annotations[f.name] = annos_dict(f.annotations)
        if d.kind == "header":
            if t.width % 8 and ("<" in d.name or self.type_is_used(d)):  # S<T> exists where used  # a limit of BMv2's, reported (as p4c does) last
                self.deferred.append(error(d.loc, f"header {d.name} is {t.width} bits long; headers must be "
                                           "a whole number of bytes (add padding bits)"))
            if sum(isinstance(ft, VarbitT) for _, ft in t.fields) > 1:  # placed at the first, as p4c does
                first = next(f for f, (_, ft) in zip(d.fields, t.fields, strict=True) if isinstance(ft, VarbitT))
                raise unsupported(first.loc, "a header with more than one varbit field", "use one")
            if any(isinstance(ft, VarbitT) for _, ft in t.fields) and any(
                    isinstance(ft, StructT) for _, ft in t.fields):
                raise unsupported(d.loc, "a header with both a varbit field and a struct-typed field",
                                  "write the struct's fields into the header")
        self.type_names[d.name] = t
        self.struct_types.append(t)

    def check_match_annotation(self, annos: list[A.Annotation]) -> None:
        """A field's ``@match(kind)`` (a value set's match kind) names a declared match_kind."""
        for a in annos:
            if a.name == "match" and a.body.strip() not in self.match_kinds:
                raise error(a.loc, f"@match({a.body.strip()}): the value must be a match_kind "
                            f"({', '.join(sorted(self.match_kinds))})")

    def type_is_used(self, d: A.StructLike) -> bool:
        """Whether a type other than ``d`` or a declaration names ``d`` (p4c leaves unused
        types out of what BMv2 sees, so BMv2's limits do not apply to them)."""
        if self._named_types is None:
            self._named_types = {}
            for x in self.program.decls:
                for n in A.walk(x):
                    if isinstance(n, A.NamedType):
                        self._named_types.setdefault(n.name, set()).add(id(x))
        return bool(self._named_types.get(d.name, set()) - {id(d)})

    def wire_struct(self, t: Type) -> bool:
        """A struct that can be a header field: only bit<W>, int<W>, bool, serializable
        enums and such structs (P4_16 7.2.2), serialized inline in field order."""
        return isinstance(t, StructT) and t.kind == "struct" and all(
            isinstance(ft, (BitT, BoolT)) or (isinstance(ft, EnumT) and ft.underlying is not None)
            or self.wire_struct(ft) for _, ft in t.fields)

    def declare_enum(self, d: A.EnumDecl) -> None:
        self.check_new_name(d.name, d.loc)
        members: dict[str, int] = {}
        if d.underlying is None:
            for i, (n, _, _loc) in enumerate(d.members):
                members[n] = i
            t = EnumT(d.name, members)
        else:
            ut = self.resolve_type(d.underlying)
            if isinstance(d.underlying, A.NamedType) and d.underlying.name in self.new_types:
                raise error(d.loc, f"enum {d.name}: its underlying type {d.underlying.name} is declared with "
                            "'type'; an enum's underlying type must be bit<W> or int<W> (or a typedef of one)")
            if not isinstance(ut, BitT):
                raise error(d.loc, f"enum underlying type must be bit<W> or int<W>, not {ut}")
            for n, val, loc in d.members:
                if val is None:
                    raise error(loc, f"member {n} of serializable enum {d.name} needs a value")
                members[n] = to_type_const(self.const_int(val, "enum value"), ut)
            t = EnumT(d.name, members, ut)
        self.type_names[d.name] = t

    def declare_const(self, d: A.ConstDecl, scope: Scope) -> None:
        t = self.resolve_type(d.type)
        v = self.value(d.value)
        if v.const is None:
            raise error(d.value.loc, f"const {d.name} needs a compile-time value")
        code = self.coerce(v, t, d.loc, f"const {d.name}")
        val = eval(code, {"__builtins__": {}})  # a literal produced by coerce
        scope.define(d.name, Sym("const", t, code, val), d.loc)

    def declare_action(self, d: A.ActionDecl, control: str | None, scope: Scope) -> ActionInfo:
        p4name = qualify(control, d.name, d.annotations)
        info = ActionInfo(p4name, d.name, d, pyident("a", p4name), control, scope=scope)
        scope.define(d.name, Sym("action", None, info.pyfunc, obj=info), d.loc)
        other = self.actions.get(p4name)
        if other is not None and other.decl is not d:
            raise error(d.loc, f"'{p4name}' is also the control-plane name of the action at {other.decl.loc}; "
                        "give one of them another @name")
        self.actions[p4name] = info
        # body generated when the enclosing block is compiled
        self.pending_actions.append((info, scope))
        return info

    pending_actions: list[tuple[ActionInfo, Scope]]
    def note_digest(self, t: StructT, loc: Loc) -> None:
        fields = tuple(M.Field(n, self.wire_width(ft, loc)) for n, ft in t.fields)
        self.digests[t.name] = M.Digest(t.name, fields)

    def wire_width(self, t: Type, loc: Loc) -> int:
        if isinstance(t, BitT):
            return t.width
        if isinstance(t, BoolT):
            return 1
        if isinstance(t, EnumT) and t.underlying is not None:
            return t.underlying.width
        if isinstance(t, (ErrorT, EnumT)):  # p4c gives BMv2 errors and plain enums 32 bits
            return 32
        raise unsupported(loc, f"a field of type {t} here", "use bit<W>")

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
        model = M.ProgramModel(
            source=str(self.source),
            arch="v1model",
            tables=tuple(self.tables),
            actions=tuple(self.model_action(n) for n in p4info_action_names(self.program, self.actions, self.used_actions)),
            externs=tuple(self.finish_externs()),
            controller_headers=tuple(self.controller_headers()),
            digests=tuple(self.digests.values()),
            value_sets=tuple(self.value_sets),
            warnings=tuple(self.warnings) + bmv2_warnings(self.program),
        )
        return source, model, dict(self.errors_by_name)

    def assemble(self) -> str:
        """The generated module's text (the fast compiler assembles its own)."""
        return ModuleAssembler(self).assemble()

    def model_action(self, name: str) -> M.Action:
        info = self.actions[name]
        params = []
        for p in info.decl.params:
            if p.direction:
                continue
            pt = self.resolve_type(p.type)
            params.append(M.Field(p.name, self.wire_width(pt, p.loc), anno_strs(p.annotations)))
        return M.Action(name, tuple(params), anno_strs(info.decl.annotations))

    def finish_externs(self) -> list[M.Extern]:
        users: dict[str, list[str]] = {}
        for t in self.tables:
            for n in (t.implementation, t.direct_counter, t.direct_meter):
                if n:
                    users.setdefault(n, []).append(t.name)
        out = []
        for info in self.externs:
            ext = info.extern
            assert ext is not None
            if ext.name in users:
                ext = M.Extern(**{**ext.__dict__, "tables": tuple(users[ext.name])})
            out.append(ext)
        return out

    def controller_headers(self) -> list[M.ControllerHeader]:
        out = []
        for t in self.struct_types:
            ch = t.annotations.get("controller_header")
            if t.kind == "header" and ch:
                out.append(M.ControllerHeader(str(ch[0]), t.name, tuple(self.metadata_fields(t, ""))))
        return out

    def metadata_fields(self, t: StructT, prefix: str) -> list[M.Field]:
        """A controller header's fields in wire order; a struct-typed field's own fields
        are named ``field.inner``, as p4c names them in the P4Info."""
        out: list[M.Field] = []
        for n, ft in t.fields:
            if isinstance(ft, StructT):
                out += self.metadata_fields(ft, f"{prefix}{n}.")
                continue
            annos = {k: " ".join(map(str, v)) for k, v in t.field_annotations.get(n, {}).items()}
            out.append(M.Field(prefix + n, self.wire_width(ft, Loc(str(self.source), 0, 0)), annos))
        return out

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

    def gen_parser(self, d: A.ParserDecl) -> None:
        scope = self.block_scope(d)
        pre = self.param_bindings(d.params, ["packet_in", "hdr", "meta", "sm"], scope)
        self.scope = scope
        self.params_used = set()
        locals_cls = self.block_locals(d.name, d.locals, scope, parser=True)
        self.parser_inits = self.locals_inits
        self.parser_init_params = self.params_used  # bound in the start state
        names = {s.name for s in d.states}
        for s in d.states:
            if s.name in ("accept", "reject"):
                raise error(s.loc, f"state '{s.name}' is predefined; choose another name")
        if "start" not in names:
            raise error(d.loc, f"parser {d.name} has no 'start' state; add state start {{ ... }}")
        if not reaches_an_end(d):
            raise error(d.loc, f"parser {d.name} never reaches accept or reject from start; add a transition "
                        "to accept")
        self.state_funcs = {s.name: pyident("s", d.name, s.name) for s in d.states}
        self.state_lines: dict[str, list[str]] = {}
        for s in d.states:
            self.gen_state(s, pre)
        self.parser_start = self.state_funcs["start"]
        self.parser_locals = locals_cls
        self.scope = self.global_scope

    def state_target(self, name: str, loc: Loc) -> str:
        if name == "accept":
            return "None"
        if name == "reject" and self.sub_parent_kind == "parser":
            return SUB_REJECT
        if name == "reject":
            self.warnings.append(f"{loc}: transition to reject; like BMv2, the packet goes "
                                 "on to ingress with parser_error unchanged (use verify() to set an error)")
            return "None"
        if name not in self.state_funcs:
            raise error(loc, f"unknown parser state '{name}'; declare it or use accept/reject")
        return self.state_funcs[name]

    def gen_state(self, s: A.ParserState, pre: list[str]) -> None:
        self.begin_fn("parser")
        self.emit(f"def {self.state_funcs[s.name]}(st, L, data, pos):")
        self.indent()
        self.emit(f'"""state {s.name} ({s.loc})"""')
        for line in pre:
            self.emit(line)
        if s.name == "start":
            self.params_used |= self.parser_init_params
            self.emit_lines(self.parser_inits)
        saved = self.scope
        self.scope = saved.child()
        self.stmts(s.stmts)
        tr = s.transition
        if tr is None:
            raise error(s.loc, f"state {s.name} has no transition; add 'transition accept;'")
        if tr.state is not None:
            self.emit(f"return {self.state_target(tr.state, tr.loc)}, pos")
        else:
            self.gen_select(tr)
        self.scope = saved
        self.dedent()
        start = len(self.build_lines)
        self.end_fn()
        self.state_lines[s.name] = self.build_lines[start:]

    def gen_select(self, tr: A.Transition) -> None:
        keys = [self.value(k) for k in tr.select or []]
        kvars = []
        for k, ke in zip(keys, tr.select or [], strict=False):
            if not isinstance(k.type, (BitT, BoolT, EnumT, ErrorT, IntT)):
                raise error(ke.loc, f"cannot select on a value of type {k.type}")
            kv = self.tmp("k")
            self.emit(f"{kv} = {k.code}")
            kvars.append((kv, k))
        has_default = False
        for case in tr.cases:
            items = case.keyset.items if isinstance(case.keyset, A.ListExpr) else [case.keyset]
            if len(items) == 1 and isinstance(items[0], A.DefaultExpr):
                self.emit(f"return {self.state_target(case.state, case.loc)}, pos")
                has_default = True
                break
            conds = self.case_conds(case, kvars)
            cond = " and ".join(conds) if conds else "True"
            self.emit(f"if {cond}: return {self.state_target(case.state, case.loc)}, pos")
        if not has_default:
            self.emit(f"raise ParserError({self.errors_by_name['NoMatch']}, pos)")

    def keyset_cond(self, item: A.Expr, kv: str, t: Type) -> str | None:
        if isinstance(item, A.DefaultExpr):
            return None
        if isinstance(item, A.Mask):
            v = self.keyset_value(item.value, t)
            m = self.keyset_value(item.mask, t)
            return f"{kv} & {m:#x} == {v & m:#x}"
        if isinstance(item, A.Range):
            lo = self.keyset_value(item.lo, t, unsigned=False)
            hi = self.keyset_value(item.hi, t, unsigned=False)
            return f"{lo} <= {kv} <= {hi}"
        vs = self.value_set_sym(item)
        if vs is not None:
            if vs.obj != 1:
                raise error(item.loc, f"value set '{expr_text(item)}' has {vs.obj} fields; select on as many keys")
            return f"{vs.code}(({kv},))"
        case = self.value(item)
        if case.const is None:
            raise error(item.loc, "select case values must be compile-time constants")
        code = self.coerce(self.enum_as_underlying(case, t), t, item.loc, "select case")
        if isinstance(t, BitT) and not t.signed and t.width > 4:
            code = f"{int(code):#x}"  # readable: 0x86dd rather than 34525
        return f"{kv} == {code}"

    def declare_value_set(self, d: A.ValueSetDecl, block: str, scope: Scope) -> None:
        """``value_set<T>(size) vs;``: its members live in the runtime (runtime/value_sets.py)."""
        t = self.resolve_type(d.type)
        fields: list[M.Field] = []

        def leaves(t: Type, name: str, annos: dict[str, str], loc: Loc) -> None:
            if isinstance(t, StructT) and t.kind == "struct":
                decl = next(x for x in self.program.decls if isinstance(x, A.StructLike) and x.name == t.name)
                for f, (n, ft) in zip(decl.fields, t.fields, strict=True):
                    leaves(ft, n, anno_strs(f.annotations), f.loc)
                return
            match = {k: v for k, v in annos.items() if k == "match"}
            fields.append(M.Field(name, self.wire_width(t, loc), match))

        leaves(t, "", {}, d.loc)
        size = self.const_int(d.size, "value_set size")
        if size < 1:
            raise error(d.size.loc, f"value_set size must be at least 1, not {size}")
        name = qualify(block, d.name, d.annotations)
        py = pyident("VS", name)
        self.bind_lines.append(f"{py} = rt.value_sets[{name!r}].match")
        if all(v.name != name for v in self.value_sets):
            self.value_sets.append(M.ValueSet(name, tuple(fields), size))
        scope.define(d.name, Sym("value_set", t, py, obj=len(fields)), d.loc)

    def case_conds(self, case: A.SelectCase, kvars: list[tuple[str, V]]) -> list[str]:
        """The conditions of one select case over the keys ``kvars`` (all must hold)."""
        items = case.keyset.items if isinstance(case.keyset, A.ListExpr) else [case.keyset]
        if len(items) == 1 and len(kvars) > 1 and (vs := self.value_set_sym(items[0])) is not None:
            if vs.obj != len(kvars):
                raise error(case.loc, f"value set '{expr_text(items[0])}' has {vs.obj} field(s) but the "
                            f"select has {len(kvars)} key(s)")
            return [f"{vs.code}(({', '.join(kv for kv, _ in kvars)},))"]
        if len(items) != len(kvars):
            raise error(case.loc, f"select has {len(kvars)} key(s) but this case has {len(items)}")
        return [c for item, (kv, k) in zip(items, kvars, strict=True)
                if (c := self.keyset_cond(item, kv, k.type)) is not None]

    def value_set_sym(self, item: A.Expr) -> Sym | None:
        if isinstance(item, A.Name):
            sym = self.scope.lookup(item.name)
            if sym is not None and sym.kind == "value_set":
                return sym
        return None

    @staticmethod
    def enum_as_underlying(v: V, t: Type) -> V:
        """A serializable enum member as a keyset value where the key has the enum's
        underlying type (header fields and keys of an enum type are stored as it)."""
        vt = v.type
        if isinstance(vt, EnumT) and vt.underlying is not None and isinstance(t, BitT) \
                and vt.underlying == t and v.const is not None:
            return V(repr(v.const), t, v.const)
        return v

    def keyset_value(self, e: A.Expr, t: Type, unsigned: bool = True) -> int:
        """A constant of a keyset; signed values as their bit pattern unless ``unsigned``
        is False (select ranges compare the signed value itself)."""
        v = self.value(e)
        if v.const is None:
            raise error(e.loc, "keyset values must be compile-time constants")
        code = self.coerce(self.enum_as_underlying(v, t), t, e.loc, "keyset value")
        val = int(eval(code, {"__builtins__": {}}))  # a literal
        if unsigned and isinstance(t, BitT) and t.signed:
            val &= t.mask
        return val

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
                        self.assign(A.Name(d.loc, d.name), d.init, d.loc)
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

