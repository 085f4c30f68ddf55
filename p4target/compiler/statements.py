"""Code generation of P4 statements and calls: assignments, if/switch, actions,
table application, header/stack methods, packet_in/packet_out methods and the
v1model extern functions and methods (through the runtime ``Bindings``).
"""

from __future__ import annotations

from p4target.compiler.expressions import V, expr_text, lit
from p4target.compiler.naming import pyfield
from p4target.compiler.scope import Sym
from p4target.compiler.types import (
    BitT, BoolT, EnumT, ErrorT, ExternT, IntT, ObjT, StackT, StringT, StructT, Type,
    VarbitT, VoidT,
)
from p4target.frontend import ast as A
from p4target.frontend.source import Loc, error, unsupported

# v1model CloneType members -> the Bindings.clone kind codes (I2E=1, E2E=2)
_CLONE_KIND = {"I2E": 1, "E2E": 2}


class StatementCompiler:
    """Mixin of the program compiler; emits lines into ``self.out`` at ``self.ind``."""

    # ------------------------------------------------------------------ output helpers
    def emit(self, line: str) -> None:
        self.out.append(self.ind + line)

    def indent(self) -> None:
        self.ind += "    "

    def dedent(self) -> None:
        self.ind = self.ind[:-4]

    def tmp(self, base: str = "t") -> str:
        self.tmp_count += 1
        return f"_{base}{self.tmp_count}"

    def local_name(self, name: str) -> str:
        py = f"l_{name}"
        k = 1
        while py in self.locals_used:
            k += 1
            py = f"l_{name}_{k}"
        self.locals_used.add(py)
        return py

    # ------------------------------------------------------------------ statements
    def stmts(self, stmts: list[A.Stmt]) -> None:
        for s in stmts:
            self.stmt(s)

    def block_body(self, stmts: list[A.Stmt]) -> None:
        """Statements of a nested block, in a child scope, never empty in Python."""
        saved = self.scope
        self.scope = saved.child()
        n = len(self.out)
        self.stmts(stmts)
        if len(self.out) == n:
            self.emit("pass")
        self.scope = saved

    def stmt(self, s: A.Stmt) -> None:
        self.last_loc = s.loc
        if isinstance(s, A.Block):
            saved = self.scope
            self.scope = saved.child()
            self.stmts(s.stmts)
            self.scope = saved
        elif isinstance(s, A.Assign):
            self.assign(s.target, s.value, s.loc)
        elif isinstance(s, A.CallStmt):
            self.call_stmt(s.call)
        elif isinstance(s, A.If):
            c = self.value(s.cond)
            if not isinstance(c.type, BoolT):
                raise error(s.cond.loc, f"if condition must be bool, not {c.type}; compare it, e.g. x != 0")
            self.emit(f"if {c.code}:")
            self.indent()
            self.block_body(s.then.stmts if isinstance(s.then, A.Block) else [s.then])
            self.dedent()
            if s.other is not None:
                self.emit("else:")
                self.indent()
                self.block_body(s.other.stmts if isinstance(s.other, A.Block) else [s.other])
                self.dedent()
        elif isinstance(s, A.Switch):
            self.switch(s)
        elif isinstance(s, A.VarDecl):
            self.var_decl(s)
        elif isinstance(s, A.Exit):
            if self.fn_kind == "parser":
                raise error(s.loc, "exit is not allowed in a parser; use transition reject")
            self.emit("raise EXIT")
        elif isinstance(s, A.Return):
            if s.value is not None:
                raise unsupported(s.loc, "returning a value", "use out parameters")
            if self.fn_kind == "parser":
                raise error(s.loc, "return is not allowed in a parser state")
            if self.fn_kind == "action" and self.action_outs:
                self.emit("return (" + "".join(o + ", " for o in self.action_outs) + ")")
            else:
                self.emit("return")
        elif isinstance(s, A.Empty):
            pass
        else:
            raise unsupported(s.loc, f"statement {type(s).__name__}", "rewrite it")

    def var_decl(self, s: A.VarDecl) -> None:
        t = self.resolve_type(s.type)
        if s.is_const:
            v = self.value(s.init) if s.init is not None else None
            if v is None or v.const is None:
                raise error(s.loc, f"const {s.name} needs a compile-time value")
            code = self.coerce(v, t, s.loc, f"const {s.name}")
            self.scope.names[s.name] = Sym("const", t, code, eval(code, {"__builtins__": {}}))  # noqa: S307
            return
        py = self.local_name(s.name)
        if s.init is not None:
            code = self.expr_as(s.init, t, f"initializer of {s.name}")
        else:
            code = self.zero(t, s.loc)
        self.scope.names[s.name] = Sym("var", t, py)
        self.emit(f"{py} = {code}")

    def zero(self, t: Type, loc: Loc) -> str:
        """Code for a fresh value of ``t``: 0, False, an invalid header, a zeroed struct."""
        if isinstance(t, (BitT, IntT, ErrorT)):
            return "0"
        if isinstance(t, BoolT):
            return "False"
        if isinstance(t, EnumT):
            return repr(min(t.members.values())) if t.underlying is None else "0"
        if isinstance(t, StructT):
            return f"{t.pyname}()"
        if isinstance(t, StackT):
            return f"Stack({t.elem.pyname}, {t.size})"
        if isinstance(t, VarbitT):
            return "0"
        raise unsupported(loc, f"a variable of type {t}", "use bit<W>, bool, headers or structs")

    def switch(self, s: A.Switch) -> None:
        v = self.expr(s.expr)
        is_action_run = v.sym is not None and v.sym.kind == "action_run"
        key = self.tmp("sw")
        if is_action_run:
            self.emit(f"{key} = {v.code}")
            table = v.sym.obj  # type: ignore[union-attr]
        else:
            if not isinstance(v.type, (BitT, EnumT, ErrorT, IntT)):
                raise error(s.expr.loc, f"cannot switch on a value of type {v.type}")
            self.emit(f"{key} = {v.code}")
        pending: list[str] = []
        first = True
        seen_default = False
        for case in s.cases:
            for label in case.labels:
                if label is None or isinstance(label, A.DefaultExpr) or (
                        isinstance(label, A.Name) and label.name == "_"):
                    seen_default = True
                    pending.append("True")
                elif is_action_run:
                    if not isinstance(label, A.Name):
                        raise error(label.loc, "switch on action_run needs action names as labels")
                    idx = table.action_index(label.name, label.loc)  # type: ignore[union-attr]
                    pending.append(f"{key} == {idx}")
                else:
                    lv = self.value(label)
                    if lv.const is None:
                        raise error(label.loc, "switch labels must be compile-time constants")
                    code = self.coerce(lv, v.type, label.loc, "switch label") if not isinstance(
                        v.type, IntT) else lv.code
                    pending.append(f"{key} == {code}")
            if case.body is None:
                continue
            cond = "True" if "True" in pending else " or ".join(pending)
            if cond == "True" and not first:
                self.emit("else:")
            else:
                self.emit(f"{'if' if first else 'elif'} {cond}:")
            first = False
            self.indent()
            self.block_body(case.body.stmts)
            self.dedent()
            pending = []
        if pending:
            raise error(s.loc, "the last switch case has no body; add { }")
        del seen_default

    # ------------------------------------------------------------------ assignment
    def assign(self, target: A.Expr, value: A.Expr, loc: Loc) -> None:
        t = self.lvalue_type(target)
        code = self.expr_as(value, t, f"assignment to {expr_text(target)}")
        self.store(target, code, loc)

    def lvalue_type(self, target: A.Expr) -> Type:
        self.check_lvalue(target)
        return self.value(target).type

    def check_lvalue(self, e: A.Expr) -> None:
        if isinstance(e, A.Name):
            sym = self.scope.lookup(e.name)
            if sym is None:
                raise error(e.loc, f"unknown name '{e.name}'; declare it before use")
            if sym.kind != "var":
                raise error(e.loc, f"cannot assign to '{e.name}': it is a {sym.kind}")
            if sym.obj == "ro":
                raise error(e.loc, f"cannot assign to '{e.name}': it is an 'in' parameter")
            return
        if isinstance(e, (A.Member, A.Index, A.Slice)):
            self.check_lvalue(e.obj)
            return
        raise error(e.loc, f"'{expr_text(e)}' cannot be assigned to")

    def store(self, target: A.Expr, code: str, loc: Loc) -> None:
        """Emit ``target = code`` where ``code`` already has the target's type."""
        if isinstance(target, A.Slice):
            base = self.value(target.obj)
            hi = self.const_int(target.hi)
            lo = self.const_int(target.lo)
            bt = base.type
            if not isinstance(bt, BitT):
                raise error(target.loc, f"cannot assign to a slice of {bt}")
            m = ((1 << (hi - lo + 1)) - 1) << lo
            keep = bt.mask ^ m
            val = f"({code} << {lo})" if lo else code
            if bt.signed:
                new = f"(({base.code} & {keep:#x}) | {val})"
                h = 1 << (bt.width - 1)
                self.store(target.obj, f"(({new} ^ {h}) - {h})", loc)
            else:
                self.store(target.obj, f"(({base.code} & {keep:#x}) | {val})", loc)
            return
        v = self.value(target)
        if isinstance(target, A.Member):
            base = self.value(target.obj)
            if isinstance(base.type, StackT):
                raise unsupported(target.loc, f"assigning to stack member '{target.name}'",
                                  "assign to an element s[i] instead")
        self.emit(f"{v.code} = {code}")

    # ------------------------------------------------------------------ calls
    def call_stmt(self, e: A.Call) -> None:
        v = self.call(e, as_stmt=True)
        if v is not None and v.code:
            self.emit(v.code)

    def call_expr(self, e: A.Call) -> V:
        v = self.call(e, as_stmt=False)
        if v is None:
            raise error(e.loc, f"'{expr_text(e.func)}' does not return a value")
        return v

    def call(self, e: A.Call, as_stmt: bool) -> V | None:
        f = e.func
        if isinstance(f, A.Member):
            base = self.expr(f.obj)
            bt = base.type
            name = f.name
            if isinstance(bt, StructT) and base.sym is None or (
                    isinstance(bt, StructT) and base.sym is not None and base.sym.kind == "var"):
                return self.header_method(e, f, base, name)
            if isinstance(bt, StackT) and name in ("push_front", "pop_front"):
                self.nargs(e, 1)
                k = self.const_int(e.args[0].value, f"{name} count")  # type: ignore[arg-type]
                if k < 0:
                    raise error(e.loc, f"{name} count must be >= 0")
                return V(f"{base.code}.{name}({k})", VoidT())
            sym = base.sym
            if sym is None:
                raise error(f.loc, f"'{expr_text(f.obj)}' of type {bt} has no method '{name}'")
            if sym.kind == "packet_in":
                return self.packet_in_method(e, name)
            if sym.kind == "packet_out":
                if name != "emit":
                    raise error(f.loc, f"packet_out has no method '{name}'; use emit")
                self.nargs(e, 1)
                self.emit_header(self.value(e.args[0].value), e.args[0].loc)  # type: ignore[arg-type]
                return None
            if sym.kind == "table":
                if name != "apply":
                    raise error(f.loc, f"table has no method '{name}'; use apply()")
                self.nargs(e, 0)
                tbl = sym.obj
                call = f"{tbl.pyfunc}(st, L)"  # type: ignore[union-attr]
                return V(call, ObjT("tableresult", tbl.name), None,  # type: ignore[union-attr]
                         Sym("tableresult", None, call, obj=tbl))
            if sym.kind == "instance":
                return self.extern_method(e, sym, name)
            raise error(f.loc, f"'{expr_text(f.obj)}' has no method '{name}'")
        if isinstance(f, A.Name):
            sym = self.scope.lookup(f.name)
            if sym is None:
                raise error(f.loc, f"unknown function or action '{f.name}'; declare it before use")
            if sym.kind == "action":
                return self.action_call(e, sym)
            if sym.kind == "function":
                return self.extern_function(e, f.name)
            raise error(f.loc, f"'{f.name}' is a {sym.kind} and cannot be called")
        raise unsupported(e.loc, f"calling '{expr_text(f)}'", "call an action, method or extern")

    def nargs(self, e: A.Call, *counts: int) -> None:
        if len(e.args) not in counts:
            want = " or ".join(map(str, counts))
            raise error(e.loc, f"'{expr_text(e.func)}' takes {want} argument(s), got {len(e.args)}")
        for a in e.args:
            if a.value is None:
                raise unsupported(a.loc, "a '_' argument", "pass a value")

    def arg(self, e: A.Call, i: int) -> A.Expr:
        return e.args[i].value  # type: ignore[return-value]

    # ------------------------------------------------------------------ headers
    def header_method(self, e: A.Call, f: A.Member, base: V, name: str) -> V | None:
        t = base.type
        assert isinstance(t, StructT)
        if t.kind == "struct":
            raise error(f.loc, f"struct {t.name} has no method '{name}'")
        if name == "isValid":
            self.nargs(e, 0)
            if t.kind == "header_union":
                return V("(" + " or ".join(f"{base.code}.{pyfield(n)}._v" for n, _ in t.fields) + ")",
                         BoolT())
            return V(f"{base.code}._v", BoolT())
        if name in ("setValid", "setInvalid"):
            self.nargs(e, 0)
            if t.kind == "header_union":
                raise error(f.loc, f"{name} applies to a member header of a union, not the union")
            self.check_lvalue(f.obj)
            if name == "setValid":
                # simple_switch's add_header: an invalid header becomes valid with all
                # fields 0; a valid one is left as it is.
                self.invalidate_union_siblings(f.obj)
                return V(f"{base.code}.set_valid()", VoidT())
            return V(f"{base.code}._v = False", VoidT())
        raise error(f.loc, f"{t} has no method '{name}'; use isValid, setValid or setInvalid")

    def invalidate_union_siblings(self, target: A.Expr) -> None:
        if isinstance(target, A.Member):
            parent = self.value(target.obj)
            if isinstance(parent.type, StructT) and parent.type.kind == "header_union":
                for n, _ in parent.type.fields:
                    if n != target.name:
                        self.emit(f"{parent.code}.{pyfield(n)}._v = False")

    # ------------------------------------------------------------------ actions
    def action_call(self, e: A.Call, sym: Sym) -> V | None:
        act = sym.obj
        params = act.decl.params  # type: ignore[union-attr]
        if self.fn_kind == "parser":
            raise error(e.loc, "actions cannot be called from a parser")
        args = self.bind_args(e, params)
        codes: list[str] = []
        outs: list[tuple[A.Expr, Type]] = []
        for p, a in zip(params, args):
            pt = self.param_type(p)
            if p.direction in ("out", "inout"):
                if a is None:
                    raise error(e.loc, f"argument for out parameter '{p.name}' is missing")
                self.check_lvalue(a)
                at = self.value(a).type
                if not (at is pt or at == pt):
                    raise error(a.loc, f"argument for {p.direction} parameter '{p.name}' must have "
                                f"type {pt}, not {at}")
                outs.append((a, pt))
                codes.append(self.value(a).code if p.direction == "inout" else self.zero(pt, a.loc))
            else:
                if a is None:
                    raise error(e.loc, f"missing argument for parameter '{p.name}' of action "
                                f"{act.p4name}")  # type: ignore[union-attr]
                codes.append(self.expr_as(a, pt, f"argument '{p.name}'"))
        call = f"{act.pyfunc}(st, L{''.join(', ' + c for c in codes)})"  # type: ignore[union-attr]
        if not outs:
            return V(call, VoidT())
        r = self.tmp("r")
        self.emit(f"{r} = {call}")
        for i, (a, pt) in enumerate(outs):
            self.store(a, f"{r}[{i}]", a.loc)
        return None

    def bind_args(self, e: A.Call, params: list[A.Param]) -> list[A.Expr | None]:
        if any(a.name for a in e.args):
            byname = {a.name: a.value for a in e.args}
            unknown = [n for n in byname if n not in {p.name for p in params}]
            if unknown:
                raise error(e.loc, f"no parameter named '{unknown[0]}'")
            return [byname.get(p.name) for p in params]
        if len(e.args) > len(params):
            raise error(e.loc, f"too many arguments: '{expr_text(e.func)}' takes {len(params)}")
        vals: list[A.Expr | None] = [a.value for a in e.args]
        return vals + [None] * (len(params) - len(vals))

    # ------------------------------------------------------------------ packet_in
    def packet_in_method(self, e: A.Call, name: str) -> V | None:
        if self.fn_kind != "parser":
            raise error(e.loc, f"packet_in.{name} is only available in a parser")
        if name == "extract":
            self.nargs(e, 1, 2)
            self.extract(self.arg(e, 0), self.arg(e, 1) if len(e.args) == 2 else None, e.loc)
            return None
        if name == "advance":
            self.nargs(e, 1)
            v = self.value(self.arg(e, 0))
            short = self.errors_by_name["PacketTooShort"]
            if v.const is not None:
                n = int(v.const)  # type: ignore[arg-type]
                if n % 8:
                    raise unsupported(e.loc, "advance by a number of bits that is not a multiple of 8",
                                      "advance by whole bytes")
                self.emit(f"if pos + {n // 8} > len(data): raise ParserError({short}, pos)")
                self.emit(f"pos += {n // 8}")
            else:
                a = self.tmp("adv")
                bad = self.errors_by_name["ParserInvalidArgument"]
                self.emit(f"{a} = {v.code}")
                self.emit(f"if {a} & 7: raise ParserError({bad}, pos)")
                self.emit(f"if pos + ({a} >> 3) > len(data): raise ParserError({short}, pos)")
                self.emit(f"pos += {a} >> 3")
            return None
        if name == "lookahead":
            if len(e.type_args) != 1:
                raise error(e.loc, "lookahead needs a type argument: lookahead<T>()")
            t = self.resolve_type(e.type_args[0])
            short = self.errors_by_name["PacketTooShort"]
            if isinstance(t, BitT):
                nbytes = (t.width + 7) // 8
                code = f"lookahead(data, pos, {nbytes}, {nbytes * 8 - t.width}, {short})"
                if t.signed:
                    code = f"(({code} ^ {1 << (t.width - 1)}) - {1 << (t.width - 1)})"
                return V(code, t)
            if isinstance(t, StructT) and t.kind == "header" and not self.has_varbit(t):
                return V(f"{t.pyname}.unpack(lookahead(data, pos, {t.width // 8}, 0, {short}))", t)
            raise unsupported(e.loc, f"lookahead<{t}>", "look ahead at bit<W> or a fixed header")
        if name == "length":
            raise unsupported(e.loc, "packet_in.length()", "v1model (BMv2) does not support it either")
        raise error(e.loc, f"packet_in has no method '{name}'")

    def has_varbit(self, t: StructT) -> bool:
        return any(isinstance(ft, VarbitT) for _, ft in t.fields)

    def extract(self, target: A.Expr, length: A.Expr | None, loc: Loc) -> None:
        short = self.errors_by_name["PacketTooShort"]
        stack_next = isinstance(target, A.Member) and target.name == "next" and isinstance(
            self.value(target.obj).type, StackT)
        if stack_next:
            s = self.value(target.obj)
            st_t = s.type
            assert isinstance(st_t, StackT)
            sv = self.tmp("s")
            self.emit(f"{sv} = {s.code}")
            self.emit(f"if {sv}.nxt >= {st_t.size}: raise ParserError("
                      f"{self.errors_by_name['StackOutOfBounds']}, pos)")
            h = self.tmp("h")
            self.emit(f"{h} = {sv}.h[{sv}.nxt]")
            t = st_t.elem
        else:
            self.check_lvalue(target)
            v = self.value(target)
            if not isinstance(v.type, StructT) or v.type.kind != "header":
                raise error(target.loc, f"extract needs a header, not {v.type}")
            t = v.type
            h = self.tmp("h")
            self.emit(f"{h} = {v.code}")
        varbits = [n for n, ft in t.fields if isinstance(ft, VarbitT)]
        x = self.tmp("x")
        if varbits:
            if length is None:
                raise error(loc, f"header {t.name} has a varbit field; extract it with a length: "
                            "extract(hdr, (bit<32>)bits)")
            if len(varbits) > 1:
                raise unsupported(loc, "a header with more than one varbit field", "use one")
            vb = varbits[0]
            lv = self.value(length)
            if not isinstance(lv.type, (BitT, IntT)):
                raise error(length.loc, f"varbit length must be an integer, not {lv.type}")
            vmax = t.field_type(vb).max_width  # type: ignore[union-attr]
            ln = self.tmp("len")
            fixed = t.width - vmax
            self.emit(f"{ln} = {lv.code}")
            self.emit(f"if {ln} > {vmax}: raise ParserError({self.errors_by_name['HeaderTooShort']}, pos)")
            self.emit(f"if ({ln} + {fixed}) & 7: raise ParserError("
                      f"{self.errors_by_name['ParserInvalidArgument']}, pos)")
            end = self.tmp("end")
            self.emit(f"{end} = pos + (({ln} + {fixed}) >> 3)")
            self.emit(f"if {end} > len(data): raise ParserError({short}, pos)")
            self.emit(f"{x} = int.from_bytes(data[pos:{end}], 'big')")
            after = 0
            shifts: dict[str, str] = {}
            for n, ft in reversed(t.fields):
                if isinstance(ft, VarbitT):
                    shifts[n] = str(after)
                    continue
                shifts[n] = f"{after} + {ln}" if _before(t, n, vb) else str(after)
                after += ft.width if isinstance(ft, BitT) else 1
            for n, ft in t.fields:
                if isinstance(ft, VarbitT):
                    self.emit(f"{h}.{pyfield(n)} = ({x} >> {shifts[n]}) & ((1 << {ln}) - 1)")
                    self.emit(f"{h}._len_{n} = {ln}")
                else:
                    w = ft.width if isinstance(ft, BitT) else 1
                    self.emit(f"{h}.{pyfield(n)} = {self.field_from(f'({x} >> ({shifts[n]}))', ft, w, True)}")
            self.emit(f"pos = {end}")
        else:
            if length is not None:
                raise error(loc, f"header {t.name} has no varbit field; call extract(hdr) with one argument")
            nbytes = t.width // 8
            self.emit(f"if pos + {nbytes} > len(data): raise ParserError({short}, pos)")
            self.emit(f"{x} = int.from_bytes(data[pos:pos + {nbytes}], 'big')")
            for line in self.unpack_lines(t, h, x):
                self.emit(line)
            self.emit(f"pos += {nbytes}")
        if not stack_next:
            self.invalidate_union_siblings(target)
        self.emit(f"{h}._v = True")
        if stack_next:
            self.emit(f"{sv}.nxt += 1")

    def field_from(self, shifted: str, ft: Type, w: int, need_mask: bool) -> str:
        code = f"{shifted} & {(1 << w) - 1:#x}" if need_mask else shifted
        if isinstance(ft, BoolT):
            return f"bool({code})"
        if isinstance(ft, BitT) and ft.signed:
            return f"((({code}) ^ {1 << (w - 1)}) - {1 << (w - 1)})"
        return code

    def unpack_lines(self, t: StructT, h: str, x: str) -> list[str]:
        """Field assignments that split the integer ``x`` into header ``h``'s fields."""
        lines = []
        after = t.width
        for i, (n, ft) in enumerate(t.fields):
            w = 1 if isinstance(ft, BoolT) else ft.width  # type: ignore[union-attr]
            after -= w
            shifted = f"({x} >> {after})" if after else x
            lines.append(f"{h}.{pyfield(n)} = {self.field_from(shifted, ft, w, i != 0)}")
        return lines

    # ------------------------------------------------------------------ packet_out
    def emit_header(self, v: V, loc: Loc) -> None:
        t = v.type
        if isinstance(t, StructT) and t.kind == "header":
            h = self.tmp("h")
            self.emit(f"{h} = {v.code}")
            self.emit(f"if {h}._v:")
            self.indent()
            self.emit(f"ap({self.pack_code(t, h)})")
            self.dedent()
        elif isinstance(t, StructT):  # struct or header_union: every member in order
            for n, ft in t.fields:
                self.emit_header(V(f"{v.code}.{pyfield(n)}", ft), loc)
        elif isinstance(t, StackT):
            h = self.tmp("h")
            self.emit(f"for {h} in {v.code}.h:")
            self.indent()
            self.emit(f"if {h}._v:")
            self.indent()
            self.emit(f"ap({self.pack_code(t.elem, h)})")
            self.dedent()
            self.dedent()
        else:
            raise error(loc, f"emit needs a header, header stack, union or struct of headers, not {t}")

    def pack_code(self, t: StructT, h: str) -> str:
        """Code for the wire bytes of valid header ``h`` (network order, MSB first)."""
        varbit = next((n for n, ft in t.fields if isinstance(ft, VarbitT)), None)
        parts = []
        after_fixed = 0
        for n, ft in reversed(t.fields):
            if isinstance(ft, VarbitT):
                continue
            w = 1 if isinstance(ft, BoolT) else ft.width  # type: ignore[union-attr]
            fc = f"{h}.{pyfield(n)}"
            if isinstance(ft, BitT) and ft.signed:
                fc = f"({fc} & {ft.mask:#x})"
            elif isinstance(ft, BoolT):
                fc = f"int({fc})"
            dyn = varbit is not None and _before(t, n, varbit)
            shift = f"({after_fixed} + {h}._len_{varbit})" if dyn else str(after_fixed)
            parts.append(fc if shift == "0" else f"({fc} << {shift})")
            after_fixed += w
        if varbit is not None:
            fc = f"{h}.{pyfield(varbit)}"
            parts.append(f"({fc} << {_after_width(t, varbit)})")
            nbytes = f"(({t.width - t.field_type(varbit).max_width} + {h}._len_{varbit}) >> 3)"  # type: ignore[union-attr]
        else:
            nbytes = str(t.width // 8)
        return f"({' | '.join(reversed(parts))}).to_bytes({nbytes}, 'big')"

    # ------------------------------------------------------------------ externs
    def extern_method(self, e: A.Call, sym: Sym, name: str) -> V | None:
        inst = sym.obj
        kind = inst.kind  # type: ignore[union-attr]
        x = sym.code
        if kind == "counter" and name == "count":
            self.nargs(e, 1)
            return V(f"{x}.count(st, {self.index_arg(e, 0)})", VoidT())
        if kind == "direct_counter" and name == "count":
            self.nargs(e, 0)
            return V(f"{x}.count(st)", VoidT())
        if kind == "register" and name == "read":
            if len(e.args) == 1:
                return V(f"{x}.read(st, {self.index_arg(e, 0)})", inst.elem_type)  # type: ignore[union-attr]
            self.nargs(e, 2)
            self.out_assign(self.arg(e, 0), f"{x}.read(st, {self.index_arg(e, 1)})",
                            inst.elem_type, e.loc)  # type: ignore[union-attr]
            return None
        if kind == "register" and name == "write":
            self.nargs(e, 2)
            val = self.expr_as(self.arg(e, 1), inst.elem_type, "register value")  # type: ignore[union-attr]
            return V(f"{x}.write(st, {self.index_arg(e, 0)}, {val})", VoidT())
        if kind == "meter" and name == "execute_meter":
            self.nargs(e, 2)
            self.out_assign(self.arg(e, 1), f"{x}.execute_meter(st, {self.index_arg(e, 0)})", None, e.loc)
            return None
        if kind == "direct_meter" and name == "read":
            self.nargs(e, 1)
            self.out_assign(self.arg(e, 0), f"{x}.read(st)", None, e.loc)
            return None
        raise error(e.loc, f"{kind} has no method '{name}'")

    def index_arg(self, e: A.Call, i: int) -> str:
        v = self.value(self.arg(e, i))
        if not isinstance(v.type, (BitT, IntT)):
            raise error(self.arg(e, i).loc, f"index must be an integer, not {v.type}")
        return v.code

    def out_assign(self, target: A.Expr, code: str, t: Type | None, loc: Loc) -> None:
        """Store an extern's result (an unbounded int) into an out argument of any width."""
        self.check_lvalue(target)
        tt = self.value(target).type
        if t is not None and not (tt is t or tt == t):
            raise error(target.loc, f"out argument must have type {t}, not {tt}")
        if isinstance(tt, BitT):
            code = f"({code}) & {tt.mask:#x}" if not tt.signed else \
                f"((({code}) & {tt.mask:#x} ^ {1 << (tt.width - 1)}) - {1 << (tt.width - 1)})"
        elif isinstance(tt, EnumT) and tt.underlying is not None:
            code = f"({code}) & {tt.underlying.mask:#x}"
        elif not isinstance(tt, (IntT,)):
            raise error(target.loc, f"out argument must be bit<W>, not {tt}")
        self.store(target, code, loc)

    def enum_member_name(self, e: A.Expr, enum: str) -> str:
        v = self.value(e)
        if not isinstance(v.type, EnumT) or v.type.name != enum or v.const is None:
            raise error(e.loc, f"expected a constant {enum}.<member>, got '{expr_text(e)}'")
        for n, val in v.type.members.items():
            if val == v.const:
                return n
        raise error(e.loc, f"bad {enum} value")

    def extern_function(self, e: A.Call, name: str) -> V | None:
        handler = getattr(self, "_x_" + name, None)
        if handler is None:
            raise unsupported(e.loc, f"extern function '{name}'",
                              "use the v1model/core functions the embedded target implements")
        return handler(e)

    def _x_verify(self, e: A.Call) -> V | None:
        if self.fn_kind != "parser":
            raise error(e.loc, "verify() is only allowed in a parser")
        self.nargs(e, 2)
        c = self.expr_as(self.arg(e, 0), BoolT(), "verify condition")
        code = self.expr_as(self.arg(e, 1), ErrorT(), "verify error")
        self.emit(f"if not {c}: raise ParserError({code}, pos)")
        return None

    def _x_mark_to_drop(self, e: A.Call) -> V | None:
        self.nargs(e, 1)
        self.value(self.arg(e, 0))
        return V("rt_mark_to_drop(st)", VoidT())

    def _x_hash(self, e: A.Call) -> V | None:
        self.nargs(e, 5)
        algo = self.enum_member_name(self.arg(e, 1), "HashAlgorithm")
        data, nbits, _ = self.flatten_bits(self.arg(e, 3))
        base = self.value(self.arg(e, 2))
        mx = self.value(self.arg(e, 4))
        for v, a in ((base, self.arg(e, 2)), (mx, self.arg(e, 4))):
            if not isinstance(v.type, (BitT, IntT)):
                raise error(a.loc, f"hash base and max must be integers, not {v.type}")
        h = f"rt_hash({algo!r}, {data}, {nbits})"
        if mx.const is not None:
            m = int(mx.const)  # type: ignore[arg-type]
            code = f"{base.code} + {h} % {m}" if m > 0 else base.code
        else:
            mv = self.tmp("max")
            self.emit(f"{mv} = {mx.code}")
            code = f"({base.code} + {h} % {mv} if {mv} > 0 else {base.code})"
        self.out_assign(self.arg(e, 0), code, None, e.loc)
        return None

    def _x_random(self, e: A.Call) -> V | None:
        self.nargs(e, 3)
        tt = self.lvalue_type(self.arg(e, 0))
        lo = self.expr_as(self.arg(e, 1), tt, "random lo")
        hi = self.expr_as(self.arg(e, 2), tt, "random hi")
        self.out_assign(self.arg(e, 0), f"rt_random(st, {lo}, {hi})", None, e.loc)
        return None

    def _checksum(self, e: A.Call, verify: bool, payload: bool) -> V | None:
        self.nargs(e, 4)
        cond = self.expr_as(self.arg(e, 0), BoolT(), "checksum condition")
        data, nbits, _ = self.flatten_bits(self.arg(e, 1))
        algo = self.enum_member_name(self.arg(e, 3), "HashAlgorithm")
        pl = ", st.payload" if payload else ""
        ck = f"rt_checksum({algo!r}, {data}, {nbits}{pl})"
        self.emit(f"if {cond}:")
        self.indent()
        if verify:
            cv = self.value(self.arg(e, 2))
            if not isinstance(cv.type, BitT):
                raise error(self.arg(e, 2).loc, f"checksum field must be bit<W>, not {cv.type}")
            self.emit(f"if ({ck}) & {cv.type.mask:#x} != {cv.code}:")
            self.emit("    st.sm.checksum_error = 1")
        else:
            self.out_assign(self.arg(e, 2), ck, None, e.loc)
        self.dedent()
        return None

    def _x_verify_checksum(self, e: A.Call) -> V | None:
        return self._checksum(e, True, False)

    def _x_update_checksum(self, e: A.Call) -> V | None:
        return self._checksum(e, False, False)

    def _x_verify_checksum_with_payload(self, e: A.Call) -> V | None:
        return self._checksum(e, True, True)

    def _x_update_checksum_with_payload(self, e: A.Call) -> V | None:
        return self._checksum(e, False, True)

    def _x_clone(self, e: A.Call) -> V | None:
        self.nargs(e, 2)
        kind = _CLONE_KIND[self.enum_member_name(self.arg(e, 0), "CloneType")]
        sess = self.value(self.arg(e, 1))
        return V(f"rt_clone(st, {kind}, {sess.code}, None)", VoidT())

    def _x_clone_preserving_field_list(self, e: A.Call) -> V | None:
        self.nargs(e, 3)
        kind = _CLONE_KIND[self.enum_member_name(self.arg(e, 0), "CloneType")]
        sess = self.value(self.arg(e, 1))
        fl = self.const_int(self.arg(e, 2), "field list index")
        return V(f"rt_clone(st, {kind}, {sess.code}, {fl})", VoidT())

    def _x_resubmit_preserving_field_list(self, e: A.Call) -> V | None:
        self.nargs(e, 1)
        return V(f"rt_resubmit(st, {self.const_int(self.arg(e, 0), 'field list index')})", VoidT())

    def _x_recirculate_preserving_field_list(self, e: A.Call) -> V | None:
        self.nargs(e, 1)
        return V(f"rt_recirculate(st, {self.const_int(self.arg(e, 0), 'field list index')})", VoidT())

    def _x_truncate(self, e: A.Call) -> V | None:
        self.nargs(e, 1)
        v = self.value(self.arg(e, 0))
        if not isinstance(v.type, (BitT, IntT)):
            raise error(self.arg(e, 0).loc, f"truncate length must be an integer, not {v.type}")
        return V(f"rt_truncate(st, {v.code})", VoidT())

    def _x_digest(self, e: A.Call) -> V | None:
        self.nargs(e, 2)
        self.value(self.arg(e, 0))
        data = self.arg(e, 1)
        if e.type_args:
            t = self.resolve_type(e.type_args[0])
        else:
            if isinstance(data, (A.ListExpr, A.StructExpr)):
                raise error(data.loc, "digest of a list needs the struct type: digest<T>(receiver, {...})")
            t = self.value(data).type
        if not isinstance(t, StructT) or t.kind != "struct":
            raise error(data.loc, f"digest data must be a struct, not {t}")
        obj = self.expr_as(data, t, "digest data")
        o = self.tmp("d")
        self.emit(f"{o} = {obj}")
        vals = [f"{o}.{pyfield(n)}" for n, _ in t.fields]
        self.note_digest(t, e.loc)
        return V(f"rt_digest(st, {t.name!r}, ({''.join(v + ', ' for v in vals)}))", VoidT())

    def _x_log_msg(self, e: A.Call) -> V | None:
        self.nargs(e, 1, 2)
        fmt = self.value(self.arg(e, 0))
        if not isinstance(fmt.type, StringT):
            raise error(self.arg(e, 0).loc, "log_msg needs a string format")
        args = "()"
        if len(e.args) == 2:
            a = self.arg(e, 1)
            items = a.items if isinstance(a, A.ListExpr) else [a]
            codes = []
            for it in items:
                v = self.value(it)
                codes.append(f"int({v.code})")
            args = "(" + "".join(c + ", " for c in codes) + ")"
        return V(f"rt_log_msg(st, {fmt.code}, {args})", VoidT())

    def _x_assert(self, e: A.Call) -> V | None:
        self.nargs(e, 1)
        c = self.expr_as(self.arg(e, 0), BoolT(), "assert condition")
        return V(f"rt_assert(st, {c}, {str(e.loc)!r})", VoidT())

    _x_assume = _x_assert

    def param_type(self, p: A.Param) -> Type:
        return self.resolve_type(p.type)


def _before(t: StructT, field: str, varbit: str) -> bool:
    """True when ``field`` comes before the varbit field (its shift depends on the length)."""
    names = [n for n, _ in t.fields]
    return names.index(field) < names.index(varbit)


def _after_width(t: StructT, varbit: str) -> int:
    names = [n for n, _ in t.fields]
    i = names.index(varbit)
    return sum((1 if isinstance(ft, BoolT) else ft.width) for _, ft in t.fields[i + 1:])  # type: ignore[union-attr]


__all__ = ["StatementCompiler", "lit", "ExternT"]
