"""The program compiler: declarations, parser/control/deparser code generation, and
assembly of one Python module per P4 program.

The generated module defines header/struct classes (``__slots__``, one attribute per
field plus ``_v`` for validity), a ``PacketState`` class and ``build(rt)``; ``build``
binds tables and externs from the runtime ``Bindings`` to local names once, defines
the parser states, actions, tables and controls as closures over them, and returns
the ``Pipeline`` object (docs/target-internals.md, section 1).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

from p4target import model as M
from p4target.compiler.expressions import ExpressionCompiler, V, expr_text, to_type_const
from p4target.compiler.naming import pyfield, pyident
from p4target.compiler.scope import Scope, Sym
from p4target.compiler.statements import StatementCompiler
from p4target.compiler.types import (
    BitT, BoolT, EnumT, ErrorT, ExternT, IntT, MatchKindT, StackT, StringT, StructT, TupleT,
    Type, VarbitT, VoidT,
)
from p4target.frontend import ast as A
from p4target.frontend.source import Loc, error, unsupported

log = logging.getLogger(__name__)

SM_FIELDS = ("ingress_port", "egress_spec", "egress_port", "instance_type", "packet_length",
             "enq_timestamp", "enq_qdepth", "deq_timedelta", "deq_qdepth",
             "ingress_global_timestamp", "egress_global_timestamp", "mcast_grp", "egress_rid",
             "checksum_error", "parser_error", "priority")

_EXTERN_KINDS = ("counter", "direct_counter", "meter", "direct_meter", "register",
                 "action_profile", "action_selector")


@dataclass
class ActionInfo:
    p4name: str  # qualified model name
    local: str
    decl: A.ActionDecl
    pyfunc: str
    control: str | None


@dataclass
class InstanceInfo:
    kind: str
    name: str  # model name
    pyname: str
    elem_type: Type | None = None
    extern: M.Extern | None = None


@dataclass
class TableInfo:
    name: str
    local: str
    pyfunc: str
    actions: list[tuple[str, ActionInfo]] = field(default_factory=list)  # (local name, info)

    def action_index(self, name: str, loc: Loc) -> int:
        for i, (n, _) in enumerate(self.actions):
            if n == name:
                return i
        raise error(loc, f"action '{name}' is not in the actions of table {self.name}")


def annos_dict(annos: list[A.Annotation]) -> dict[str, list[object]]:
    return {a.name: a.args for a in annos}


def anno_strs(annos: list[A.Annotation]) -> dict[str, str]:
    """Annotations as the model keeps them: name -> raw body text."""
    out = {}
    for a in annos:
        if a.name == "name":
            continue
        out[a.name] = a.body.strip('"') if len(a.args) == 1 and isinstance(a.args[0], str) else a.body
    return out


def name_anno(annos: list[A.Annotation]) -> str | None:
    for a in annos:
        if a.name == "name" and a.args and isinstance(a.args[0], str):
            return a.args[0]
    return None


def qualify(prefix: str | None, local: str, annos: list[A.Annotation]) -> str:
    """The P4Info name p4c gives a declaration: @name wins (a leading '.' is absolute)."""
    n = name_anno(annos)
    if n is not None:
        if n.startswith("."):
            return n[1:]
        local = n
    return f"{prefix}.{local}" if prefix else local


class ProgramCompiler(ExpressionCompiler, StatementCompiler):
    def __init__(self, program: A.Program, source: Path):
        self.program = program
        self.source = source
        self.global_scope = Scope()
        self.scope = self.global_scope
        self.type_names: dict[str, Type] = {}
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
        # code generation state
        self.out: list[str] = []
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

    # ================================================================== types
    def resolve_type(self, t: A.TypeRef) -> Type:
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
            if isinstance(rt, ExternT):
                return ExternT(rt.name, tuple(self.resolve_type(a) for a in t.args))
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
    def declare_all(self) -> None:
        for d in self.program.decls:
            self.declare(d)
        if self.main is None:
            raise error(Loc(str(self.source), 1, 1), "the program has no 'main'; add "
                        "V1Switch(MyParser(), ..., MyDeparser()) main;")

    def declare(self, d: object) -> None:
        self.last_loc = getattr(d, "loc", self.last_loc)
        if isinstance(d, A.ErrorDecl):
            for n, loc in d.members:
                if n not in self.errors_by_name:
                    self.errors_by_name[n] = len(self.errors_by_name)
        elif isinstance(d, A.MatchKindDecl):
            self.match_kinds.update(n for n, _ in d.members)
        elif isinstance(d, A.TypedefDecl):
            self.check_new_name(d.name, d.loc)
            self.type_names[d.name] = self.resolve_type(d.type)
        elif isinstance(d, A.StructLike):
            self.declare_struct(d)
        elif isinstance(d, A.EnumDecl):
            self.declare_enum(d)
        elif isinstance(d, A.ConstDecl):
            self.declare_const(d, self.global_scope)
        elif isinstance(d, A.ExternDecl):
            self.extern_decls[d.name] = d
            self.type_names[d.name] = ExternT(d.name)
        elif isinstance(d, A.ExternFunc):
            self.global_scope.names[d.name] = Sym("function", None, obj=d)
        elif isinstance(d, A.ActionDecl):
            self.declare_action(d, None, self.global_scope)
        elif isinstance(d, A.ParserDecl):
            if not d.is_type:
                self.parsers[d.name] = d
            self.type_names.setdefault(d.name, ExternT(d.name))
        elif isinstance(d, A.ControlDecl):
            if not d.is_type:
                self.controls[d.name] = d
            self.type_names.setdefault(d.name, ExternT(d.name))
        elif isinstance(d, A.PackageDecl):
            self.type_names[d.name] = ExternT(d.name)
        elif isinstance(d, A.Instance):
            if isinstance(d.type, A.NamedType) and d.type.name == "V1Switch":
                if d.name != "main":
                    raise error(d.loc, "the V1Switch instance must be called 'main'")
                self.main = d
            else:
                self.declare_instance(d, None, self.global_scope)
        elif isinstance(d, A.FunctionDecl):
            raise unsupported(d.loc, "a function declaration", "use an action instead")
        elif isinstance(d, A.VarDecl):
            raise error(d.loc, "global variables are not allowed in P4; declare a const or "
                        "move the variable into a control")
        else:
            raise unsupported(getattr(d, "loc", Loc(str(self.source), 1, 1)),
                              f"top-level {type(d).__name__}", "remove it")

    def check_new_name(self, name: str, loc: Loc) -> None:
        if name in self.type_names and not isinstance(self.type_names[name], ExternT):
            raise error(loc, f"'{name}' is already declared; choose another name")

    def declare_struct(self, d: A.StructLike) -> None:
        self.check_new_name(d.name, d.loc)
        prefix = {"header": "H", "header_union": "U", "struct": "S"}[d.kind]
        t = StructT(d.kind, d.name, [], annos_dict(d.annotations), {}, pyident(prefix, d.name))
        seen = set()
        for f in d.fields:
            if f.name in seen:
                raise error(f.loc, f"field '{f.name}' is declared twice in {d.kind} {d.name}")
            seen.add(f.name)
            ft = self.resolve_type(f.type)
            if d.kind == "header":
                if not isinstance(ft, (BitT, BoolT, VarbitT)) and not (
                        isinstance(ft, EnumT) and ft.underlying is not None):
                    raise error(f.loc, f"header field '{f.name}' has type {ft}; header fields must be "
                                "bit<W>, int<W>, varbit<W>, bool or a serializable enum")
                if isinstance(ft, EnumT):
                    ft = ft.underlying  # type: ignore[assignment]
            elif d.kind == "header_union":
                if not isinstance(ft, StructT) or ft.kind != "header":
                    raise error(f.loc, f"header_union members must be headers, not {ft}")
            elif isinstance(ft, (VarbitT,)):
                raise error(f.loc, "varbit fields are only allowed in headers")
            t.fields.append((f.name, ft))
            t.field_annotations[f.name] = annos_dict(f.annotations)
        if d.kind == "header":
            if t.width % 8:
                raise error(d.loc, f"header {d.name} is {t.width} bits long; headers must be a whole "
                            "number of bytes (add padding bits)")
            if sum(isinstance(ft, VarbitT) for _, ft in t.fields) > 1:
                raise unsupported(d.loc, "a header with more than one varbit field", "use one")
        self.type_names[d.name] = t
        self.struct_types.append(t)

    def declare_enum(self, d: A.EnumDecl) -> None:
        self.check_new_name(d.name, d.loc)
        members: dict[str, int] = {}
        if d.underlying is None:
            for i, (n, _, loc) in enumerate(d.members):
                members[n] = i
            t = EnumT(d.name, members)
        else:
            ut = self.resolve_type(d.underlying)
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
        val = eval(code, {"__builtins__": {}})  # noqa: S307 - a literal produced by coerce
        scope.names[d.name] = Sym("const", t, code, val)

    def declare_action(self, d: A.ActionDecl, control: str | None, scope: Scope) -> ActionInfo:
        p4name = qualify(control, d.name, d.annotations)
        info = ActionInfo(p4name, d.name, d, pyident("a", p4name), control)
        self.actions[p4name] = info
        scope.names[d.name] = Sym("action", None, info.pyfunc, obj=info)
        # body generated when the enclosing block is compiled
        self.pending_actions.append((info, scope))
        return info

    pending_actions: list[tuple[ActionInfo, Scope]]

    def declare_instance(self, d: A.Instance, control: str | None, scope: Scope) -> None:
        t = self.resolve_type(d.type)
        if not isinstance(t, ExternT):
            raise error(d.loc, f"cannot instantiate {t}")
        kind = t.name
        if kind not in _EXTERN_KINDS:
            raise unsupported(d.loc, f"extern '{kind}'", "use counter, meter, register, direct_counter, "
                              "direct_meter, action_profile or action_selector")
        name = qualify(control, d.name, d.annotations)
        info = InstanceInfo(kind, name, pyident("X", name))
        args = [a.value for a in d.args]

        def cint(i: int, what: str) -> int:
            if i >= len(args) or args[i] is None:
                raise error(d.loc, f"{kind} needs a {what} argument")
            return self.const_int(args[i], what)  # type: ignore[arg-type]

        def enum_name(i: int, enum: str) -> str:
            if i >= len(args) or args[i] is None:
                raise error(d.loc, f"{kind} needs a {enum} argument")
            return self.enum_member_name(args[i], enum)  # type: ignore[arg-type]

        annos = anno_strs(d.annotations)
        loc = M.SourceLocation(d.loc.file, d.loc.line, d.loc.col)
        if kind == "counter":
            ext = M.Extern("counter", name, size=cint(0, "size"), unit=enum_name(1, "CounterType"),
                           annotations=annos, location=loc)
        elif kind == "direct_counter":
            ext = M.Extern("direct_counter", name, unit=enum_name(0, "CounterType"), annotations=annos,
                           location=loc)
        elif kind == "meter":
            ext = M.Extern("meter", name, size=cint(0, "size"), unit=enum_name(1, "MeterType"),
                           annotations=annos, location=loc)
        elif kind == "direct_meter":
            ext = M.Extern("direct_meter", name, unit=enum_name(0, "MeterType"), annotations=annos,
                           location=loc)
        elif kind == "register":
            if not t.args:
                raise error(d.loc, "register needs its cell type: register<bit<W>>(size)")
            et = t.args[0]
            if not isinstance(et, BitT):
                raise unsupported(d.loc, f"a register of {et}", "use register<bit<W>>")
            info.elem_type = et
            ext = M.Extern("register", name, size=cint(0, "size"), bitwidth=et.width,
                           annotations=annos, location=loc)
        elif kind == "action_profile":
            ext = M.Extern("action_profile", name, size=cint(0, "size"), annotations=annos, location=loc)
        else:
            ext = M.Extern("action_selector", name, size=cint(1, "size"),
                           algorithm=enum_name(0, "HashAlgorithm"),
                           selector_output_width=cint(2, "output width"), annotations=annos,
                           location=loc)
        info.extern = ext
        self.externs.append(info)
        scope.names[d.name] = Sym("instance", t, info.pyname, obj=info)
        self.bind_lines.append(f"{info.pyname} = rt.externs[{name!r}]")

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
        if isinstance(t, ErrorT):
            return 32
        raise unsupported(loc, f"a field of type {t} here", "use bit<W>")

    # ================================================================== main
    def compile(self) -> tuple[str, M.ProgramModel, dict[str, object]]:
        self.pending_actions = []
        self.declare_all()
        main = self.main
        assert main is not None
        if len(main.args) != 6:
            raise error(main.loc, "V1Switch takes 6 arguments: parser, verifyChecksum, ingress, "
                        "egress, computeChecksum, deparser")
        blocks = []
        for i, a in enumerate(main.args):
            v = a.value
            if not (isinstance(v, A.Call) and isinstance(v.func, A.Name) and not v.args):
                raise unsupported(a.loc, "this V1Switch argument", "pass a block constructor like MyIngress()")
            blocks.append((v.func.name, v.loc))
        pname, ploc = blocks[0]
        if pname not in self.parsers:
            raise error(ploc, f"'{pname}' is not a parser declared in this program")
        parser = self.parsers[pname]
        if len(parser.params) != 4:
            raise error(parser.loc, "a v1model parser has 4 parameters: (packet_in, out H, inout M, "
                        "inout standard_metadata_t)")
        self.hdr_t = self.resolve_type(parser.params[1].type)
        self.meta_t = self.resolve_type(parser.params[2].type)
        self.sm_t = self.type_names.get("standard_metadata_t")
        for t, what in ((self.hdr_t, "headers"), (self.meta_t, "metadata")):
            if not isinstance(t, StructT) or t.kind != "struct":
                raise error(parser.loc, f"the parser's {what} parameter must be a struct, not {t}")
        if not isinstance(self.sm_t, StructT):
            raise error(main.loc, "standard_metadata_t is missing; #include <v1model.p4>")
        self.pending_top_actions = [pa for pa in self.pending_actions]
        self.pending_actions = []
        # top-level actions
        for info, scope in self.pending_top_actions:
            self.gen_action(info, scope, None)
        self.gen_parser(parser)
        roles = ["verify", "ingress", "egress", "compute", "deparser"]
        self.control_funcs: dict[str, str] = {}
        for (cname, cloc), role in zip(blocks[1:], roles):
            if cname not in self.controls:
                raise error(cloc, f"'{cname}' is not a control declared in this program")
            self.control_funcs[role] = self.gen_control(self.controls[cname], role)
        source = self.assemble()
        model = M.ProgramModel(
            source=str(self.source),
            arch="v1model",
            tables=tuple(self.tables),
            actions=tuple(self.model_action(n) for n in self.used_actions),
            externs=tuple(self.finish_externs()),
            controller_headers=tuple(self.controller_headers()),
            digests=tuple(self.digests.values()),
            value_sets=(),
            warnings=tuple(self.warnings),
        )
        return source, model, dict(self.errors_by_name)

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
                fields = tuple(M.Field(n, self.wire_width(ft, Loc(str(self.source), 0, 0)),
                                       {k: " ".join(map(str, v)) for k, v in t.field_annotations.get(n, {}).items()})
                               for n, ft in t.fields)
                out.append(M.ControllerHeader(str(ch[0]), t.name, fields))
        return out

    # ================================================================== functions
    def begin_fn(self, kind: str) -> None:
        self.out = []
        self.ind = "    "
        self.locals_used = set()
        self.fn_kind = kind

    def end_fn(self) -> None:
        self.build_lines.extend(self.out)
        self.build_lines.append("")
        self.out = []

    def param_bindings(self, params: list[A.Param], targets: list[str | None],
                       scope: Scope) -> list[str]:
        """Bind a block's parameters to the PacketState parts; returns preamble lines."""
        pre = []
        for p, tgt in zip(params, targets):
            t = self.resolve_type(p.type)
            if tgt is None:
                continue
            if tgt in ("packet_in", "packet_out"):
                if not (isinstance(t, ExternT) and t.name == tgt):
                    raise error(p.loc, f"parameter '{p.name}' must be a {tgt}")
                scope.names[p.name] = Sym(tgt, t, "")
                continue
            py = f"p_{p.name}"
            scope.names[p.name] = Sym("var", t, py, obj="ro" if p.direction == "in" else None)
            pre.append(f"{py} = st.{tgt}")
        return pre

    def gen_action(self, info: ActionInfo, scope: Scope, preamble: list[str] | None) -> None:
        d = info.decl
        self.begin_fn("action")
        ascope = scope.child()
        args = []
        outs = []
        for p in d.params:
            t = self.resolve_type(p.type)
            py = f"ap_{p.name}"
            args.append(py)
            ascope.names[p.name] = Sym("var", t, py, obj="ro" if p.direction in ("", "in") else None)
            if p.direction in ("out", "inout"):
                outs.append(py)
        self.action_outs = outs
        self.emit(f"def {info.pyfunc}(st, L{''.join(', ' + a for a in args)}):")
        self.indent()
        self.emit(f'"""action {info.p4name} ({d.loc})"""')
        for line in preamble or []:
            self.emit(line)
        saved = self.scope
        self.scope = ascope
        self.stmts(d.body.stmts)
        self.scope = saved
        if outs:
            self.emit("return (" + "".join(o + ", " for o in outs) + ")")
        self.dedent()
        self.end_fn()
        self.action_outs = []

    # ------------------------------------------------------------------ parser
    def gen_parser(self, d: A.ParserDecl) -> None:
        if d.ctor_params:
            raise unsupported(d.loc, "a parser constructor parameter", "use constants")
        scope = self.global_scope.child()
        pre = self.param_bindings(d.params, ["packet_in", "hdr", "meta", "sm"], scope)
        self.scope = scope
        locals_cls = self.block_locals(d.name, d.locals, scope, parser=True)
        self.parser_inits = self.locals_inits
        names = {s.name for s in d.states}
        for s in d.states:
            if s.name in ("accept", "reject"):
                raise error(s.loc, f"state '{s.name}' is predefined; choose another name")
        if "start" not in names:
            raise error(d.loc, f"parser {d.name} has no 'start' state; add state start {{ ... }}")
        self.state_funcs = {s.name: pyident("s", d.name, s.name) for s in d.states}
        for s in d.states:
            self.gen_state(s, pre)
        self.parser_start = self.state_funcs["start"]
        self.parser_locals = locals_cls
        self.scope = self.global_scope

    def state_target(self, name: str, loc: Loc) -> str:
        if name == "accept":
            return "None"
        if name == "reject":
            self.warnings.append(f"{loc}: explicit transition to reject; like BMv2, the packet goes "
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
            for line in self.parser_inits:
                self.emit(line)
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
        self.end_fn()

    def gen_select(self, tr: A.Transition) -> None:
        keys = [self.value(k) for k in tr.select or []]
        kvars = []
        for k, ke in zip(keys, tr.select or []):
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
            if len(items) != len(kvars):
                raise error(case.loc, f"select has {len(kvars)} key(s) but this case has {len(items)}")
            conds = []
            for item, (kv, k) in zip(items, kvars):
                c = self.keyset_cond(item, kv, k.type)
                if c is not None:
                    conds.append(c)
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
            lo = self.keyset_value(item.lo, t)
            hi = self.keyset_value(item.hi, t)
            return f"{lo} <= {kv} <= {hi}"
        if isinstance(item, A.Name):
            sym = self.scope.lookup(item.name)
            if sym is not None and sym.kind == "value_set":
                raise unsupported(item.loc, "value_set", "use constants in select")
        v = self.value(item)
        if v.const is None:
            raise error(item.loc, "select case values must be compile-time constants")
        return f"{kv} == {self.coerce(v, t, item.loc, 'select case')}"

    def keyset_value(self, e: A.Expr, t: Type) -> int:
        v = self.value(e)
        if v.const is None:
            raise error(e.loc, "keyset values must be compile-time constants")
        code = self.coerce(v, t, e.loc, "keyset value")
        val = int(eval(code, {"__builtins__": {}}))  # noqa: S307 - a literal
        if isinstance(t, BitT) and t.signed:
            val &= t.mask
        return val

    def block_locals(self, block: str, decls: list[object], scope: Scope, parser: bool) -> str | None:
        """Declare a parser's/control's locals; returns the name of its locals class."""
        fields: list[tuple[str, str]] = []
        inits: list[str] = []
        for d in decls:
            if isinstance(d, A.ConstDecl):
                self.declare_const(d, scope)
            elif isinstance(d, A.VarDecl):
                t = self.resolve_type(d.type)
                py = pyfield(d.name)
                scope.names[d.name] = Sym("var", t, f"L.{py}")
                fields.append((py, self.zero(t, d.loc)))
                if d.init is not None:
                    self.scope = scope
                    inits.append(f"L.{py} = {self.expr_as(d.init, t, f'initializer of {d.name}')}")
            elif isinstance(d, A.Instance):
                self.declare_instance(d, None if parser else block, scope)
            elif isinstance(d, A.ValueSetDecl):
                raise unsupported(d.loc, "value_set", "use constants in select cases")
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

    # ------------------------------------------------------------------ controls
    def gen_control(self, d: A.ControlDecl, role: str) -> str:
        if d.ctor_params:
            raise unsupported(d.loc, "a control constructor parameter", "use constants")
        targets: dict[str, list[str | None]] = {
            "ingress": ["hdr", "meta", "sm"], "egress": ["hdr", "meta", "sm"],
            "verify": ["hdr", "meta"], "compute": ["hdr", "meta"], "deparser": ["packet_out", "hdr"],
        }
        want = targets[role]
        if len(d.params) != len(want):
            raise error(d.loc, f"control {d.name} is used as the {role} block and must have "
                        f"{len(want)} parameters")
        scope = self.global_scope.child()
        pre = self.param_bindings(d.params, want, scope)
        self.scope = scope
        self.control_prefix = d.name
        locals_cls = self.block_locals(d.name, d.locals, scope, parser=False)
        inits = self.locals_inits
        for info, ascope in self.pending_actions:
            self.gen_action(info, ascope, pre)
        self.pending_actions = []
        for t in d.locals:
            if isinstance(t, A.TableDecl):
                self.scope = scope
                self.gen_table(t, d.name, scope, pre)
        fn = pyident("c", d.name)
        self.begin_fn("deparser" if role == "deparser" else "apply")
        self.scope = scope.child()
        args = "st, ap" if role == "deparser" else "st"
        self.emit(f"def {fn}({args}):")
        self.indent()
        self.emit(f'"""control {d.name} ({d.loc})"""')
        for line in pre:
            self.emit(line)
        self.emit(f"L = {locals_cls}()" if locals_cls else "L = None")
        for line in inits:
            self.emit(line)
        n = len(self.out)
        assert d.body is not None
        self.stmts(d.body.stmts)
        if len(self.out) == n:
            self.emit("pass")
        self.dedent()
        self.end_fn()
        self.scope = self.global_scope
        self.control_prefix = None
        return fn

    def gen_table(self, t: A.TableDecl, control: str, scope: Scope, pre: list[str]) -> None:
        name = qualify(control, t.name, t.annotations)
        info = TableInfo(name, t.name, pyident("t", name))
        scope.names[t.name] = Sym("table", None, info.pyfunc, obj=info)
        props = {p.name: p for p in t.props}
        known = {"key", "actions", "default_action", "entries", "size", "implementation", "counters",
                 "meters", "support_timeout", "largest_priority_wins", "priority_delta"}
        for p in t.props:
            if p.name not in known:
                self.warnings.append(f"{p.loc}: table property '{p.name}' is ignored by the embedded target")
        # keys
        keys: list[M.KeyField] = []
        key_codes: list[str] = []
        sel_codes: list[str] = []
        key_types: list[Type] = []
        for k in (props["key"].value if "key" in props else []):  # type: ignore[union-attr]
            v = self.value(k.expr)
            if k.match_kind not in self.match_kinds:
                raise error(k.loc, f"unknown match kind '{k.match_kind}'")
            if k.match_kind not in M.MATCH_KINDS:
                raise unsupported(k.loc, f"match kind '{k.match_kind}'", "use " + ", ".join(M.MATCH_KINDS))
            kt = v.type
            if isinstance(kt, EnumT) and kt.underlying is not None:
                kt = kt.underlying
            if isinstance(kt, BoolT):
                width, code = 1, f"int({v.code})"
            elif isinstance(kt, BitT):
                width, code = kt.width, (v.code if not kt.signed else f"({v.code} & {kt.mask:#x})")
            elif isinstance(kt, ErrorT):
                width, code = 32, v.code
            else:
                raise error(k.expr.loc, f"table key '{expr_text(k.expr)}' has type {v.type}; keys must "
                            "be bit<W>, int<W>, bool or a serializable enum")
            kname = name_anno(k.annotations) or expr_text(k.expr)
            keys.append(M.KeyField(kname, width, k.match_kind, anno_strs(k.annotations)))
            key_types.append(kt if not isinstance(kt, ErrorT) else BitT(32))
            (sel_codes if k.match_kind == "selector" else key_codes).append(code)
        # actions
        refs: list[M.ActionRef] = []
        if "actions" not in props:
            raise error(t.loc, f"table {t.name} has no actions property; add actions = {{ ... }}")
        for item in props["actions"].value:  # type: ignore[union-attr]
            call = item.call
            if isinstance(call, A.Call):
                if call.args:
                    raise unsupported(call.loc, "binding action arguments in a table's action list",
                                      "give the action directionless parameters only")
                call = call.func
            if not isinstance(call, A.Name):
                raise error(item.loc, "expected an action name")
            sym = self.scope.lookup(call.name)
            if sym is None or sym.kind != "action":
                raise error(call.loc, f"'{call.name}' is not an action; declare the action before the table")
            ainfo = sym.obj
            assert isinstance(ainfo, ActionInfo)
            aloc = ainfo.decl.loc
            if aloc.file == t.loc.file and (aloc.line, aloc.col) > (t.loc.line, t.loc.col):
                raise error(call.loc, f"action '{call.name}' is used before its declaration at "
                            f"{aloc}; declare it before table {t.name}")
            if any(p.direction for p in ainfo.decl.params):
                raise unsupported(call.loc, f"action {call.name} with directional parameters in a table",
                                  "use directionless parameters")
            if any(n == call.name for n, _ in info.actions):
                raise error(call.loc, f"action {call.name} is listed twice in table {t.name}")
            ad = annos_dict(item.annotations)
            scope_kind = "default_only" if "defaultonly" in ad else (
                "table_only" if "tableonly" in ad else "all")
            refs.append(M.ActionRef(ainfo.p4name, scope_kind, anno_strs(
                [a for a in item.annotations if a.name not in ("defaultonly", "tableonly")])))
            info.actions.append((call.name, ainfo))
        # default action
        default_name, default_args, default_const = None, (), False
        if "default_action" in props:
            p = props["default_action"]
            default_const = p.is_const
            default_name, default_args, loc = self.action_with_args(p.value, info, p.loc)  # type: ignore[arg-type]
            idx = info.action_index(default_name, loc)
            if refs[idx].scope == "table_only":
                raise error(loc, f"action {default_name} is @tableonly and cannot be the default action")
            default_name = info.actions[idx][1].p4name
        else:
            noact = [a for n, a in info.actions if a.p4name == "NoAction"]
            if not noact:
                sym = self.global_scope.lookup("NoAction")
                if sym is None or sym.kind != "action":
                    raise error(t.loc, f"table {t.name} has no default_action and NoAction is not declared")
                refs.append(M.ActionRef("NoAction", "default_only"))
                info.actions.append(("NoAction", sym.obj))  # type: ignore[arg-type]
            default_name = "NoAction"
        for _, ainfo in info.actions:
            if ainfo.p4name not in self.used_actions:
                self.used_actions.append(ainfo.p4name)
        # other properties
        size = 1024
        if "size" in props:
            size = self.const_int(props["size"].value, "table size")  # type: ignore[arg-type]
        impl = self.instance_prop(props.get("implementation"), ("action_profile", "action_selector"))
        counters = self.instance_prop(props.get("counters"), ("direct_counter",))
        meters = self.instance_prop(props.get("meters"), ("direct_meter",))
        has_sel = any(k.match_kind == "selector" for k in keys)
        if has_sel and impl is None:
            raise error(t.loc, f"table {t.name} has a selector key but no action_selector implementation")
        timeout = False
        if "support_timeout" in props:
            tv = self.value(props["support_timeout"].value)  # type: ignore[arg-type]
            timeout = bool(tv.const)
        entries = None
        if "entries" in props:
            entries = self.const_entries(props, keys, key_types, info, t)
        self.tables.append(M.Table(
            name=name, keys=tuple(keys), actions=tuple(refs), default_action=default_name,
            default_args=tuple(default_args), default_is_const=default_const,
            const_entries=entries, size=size, implementation=impl, direct_counter=counters,
            direct_meter=meters, supports_idle_timeout=timeout, annotations=anno_strs(t.annotations),
            location=M.SourceLocation(t.loc.file, t.loc.line, t.loc.col)))
        # generated code: binding, action tuple, helper
        tb = pyident("T", name)
        ta = pyident("TA", name)
        self.bind_lines.append(f"{tb} = rt.tables[{name!r}].apply")
        self.begin_fn("apply")
        self.emit(f"{ta} = ({''.join(a.pyfunc + ', ' for _, a in info.actions)})")
        self.emit(f"def {info.pyfunc}(st, L):")
        self.indent()
        self.emit(f'"""table {name} ({t.loc})"""')
        for line in pre:
            self.emit(line)
        key = "(" + "".join(c + ", " for c in key_codes) + ")"
        sel = "(" + "".join(c + ", " for c in sel_codes) + ")" if has_sel else "None"
        self.emit(f"r = {tb}(st, {key}, {sel})")
        self.emit(f"{ta}[r[0]](st, L, *r[1])")
        self.emit("return r[0], r[2]")
        self.dedent()
        self.end_fn()

    def instance_prop(self, p: A.TableProp | None, kinds: tuple[str, ...]) -> str | None:
        if p is None:
            return None
        e = p.value
        if not isinstance(e, A.Name):
            raise unsupported(p.loc, f"an inline {'/'.join(kinds)} instance",
                              "declare the instance in the control and name it here")
        sym = self.scope.lookup(e.name)
        if sym is None or sym.kind != "instance" or sym.obj.kind not in kinds:  # type: ignore[union-attr]
            raise error(e.loc, f"'{e.name}' is not a {' or '.join(kinds)} instance")
        return sym.obj.name  # type: ignore[union-attr]

    def action_with_args(self, e: A.Expr, info: TableInfo, loc: Loc) -> tuple[str, tuple[int, ...], Loc]:
        if isinstance(e, A.Name):
            name, args, aloc = e.name, [], e.loc
        elif isinstance(e, A.Call) and isinstance(e.func, A.Name):
            name, args, aloc = e.func.name, e.args, e.loc
        else:
            raise error(loc, "expected an action call like a(1, 2)")
        idx = info.action_index(name, aloc)
        ainfo = info.actions[idx][1]
        params = [p for p in ainfo.decl.params if not p.direction]
        if isinstance(e, A.Name) and params:
            raise error(aloc, f"action {name} needs {len(params)} argument(s)")
        if len(args) != len(params):
            raise error(aloc, f"action {name} takes {len(params)} argument(s), got {len(args)}")
        vals = []
        for p, a in zip(params, args):
            pt = self.resolve_type(p.type)
            code = self.expr_as(a.value, pt, f"argument '{p.name}'")  # type: ignore[arg-type]
            try:
                val = eval(code, {"__builtins__": {}})  # noqa: S307 - literal expected
            except Exception:  # noqa: BLE001
                raise error(a.loc, f"argument '{p.name}' must be a compile-time constant") from None
            if isinstance(pt, BitT) and pt.signed:
                val &= pt.mask
            vals.append(int(val))
        return name, tuple(vals), aloc

    def const_entries(self, props: dict[str, A.TableProp], keys: list[M.KeyField],
                      key_types: list[Type], info: TableInfo, t: A.TableDecl) -> tuple[M.ConstEntry, ...]:
        p = props["entries"]
        entries: list[A.EntryDecl] = p.value  # type: ignore[assignment]
        needs_prio = any(k.match_kind not in ("exact", "lpm") for k in keys)
        largest_wins = True
        delta = 1
        if "largest_priority_wins" in props:
            largest_wins = bool(self.value(props["largest_priority_wins"].value).const)  # type: ignore[arg-type]
        if "priority_delta" in props:
            delta = self.const_int(props["priority_delta"].value, "priority_delta")  # type: ignore[arg-type]
            if delta <= 0:
                raise error(props["priority_delta"].loc, "priority_delta must be a positive value")
        explicit = [e for e in entries if e.priority is not None]
        if explicit and p.is_const:
            raise error(explicit[0].loc, "a table with 'const entries' cannot have entry priorities "
                        "(as in p4c); remove 'priority=' or the const")
        if explicit and not needs_prio:
            raise error(explicit[0].loc, f"table {t.name} has only exact/lpm keys, which do not use "
                        "priorities; remove 'priority='")
        if explicit and entries[0].priority is None:
            raise error(entries[0].loc, "the first entry must have a priority when others do")
        if not p.is_const:
            self.warnings.append(f"{p.loc}: table {info.name}: the embedded target installs "
                                 "'entries' as const entries (the control plane cannot change them)")
        # priorities as p4c's EntryPriorities pass assigns them
        prios: list[int | None] = []
        n = len(entries)
        current = 0
        for i, ent in enumerate(entries):
            if not needs_prio:
                prios.append(None)
            elif not explicit:
                prios.append((n - i - 1) * delta + 1 if largest_wins else 1 + i * delta)
            else:
                if ent.priority is not None:
                    current = self.const_int(ent.priority, "entry priority")
                    if current < 1:
                        raise error(ent.priority.loc, "entry priorities must be >= 1")
                elif current < 1:
                    raise error(ent.loc, "the implied priority of this entry is below 1; give it one")
                prios.append(current)
                current = current - delta if largest_wins else current + delta
        out = []
        for ent, prio in zip(entries, prios):
            if len(ent.keys) != len(keys):
                raise error(ent.loc, f"entry has {len(ent.keys)} key value(s) but table {t.name} "
                            f"has {len(keys)} key(s)")
            matches = tuple(self.entry_match(k, kf, kt) for k, kf, kt in zip(ent.keys, keys, key_types))
            aname, args, aloc = self.action_with_args(ent.action, info, ent.loc)
            idx = info.action_index(aname, aloc)
            out.append(M.ConstEntry(matches, info.actions[idx][1].p4name, args, prio))
        return tuple(out)

    def entry_match(self, e: A.Expr, kf: M.KeyField, kt: Type) -> M.KeyMatch:
        kind = kf.match_kind
        full = (1 << kf.bitwidth) - 1
        if isinstance(e, A.DefaultExpr):
            if kind == "exact":
                raise error(e.loc, f"key {kf.name} is exact; '_' is not allowed")
            return M.KeyMatch("dontcare")
        if isinstance(e, A.Mask):
            v = self.keyset_value(e.value, kt)
            m = self.keyset_value(e.mask, kt)
            if kind == "ternary":
                return M.KeyMatch("ternary", v & m, m)
            if kind == "lpm":
                plen = bin(m).count("1")
                if m != (full >> (kf.bitwidth - plen) << (kf.bitwidth - plen) if plen else 0):
                    raise error(e.loc, f"lpm key {kf.name}: mask {m:#x} is not a prefix mask")
                return M.KeyMatch("lpm", v & m, plen)
            raise error(e.loc, f"'&&&' is not allowed for {kind} key {kf.name}")
        if isinstance(e, A.Range):
            if kind != "range":
                raise error(e.loc, f"'..' is only allowed for range keys, {kf.name} is {kind}")
            return M.KeyMatch("range", self.keyset_value(e.lo, kt), self.keyset_value(e.hi, kt))
        v = self.keyset_value(e, kt)
        if kind == "exact":
            return M.KeyMatch("exact", v)
        if kind == "lpm":
            return M.KeyMatch("lpm", v, kf.bitwidth)
        if kind == "ternary":
            return M.KeyMatch("ternary", v, full)
        if kind == "range":
            return M.KeyMatch("range", v, v)
        if kind == "optional":
            return M.KeyMatch("optional", v, full)
        raise error(e.loc, f"entries cannot match {kind} key {kf.name}")

    # ================================================================== assembly
    def struct_class(self, t: StructT) -> list[str]:
        slots = []
        init = []
        copy = []
        for n, ft in t.fields:
            f = pyfield(n)
            slots.append(f)
            if isinstance(ft, StructT):
                init.append(f"self.{f} = {ft.pyname}()")
                copy.append(f"o.{f} = self.{f}.copy()")
            elif isinstance(ft, StackT):
                init.append(f"self.{f} = Stack({ft.elem.pyname}, {ft.size})")
                copy.append(f"o.{f} = self.{f}.copy()")
            else:
                init.append(f"self.{f} = {'False' if isinstance(ft, BoolT) else '0'}")
                copy.append(f"o.{f} = self.{f}")
            if isinstance(ft, VarbitT):
                slots.append(f"_len_{n}")
                init.append(f"self._len_{n} = 0")
                copy.append(f"o._len_{n} = self._len_{n}")
        if t.kind == "header":
            slots.append("_v")
            init.append("self._v = False")
            copy.append("o._v = self._v")
        lines = [f"class {t.pyname}:", f'    """{t.kind} {t.name}"""',
                 f"    __slots__ = ({''.join(repr(s) + ', ' for s in slots)})", "",
                 "    def __init__(self):"]
        lines += ["        " + x for x in init] or ["        pass"]
        lines += ["", "    def copy(self):", f"        o = {t.pyname}.__new__({t.pyname})"]
        lines += ["        " + x for x in copy]
        lines += ["        return o"]
        if t.kind == "header":
            lines += ["", "    def set_valid(self):", "        if not self._v:"]
            lines += ["            " + x for x in init]
            lines += ["            self._v = True"]
        if t.kind == "header" and not any(isinstance(ft, VarbitT) for _, ft in t.fields):
            lines += ["", "    @staticmethod", "    def unpack(x):", f"        o = {t.pyname}()"]
            lines += ["        " + x for x in self.unpack_lines(t, "o", "x")]
            lines += ["        o._v = True", "        return o"]
        args = [f"a{i}" for i in range(len(t.fields))]
        lines += ["", "", f"def mk_{t.pyname}({', '.join(args)}):",
                  f"    o = {t.pyname}.__new__({t.pyname})"]
        for (n, ft), a in zip(t.fields, args):
            lines.append(f"    o.{pyfield(n)} = {a}")
            if isinstance(ft, VarbitT):
                lines.append(f"    o._len_{n} = 0")
        if t.kind == "header":
            lines.append("    o._v = True")
        lines += ["    return o", "", ""]
        return lines

    def field_lists(self) -> dict[int, list[str]]:
        """@field_list(N) metadata fields -> copy statements for Pipeline.preserve."""
        lists: dict[int, list[str]] = {}

        def walk(t: StructT, path: str) -> None:
            for n, ft in t.fields:
                p = f"{path}.{pyfield(n)}"
                fl = t.field_annotations.get(n, {}).get("field_list")
                if fl:
                    for idx in fl:
                        if isinstance(idx, int):
                            val = f"{{}}{p}.copy()" if isinstance(ft, (StructT, StackT)) else f"{{}}{p}"
                            lists.setdefault(idx, []).append(f"dst{p} = " + val.format("src"))
                elif isinstance(ft, StructT) and ft.kind == "struct":
                    walk(ft, p)

        walk(self.meta_t, ".meta")  # type: ignore[arg-type]
        return lists

    def assemble(self) -> str:
        L: list[str] = [
            f"# Generated by p4target.compiler from {self.source}. Do not edit.",
            "from p4target.compiler.support import ParserError, Stack, EXIT, ExitControl, div, mod, "
            "shl, lookahead",
            "", "",
        ]
        for t in self.struct_types:
            L += self.struct_class(t)
        L += self.module_lines
        sm_t, hdr_t, meta_t = self.sm_t, self.hdr_t, self.meta_t
        L += [
            "class PacketState:",
            '    """One packet in flight: headers, metadata, standard metadata, payload, requests."""',
            "    __slots__ = ('hdr', 'meta', 'sm', 'payload', 'truncate_to', 'drop_reason', 'resubmit',",
            "                 'recirculate', 'clones', 'digests')",
            "",
            "    def __init__(self):",
            f"        self.hdr = {hdr_t.pyname}()",  # type: ignore[union-attr]
            f"        self.meta = {meta_t.pyname}()",  # type: ignore[union-attr]
            f"        self.sm = {sm_t.pyname}()",  # type: ignore[union-attr]
            "        self.payload = b''",
            "        self.truncate_to = None",
            "        self.drop_reason = None",
            "        self.resubmit = None",
            "        self.recirculate = None",
            "        self.clones = []",
            "        self.digests = []",
            "", "",
            f"ERRORS = {self.errors_by_name!r}",
            "", "",
            "def build(rt):",
            '    """Bind the runtime once, define every block as a closure, return the Pipeline."""',
            "    rt_mark_to_drop = rt.mark_to_drop",
            "    rt_hash = rt.hash",
            "    rt_checksum = rt.checksum",
            "    rt_random = rt.random",
            "    rt_clone = rt.clone",
            "    rt_resubmit = rt.resubmit",
            "    rt_recirculate = rt.recirculate",
            "    rt_truncate = rt.truncate",
            "    rt_digest = rt.digest",
            "    rt_log_msg = rt.log_msg",
            "    rt_assert = rt.assert_",
        ]
        L += ["    " + b for b in self.bind_lines]
        L += [""]
        L += self.build_lines
        c = self.control_funcs
        plocals = f"{self.parser_locals}()" if self.parser_locals else "None"
        pinit = [f"        {x}" for x in getattr(self, "parser_inits", [])]
        del pinit
        fl = self.field_lists()
        L += [
            "    class Pipeline:",
            "        errors = ERRORS",
            "        State = PacketState",
            "",
            "        def parse(self, data, ingress_port, instance_type=0, packet_length=None):",
            "            st = PacketState()",
            "            sm = st.sm",
            "            sm.ingress_port = ingress_port",
            "            sm.instance_type = instance_type",
            "            sm.packet_length = len(data) if packet_length is None else packet_length",
            f"            state = {self.parser_start}",
            f"            L = {plocals}",
            "            pos = 0",
            "            try:",
            "                while state is not None:",
            "                    state, pos = state(st, L, data, pos)",
            "            except ParserError as e:",
            "                sm.parser_error = e.code",
            "                pos = e.pos",
            "            st.payload = data[pos:]",
            "            return st",
            "",
        ]
        for role, meth in (("verify", "verify_checksum"), ("ingress", "ingress"), ("egress", "egress"),
                           ("compute", "compute_checksum")):
            L += [f"        def {meth}(self, st):",
                  "            try:",
                  f"                {c[role]}(st)",
                  "            except ExitControl:",
                  "                pass",
                  ""]
        L += [
            "        def deparse(self, st):",
            "            out = []",
            "            try:",
            f"                {c['deparser']}(st, out.append)",
            "            except ExitControl:",
            "                pass",
            "            out.append(st.payload)",
            "            return b''.join(out)",
            "",
            "        def copy_state(self, st):",
            "            n = PacketState.__new__(PacketState)",
            "            n.hdr = st.hdr.copy()",
            "            n.meta = st.meta.copy()",
            "            n.sm = st.sm.copy()",
            "            n.payload = st.payload",
            "            n.truncate_to = st.truncate_to",
            "            n.drop_reason = st.drop_reason",
            "            n.resubmit = st.resubmit",
            "            n.recirculate = st.recirculate",
            "            n.clones = list(st.clones)",
            "            n.digests = list(st.digests)",
            "            return n",
            "",
            "        def reset_standard_metadata(self, st):",
            f"            st.sm = {sm_t.pyname}()",  # type: ignore[union-attr]
            "",
            "        def new_state(self):",
            "            return PacketState()",
            "",
            "        def preserve(self, src, dst, field_list):",
        ]
        if not fl:
            L.append("            return None")
        first = True
        for idx, stmts in sorted(fl.items()):
            L.append(f"            {'if' if first else 'elif'} field_list == {idx}:")
            first = False
            L += ["                " + s for s in stmts]
        L += ["", "    return Pipeline()", ""]
        return "\n".join(L)
