"""The fast path's actions and tables (``FastTables``, an object
``FastCompiler`` (``fast_compiler``) composes): an action called directly, or chosen by a
table, is compiled where it runs with its parameters in locals (no action
function); a table is looked up in place in the structures
``TableRuntime.fast_lookup`` gives (exact, single LPM, exact+LPM, with an action
profile or selector through the entry's live member slots, range-less ternary),
through ``peek`` when it has a direct counter (counted at the end), or through
``T(None, key, sel)`` otherwise.
"""

from __future__ import annotations

from p4target.compiler.context import FastContext
from p4target.compiler.values import V
from p4target.compiler.fast_errors import NoFast
from p4target.compiler.fast_places import has_return
from p4target.compiler.naming import pyident
from p4target.compiler.scope import Sym
from p4target.compiler.types import BitT, ObjT


class FastTables:
    """Action calls and table applications of the fast compiler ``ctx``, emitted
    through it into its ``out`` (its ``binds`` gets the runtime structures they read).
    ``FastCallEmitter`` (fast_calls.py) hands the action calls it compiles in place
    to ``inline_action`` and the tables it applies to ``apply_table``."""

    def __init__(self, ctx: FastContext) -> None:
        self.ctx = ctx

    def inline_action(self, info, bound: dict[str, str]) -> None:
        """The action's body, compiled here with its parameters in ``bound`` locals."""
        d = info.decl
        saved = (self.ctx.scope, self.ctx.fn_kind, self.ctx.action_outs)
        ascope = info.scope.child()
        for p in d.params:
            ascope.define(p.name, Sym("var", self.ctx.resolve_type(p.type), bound[p.name],
                                      obj="ro" if p.direction in ("", "in") else None), p.loc)
        self.ctx.scope, self.ctx.fn_kind, self.ctx.action_outs = ascope, "action", []
        if has_return(d.body.stmts):
            self.ctx.emit("while True:")
            self.ctx.indent()
            self.ctx.block_body(d.body.stmts)
            self.ctx.emit("break")
            self.ctx.dedent()
        else:
            self.ctx.block_body(d.body.stmts)
        self.ctx.scope, self.ctx.fn_kind, self.ctx.action_outs = saved

    def apply_table(self, info, after_terms: bool) -> V:
        if after_terms:
            # something in this statement is evaluated before the apply: pasting the
            # apply before the statement would change the order
            raise NoFast("table applied inside an expression after other terms")
        r = self.ctx.tmp("tr")
        result = V(r, ObjT("tableresult", info.name), None, Sym("tableresult", None, r, obj=info))
        mt = info.model
        if mt is None or mt.direct_meter or not info.keys_pure:
            self.ctx.emit("return None")  # a direct meter runs inside apply
            return result
        if mt.direct_counter:
            peek = pyident("TP", info.name)
            line = f"{peek} = rt.tables[{info.name!r}].peek"
            if line not in self.ctx.binds:
                self.ctx.binds.append(line)
            self.ctx.direct_counts = True
            self.ctx.emit(f"({r}_i, {r}_a, {r}_h), {r}_c = {peek}({info.key_code}, {info.sel_code})")
            self.ctx.emit(f"if {r}_c is not None: _dn.append({r}_c)")  # counted at the end
        else:
            self.lookup_in_place(info, r)
        acts = [(i, a) for i, (_, a) in enumerate(info.actions)]
        live = [(i, a) for i, a in acts if not a.empty]
        for j, (i, a) in enumerate(live):
            if len(acts) > 1:
                last = len(live) == len(acts) and j == len(live) - 1 and j > 0
                self.ctx.emit("else:" if last else f"{'if' if j == 0 else 'elif'} {r}_i == {i}:")
                self.ctx.indent()
            if info.actions[i][0] in info.bound:  # arguments bound by the action list
                saved = self.ctx.scope  # (the call's names are temporaries: reused later)
                self.ctx.scope = saved.child()
                self.ctx.call_stmt(self.ctx.bound_action_call(info, i, f"{r}_a", signed=True))
                self.ctx.scope = saved
                if len(acts) > 1:
                    self.ctx.dedent()
                continue
            bound = {p.name: self.ctx.tmp("ap") for p in a.decl.params}
            if bound:
                self.ctx.emit("".join(v + ", " for v in bound.values()) + f"= {r}_a")
            for p in a.decl.params:
                t = self.ctx.resolve_type(p.type)
                if isinstance(t, BitT) and t.signed:  # control-plane values are unsigned
                    h = 1 << (t.width - 1)
                    self.ctx.emit(f"{bound[p.name]} = (({bound[p.name]} & {t.mask:#x}) ^ {h}) - {h}")
            self.inline_action(a, bound)
            if len(acts) > 1:
                self.ctx.dedent()
        return result

    def lookup_in_place(self, info, r: str) -> None:
        """``r_i, r_a, r_h`` = the table's result. A table without direct counter or
        meter whose key is all exact, or one LPM field, is looked up here in the
        structures ``TableRuntime.fast_lookup`` gives (no call of ``apply``, no key
        tuple for LPM), as is one without action profile whose key is ternary/optional
        without range (a scan of the entries in match order); with an action profile
        or selector the entry's ``slots`` give the result (``select_in_place``). Any
        other table calls ``apply``."""
        mt = info.model
        kinds = [k.match_kind for k in mt.match_keys]
        direct = mt.direct_counter is not None or mt.direct_meter is not None
        plain = mt.implementation is None and not direct
        profile = mt.implementation is not None and not direct
        kind = None
        if (plain or profile) and all(k == "exact" for k in kinds):
            kind = "exact"
        elif (plain or profile) and kinds == ["lpm"]:
            kind = "lpm"
        elif (plain or profile) and kinds.count("lpm") == 1 and all(k in ("exact", "lpm") for k in kinds):
            kind = "lpm_exact"
        elif plain and any(k in ("ternary", "optional") for k in kinds) and "range" not in kinds:
            kind = "scan"  # (TableRuntime's scan engine, with no range to check)
        if kind is None:
            self.ctx.emit(f"{r}_i, {r}_a, {r}_h = {pyident('T', info.name)}(None, {info.key_code}, {info.sel_code})")
            return
        look, obj = pyident("TL", info.name), pyident("TO", info.name)
        for line in (f"{obj} = rt.tables[{info.name!r}]",
                     f"_lk, {look} = {obj}.fast_lookup()",
                     f"if _lk != {kind!r}: raise LookupError('table {info.name}: lookup ' + _lk)"):
            if line not in self.ctx.binds:
                self.ctx.binds.append(line)
        if kind == "exact":
            e = self.ctx.tmp("te")
            self.ctx.emit(f"{e} = {look}({info.key_code})")
            if profile:
                self.ctx.emit(f"if {e} is None:")
                self.ctx.emit(f"    {r}_i, {r}_a, {r}_h = {obj}._default")
                self.ctx.emit("else:")
                self.ctx.indent()
                self.select_in_place(info, r, e, obj)
                self.ctx.dedent()
                return
            self.ctx.emit(f"{r}_i, {r}_a, {r}_h = {obj}._default if {e} is None else {e}.result")
            return
        if kind == "scan":  # the key packed as match_engines.ScanIndex.lookup packs it
            k, e = self.ctx.tmp("tk"), self.ctx.tmp("te")
            after = sum(km.bitwidth for km in mt.match_keys)
            parts = []
            for code, km in zip(info.key_parts, mt.match_keys, strict=False):
                after -= km.bitwidth
                parts.append(f"({code} << {after})" if after else f"({code})")
            # an empty table (fabric.p4's dscp_priority with no QoS map) packs no key:
            # reading it has no effect, and its value cannot change the default
            self.ctx.emit(f"if {look}:")
            self.ctx.emit(f"    {k} = {' | '.join(parts)}")
            self.ctx.emit(f"    for {e} in {look}:")
            self.ctx.emit(f"        if {k} & {e}.mask == {e}.value:")
            self.ctx.emit(f"            {r}_i, {r}_a, {r}_h = {e}.result")
            self.ctx.emit("            break")
            self.ctx.emit("    else:")
            self.ctx.emit(f"        {r}_i, {r}_a, {r}_h = {obj}._default")
            self.ctx.emit("else:")
            self.ctx.emit(f"    {r}_i, {r}_a, {r}_h = {obj}._default")
            return
        k, e, s, b = self.ctx.tmp("tk"), self.ctx.tmp("te"), self.ctx.tmp("ts"), self.ctx.tmp("tb")
        pos = kinds.index("lpm")
        self.ctx.emit(f"{k} = {info.key_parts[pos]}")
        probe = f"{k} >> {s}"
        if kind == "lpm_exact":  # match_engines.LpmIndex._slot: (exact values, shifted)
            rest = self.ctx.tmp("tx")
            self.ctx.emit(f"{rest} = ({''.join(c + ', ' for i, c in enumerate(info.key_parts) if i != pos)})")
            probe = f"({rest}, {probe})"
        self.ctx.emit(f"for {s}, {b} in {look}:")
        self.ctx.emit(f"    {e} = {b}.get({probe})")
        self.ctx.emit(f"    if {e} is not None:")
        if profile:
            self.ctx.indent()
            self.ctx.indent()
            self.select_in_place(info, r, e, obj)
            self.ctx.dedent()
            self.ctx.dedent()
        else:
            self.ctx.emit(f"        {r}_i, {r}_a, {r}_h = {e}.result")
        self.ctx.emit("        break")
        self.ctx.emit("else:")
        self.ctx.emit(f"    {r}_i, {r}_a, {r}_h = {obj}._default")

    def select_in_place(self, info, r: str, e: str, obj: str) -> None:
        """The result of entry ``e`` of a table with an action profile: its ``slots``
        (kept up to date by the runtime) chosen from as ``ActionProfile.select``
        chooses: one slot is it, several are ``hash(selector key) % n``, none is the
        default (a group without live member acts as a miss)."""
        mt = info.model
        sl, sn = self.ctx.tmp("sl"), self.ctx.tmp("sn")
        self.ctx.emit(f"{sl} = {e}.slots")
        ext = next((x.extern for x in self.ctx.externs if x.name == mt.implementation), None)
        if ext is None or ext.kind != "action_selector" or not mt.selector_keys:
            self.ctx.emit(f"{r}_i, {r}_a, {r}_h = {sl}[0] if {sl} else {obj}._default")
            return
        widths = [k.bitwidth for k in mt.selector_keys]
        data, nbits = "", 0
        for code, w in zip(info.sel_parts, widths, strict=False):
            data = f"({code})" if not data else f"({data} << {w} | ({code}))"
            nbits += w
        if ext.algorithm == "identity":  # hashes._identity_of_bits, for this width
            pad = -nbits % 8
            extra = nbits + pad - 64
            h = f"({data} << {pad})" if pad else data
            if extra > 0:
                h = f"({h} >> {extra})"
        else:
            hb = pyident("TH", info.name)
            line = f"{hb} = {obj}.profile._hash_bits"
            if line not in self.ctx.binds:
                self.ctx.binds.append(line)
            h = f"{hb}({data}, {nbits})"
        self.ctx.emit(f"{sn} = len({sl})")
        self.ctx.emit(f"if {sn} == 1:")
        self.ctx.emit(f"    {r}_i, {r}_a, {r}_h = {sl}[0]")
        self.ctx.emit(f"elif {sn}:")
        self.ctx.emit(f"    {r}_i, {r}_a, {r}_h = {sl}[{h} % {sn}]")
        self.ctx.emit("else:")
        self.ctx.emit(f"    {r}_i, {r}_a, {r}_h = {obj}._default")
