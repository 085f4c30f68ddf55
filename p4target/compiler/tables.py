"""Tables and extern instances: their ProgramModel entries (keys, action scopes,
defaults, const entries (table_entries.py), direct/profile externs) and the
generated helper that applies a table through the runtime and runs its action."""

from __future__ import annotations

import re

from p4target.compiler.context import CompilerContext
from p4target import model as M
from p4target.compiler.entities import (
    ActionInfo, InstanceInfo, TableInfo, annos_dict, anno_strs, name_anno, qualify, EXTERN_KINDS,
)
from p4target.compiler.expressions import expr_text
from p4target.compiler.naming import pyident
from p4target.compiler.scope import Scope, Sym
from p4target.compiler.table_entries import TableEntries
from p4target.compiler.types import (
    BitT, BoolT, EnumT, ErrorT, ExternT, Type,
)
from p4target.frontend import ast as A
from p4target.frontend.source import Loc, error, unsupported

# Tables with at most 4 actions dispatch with comparisons, skipping empty actions
# (False: always through the action tuple; the tests compare the two).
INLINE_DISPATCH = True

INLINE_ACTION_MAX_LINES = 12
_BINDING = re.compile(r"^p_\w+ = st\.\w+$")


def pasteable(body: list[str]) -> bool:
    """Lines of a generated function (8-space body) that can be pasted into another:
    no return, no docstring, no continuation, and no assignment of a whole block
    parameter (``p_hdr = st.hdr = ...``: pasted, it would rebind the caller's name)."""
    for x in body:
        if not x.startswith("        ") or "return" in x or '"""' in x or x.rstrip().endswith("\\"):
            return False
        y = x.strip()
        if "st." in y and not _BINDING.match(y) and re.search(r"(^|[^\w.])st\.\w+\s*=[^=]", y):
            return False
    return True


def register_cell(d: A.Instance, t: ExternT) -> BitT:
    """The type of a register's cells: ``bit<W>``/``int<W>``, a serializable enum's underlying one."""
    if not t.args:
        raise error(d.loc, "register needs its cell type: register<bit<W>>(size)")
    et = t.args[0]
    if isinstance(et, EnumT) and et.underlying is not None:  # cells hold the underlying value
        et = et.underlying
    if not isinstance(et, BitT):
        raise unsupported(d.loc, f"a register of {et}", "use register<bit<W>>")
    return et


def plain_key(e: A.Expr) -> bool:
    """A key p4c names after its text: a name, a field, an element or slice of one,
    ``isValid()`` of one, one masked with a constant (BMv2 takes the mask); any other
    expression needs an @name."""
    if isinstance(e, A.Name):
        return True
    if isinstance(e, A.Member):
        return plain_key(e.obj)
    if isinstance(e, A.Binary) and e.op == "&":
        return (plain_key(e.left) and isinstance(e.right, A.IntLit)) or (
            plain_key(e.right) and isinstance(e.left, A.IntLit))
    if isinstance(e, A.Index):
        return plain_key(e.obj)
    if isinstance(e, A.Slice):
        return plain_key(e.obj)
    if isinstance(e, A.Call) and isinstance(e.func, A.Member) and e.func.name == "isValid" and not e.args:
        return plain_key(e.func.obj)
    return False


def inline_body(a: ActionInfo) -> list[str] | None:
    """An action's generated body, unindented to the helper's level, to paste in a
    table helper after ``ap_<param>, ... = a``; None when it is long, returns, or
    is not in the shape gen_action gives it."""
    lines = a.lines
    if not lines or len(lines) < 3 or not lines[0].startswith("    def ") \
            or not lines[1].startswith('        """'):
        return None
    if any(p.direction for p in a.decl.params):
        return None
    body = [x for x in lines[2:] if x.strip()]
    if not body or len(body) > INLINE_ACTION_MAX_LINES or not pasteable(body):
        return None
    return [x[8:] for x in body]


class TableCompiler:
    """Tables and extern instances of the program compiler ``ctx``: their models, and the
    code that binds and applies them, emitted through ``ctx``."""

    def __init__(self, ctx: CompilerContext) -> None:
        self.ctx = ctx
        self.entries = TableEntries(ctx, self.action_with_args)  # const entries and their priorities

    def declare_instance(self, d: A.Instance, control: str | None, scope: Scope) -> None:
        t = self.ctx.resolve_type(d.type)
        if not isinstance(t, ExternT):
            raise error(d.loc, f"cannot instantiate {t}")
        kind = t.name
        if kind not in EXTERN_KINDS:
            raise unsupported(d.loc, f"extern '{kind}'", "use counter, meter, register, direct_counter, "
                              "direct_meter, action_profile or action_selector")
        name = qualify(control, d.name, d.annotations)
        info = InstanceInfo(kind, name, pyident("X", name))
        args = [a.value for a in d.args]

        def cint(i: int, what: str) -> int:
            if i >= len(args) or args[i] is None:
                raise error(d.loc, f"{kind} needs a {what} argument")
            return self.ctx.const_int(args[i], what)  # type: ignore[arg-type]  # checked not None just above

        def enum_name(i: int, enum: str) -> str:
            if i >= len(args) or args[i] is None:
                raise error(d.loc, f"{kind} needs a {enum} argument")
            return self.ctx.enum_member_name(args[i], enum)  # type: ignore[arg-type]  # as above

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
            et = register_cell(d, t)
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
        self.ctx.externs.append(info)
        scope.define(d.name, Sym("instance", t, info.pyname, obj=info), d.loc)
        self.ctx.bind_lines.append(f"{info.pyname} = rt.externs[{name!r}]")

    def gen_table(self, t: A.TableDecl, control: str, scope: Scope, pre: list[str]) -> None:
        name = qualify(control, t.name, t.annotations)
        info = TableInfo(name, t.name, pyident("t", name))
        scope.define(t.name, Sym("table", None, info.pyfunc, obj=info), t.loc)
        props = {p.name: p for p in t.props}
        known = {"key", "actions", "default_action", "entries", "size", "implementation", "counters",
                 "meters", "support_timeout", "largest_priority_wins", "priority_delta"}
        for p in t.props:
            if p.name not in known:
                self.ctx.warnings.append(f"{p.loc}: table property '{p.name}' is ignored by the embedded target")
        self.ctx.params_used = set()  # the key expressions' parameters, for the helper below
        out_before = len(self.ctx.out)
        keys, key_codes, sel_codes, key_types = self._table_keys(t, props)
        refs = self._table_actions(t, props, info)
        self._check_entry_actions(t, props, info, refs)
        default_name, default_args, default_const = self._table_default(t, props, info, refs)
        for _, ainfo in info.actions:
            if ainfo.p4name not in self.ctx.used_actions:
                self.ctx.used_actions.append(ainfo.p4name)
        self._table_model(t, props, info, name, keys, key_types, refs, default_name, default_args, default_const,
                          out_before)
        # generated code: binding, action tuple, helper
        tb = pyident("T", name)
        ta = pyident("TA", name)
        self.ctx.bind_lines.append(f"{tb} = rt.tables[{name!r}].apply")
        has_sel = any(k.match_kind == "selector" for k in keys)
        key = "(" + "".join(c + ", " for c in key_codes) + ")"
        sel = "(" + "".join(c + ", " for c in sel_codes) + ")" if has_sel else "None"
        info.model, info.key_code, info.sel_code = self.ctx.tables[-1], key, sel
        info.key_parts = key_codes
        info.sel_parts = sel_codes
        if not self.ctx.table_helpers:
            return  # the fast path applies tables in place
        self._gen_table_helper(t, info, name, pre, tb, ta, key, sel)

    def _table_keys(self, t: A.TableDecl, props: dict[str, A.TableProp]
                    ) -> tuple[list[M.KeyField], list[str], list[str], list[Type]]:
        """The table's key fields, the code of each key and selector value, the key types."""
        keys: list[M.KeyField] = []
        key_codes: list[str] = []
        sel_codes: list[str] = []
        key_types: list[Type] = []
        for k in (props["key"].value if "key" in props else []):
            v = self.ctx.value(k.expr)
            if k.match_kind not in self.ctx.match_kinds:
                raise error(k.loc, f"unknown match kind '{k.match_kind}'")
            if k.match_kind not in M.MATCH_KINDS:
                raise unsupported(k.loc, f"match kind '{k.match_kind}'", "use " + ", ".join(M.MATCH_KINDS))
            if k.match_kind == "lpm" and any(f.match_kind == "lpm" for f in keys):
                # as p4c-bm2-ss: a BMv2 table looks up at most one prefix
                raise error(k.loc, f"table '{t.name}' has a second lpm key; BMv2 takes one lpm key per table "
                            "(make the others ternary)")
            kt = v.type
            if isinstance(kt, EnumT) and kt.underlying is not None:
                kt = kt.underlying
            if isinstance(kt, BoolT):
                width, code = 1, f"int({v.code})"
            elif isinstance(kt, BitT):
                width, code = kt.width, (v.code if not kt.signed else f"({v.code} & {kt.mask:#x})")
            elif isinstance(kt, (ErrorT, EnumT)):  # p4c gives BMv2 errors and plain enums 32 bits
                width, code = 32, v.code
            else:
                raise error(k.expr.loc, f"table key '{expr_text(k.expr)}' has type {v.type}; keys must "
                            "be bit<W>, int<W>, bool or a serializable enum")
            if name_anno(k.annotations) is None and not plain_key(k.expr):
                raise error(k.loc, f"key {expr_text(k.expr)} is an expression; give it a control-plane "
                            "name with @name(\"...\") (p4c requires one)")
            kname = name_anno(k.annotations) or expr_text(k.expr)
            keys.append(M.KeyField(kname, width, k.match_kind, anno_strs(k.annotations)))
            key_types.append(kt if not isinstance(kt, (ErrorT, EnumT)) else BitT(32))
            (sel_codes if k.match_kind == "selector" else key_codes).append(code)
        return keys, key_codes, sel_codes, key_types

    def _table_actions(self, t: A.TableDecl, props: dict[str, A.TableProp], info: TableInfo) -> list[M.ActionRef]:
        """The table's action list (bound into ``info.actions``) and its action references."""
        refs: list[M.ActionRef] = []
        if "actions" not in props:
            raise error(t.loc, f"table {t.name} has no actions property; add actions = {{ ... }}")
        for item in props["actions"].value:
            call = item.call
            bound_args: list[A.Arg] = []
            if isinstance(call, A.Call):
                bound_args = call.args
                call = call.func
            if not isinstance(call, A.Name):
                raise error(item.loc, "expected an action name")
            sym = self.ctx.scope.lookup(call.name)
            if sym is None or sym.kind != "action":
                raise error(call.loc, f"'{call.name}' is not an action; declare the action before the table")
            ainfo = sym.obj
            assert isinstance(ainfo, ActionInfo)
            aloc = ainfo.decl.loc
            if aloc.file == t.loc.file and (aloc.line, aloc.col) > (t.loc.line, t.loc.col):
                raise error(call.loc, f"action '{call.name}' is used before its declaration at "
                            f"{aloc}; declare it before table {t.name}")
            self.bind_table_action(info, call.name, ainfo, bound_args, item.loc)
            if any(n == call.name for n, _ in info.actions):
                raise error(call.loc, f"action {call.name} is listed twice in table {t.name}")
            ad = annos_dict(item.annotations)
            scope_kind = "default_only" if "defaultonly" in ad else (
                "table_only" if "tableonly" in ad else "all")
            refs.append(M.ActionRef(ainfo.p4name, scope_kind, anno_strs(
                [a for a in item.annotations if a.name not in ("defaultonly", "tableonly")])))
            info.actions.append((call.name, ainfo))
        return refs

    def _check_entry_actions(self, t: A.TableDecl, props: dict[str, A.TableProp], info: TableInfo,
                             refs: list[M.ActionRef]) -> None:
        """The entries come after the key and run no ``@defaultonly`` action (p4c checks
        these before the default action)."""
        if "entries" not in props:
            return
        ent_prop = props["entries"]
        if "key" in props and t.props.index(ent_prop) < t.props.index(props["key"]):
            raise error(ent_prop.loc, f"the entries of table {t.name} come before its key; move them after "
                        "the key")
        for ent in ent_prop.value:
            call = ent.action.func if isinstance(ent.action, A.Call) else ent.action
            if not isinstance(call, A.Name):
                continue
            idx = next((i for i, (n, _) in enumerate(info.actions) if n == call.name), None)
            if idx is not None and refs[idx].scope == "default_only":
                raise error(ent.loc, f"action {call.name} is @defaultonly and cannot be used in an entry")

    def _table_default(self, t: A.TableDecl, props: dict[str, A.TableProp], info: TableInfo,
                       refs: list[M.ActionRef]) -> tuple[str, tuple[int, ...], bool]:
        """The default action's name, arguments and const-ness (NoAction without one)."""
        default_name, default_const = None, False
        default_args: tuple[int, ...] = ()
        if "default_action" in props:
            p = props["default_action"]
            default_const = p.is_const
            default_name, default_args, loc = self.action_with_args(p.value, info, p.loc)
            idx = info.action_index(default_name, loc)
            if refs[idx].scope == "table_only":
                raise error(loc, f"action {default_name} is @tableonly and cannot be the default action")
            default_name = info.actions[idx][1].p4name
        else:
            noact = [a for n, a in info.actions if a.p4name == "NoAction"]
            if not noact:
                sym = self.ctx.global_scope.lookup("NoAction")
                if sym is None or sym.kind != "action":
                    raise error(t.loc, f"table {t.name} has no default_action and NoAction is not declared")
                refs.append(M.ActionRef("NoAction", "default_only"))
                info.actions.append(("NoAction", sym.obj))
            default_name = "NoAction"
        return default_name, default_args, default_const

    def _table_model(self, t: A.TableDecl, props: dict[str, A.TableProp], info: TableInfo, name: str,
                     keys: list[M.KeyField], key_types: list[Type], refs: list[M.ActionRef], default_name: str,
                     default_args: tuple[int, ...], default_const: bool, out_before: int) -> None:
        """The other properties (size, implementation, direct resources, timeout, const
        entries), checked; the table's model appended to ``self.ctx.tables``."""
        size = 1024
        if "size" in props:
            size = self.ctx.const_int(props["size"].value, "table size")
        impl = self.instance_prop(props.get("implementation"), ("action_profile", "action_selector"), name)
        counters = self.instance_prop(props.get("counters"), ("direct_counter",), name)
        meters = self.instance_prop(props.get("meters"), ("direct_meter",), name)
        has_sel = any(k.match_kind == "selector" for k in keys)
        impl_kind = next((x.kind for x in self.ctx.externs if x.name == impl), None)
        if has_sel and impl is None:  # as p4c: no selector hashes them, the selector keys go
            kept = [i for i, k in enumerate(keys) if k.match_kind != "selector"]
            keys[:], key_types[:] = [keys[i] for i in kept], [key_types[i] for i in kept]
            has_sel = False
        if has_sel and impl_kind != "action_selector":
            raise error(t.loc, f"table {t.name} has a selector key but no action_selector "
                        "implementation; add implementation = <an action_selector>")
        if impl_kind == "action_selector" and not has_sel:
            raise error(t.loc, f"table {t.name} uses an action_selector but has no selector key; "
                        "add the fields to hash as 'selector' keys")
        timeout = False
        if "support_timeout" in props:
            tv = self.ctx.value(props["support_timeout"].value)
            timeout = bool(tv.const)
        entries = None
        if "entries" in props:
            entries = self.entries.const_entries(props, keys, key_types, info, t)
        info.keys_pure = len(self.ctx.out) == out_before
        self.ctx.tables.append(M.Table(
            name=name, keys=tuple(keys), actions=tuple(refs), default_action=default_name,
            default_args=tuple(default_args), default_is_const=default_const,
            const_entries=entries, size=size, implementation=impl, direct_counter=counters,
            direct_meter=meters, supports_idle_timeout=timeout, annotations=anno_strs(t.annotations),
            location=M.SourceLocation(t.loc.file, t.loc.line, t.loc.col)))

    def _gen_table_helper(self, t: A.TableDecl, info: TableInfo, name: str, pre: list[str], tb: str, ta: str,
                          key: str, sel: str) -> None:
        """The table's apply helper of the general path: look up, then run the action."""
        key_params = self.ctx.params_used
        self.ctx.begin_fn("apply")
        self.ctx.params_used |= key_params
        self.ctx.emit(f"{ta} = ({''.join(a.pyfunc + ', ' for _, a in info.actions)})")
        self.ctx.emit(f"def {info.pyfunc}(st, L):")
        self.ctx.indent()
        self.ctx.emit(f'"""table {name} ({t.loc})"""')
        for line in pre:
            self.ctx.emit(line)
        self.ctx.emit(f"i, a, h = {tb}(st, {key}, {sel})")
        # dispatch: a chain of comparisons for a few actions (empty ones skipped),
        # else the action tuple
        acts = [(i, a) for i, (_, a) in enumerate(info.actions)]
        live = [(i, a) for i, a in acts if not a.empty or info.actions[i][0] in info.bound]
        if (len(acts) <= 4 and INLINE_DISPATCH) or info.bound:
            for j, (i, a) in enumerate(live):
                cond = "" if len(live) == len(acts) and j == len(live) - 1 and j > 0 else f" i == {i}"
                kw = "if" if j == 0 else ("else" if not cond else "elif")
                self.ctx.emit(f"{kw}{cond}:")
                if info.actions[i][0] in info.bound:
                    self.ctx.indent()
                    self.ctx.call_stmt(self.bound_action_call(info, i, "a"))
                    self.ctx.dedent()
                    continue
                body = inline_body(a)
                if body is not None:
                    if a.decl.params:
                        self.ctx.emit("    " + "".join(f"ap_{p.name}, " for p in a.decl.params) + "= a")
                    for line in body:
                        self.ctx.emit("    " + line)
                        # keep the action's parameter bindings (end_fn drops unused ones)
                        x = line.strip()
                        if x.startswith("p_") and " = st." in x:
                            self.ctx.params_used.add(x.split(" = ")[0])
                else:
                    self.ctx.emit(f"    {a.pyfunc}(st, L, *a)" if a.decl.params else f"    {a.pyfunc}(st, L)")
        else:
            self.ctx.emit(f"{ta}[i](st, L, *a)")
        self.ctx.emit("return i, h")
        self.ctx.dedent()
        start = len(self.ctx.build_lines)
        self.ctx.end_fn()
        info.lines = self.ctx.build_lines[start:]

    def bind_table_action(self, info: TableInfo, name: str, ainfo: ActionInfo, args: list[A.Arg],
                          loc: Loc) -> None:
        """An action list item: its parameters with a direction must be bound there
        (``a(hdr.f)``), the directionless ones never are (P4_16 14.2.1.2). The bound
        expressions are kept and evaluated each time the action runs."""
        params = ainfo.decl.params
        directional = [p for p in params if p.direction]
        if any(p.direction for p in params[len(directional):]):
            raise error(ainfo.decl.loc, f"action {name}: directionless parameters must come last")
        if any(a.name for a in args):
            raise unsupported(loc, "named arguments in a table's action list", "pass them in order")
        if len(args) > len(directional):
            what = (f"the directionless parameter '{params[len(directional)].name}'"
                    if len(directional) < len(params) else "more parameters than it has")
            raise error(loc, f"action {name}: an action list cannot bind {what}; the control plane gives "
                        "directionless parameters")
        if len(args) < len(directional):
            raise error(loc, f"action {name}: parameter '{directional[len(args)].name}' has a direction "
                        f"and must be bound here, e.g. {name}(hdr.some_field)")
        if args:
            for a in args:
                if a.value is None:
                    raise unsupported(a.loc, "a '_' argument in a table's action list", "pass a value")
                if any(isinstance(n, A.Call) and isinstance(n.func, A.Member) and n.func.name == "apply"
                       for n in A.walk(a.value)):
                    raise error(a.loc, "a table applied in an action's argument; BMv2 cannot do that (p4c-bm2-ss "
                                "refuses it): apply the table before")
            info.bound[name] = [a.value for a in args]  # type: ignore[misc]  # '_' arguments refused just above

    def bound_action_call(self, info: TableInfo, i: int, cp: str, signed: bool = False) -> A.Call:
        """The call that runs action ``i`` of the table with its bound arguments and
        the control plane's values (the tuple ``cp``) for the directionless ones
        (``signed``: make int<W> values signed here, not in the action's function)."""
        name, ainfo = info.actions[i]
        loc = ainfo.decl.loc
        args = [A.Arg(None, e, e.loc) for e in info.bound[name]]
        cps = [p for p in ainfo.decl.params if not p.direction]
        if cps:
            names = [self.ctx.tmp("cp") for _ in cps]
            self.ctx.emit("".join(n + ", " for n in names) + f"= {cp}")
            for p, n in zip(cps, names, strict=False):
                t = self.ctx.resolve_type(p.type)
                if signed and isinstance(t, BitT) and t.signed:
                    h = 1 << (t.width - 1)
                    self.ctx.emit(f"{n} = (({n} & {t.mask:#x}) ^ {h}) - {h}")
                self.ctx.scope.define("$" + n, Sym("var", t, n, obj="ro"), loc)
                args.append(A.Arg(None, A.Name(loc, "$" + n), loc))
        return A.Call(loc, A.Name(loc, name), [], args)

    def inline_table_apply(self, info: TableInfo) -> bool:
        """``t.apply();`` as a statement: paste the helper's body (without its final
        ``return i, h``) instead of calling it, when INLINE_DISPATCH and the body has no
        other return. Returns False when the caller should emit the call."""
        lines = info.lines
        if lines and lines[0].startswith("    TA_"):
            lines = lines[1:]  # the action tuple, defined before the helper
        if not INLINE_DISPATCH or not lines or len(lines) < 4 or not lines[0].startswith("    def ") \
                or not lines[1].startswith('        """'):
            return False
        body = [x for x in lines[2:] if x.strip()]
        if not body or body[-1] != "        return i, h":
            return False
        body.pop()
        if not pasteable(body):
            return False
        for x in body:
            self.ctx.emit(x[8:])
            y = x.strip()
            if y.startswith("p_") and " = st." in y:
                self.ctx.params_used.add(y.split(" = ")[0])
        return True

    def instance_prop(self, p: A.TableProp | None, kinds: tuple[str, ...], table: str) -> str | None:
        """The instance a table property names; an instance written in place
        (``implementation = action_profile(128)``) is declared here, named as p4c names
        it: after the property's @name, else after the table."""
        if p is None:
            return None
        e = p.value
        if isinstance(e, A.Call) and isinstance(e.func, A.Name) and e.func.name in kinds:
            inst = A.Instance(table, e.loc, p.annotations, A.NamedType(e.func.loc, e.func.name), e.args)
            self.declare_instance(inst, None, self.ctx.scope.child())
            return qualify(None, table, p.annotations)
        if not isinstance(e, A.Name):
            raise unsupported(p.loc, f"this {'/'.join(kinds)} expression", "name an instance or construct one here")
        sym = self.ctx.scope.lookup(e.name)
        if sym is None or sym.kind != "instance" or sym.obj.kind not in kinds:
            raise error(e.loc, f"'{e.name}' is not a {' or '.join(kinds)} instance")
        return sym.obj.name

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
        bound = info.bound.get(name, [])
        if bound and len(args) == len(bound) + len(params) and not any(a.name for a in args):
            # the bound arguments again, which must be the action list's (P4_16 14.2.1.3)
            for a, b in zip(args, bound, strict=False):
                if expr_text(a.value) != expr_text(b):
                    raise error(a.loc, f"action {name}: '{expr_text(a.value)}' must be the action list's "
                                f"'{expr_text(b)}'")
            args = args[len(bound):]
        if isinstance(e, A.Name) and params:
            raise error(aloc, f"action {name} needs {len(params)} argument(s)")
        if len(args) != len(params):
            raise error(aloc, f"action {name} takes {len(params)} argument(s), got {len(args)}")
        if any(a.name for a in args):
            byname = {a.name: a for a in args}
            missing = [p.name for p in params if p.name not in byname]
            if missing or len(byname) != len(args):
                raise error(aloc, f"action {name}: give every parameter once by name "
                            f"({', '.join(p.name for p in params)})")
            args = [byname[p.name] for p in params]
        vals = []
        for p, a in zip(params, args, strict=False):
            pt = self.ctx.resolve_type(p.type)
            code = self.ctx.expr_as(a.value, pt, f"argument '{p.name}'")  # type: ignore[arg-type]  # as above: action list arguments are values
            try:
                val = eval(code, {"__builtins__": {}})  # literal expected
            except Exception:
                raise error(a.loc, f"argument '{p.name}' must be a compile-time constant") from None
            if isinstance(pt, BitT) and pt.signed:
                val &= pt.mask
            vals.append(int(val))
        return name, tuple(vals), aloc
