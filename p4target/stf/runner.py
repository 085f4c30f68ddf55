"""Runner of parsed STF commands against a ``Switch`` of the embedded target.

Applies the control statements as they come, sends the packets, keeps what comes out,
and compares it with the ``expect`` lines at the end, per port (docs/target.md).
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from p4target.errors import EntryError, P4Error
from p4target.stf.parser import ActionCall, StfCommand, parse_int, parse_stf_file, parse_wildcard

if TYPE_CHECKING:  # pragma: no cover - typing only
    from p4target.model import ProgramModel, Table

log = logging.getLogger(__name__)

# --------------------------------------------------------------------------- running


@dataclass
class StfResult:
    """What a run did and whether every expectation held."""

    failures: list[str] = field(default_factory=list)
    received: dict[int, list[bytes]] = field(default_factory=dict)
    packets_sent: int = 0
    commands: int = 0
    log: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.failures


def _suffix_lookup(names: list[str], wanted: str, what: str, where: str) -> str:
    if wanted in names:
        return wanted
    cands = [n for n in names if n.endswith("." + wanted)]
    if len(cands) == 1:
        return cands[0]
    if not cands:
        shown = ", ".join(sorted(names)[:12]) or "none"
        raise P4Error(f"no {what} named {wanted!r}; the program has: {shown}", where)
    raise P4Error(f"{what} name {wanted!r} is ambiguous ({', '.join(sorted(cands))}); "
                  "write more of the name", where)


def match_pattern(pattern: str, exact_length: bool, packet: bytes) -> str | None:
    """None if ``packet`` matches the expect pattern, else why not."""
    got = packet.hex().upper()
    if len(got) < len(pattern):
        return f"packet too short: {len(got) // 2} bytes, expected at least {len(pattern) // 2}"
    for i, ch in enumerate(pattern):
        if ch != "*" and ch != got[i]:
            return f"differs at nibble {i} (byte {i // 2}): expected {ch}, got {got[i]}"
    if exact_length and len(got) > len(pattern):
        return f"packet too long: {len(got) // 2} bytes, expected {len(pattern) // 2}"
    return None


def _bipartite(n_exp: int, n_got: int, ok: list[list[bool]]) -> list[int]:
    """Maximum matching expectations -> packets; returns packet index per expectation
    (-1 unmatched)."""
    owner = [-1] * n_got

    def augment(e: int, seen: list[bool]) -> bool:
        for g in range(n_got):
            if ok[e][g] and not seen[g]:
                seen[g] = True
                if owner[g] < 0 or augment(owner[g], seen):
                    owner[g] = e
                    return True
        return False

    for e in range(n_exp):
        augment(e, [False] * n_got)
    assign = [-1] * n_exp
    for g, e in enumerate(owner):
        if e >= 0:
            assign[e] = g
    return assign


class StfRunner:
    """Executes STF commands on one ``Switch`` and checks the expectations."""

    def __init__(self, switch: Any, path: str = "<stf>", ordered: bool = False) -> None:
        self.sw = switch
        self.model: ProgramModel = switch.model
        self.path = path
        self.ordered = ordered
        self.result = StfResult()
        self.expects: dict[int, list[StfCommand]] = {}
        self.any_ports: set[int] = set()
        self.named: dict[str, tuple[str, dict[str, Any], int | None]] = {}
        self.mc_nodes: dict[int, tuple[int, list[int]]] = {}  # handle -> (rid, ports)
        self.mc_groups: dict[int, list[int]] = {}  # group -> node handles

    # -- helpers
    def where(self, c: StfCommand, col: int | None = None) -> str:
        return f"{self.path}:{c.line}:{col if col is not None else c.col}"

    def _table(self, c: StfCommand) -> Table:
        names = [t.name for t in self.model.tables]
        return self.model.table(_suffix_lookup(names, c.table, "table", self.where(c)))

    def _extern(self, name: str, kinds: tuple[str, ...], c: StfCommand):
        names = [e.name for e in self.model.externs if e.kind in kinds]
        return self.model.extern(_suffix_lookup(names, name, "/".join(kinds), self.where(c)))

    def _action(self, table: Table, call: ActionCall, c: StfCommand,
                default: bool) -> tuple[str, dict[str, int]]:
        refs = [a.name for a in table.actions]
        name = _suffix_lookup(refs, call.name, f"action of table {table.name}",
                              self.where(c, call.col))
        action = self.model.action(name)
        widths = {p.name: p.bitwidth for p in action.params}
        params: dict[str, int] = {}
        for a in call.args:
            if a.name not in widths:
                raise P4Error(f"action {name} has no parameter {a.name!r}; it has: "
                              f"{', '.join(widths) or 'none'}", self.where(c, a.col))
            try:
                v = parse_int(a.value)
            except ValueError:
                raise P4Error(f"parameter {a.name}: {a.value!r} is not a number",
                              self.where(c, a.col)) from None
            if v >> widths[a.name]:
                raise P4Error(f"parameter {a.name}: {a.value} does not fit in "
                              f"{widths[a.name]} bits", self.where(c, a.col))
            params[a.name] = v
        missing = [p for p in widths if p not in params]
        if missing:
            raise P4Error(f"action {name} needs {', '.join(missing)}; write "
                          f"{call.name}({', '.join(p + ':VALUE' for p in widths)})",
                          self.where(c, call.col))
        return name, params

    def _match(self, table: Table, c: StfCommand) -> dict[str, Any]:  # noqa: C901 — one case per STF key syntax and match kind
        from p4target.runtime.entries import Exact, Lpm, Optional, Range, Ternary

        keys = {k.name: k for k in table.match_keys}
        aliases: dict[str, str] = {}
        for k in keys:
            if k.endswith(".isValid()"):
                base = k[: -len(".isValid()")]
                aliases[base + ".$valid$"] = k
                aliases[base + ".valid"] = k
        match: dict[str, Any] = {}
        for kv in c.keys:
            where = self.where(c, kv.col)
            # p4c's runner writes stack elements as name$N: hdr.extra$0.h = hdr.extra[0].h
            written = re.sub(r"\$([0-9]+)", r"[\1]", kv.name)
            wanted = aliases.get(written, written)
            kname = _suffix_lookup(list(keys) + list(aliases), wanted, f"key of table {table.name}", where)
            kname = aliases.get(kname, kname)
            kf = keys[kname]
            w = kf.bitwidth
            full = (1 << w) - 1
            text = kv.value
            try:
                if "->" in text:
                    lo_s, hi_s = text.split("->")
                    lo, hi = parse_int(lo_s), parse_int(hi_s)
                    self._fits(lo, w, kname, where)
                    self._fits(hi, w, kname, where)
                    if kf.match_kind != "range":
                        raise P4Error(f"key {kname} is {kf.match_kind}, not range; "
                                      "write a single value", where)
                    match[kname] = Range(lo, hi)
                    continue
                if "&&&" in text:
                    v_s, m_s = text.split("&&&")
                    v, m = parse_int(v_s), parse_int(m_s)
                elif "/" in text:
                    v_s, l_s = text.split("/")
                    v, _, _ = parse_wildcard(v_s)
                    plen = parse_int(l_s)
                    if plen > w:
                        raise P4Error(f"key {kname}: prefix length {plen} is longer than "
                                      f"the key ({w} bits)", where)
                    m = (full >> (w - plen)) << (w - plen) if plen else 0
                else:
                    v, m, nbits = parse_wildcard(text)
                    if m == -1:
                        m = full
                    elif kf.match_kind == "lpm" and "*" in text:
                        # LPM: the prefix ends where the '*' digits start
                        stars = nbits - bin(m).count("1")
                        m = full & ~((1 << stars) - 1) if stars < w else 0
                    elif "*" not in text and kf.match_kind != "ternary":
                        m = full
            except ValueError:
                raise P4Error(f"key {kname}: cannot read value {text!r}", where) from None
            self._fits(v, w, kname, where)
            m &= full
            v &= m if kf.match_kind in ("ternary", "lpm") else full
            kind = kf.match_kind
            if kind == "exact":
                if m != full:
                    raise P4Error(f"key {kname} is exact: wildcards are not allowed", where)
                match[kname] = Exact(v)
            elif kind == "lpm":
                plen = bin(m).count("1")
                if m != ((full >> (w - plen)) << (w - plen) if plen else 0):
                    raise P4Error(f"key {kname} is lpm: the mask must be a prefix", where)
                if plen:
                    match[kname] = Lpm(v, plen)
            elif kind == "ternary":
                if m:
                    match[kname] = Ternary(v, m)
            elif kind == "optional":
                if m == full:
                    match[kname] = Optional(v)
                elif m:
                    raise P4Error(f"key {kname} is optional: give a value or nothing", where)
            elif kind == "range":
                if m == full:
                    match[kname] = Range(v, v)
                elif m:
                    raise P4Error(f"key {kname} is range: write LOW->HIGH", where)
        for kname, kf in keys.items():
            if kname not in match and kf.match_kind == "exact":
                match[kname] = Exact(0)  # p4c's runner fills unwritten exact keys with 0
        return match

    @staticmethod
    def _fits(v: int, w: int, kname: str, where: str) -> None:
        if v >> w:
            raise P4Error(f"key {kname}: value {v:#x} does not fit in {w} bits", where)

    def _call(self, c: StfCommand, fn, *args, **kw):
        try:
            return fn(*args, **kw)
        except EntryError as e:
            raise P4Error(f"the switch refused {c.kind}: {e.message}", self.where(c)) from None

    # -- commands
    def execute(self, c: StfCommand) -> None:
        self.result.commands += 1
        handler = getattr(self, "_do_" + c.kind, None)
        if handler is None:
            handler = self._do_direct
        handler(c)

    def _do_add(self, c: StfCommand) -> None:
        table = self._table(c)
        if table.implementation:
            raise P4Error(f"table {table.name} uses action profile {table.implementation}; "
                          "STF cannot add its members", self.where(c))
        assert c.action is not None
        action, params = self._action(table, c.action, c, default=False)
        match = self._match(table, c)
        needs_prio = any(k.match_kind in ("ternary", "range", "optional") for k in table.match_keys)
        prio = None
        if needs_prio:
            # STF priorities start at 0 (p4c's tests use 0), P4Runtime's at 1: shift by
            # one, order unchanged. Without one, 1: among equals the first added wins.
            prio = c.priority + 1 if c.priority is not None else 1
        self._call(c, self.sw.table_add, table.name, match, action, params, priority=prio)
        if c.entry_name:
            self.named[c.entry_name] = (table.name, match, prio)

    def _do_setdefault(self, c: StfCommand) -> None:
        table = self._table(c)
        assert c.action is not None
        action, params = self._action(table, c.action, c, default=True)
        self._call(c, self.sw.table_set_default, table.name, action, params)

    def _do_remove_all(self, c: StfCommand) -> None:
        for t in self.model.tables:
            if t.const_entries is None:
                self._call(c, self.sw.table_clear, t.name)

    def _do_packet(self, c: StfCommand) -> None:
        self.result.packets_sent += 1
        outputs = self._call(c, self.sw.inject, c.port, c.data)
        for port, data in outputs:
            self.result.received.setdefault(port, []).append(bytes(data))
            log.debug("%s: out port %d: %s", self.where(c), port, bytes(data).hex())

    def _do_expect(self, c: StfCommand) -> None:
        if c.pattern is None:
            self.any_ports.add(c.port)
        else:
            self.expects.setdefault(c.port, []).append(c)

    def _do_wait(self, c: StfCommand) -> None:
        outputs = self.sw.run_until_idle()
        for port, data in outputs:
            self.result.received.setdefault(port, []).append(bytes(data))

    def _do_no_packet(self, c: StfCommand) -> None:
        pass

    def _check(self, c: StfCommand, what: str, got: int) -> None:
        ok = {"==": got == c.value, "!=": got != c.value, "<": got < c.value,
              "<=": got <= c.value, ">": got > c.value, ">=": got >= c.value}[c.op]
        msg = f"{self.where(c)}: {what} is {got}, expected {c.op} {c.value}"
        self.result.log.append(msg)
        if not ok:
            self.result.failures.append(msg)

    def _do_check_counter(self, c: StfCommand) -> None:
        ext = self._extern(c.name, ("counter", "direct_counter"), c)
        if c.index.startswith("$"):
            entry = self.named.get(c.index[1:])
            if entry is None:
                raise P4Error(f"no entry named {c.index[1:]!r}; name one with "
                              "'add ... = NAME' first", self.where(c))
            table, match, prio = entry
            pk, by = self._call(c, self.sw.direct_counter_read, table, match, prio)
        else:
            try:
                index = parse_int(c.index)
            except ValueError:
                raise P4Error(f"counter index {c.index!r} is not a number",
                              self.where(c)) from None
            if ext.kind == "direct_counter":
                raise P4Error(f"{ext.name} is a direct counter: name the entry, "
                              f"check_counter {c.name}($NAME)", self.where(c))
            pk, by = self._call(c, self.sw.counter_read, ext.name, index)
        if c.count_type == "bytes":
            self._check(c, f"{ext.name}({c.index}) bytes", by)
        else:
            self._check(c, f"{ext.name}({c.index}) packets", pk)

    def _do_check_register(self, c: StfCommand) -> None:
        ext = self._extern(c.name, ("register",), c)
        try:
            index = parse_int(c.index)
        except ValueError:
            raise P4Error(f"register index {c.index!r} is not a number", self.where(c)) from None
        self._check(c, f"{ext.name}[{index}]", self._call(c, self.sw.register_read, ext.name, index))

    def _mc_replicas(self, group: int) -> list[tuple[int, int]]:
        reps: list[tuple[int, int]] = []
        for h in self.mc_groups.get(group, []):
            rid, ports = self.mc_nodes[h]
            reps.extend((p, rid) for p in ports)
        return reps

    def _do_direct(self, c: StfCommand) -> None:  # noqa: C901 — one case per STF replication/queue command
        n = c.numbers
        sw = self.sw
        k = c.kind
        if k == "mc_mgrp_create":
            if n[0] in self.mc_groups:
                raise P4Error(f"multicast group {n[0]} exists already", self.where(c))
            self.mc_groups[n[0]] = []
        elif k in ("mc_node_create", "mc_node_update"):
            if k == "mc_node_create":
                handle = len(self.mc_nodes)
                self.mc_nodes[handle] = (n[0], list(n[1:]))
                self.result.log.append(f"{self.where(c)}: node handle {handle}")
            else:
                if n[0] not in self.mc_nodes:
                    raise P4Error(f"no multicast node handle {n[0]}", self.where(c))
                self.mc_nodes[n[0]] = (self.mc_nodes[n[0]][0], list(n[1:]))
                for g, hs in self.mc_groups.items():
                    if n[0] in hs:
                        self._call(c, sw.mc_group_set, g, self._mc_replicas(g))
        elif k == "mc_node_associate":
            g, h = n
            if g not in self.mc_groups:
                raise P4Error(f"multicast group {g} not created; write mc_mgrp_create {g} "
                              "first", self.where(c))
            if h not in self.mc_nodes:
                raise P4Error(f"no multicast node handle {h}; handles count from 0 in "
                              "mc_node_create order", self.where(c))
            self.mc_groups[g].append(h)
            self._call(c, sw.mc_group_set, g, self._mc_replicas(g))
        elif k == "mirroring_add":
            self._call(c, sw.clone_session_set, n[0], [(n[1], 0)])
        elif k == "mirroring_add_mc":
            self._call(c, sw.clone_session_set, n[0], self._mc_replicas(n[1]))
        elif k == "mirroring_delete":
            self._call(c, sw.clone_session_delete, n[0])
        elif k == "mirroring_get":
            self.result.log.append(f"{self.where(c)}: mirroring_get {n[0]}")
        elif k in ("counter_read", "counter_write"):
            ext = self._extern(c.name, ("counter",), c)
            if k == "counter_read":
                pk, by = self._call(c, sw.counter_read, ext.name, n[0])
                self.result.log.append(f"{self.where(c)}: {ext.name}[{n[0]}] = "
                                       f"(packets={pk}, bytes={by})")
            else:
                self._call(c, sw.counter_write, ext.name, n[0], n[1], n[2])
        elif k in ("register_read", "register_write", "register_reset"):
            ext = self._extern(c.name, ("register",), c)
            if k == "register_read":
                v = self._call(c, sw.register_read, ext.name, n[0])
                self.result.log.append(f"{self.where(c)}: {ext.name}[{n[0]}] = {v}")
            elif k == "register_write":
                self._call(c, sw.register_write, ext.name, n[0], n[1])
            else:
                for i in range(ext.size):
                    self._call(c, sw.register_write, ext.name, i, 0)
        elif k in ("meter_set_rates", "meter_array_set_rates", "meter_get_rates"):
            ext = self._extern(c.name, ("meter",), c)
            if k == "meter_get_rates":
                self.result.log.append(f"{self.where(c)}: meter_get_rates {ext.name} {n[0]}")
                return
            if len(c.rates) != 2:
                raise P4Error("meters take two RATE:BURST pairs (committed, peak)",
                              self.where(c))
            (cr, cb), (pr, pb) = c.rates
            indexes = [n[0]] if k == "meter_set_rates" else list(range(ext.size))
            for i in indexes:
                # simple_switch_CLI rates are per microsecond; the Switch takes per second
                self._call(c, sw.meter_set, ext.name, i, cr * 1e6, cb, pr * 1e6, pb)
        else:  # pragma: no cover - parse_stf_text rejects unknown commands
            raise P4Error(f"unknown command {k}", self.where(c))

    # -- checking
    def finish(self) -> StfResult:
        res = self.result
        for port in sorted(set(res.received) | set(self.expects)):
            got = res.received.get(port, [])
            exp = self.expects.get(port, [])
            if port in self.any_ports:
                continue
            if len(got) != len(exp):
                lines = [f"port {port}: expected {len(exp)} packet(s), received {len(got)}"]
                lines += [f"  expected {e.pattern}{'$' if e.exact_length else ''} "
                          f"({self.where(e)})" for e in exp]
                lines += [f"  received {g.hex().upper()}" for g in got]
                res.failures.append("\n".join(lines))
                continue
            if self.ordered:
                for e, g in zip(exp, got, strict=False):
                    why = match_pattern(e.pattern or "", e.exact_length, g)
                    if why:
                        res.failures.append(f"{self.where(e)}: port {port}: {why}\n"
                                            f"  expected {e.pattern}\n  received {g.hex().upper()}")
                continue
            ok = [[match_pattern(e.pattern or "", e.exact_length, g) is None for g in got]
                  for e in exp]
            assign = _bipartite(len(exp), len(got), ok)
            used = {g for g in assign if g >= 0}
            for ei, gi in enumerate(assign):
                if gi >= 0:
                    continue
                e = exp[ei]
                unmatched = [g for i, g in enumerate(got) if i not in used]
                detail = "; ".join(
                    f"{match_pattern(e.pattern or '', e.exact_length, g)}" for g in unmatched[:3])
                res.failures.append(
                    f"{self.where(e)}: port {port}: no received packet matches {e.pattern}"
                    f" ({detail})\n" + "\n".join(f"  received {g.hex().upper()}" for g in unmatched))
        return res


def run_stf(switch: Any, stf_path: Path | str, ordered: bool = False) -> StfResult:
    """Run an STF file on ``switch`` (a ``p4target.Switch``). Problems in the file
    raise ``P4Error``; unmet expectations are listed in ``result.failures``."""
    cmds = parse_stf_file(stf_path)
    runner = StfRunner(switch, str(stf_path), ordered=ordered)
    for c in cmds:
        runner.execute(c)
    return runner.finish()


def run_stf_program(program: Path | str, stf_path: Path | str, ordered: bool = False,
                    seed: int = 0, include_dirs: tuple[Path, ...] = ()) -> StfResult:
    """Compile ``program``, load it in a fresh switch and run the STF file on it."""
    from p4target import Switch

    cmds = parse_stf_file(stf_path)  # report STF syntax errors before compiling
    sw = Switch.load(program, seed=seed)
    runner = StfRunner(sw, str(stf_path), ordered=ordered)
    for c in cmds:
        runner.execute(c)
    return runner.finish()
