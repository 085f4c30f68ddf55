"""A table's const entries (``entries = { ... }``) in its ProgramModel: each entry's
keysets checked against the key's types and matched as the key's kind takes them,
its action and arguments, and the priorities p4c gives them (``priority=``,
``largest_priority_wins``, ``priority_delta``, ``@priority``)."""

from __future__ import annotations

from collections.abc import Callable

from p4target import model as M
from p4target.compiler import ir
from p4target.compiler.context import CompilerContext
from p4target.compiler.emit_expr import as_unsigned
from p4target.compiler.entities import TableInfo
from p4target.compiler.types import Type
from p4target.frontend import ast as A
from p4target.frontend.source import Loc, error

# an entry's action: (name, argument values, place) of an action call of the table
ActionWithArgs = Callable[[A.Expr, TableInfo, Loc], tuple[str, tuple[int, ...], Loc]]


class TableEntries:
    """The const entries of the tables of the program compiler ``ctx``; an entry's
    action call is read by ``action_with_args`` (the table compiler's)."""

    def __init__(self, ctx: CompilerContext, action_with_args: ActionWithArgs) -> None:
        self.ctx = ctx
        self.action_with_args = action_with_args

    def const_entries(self, props: dict[str, A.TableProp], keys: list[M.KeyField],
                      key_types: list[Type], info: TableInfo, t: A.TableDecl) -> tuple[M.ConstEntry, ...]:
        p = props["entries"]
        entries: list[A.EntryDecl] = p.value
        needs_prio = any(k.match_kind not in ("exact", "lpm") for k in keys)
        largest_wins = True
        delta = 1
        if "largest_priority_wins" in props:
            largest_wins = bool(self.ctx.value(props["largest_priority_wins"].value).const)
        if "priority_delta" in props:
            delta = self.ctx.const_int(props["priority_delta"].value, "priority_delta")
            if delta <= 0:
                raise error(props["priority_delta"].loc, "priority_delta must be a positive value")
        explicit = [e for e in entries if e.priority is not None]
        if explicit and p.is_const:
            raise error(explicit[0].loc, "a table with 'const entries' cannot have entry priorities "
                        "(as in p4c); remove 'priority=' or the const")
        if explicit and not needs_prio:  # placed at the keys, as p4c places it
            raise error(props["key"].loc if "key" in props else t.loc, f"table {t.name} has only exact/lpm "
                        f"keys, which do not use priorities; remove 'priority=' (line {explicit[0].loc.line})")
        if entries and not keys:
            raise error(t.loc, f"table {t.name} has entries but no key; remove the entries or add a key")
        if explicit and entries[0].priority is None:
            raise error(entries[0].loc, "the first entry must have a priority when others do")
        if not p.is_const:
            self.ctx.warnings.append(f"{p.loc}: table {info.name}: the embedded target installs "
                                 "'entries' as const entries (the control plane cannot change them)")
        prios = self.entry_priorities(t, entries, explicit, largest_wins, delta) if needs_prio \
            else [None] * len(entries)
        out = []
        for ent, prio in zip(entries, prios, strict=False):
            if len(ent.keys) != len(keys):
                raise error(ent.loc, f"entry has {len(ent.keys)} key value(s) but table {t.name} "
                            f"has {len(keys)} key(s)")
            matches = tuple(self.entry_match(k, kf, kt) for k, kf, kt in zip(ent.keys, keys, key_types, strict=False))
            aname, args, aloc = self.action_with_args(ent.action, info, ent.loc)
            idx = info.action_index(aname, aloc)
            out.append(M.ConstEntry(matches, info.actions[idx][1].p4name, args, prio))
        return tuple(out)

    def entry_priorities(self, t: A.TableDecl, entries: list[A.EntryDecl], explicit: list[A.EntryDecl],
                         largest_wins: bool, delta: int) -> list[int | None]:
        """The entries' priorities as p4c's EntryPriorities pass assigns them (the
        table's keys use priorities): ``@priority``, ``priority =``, else by position."""
        annotated = self.annotated_priorities(entries, explicit)
        if annotated is not None:
            return list(annotated)
        n = len(entries)
        if not explicit:
            return [(n - i - 1) * delta + 1 if largest_wins else 1 + i * delta for i in range(n)]
        prios: list[int | None] = []
        current = 0
        for ent in entries:
            if ent.priority is not None:
                current = self.ctx.const_int(ent.priority, "entry priority")
                if current < 1:
                    raise error(ent.priority.loc, "entry priorities must be >= 1")
            elif current < 1:  # placed at the table, as p4c places it
                raise error(t.loc, f"table {t.name}: the implied priority of the entry at line {ent.loc.line} "
                            "is below 1; give it one")
            prios.append(current)
            current = current - delta if largest_wins else current + delta
        return prios

    def annotated_priorities(self, entries: list[A.EntryDecl],
                             explicit: list[A.EntryDecl]) -> list[int] | None:
        """Priorities of entries some of which carry ``@priority(N)`` (None when none
        does), for the model where the higher value wins.

        p4c's BMv2 back end writes N into the JSON for an annotated entry and the
        entry's position (1, 2, ...) for the others; BMv2 prefers the smaller number.
        Flipping the numbers around the largest keeps that order (ties stay in
        entry order, as in BMv2)."""
        bmv2: list[int] = []
        seen = False
        for i, ent in enumerate(entries):
            anno = next((a for a in ent.annotations if a.name == "priority"), None)
            if anno is None:
                bmv2.append(i + 1)
                continue
            seen = True
            if len(anno.args) != 1 or not isinstance(anno.args[0], int) or isinstance(anno.args[0], bool) \
                    or anno.args[0] < 0 or anno.body.strip().startswith("-"):
                raise error(anno.loc, f"@priority({anno.body}) needs one non-negative integer constant, "
                            "e.g. @priority(10)")
            bmv2.append(anno.args[0])
        if not seen:
            return None
        if explicit:
            raise error(explicit[0].loc, "this table's entries use both @priority and 'priority ='; "
                        "use one of them")
        top = max(bmv2) + 1
        return [top - b for b in bmv2]

    def entry_match(self, e: A.Expr, kf: M.KeyField, kt: Type) -> M.KeyMatch:
        """An entry's match of one key. A match the key's kind cannot take is BMv2's
        limit (p4c-bm2-ss reports it after the type checker's errors): kept in
        ``deferred``, the entry matching anything meanwhile."""
        kind = kf.match_kind
        full = (1 << kf.bitwidth) - 1
        anything = M.KeyMatch("dontcare")
        key = self.ctx.check_keyset(e, kt)
        if isinstance(key, ir.AnyKey):
            if kind == "exact":
                self.ctx.deferred.append(error(e.loc, f"key {kf.name} is exact; '_' is not allowed"))
            return anything
        if isinstance(key, ir.MaskKey):
            v, m = as_unsigned(key.value, kt), as_unsigned(key.mask, kt)
            if kind == "ternary":
                return M.KeyMatch("ternary", v & m, m)
            if kind == "lpm":
                plen = bin(m).count("1")
                if m != (full >> (kf.bitwidth - plen) << (kf.bitwidth - plen) if plen else 0):
                    self.ctx.deferred.append(error(e.loc, f"lpm key {kf.name}: mask {m:#x} is not a prefix mask"))
                return M.KeyMatch("lpm", v & m, plen)
            self.ctx.deferred.append(error(e.loc, f"'&&&' is not allowed for {kind} key {kf.name}"))
            return anything
        if isinstance(key, ir.RangeKey):
            lo, hi = as_unsigned(key.lo, kt), as_unsigned(key.hi, kt)
            if kind != "range":
                self.ctx.deferred.append(error(e.loc, f"'..' is only allowed for range keys, {kf.name} is {kind}"))
                return anything
            return M.KeyMatch("range", lo, hi)
        v = as_unsigned(int(key.const), kt)  # type: ignore[arg-type]  # a keyset's value is an int constant
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

