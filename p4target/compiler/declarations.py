"""The declarations of a program: each top-level declaration (``declare``, by its
kind) and the block-level ones the program compiler hands over (constants,
actions), the types they name (``resolve_type``) and the widths the control plane
sees (``wire_width``)."""

from __future__ import annotations

import copy
import dataclasses
from typing import cast

from p4target import model as M
from p4target.compiler.context import CompilerContext
from p4target.compiler.entities import ActionInfo, annos_dict, qualify
from p4target.compiler.expressions import to_type_const
from p4target.compiler.naming import pyident
from p4target.compiler.scope import Scope, Sym
from p4target.compiler.types import (
    BitT, BoolT, EnumT, ErrorT, ExternT, IntT, MatchKindT, StackT, StringT, StructT, TupleT,
    Type, VarbitT, VoidT,
)
from p4target.errors import UnsupportedError
from p4target.frontend import ast as A
from p4target.frontend.source import Loc, error, unsupported


class Declarations:
    """The declarations of the program compiler ``ctx``, recorded in its tables
    (``type_names``, ``parsers``, ``controls``, ``actions``, ``main``...); a header
    type the fast compiler refuses is its ``declare_struct``'s (called through
    ``ctx``)."""

    def __init__(self, ctx: CompilerContext) -> None:
        self.ctx = ctx
        self.new_types: set[str] = set()  # names declared with 'type' (or typedefs of one)
        self.generic_structs: dict[str, A.StructLike] = {}  # struct S<T>: made concrete where named S<bit<8>>
        self.block_kinds: dict[str, str] = {}  # control and parser (type) names: "control" or "parser"
        self._types: dict[int, tuple[A.TypeRef, Type]] = {}  # resolve_type's cache
        self.block_locs: dict[str, Loc] = {}  # where each parser/control/package name was declared
        self._named_types: dict[str, set[int]] | None = None  # type name -> the declarations naming it

    # ------------------------------------------------------------------ types
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
            w = self.ctx.const_int(t.width, "type width")
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
            rt = self.ctx.type_names.get(t.name)
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
            n = self.ctx.const_int(t.size, "stack size")
            if n <= 0:
                raise error(t.size.loc, "stack size must be positive")
            return StackT(elem, n)
        if isinstance(t, A.TupleType):
            return TupleT(tuple(self.resolve_type(e) for e in t.elems))
        raise unsupported(t.loc, f"type {type(t).__name__}", "use a concrete type")

    # ------------------------------------------------------------------ declarations
    def declare_all(self, require_main: bool = True) -> None:
        """Declare every top-level declaration; with ``require_main`` False (the source-order
        check), top-level instances the target does not support (another architecture's
        package) are left out instead of refused."""
        for d in self.ctx.program.decls:
            try:
                self.declare(d)
            except UnsupportedError:
                if require_main or not isinstance(d, A.Instance):
                    raise
        if self.ctx.main is None and require_main:  # placed at the end, where main is missing
            end = len(self.ctx.source.read_text(errors="replace").splitlines()) + 1
            raise error(Loc(str(self.ctx.source), end, 1), "the program has no 'main'; add "
                        "V1Switch(MyParser(), ..., MyDeparser()) main;")

    def declare(self, d: object) -> None:
        """Declare one top-level declaration (its kind's ``_declare_*`` method)."""
        self.ctx.last_loc = getattr(d, "loc", self.ctx.last_loc)
        how = getattr(self, f"_declare_{type(d).__name__}", None)
        if getattr(d, "name", None) == "main" and not isinstance(d, A.Instance):
            raise error(d.loc, "'main' must be the package instance (V1Switch(...) main;); rename this declaration")  # type: ignore[attr-defined]  # every named declaration has a loc
        if how is None:
            raise unsupported(getattr(d, "loc", Loc(str(self.ctx.source), 1, 1)),
                              f"top-level {type(d).__name__}", "remove it")
        how(d)

    def _declare_ErrorDecl(self, d: A.ErrorDecl) -> None:
        for n, _loc in d.members:
            if n not in self.ctx.errors_by_name:
                self.ctx.errors_by_name[n] = len(self.ctx.errors_by_name)

    def _declare_MatchKindDecl(self, d: A.MatchKindDecl) -> None:
        self.ctx.match_kinds.update(n for n, _ in d.members)

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
        self.ctx.type_names[d.name] = t

    def _declare_StructLike(self, d: A.StructLike) -> None:
        self.ctx.declare_struct(d)

    def _declare_EnumDecl(self, d: A.EnumDecl) -> None:
        self.declare_enum(d)

    def _declare_ConstDecl(self, d: A.ConstDecl) -> None:
        self.declare_const(d, self.ctx.global_scope)

    def _declare_ExternDecl(self, d: A.ExternDecl) -> None:
        for p in (p for m in d.methods for p in m.params):
            kind = self.block_kind(p.type)
            if kind in ("control", "parser"):
                raise error(p.loc, f"{p.name}: an extern's parameter cannot have type {kind} "
                            f"{p.type.name}; pass values, headers or structs")  # type: ignore[attr-defined]  # block_kind found a NamedType
        self.ctx.extern_decls[d.name] = d
        self.ctx.type_names[d.name] = ExternT(d.name)

    def _declare_ExternFunc(self, d: A.ExternFunc) -> None:
        self.ctx.global_scope.names[d.name] = Sym("function", None, obj=d)

    def _declare_ActionDecl(self, d: A.ActionDecl) -> None:
        self.declare_action(d, None, self.ctx.global_scope)

    def _declare_ParserDecl(self, d: A.ParserDecl) -> None:
        self.check_new_block(d.name, d.loc)
        self.block_kinds[d.name] = "parser"
        if not d.is_type:
            self.ctx.parsers[d.name] = d
        self.ctx.type_names[d.name] = ExternT(d.name)

    def _declare_ControlDecl(self, d: A.ControlDecl) -> None:
        self.check_new_block(d.name, d.loc)
        self.block_kinds[d.name] = "control"
        for p in d.ctor_params:
            if self.block_kind(p.type) == "parser":
                raise error(p.loc, f"{p.name}: a control cannot instantiate a parser; pass the parser to "
                            "the package instead")
        if not d.is_type:
            self.ctx.controls[d.name] = d
        self.ctx.type_names[d.name] = ExternT(d.name)

    def _declare_PackageDecl(self, d: A.PackageDecl) -> None:
        self.check_new_block(d.name, d.loc)
        self.ctx.type_names[d.name] = ExternT(d.name)

    def _declare_Instance(self, d: A.Instance) -> None:
        if isinstance(d.type, A.NamedType) and d.type.name == "V1Switch":
            if d.name != "main":
                raise error(d.loc, "the V1Switch instance must be called 'main'")
            self.ctx.main = d
        else:
            self.ctx.declare_instance(d, None, self.ctx.global_scope)

    def _declare_FunctionDecl(self, d: A.FunctionDecl) -> None:
        info = ActionInfo(d.name, d.name, d, pyident("f", d.name), None)  # type: ignore[arg-type]  # the function's ActionInfo: its table-facing parts stay unset
        info.ret = self.resolve_type(d.ret)  # type: ignore[attr-defined]  # functions carry their return type on the same record
        self.ctx.global_scope.define(d.name, Sym("func", None, info.pyfunc, obj=info), d.loc)
        self.ctx.pending_functions.append(info)

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
        if name in self.ctx.type_names:
            where = self.block_locs.get(name)
            origin = f" (first declared at {where})" if where else ""
            raise error(loc, f"'{name}' is already declared{origin}; choose another name, "
                        f"e.g. 'My{name}'")
        self.block_locs[name] = loc

    def check_new_name(self, name: str, loc: Loc) -> None:
        if name in self.ctx.type_names and not isinstance(self.ctx.type_names[name], ExternT):
            raise error(loc, f"'{name}' is already declared; choose another name")

    def specialize(self, t: A.NamedType) -> StructT:
        """The concrete type ``S<args>`` of a generic struct or header ``S``, declared
        once per distinct argument list (its type parameters bound to the arguments)."""
        d = self.generic_structs[t.name]
        if len(t.args) != len(d.type_params):
            raise error(t.loc, f"{d.kind} {d.name} takes {len(d.type_params)} type argument(s), not {len(t.args)}")
        args = [self.resolve_type(a) for a in t.args]
        name = f"{d.name}<{', '.join(map(str, args))}>"
        type_names = self.ctx.type_names
        done = type_names.get(name)
        if isinstance(done, StructT):
            return done
        saved = {p: type_names.get(p) for p in d.type_params}
        type_names.update(zip(d.type_params, args, strict=True))
        try:  # a copy: resolve_type caches per node, and another specialization binds T anew
            self.ctx.declare_struct(dataclasses.replace(copy.deepcopy(d), name=name, type_params=[]))
        finally:
            for p, old in saved.items():
                if old is None:
                    type_names.pop(p, None)
                else:
                    type_names[p] = old
        return cast(StructT, type_names[name])

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
                self.ctx.deferred.append(error(d.loc, f"header {d.name} is {t.width} bits long; headers must be "
                                           "a whole number of bytes (add padding bits)"))
            if sum(isinstance(ft, VarbitT) for _, ft in t.fields) > 1:  # placed at the first, as p4c does
                first = next(f for f, (_, ft) in zip(d.fields, t.fields, strict=True) if isinstance(ft, VarbitT))
                raise unsupported(first.loc, "a header with more than one varbit field", "use one")
            if any(isinstance(ft, VarbitT) for _, ft in t.fields) and any(
                    isinstance(ft, StructT) for _, ft in t.fields):
                raise unsupported(d.loc, "a header with both a varbit field and a struct-typed field",
                                  "write the struct's fields into the header")
        self.ctx.type_names[d.name] = t
        self.ctx.struct_types.append(t)

    def check_match_annotation(self, annos: list[A.Annotation]) -> None:
        """A field's ``@match(kind)`` (a value set's match kind) names a declared match_kind."""
        for a in annos:
            if a.name == "match" and a.body.strip() not in self.ctx.match_kinds:
                raise error(a.loc, f"@match({a.body.strip()}): the value must be a match_kind "
                            f"({', '.join(sorted(self.ctx.match_kinds))})")

    def type_is_used(self, d: A.StructLike) -> bool:
        """Whether a type other than ``d`` or a declaration names ``d`` (p4c leaves unused
        types out of what BMv2 sees, so BMv2's limits do not apply to them)."""
        if self._named_types is None:
            self._named_types = {}
            for x in self.ctx.program.decls:
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
                members[n] = to_type_const(self.ctx.const_int(val, "enum value"), ut)
            t = EnumT(d.name, members, ut)
        self.ctx.type_names[d.name] = t

    def declare_const(self, d: A.ConstDecl, scope: Scope) -> None:
        t = self.resolve_type(d.type)
        v = self.ctx.value(d.value)
        if v.const is None:
            raise error(d.value.loc, f"const {d.name} needs a compile-time value")
        code = self.ctx.coerce(v, t, d.loc, f"const {d.name}")
        val = eval(code, {"__builtins__": {}})  # a literal produced by coerce
        scope.define(d.name, Sym("const", t, code, val), d.loc)

    def declare_action(self, d: A.ActionDecl, control: str | None, scope: Scope) -> ActionInfo:
        p4name = qualify(control, d.name, d.annotations)
        info = ActionInfo(p4name, d.name, d, pyident("a", p4name), control, scope=scope)
        scope.define(d.name, Sym("action", None, info.pyfunc, obj=info), d.loc)
        other = self.ctx.actions.get(p4name)
        if other is not None and other.decl is not d:
            raise error(d.loc, f"'{p4name}' is also the control-plane name of the action at {other.decl.loc}; "
                        "give one of them another @name")
        self.ctx.actions[p4name] = info
        # body generated when the enclosing block is compiled
        self.ctx.pending_actions.append((info, scope))
        return info

    def note_digest(self, t: StructT, loc: Loc) -> None:
        fields = tuple(M.Field(n, self.wire_width(ft, loc)) for n, ft in t.fields)
        self.ctx.digests[t.name] = M.Digest(t.name, fields)

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
