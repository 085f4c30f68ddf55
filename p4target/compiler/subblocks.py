"""Controls instantiated in controls and parsers instantiated in parsers (P4_16 13.8,
14): ``C(args) c;`` then ``c.apply(...)``.

Each instance is compiled once per instance path (``MyIngress.c``, p4c's
fully-qualified name), so its tables, actions and externs get the P4Info names p4c
gives them (``MyIngress.c.t``) and two instances of one control are two sets of
tables, while one instance applied several times shares them. The instance's
parameters live in its locals object (``L.p_x``), which the caller creates for each
application: the arguments are copied in, the body runs with that ``L`` (tables and
actions take it, as for a top-level control), and ``out``/``inout`` arguments are
copied back afterwards, also when the body ends with ``exit``. A sub-parser runs its
states from ``start`` until accept on the caller's packet position; a parser error
ends the whole parse there (no copy-out, as p4c's inlined parser goes to reject).

Constructor parameters are bound at compile time: constants, or other instances
(``C(d) c0;`` with ``control C(...)(E d)``: ``d.apply`` is the instance passed in).
"""

from __future__ import annotations


from p4target.compiler import ir
from p4target.compiler.context import CompilerContext
from p4target.compiler.entities import SubBlock, qualify
from p4target.compiler.values import V
from p4target.compiler.naming import pyident
from p4target.compiler.scope import Scope, Sym
from p4target.compiler.types import ExternT, StackT, StructT, Type, VoidT
from p4target.frontend import ast as A
from p4target.frontend.source import Loc, error, unsupported

MAX_DEPTH = 16  # instance nesting; p4c forbids recursive instantiation
PARSER_STEP_LIMIT = 10_000
SUB_REJECT = "s__sub_reject"


class SubBlockCompiler:
    """Controls and parsers instantiated in another block, compiled once per instance
    path through the program compiler ``ctx`` (whose state they use and restore)."""

    def __init__(self, ctx: CompilerContext) -> None:
        self.ctx = ctx

    def sub_block_decl(self, d: A.Instance) -> A.ControlDecl | A.ParserDecl | None:
        """The control or parser ``d`` instantiates, or None for an extern instance."""
        if not isinstance(d.type, A.NamedType):
            return None
        name = d.type.name
        if name in self.ctx.controls:
            return self.ctx.controls[name]
        if name in self.ctx.parsers:
            return self.ctx.parsers[name]
        for decl in self.ctx.program.decls:
            if isinstance(decl, (A.ControlDecl, A.ParserDecl)) and decl.is_type and decl.name == name:
                raise error(d.loc, f"'{name}' is a {'control' if isinstance(decl, A.ControlDecl) else 'parser'} "
                            "type without a body; instantiate a control or parser that has one")
        return None

    def declare_sub_block(self, d: A.Instance, decl: A.ControlDecl | A.ParserDecl, parent: str,
                          scope: Scope, in_parser: bool) -> None:
        """Compile the instance ``d`` of ``decl`` declared in block ``parent`` (its path)."""
        kind = "control" if isinstance(decl, A.ControlDecl) else "parser"
        if (kind == "parser") != in_parser:
            raise error(d.loc, f"a {kind} cannot be instantiated in a {'parser' if in_parser else 'control'}; "
                        f"instantiate {kind}s in {kind}s")
        if decl.type_params:
            raise unsupported(d.loc, f"instantiating the generic {kind} {decl.name}<...>",
                              f"declare {decl.name} with concrete types")
        stack = self.ctx.sub_stack
        if decl.name in stack or len(stack) >= MAX_DEPTH:
            raise error(d.loc, f"{kind} {decl.name} is instantiated inside itself; P4 forbids recursion")
        path = qualify(parent, d.name, d.annotations)  # p4c's instance path, @name honoured
        ctor = self.ctor_bindings(d, decl, scope)
        saved = self.save_codegen()
        stack.append(decl.name)
        try:
            sub = self.gen_sub_control(decl, path, ctor) if isinstance(decl, A.ControlDecl) \
                else self.gen_sub_parser(decl, path, ctor)
        finally:
            stack.pop()
            self.restore_codegen(saved)
        scope.define(d.name, Sym("subblock", ExternT(decl.name), sub.entry, obj=sub), d.loc)

    def check_block(self, decl: A.ControlDecl | A.ParserDecl) -> None:
        """Compile ``decl`` on its own, as an instance without constructor arguments, only
        for the errors it raises (source_order.py); what it generates is thrown away."""
        inst = A.Instance(decl.name, decl.loc, [], A.NamedType(decl.loc, decl.name), [])
        self.ctx.checking_alone = True
        try:
            self.ctx.declare_sub_block(inst, decl, "", self.ctx.global_scope.child(), isinstance(decl, A.ParserDecl))
        finally:
            self.ctx.checking_alone = False

    # ------------------------------------------------------------------ state
    def save_codegen(self) -> tuple[object, ...]:
        return (self.ctx.out, self.ctx.ind, self.ctx.scope, self.ctx.control_prefix, self.ctx.params_used,
                self.ctx.pending_actions, getattr(self.ctx, "locals_inits", []), self.ctx.fn_kind, self.ctx.loops,
                self.ctx.locals_used, getattr(self.ctx, "state_funcs", {}), getattr(self.ctx, "state_lines", {}),
                getattr(self.ctx, "parser_inits", []), getattr(self.ctx, "parser_init_params", set()),
                self.ctx.action_outs, self.ctx.sub_parent_kind)

    def restore_codegen(self, s: tuple[object, ...]) -> None:
        (self.ctx.out, self.ctx.ind, self.ctx.scope, self.ctx.control_prefix, self.ctx.params_used, self.ctx.pending_actions,
         self.ctx.locals_inits, self.ctx.fn_kind, self.ctx.loops, self.ctx.locals_used, self.ctx.state_funcs,
         self.ctx.state_lines, self.ctx.parser_inits, self.ctx.parser_init_params, self.ctx.action_outs,
         self.ctx.sub_parent_kind) = s  # type: ignore[assignment]  # restores the tuple saved by the matching save, field for field

    def ctor_bindings(self, d: A.Instance, decl: A.ControlDecl | A.ParserDecl,
                      scope: Scope) -> list[tuple[str, Sym, Loc]]:
        """The constructor arguments of ``d`` as symbols of the instance's scope."""
        params = decl.ctor_params
        args = self.ctx.bind_args(A.Call(d.loc, A.Name(d.loc, decl.name), [], d.args), params)
        out = []
        for p, a in zip(params, args, strict=False):
            if a is None:
                if p.default is None:
                    raise error(d.loc, f"missing constructor argument '{p.name}' of {decl.name}")
                a = p.default
            t = self.ctx.resolve_type(p.type)
            if isinstance(t, ExternT):
                sym = scope.lookup(a.name) if isinstance(a, A.Name) else None
                if sym is None or sym.kind != "subblock":
                    raise unsupported(a.loc, f"this argument for constructor parameter '{p.name}' of type {t}",
                                      "pass the name of a control or parser instance declared before")
                if not self.signature_matches(sym.obj.decl, t.name):
                    raise error(a.loc, f"'{a.name}' is a {sym.obj.decl.name}, which does not have "  # type: ignore[attr-defined]  # a.value names the instance (a Name)
                                f"the parameters of {t.name}")
                out.append((p.name, sym, p.loc))
                continue
            saved = self.ctx.scope
            self.ctx.scope = scope
            v = self.ctx.value(a)
            self.ctx.scope = saved
            if v.const is None:
                raise error(a.loc, f"constructor argument '{p.name}' must be a compile-time constant")
            code = self.ctx.coerce(v, t, a.loc, f"constructor argument '{p.name}'")
            out.append((p.name, Sym("const", t, code, eval(code, {"__builtins__": {}})), p.loc))
        return out

    def signature_matches(self, decl: A.ControlDecl | A.ParserDecl, type_name: str) -> bool:
        """Whether ``decl`` can be passed where the control/parser type ``type_name`` is
        expected (same directions and types of parameters)."""
        if decl.name == type_name:
            return True
        want = next((x for x in self.ctx.program.decls if isinstance(x, (A.ControlDecl, A.ParserDecl))
                     and x.name == type_name), None)
        if want is None or type(want) is not type(decl) or len(want.params) != len(decl.params):
            return False
        return all(p.direction == q.direction and self.ctx.resolve_type(p.type) == self.ctx.resolve_type(q.type)
                   for p, q in zip(want.params, decl.params, strict=False))

    def sub_scope(self, decl: A.ControlDecl | A.ParserDecl, ctor: list[tuple[str, Sym, Loc]],
                  parser: bool) -> tuple[Scope, list[tuple[A.Param, Type, str]], list[tuple[str, str]]]:
        scope = self.ctx.global_scope.child()
        for name, sym, loc in ctor:
            scope.define(name, sym, loc)
        params, fields = [], []
        for p in decl.params:
            t = self.ctx.resolve_type(p.type)
            if isinstance(t, ExternT) and t.name == "packet_in" and parser:
                scope.define(p.name, Sym("packet_in", t, ""), p.loc)
                continue
            if isinstance(t, ExternT) and t.name == "packet_out" and self.ctx.checking_alone:
                scope.define(p.name, Sym("packet_out", t, ""), p.loc)  # a deparser, checked alone (its code unused)
                continue
            if isinstance(t, ExternT):
                raise unsupported(p.loc, f"a parameter of type {t} in an instantiated {decl.name}",
                                  "pass headers, structs or bit<W> values")
            if not p.direction:
                raise error(p.loc, f"parameter '{p.name}' of {decl.name} needs a direction (in, out or inout)")
            attr = f"p_{p.name}"
            scope.define(p.name, Sym("var", t, f"L.{attr}", obj="ro" if p.direction == "in" else None, param=True),
                         p.loc)
            params.append((p, t, attr))
            fields.append((attr, self.ctx.zero(t, p.loc)))
        return scope, params, fields

    # ------------------------------------------------------------------ controls
    def gen_sub_control(self, d: A.ControlDecl, path: str, ctor: list[tuple[str, Sym, Loc]]) -> SubBlock:
        self.ctx.pending_actions = []
        self.ctx.sub_parent_kind = "control"
        scope, params, fields = self.sub_scope(d, ctor, parser=False)
        self.ctx.scope = scope
        self.ctx.control_prefix = path
        self.ctx.params_used = set()
        locals_cls = self.ctx.block_locals(path, d.locals, scope, parser=False, extra=fields)
        inits = self.ctx.locals_inits
        for info, ascope in self.ctx.pending_actions:
            self.ctx.gen_action(info, ascope, [])
        self.ctx.pending_actions = []
        for t in d.locals:
            if isinstance(t, A.TableDecl):
                self.ctx.scope = scope
                self.ctx.gen_table(t, path, scope, [])
        fn = pyident("c", path)
        self.ctx.begin_fn("apply")
        self.ctx.scope = scope.child()
        self.ctx.emit(f"def {fn}(st, L):")
        self.ctx.indent()
        self.ctx.emit(f'"""control {d.name} as {path} ({d.loc})"""')
        for line in inits:
            self.ctx.emit(line)
        assert d.body is not None
        self.ctx.block_body(d.body.stmts)
        self.ctx.dedent()
        self.ctx.end_fn()
        return SubBlock("control", path, d, fn, locals_cls, params)

    # ------------------------------------------------------------------ parsers
    def gen_sub_parser(self, d: A.ParserDecl, path: str, ctor: list[tuple[str, Sym, Loc]]) -> SubBlock:
        self.ctx.sub_parent_kind = "parser"
        scope, params, fields = self.sub_scope(d, ctor, parser=True)
        self.ctx.scope = scope
        self.ctx.control_prefix = None
        self.ctx.params_used = set()
        self.ctx.fn_kind = "parser"
        locals_cls = self.ctx.block_locals(path, d.locals, scope, parser=True, extra=fields)
        self.ctx.parser_inits = self.ctx.locals_inits
        self.ctx.parser_init_params = set()
        if "start" not in {s.name for s in d.states}:
            raise error(d.loc, f"parser {d.name} has no 'start' state; add state start {{ ... }}")
        self.ctx.state_funcs = {s.name: pyident("s", path, s.name) for s in d.states}
        self.ctx.state_lines = {}
        if not self.ctx.sub_reject_defined:
            # reject in a sub-parser ends the whole parse (p4c inlines it as the
            # caller's reject): a state that raises, with parser_error left NoError
            self.ctx.build_lines += [f"    def {SUB_REJECT}(st, L, data, pos):",
                                 f"        raise ParserError({self.ctx.errors_by_name['NoError']}, pos)", ""]
            self.ctx.sub_reject_defined = True
        for s in d.states:
            self.ctx.scope = scope
            self.ctx.gen_state(s, [])
        return SubBlock("parser", path, d, self.ctx.state_funcs["start"], locals_cls, params)

    # ------------------------------------------------------------------ apply
    def sub_apply(self, node: ir.SubApply) -> V | None:
        """``c.apply(args)``: copy in, run, copy out (see the module docstring)."""
        sub = node.block
        lv = self.ctx.tmp("L")
        self.ctx.emit(f"{lv} = {sub.locals_cls}()" if sub.locals_cls else f"{lv} = None")
        outs = []
        for a, attr in zip(node.args, node.attrs, strict=True):
            if a.place is not None:
                outs.append((a.place, attr))
            if a.value is not None:
                code = self.ctx.emit_expr(a.value).code
                self.ctx.emit(f"{lv}.{attr} = {self.copied(code, a.type) if a.direction == 'inout' else code}")
        if sub.kind == "control":
            if not outs:
                return V(f"{sub.entry}(st, {lv})", VoidT())
            self.ctx.emit("try:")
            self.ctx.emit(f"    {sub.entry}(st, {lv})")
            self.ctx.emit("finally:")  # also when the control exits: spec 12.5
            self.ctx.indent()
            for place, attr in outs:
                self.ctx.store_node(place, f"{lv}.{attr}")
            self.ctx.dedent()
            return None
        f, n = self.ctx.tmp("f"), self.ctx.tmp("n")
        self.ctx.emit(f"{f}, {n} = {sub.entry}, 0")
        self.ctx.emit(f"while {f} is not None:")
        self.ctx.emit(f"    {f}, pos = {f}(st, {lv}, data, pos)")
        self.ctx.emit(f"    {n} += 1")
        self.ctx.emit(f"    if {n} > {PARSER_STEP_LIMIT}: raise ParserError({self.ctx.errors_by_name['ParserTimeout']}, pos)")
        for place, attr in outs:
            self.ctx.store_node(place, f"{lv}.{attr}")
        return None

    @staticmethod
    def copied(code: str, t: Type) -> str:
        return f"{code}.copy()" if isinstance(t, (StructT, StackT)) else code
