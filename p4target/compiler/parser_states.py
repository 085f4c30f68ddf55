"""The parser of a V1Switch program as generated code: one function per state
(``gen_state``), its ``select`` as a chain of ``if`` on the keys (``gen_select``,
``keyset_cond``), and the parser's value sets (``declare_value_set``)."""

from __future__ import annotations

from p4target import model as M
from p4target.compiler import ir
from p4target.compiler.context import CompilerContext
from p4target.compiler.emit_expr import as_unsigned
from p4target.compiler.entities import anno_strs, qualify
from p4target.compiler.expressions import expr_text
from p4target.compiler.naming import pyident
from p4target.compiler.scope import Scope, Sym
from p4target.compiler.subblocks import SUB_REJECT
from p4target.compiler.types import BitT, BoolT, EnumT, ErrorT, IntT, StructT, Type
from p4target.compiler.values import V
from p4target.frontend import ast as A
from p4target.frontend.source import Loc, error


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



class ParserCompiler:
    """The parser states of the program compiler ``ctx`` (its ``state_funcs``,
    ``state_lines``, ``parser_start``...), emitted through it. The fast compiler
    generates its parser with ``FastParser`` (fast_parser.py), which uses
    ``case_conds`` of this one."""

    def __init__(self, ctx: CompilerContext) -> None:
        self.ctx = ctx

    def gen_parser(self, d: A.ParserDecl) -> None:
        scope = self.ctx.block_scope(d)
        pre = self.ctx.param_bindings(d.params, ["packet_in", "hdr", "meta", "sm"], scope)
        self.ctx.scope = scope
        self.ctx.params_used = set()
        locals_cls = self.ctx.block_locals(d.name, d.locals, scope, parser=True)
        self.ctx.parser_inits = self.ctx.locals_inits
        self.ctx.parser_init_params = self.ctx.params_used  # bound in the start state
        names = {s.name for s in d.states}
        for s in d.states:
            if s.name in ("accept", "reject"):
                raise error(s.loc, f"state '{s.name}' is predefined; choose another name")
        if "start" not in names:
            raise error(d.loc, f"parser {d.name} has no 'start' state; add state start {{ ... }}")
        if not reaches_an_end(d):
            raise error(d.loc, f"parser {d.name} never reaches accept or reject from start; add a transition "
                        "to accept")
        self.ctx.state_funcs = {s.name: pyident("s", d.name, s.name) for s in d.states}
        self.ctx.state_lines = {}
        for s in d.states:
            self.gen_state(s, pre)
        self.ctx.parser_start = self.ctx.state_funcs["start"]
        self.ctx.parser_locals = locals_cls
        self.ctx.scope = self.ctx.global_scope

    def state_target(self, name: str, loc: Loc) -> str:
        if name == "accept":
            return "None"
        if name == "reject" and self.ctx.sub_parent_kind == "parser":
            return SUB_REJECT
        if name == "reject":
            self.ctx.warnings.append(f"{loc}: transition to reject; like BMv2, the packet goes "
                                 "on to ingress with parser_error unchanged (use verify() to set an error)")
            return "None"
        if name not in self.ctx.state_funcs:
            raise error(loc, f"unknown parser state '{name}'; declare it or use accept/reject")
        return self.ctx.state_funcs[name]

    def gen_state(self, s: A.ParserState, pre: list[str]) -> None:
        self.ctx.begin_fn("parser")
        self.ctx.emit(f"def {self.ctx.state_funcs[s.name]}(st, L, data, pos):")
        self.ctx.indent()
        self.ctx.emit(f'"""state {s.name} ({s.loc})"""')
        for line in pre:
            self.ctx.emit(line)
        if s.name == "start":
            self.ctx.params_used |= self.ctx.parser_init_params
            self.ctx.emit_lines(self.ctx.parser_inits)
        saved = self.ctx.scope
        self.ctx.scope = saved.child()
        self.ctx.stmts(s.stmts)
        tr = s.transition
        if tr is None:
            raise error(s.loc, f"state {s.name} has no transition; add 'transition accept;'")
        if tr.state is not None:
            self.ctx.emit(f"return {self.state_target(tr.state, tr.loc)}, pos")
        else:
            self.gen_select(tr)
        self.ctx.scope = saved
        self.ctx.dedent()
        start = len(self.ctx.build_lines)
        self.ctx.end_fn()
        self.ctx.state_lines[s.name] = self.ctx.build_lines[start:]

    def gen_select(self, tr: A.Transition) -> None:
        keys = [self.ctx.value(k) for k in tr.select or []]
        kvars = []
        for k, ke in zip(keys, tr.select or [], strict=False):
            if not isinstance(k.type, (BitT, BoolT, EnumT, ErrorT, IntT)):
                raise error(ke.loc, f"cannot select on a value of type {k.type}")
            kv = self.ctx.tmp("k")
            self.ctx.emit(f"{kv} = {k.code}")
            kvars.append((kv, k))
        has_default = False
        for case in tr.cases:
            items = case.keyset.items if isinstance(case.keyset, A.ListExpr) else [case.keyset]
            if len(items) == 1 and isinstance(items[0], A.DefaultExpr):
                self.ctx.emit(f"return {self.state_target(case.state, case.loc)}, pos")
                has_default = True
                break
            conds = self.case_conds(case, kvars)
            cond = " and ".join(conds) if conds else "True"
            self.ctx.emit(f"if {cond}: return {self.state_target(case.state, case.loc)}, pos")
        if not has_default:
            self.ctx.emit(f"raise ParserError({self.ctx.errors_by_name['NoMatch']}, pos)")

    def keyset_cond(self, item: A.Expr, kv: str, t: Type) -> str | None:
        vs = None if isinstance(item, (A.DefaultExpr, A.Mask, A.Range)) else self.value_set_sym(item)
        if vs is not None:
            if vs.obj != 1:
                raise error(item.loc, f"value set '{expr_text(item)}' has {vs.obj} fields; select on as many keys")
            return f"{vs.code}(({kv},))"
        key = self.ctx.check_keyset(item, t, select=True)
        if isinstance(key, ir.AnyKey):
            return None
        if isinstance(key, ir.MaskKey):
            v, m = as_unsigned(key.value, t), as_unsigned(key.mask, t)
            return f"{kv} & {m:#x} == {v & m:#x}"
        if isinstance(key, ir.RangeKey):
            return f"{key.lo} <= {kv} <= {key.hi}"  # a signed range compares the signed values
        if isinstance(t, BitT) and not t.signed and t.width > 4:
            return f"{kv} == {int(key.const):#x}"  # type: ignore[arg-type]  # readable: 0x86dd rather than 34525
        return f"{kv} == {key.const!r}"

    def declare_value_set(self, d: A.ValueSetDecl, block: str, scope: Scope) -> None:
        """``value_set<T>(size) vs;``: its members live in the runtime (runtime/value_sets.py)."""
        t = self.ctx.resolve_type(d.type)
        fields: list[M.Field] = []

        def leaves(t: Type, name: str, annos: dict[str, str], loc: Loc) -> None:
            if isinstance(t, StructT) and t.kind == "struct":
                decl = next(x for x in self.ctx.program.decls if isinstance(x, A.StructLike) and x.name == t.name)
                for f, (n, ft) in zip(decl.fields, t.fields, strict=True):
                    leaves(ft, n, anno_strs(f.annotations), f.loc)
                return
            match = {k: v for k, v in annos.items() if k == "match"}
            fields.append(M.Field(name, self.ctx.wire_width(t, loc), match))

        leaves(t, "", {}, d.loc)
        size = self.ctx.const_int(d.size, "value_set size")
        if size < 1:
            raise error(d.size.loc, f"value_set size must be at least 1, not {size}")
        name = qualify(block, d.name, d.annotations)
        py = pyident("VS", name)
        self.ctx.bind_lines.append(f"{py} = rt.value_sets[{name!r}].match")
        if all(v.name != name for v in self.ctx.value_sets):
            self.ctx.value_sets.append(M.ValueSet(name, tuple(fields), size))
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
            sym = self.ctx.scope.lookup(item.name)
            if sym is not None and sym.kind == "value_set":
                return sym
        return None
