"""The fused fast path: ``Pipeline.fast(data, ingress_port, now_us)``.

Built from the generated module itself (so it runs exactly the code the general path
runs): the straight-line parser, the ingress and egress controls (table helpers and
action bodies pasted in) and the deparser are joined into one function whose header,
metadata and standard-metadata fields are Python locals (``f__<path>``). No
``PacketState`` is built. The function returns

- ``None`` when the packet meets anything the fast path does not do (parser error, a
  call that has an effect other than on the packet's own fields, multicast, an egress
  drop, an unusual egress port or priority, ...). Nothing has been changed at that
  point (the only effects, counter updates, are held back until the end), so the
  caller runs the general path on the same frame, with identical results;
- ``(511, None)`` for a packet dropped by ingress (``mark_to_drop``);
- ``(egress_port, frame)`` for a unicast packet that leaves.

standard_metadata values are those of ``Switch.inject``'s direct path: the clock is
read once, enq/egress timestamps equal the ingress timestamp, queue depths and
deq_timedelta are 0. Programs the transformation does not understand get no ``fast``
(``Switch`` then keeps using the general path); the rules are deliberately narrow:
only the generated shapes listed in docs/target-internals.md, section 1.

Switch: ``FAST_PATH`` (the equivalence tests run every program with it on and off).
"""

from __future__ import annotations

import re

from p4target import model as M

FAST_PATH = True

_DROP = 511
_NUM_PRIORITIES = 8
_DEF = re.compile(r"^    def (\w+)\((.*)\):$")
_REF = re.compile(r"\b(p_\w+|_h\d+)((?:\.\w+)+)")
_ALIAS = re.compile(r"^(_h\d+) = (p_\w+(?:\.\w+)+)$")
_PARAM = re.compile(r"^(p_\w+) = st\.(\w+)$")
_ACALL = re.compile(r"^(a_\w+)\(st, L(?:, (.*))?\)$")
_TCALL = re.compile(r"\b(t_\w+)\(st, L\)")
_TAPPLY = re.compile(r"^(.*= )(T_\w+)\(st, (.*)\)$")
_COUNT = re.compile(r"^(X_\w+)\.count\(st, (.*)\)$")
_BAD = re.compile(r"\b(st|L|p_\w+|_h\d+|EXIT|ExitControl|ParserError|rt_(?!hash\b|checksum\b)\w+|"
                  r"s_\w+|a_\w+|t_\w+|TA_\w+|lookahead|Stack)\b")


class _NoFast(Exception):
    """The program (or this construct) is outside what the fast path handles."""


def _leaves(obj: object, path: tuple[str, ...], out: dict[tuple[str, ...], object]) -> None:
    slots = getattr(type(obj), "__slots__", None)
    if slots is None:
        return
    for name in slots:
        v = getattr(obj, name)
        if type(v) in (int, bool):
            out[path + (name,)] = v
        elif type(v).__name__.startswith(("S_", "H_")):
            _leaves(v, path + (name,), out)
        # stacks, unions: no locals, any use is a bail-out


def _split_args(text: str) -> list[str]:
    out, depth, cur = [], 0, []
    for ch in text:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        out.append("".join(cur).strip())
    return out


class _Builder:
    def __init__(self, source: str, model: M.ProgramModel) -> None:
        self.source = source
        ns: dict[str, object] = {"__name__": "p4gen_fastprobe"}
        exec(compile(source, "<p4:fastprobe>", "exec"), ns)  # noqa: S102 - our own code
        st = ns["PacketState"]()  # type: ignore[operator]
        self.leaves: dict[tuple[str, ...], object] = {}
        for attr in ("hdr", "meta", "sm"):
            _leaves(getattr(st, attr), (attr,), self.leaves)
        if len({self.local(p) for p in self.leaves}) != len(self.leaves):
            raise _NoFast("field names collide")
        if ("sm", "egress_spec") not in self.leaves:
            raise _NoFast("no standard metadata")
        self.funcs: dict[str, tuple[str, list[str]]] = {}
        lines = source.split("\n")
        i = 0
        while i < len(lines):
            m = _DEF.match(lines[i])
            if m:
                body = []
                j = i + 1
                while j < len(lines) and (not lines[j].strip() or lines[j].startswith("        ")):
                    body.append(lines[j][8:])
                    j += 1
                while body and not body[-1].strip():
                    body.pop()
                if body and body[0].lstrip().startswith('"""'):
                    body = body[1:]
                self.funcs[m.group(1)] = (m.group(2), body)
                i = j
                continue
            i += 1
        self.lines = lines
        self.plain_tables = {
            "T_" + self.pyname(t.name) for t in model.tables
            if t.implementation is None and t.direct_counter is None and t.direct_meter is None}
        self.counters = {"X_" + self.pyname(e.name) for e in model.externs if e.kind == "counter"}
        self.tmp = 0
        self.counts: list[tuple[str, str]] = []

    @staticmethod
    def pyname(name: str) -> str:
        return re.sub(r"\W", "_", name)

    def local(self, path: tuple[str, ...]) -> str:
        return "f__" + "_".join(path)

    # ---- the whole function -------------------------------------------------------
    def build(self) -> str:
        src = self.lines
        roles: dict[str, str | None] = {}
        for meth in ("verify_checksum", "ingress", "egress", "compute_checksum"):
            pat = re.compile(rf"^        {meth} = staticmethod\((c_\w+)\)$")
            found = [m.group(1) for l in src if (m := pat.match(l))]
            if f"        {meth}_is_noop = True" in src:
                roles[meth] = None
            elif len(found) == 1:
                roles[meth] = found[0]
            else:
                raise _NoFast(meth)
        dep = [m.group(1) for l in src if (m := re.match(r"^                (c_\w+)\(st, out\.append\)$", l))]
        if len(dep) != 1:
            raise _NoFast("deparser")
        # the straight-line parser: the body of parse's try block
        start = src.index("        def parse(self, data, ingress_port, instance_type=0, packet_length=None):")
        if src[start + 6] != "            L = None" or src[start + 8] != "            try:":
            raise _NoFast("parser locals")
        end = src.index("            except ParserError as e:", start)
        parser = [l[16:] for l in src[start + 9:end]]
        if any(l.lstrip().startswith(("while ", "for ", "state = ")) for l in parser):
            raise _NoFast("parser loop")

        out = ["def _fast(data, ingress_port, now):"]
        body: list[str] = ["pos = 0"]
        body += self.transform(parser, {}, "parser")
        body += self.control(roles["verify_checksum"])
        body += self.control(roles["ingress"])
        body += [
                 "if f__sm_mcast_grp:", "    return None",
                 "_op = f__sm_egress_spec",
                 f"if _op == {_DROP}:"]
        body += ["    " + l for l in self.commit()]
        body += [f"    return {_DROP}, None",
                 f"if not 0 <= _op < {_DROP} or not 0 <= f__sm_priority < {_NUM_PRIORITIES}:",
                 "    return None",
                 "f__sm_enq_timestamp = now", "f__sm_enq_qdepth = 0",
                 "f__sm_egress_global_timestamp = now", "f__sm_deq_timedelta = 0",
                 "f__sm_deq_qdepth = 0", "f__sm_egress_port = _op", "f__sm_egress_spec = 0"]
        body += self.control(roles["egress"])
        body += [f"if f__sm_egress_spec == {_DROP}:", "    return None"]
        body += self.control(roles["compute_checksum"])
        body += ["_o = []"]
        args, dbody = self.funcs[dep[0]]
        if args != "st, ap":
            raise _NoFast("deparser shape")
        dl = [re.sub(r"^(\s*)ap\(", r"\1_o.append(", l) for l in dbody]
        dstart = len(body)
        body += self.transform(dl, {}, "deparser")
        body = self.raw_headers(body, dstart)
        body += ["_o.append(data[pos:])"]
        body += self.commit()
        body += ["return _op, b''.join(_o)"]
        body = self.dead_stores(body)
        if re.search(r"\bf__sm_packet_length =", "\n".join(body)):
            raise _NoFast("packet_length written")  # counters count the length at commit
        check = f"if not 0 <= _op < {_DROP} or not 0 <= f__sm_priority < {_NUM_PRIORITIES}:"
        if sum(l.count("f__sm_priority") for l in body) == 1:  # priority is never set: 0
            body[body.index(check)] = f"if not 0 <= _op < {_DROP}:"
        # the caller reads the clock only for a fast path that uses it
        self.uses_clock = any(re.search(r"\bnow\b", l) for l in body) \
            or ("sm", "ingress_global_timestamp") not in self.leaves
        # fields start as a fresh PacketState has them; only the fields used get a local
        used = set(re.findall(r"\bf__\w+", "\n".join(body)))
        given = {"f__sm_ingress_port": "ingress_port", "f__sm_packet_length": "len(data)",
                 "f__sm_ingress_global_timestamp": "now"}
        init = []
        for path, v in sorted(self.leaves.items()):
            name = self.local(path)
            if name in used:
                init.append(f"{name} = {given.get(name, repr(v))}")
        init += [f"{c} = None" for c, _ in self.counts]
        out += ["    " + l for l in init + body]
        text = "\n".join(out)
        compile(text, "<fast>", "exec")  # a syntax problem here is a bug: no fast path
        return text

    def raw_headers(self, body: list[str], dstart: int) -> list[str]:
        """Keep each extracted header's bits as one int; deparse from it.

        A header extracted by the parser and valid at the deparser still holds the
        parsed bits except in the fields the program writes: the deparser emits
        ``(raw & keep) | (field << shift) ...`` for the written fields only, and the
        parser no longer splits out fields nothing reads. Headers whose validity is
        set outside the parser, or extracted with different layouts, keep the
        field-by-field code.
        """
        by_local = {self.local(p): p for p in self.leaves}
        xw: dict[str, int] = {}
        fields: dict[str, list[tuple[str, int, int, int]]] = {}  # x -> (local, shift, width, line)
        for n, l in enumerate(body):
            m = re.match(r"^\s*(_x\d+) = int\.from_bytes\(data\[pos:pos \+ (\d+)\], 'big'\)$", l)
            if m:
                xw[m.group(1)] = int(m.group(2))
                fields[m.group(1)] = []
                continue
            m = re.match(r"^\s*(f__\w+) = \(?(_x\d+)(?: >> (\d+))?\)?(?: & (0x[0-9a-f]+))?$", l)
            if m and m.group(2) in xw:
                x = m.group(2)
                shift = int(m.group(3) or 0)
                width = (int(m.group(4), 16).bit_length() if m.group(4) else xw[x] * 8 - shift)
                fields[x].append((m.group(1), shift, width, n))
        extraction = {f[3] for fs in fields.values() for f in fs}
        written: set[str] = set()
        for n, l in enumerate(body):
            if n in extraction:
                continue
            m = re.match(r"^\s*([\w, ]+?)\s*(?:[-+*/%|&^]|<<|>>|//|\*\*)?=(?!=)", l)
            targets = re.findall(r"\b(f__\w+)\s*(?:[-+*/%|&^]|<<|>>|//|\*\*)?=(?!=)", l)
            if m:
                targets += re.findall(r"\bf__\w+", m.group(1))
            if targets:
                for name in targets:
                    if not (name.endswith("__v") and l.strip() == f"{name} = True"
                            and n > 0 and body[n - 1].strip().startswith("pos += ")):
                        written.add(name)
        layout: dict[tuple[str, ...], tuple[int, tuple]] = {}
        header_of: dict[str, tuple[str, ...]] = {}
        bad: set[tuple[str, ...]] = set()
        for x, fs in fields.items():
            heads = {by_local[f[0]][:-1] for f in fs if f[0] in by_local}
            if len(heads) != 1 or any(f[0] not in by_local for f in fs):
                bad |= heads
                continue
            h = heads.pop()
            lay = (xw[x], tuple((f[0], f[1], f[2]) for f in fs))
            if layout.setdefault(h, lay) != lay or sum(f[2] for f in fs) != xw[x] * 8:
                bad.add(h)
            header_of[x] = h
        for h in layout:
            if self.local(h + ("_v",)) in written:
                bad.add(h)
        raw = {h: lay for h, lay in layout.items() if h not in bad}
        if not raw:
            return body
        out = list(body)
        for x, h in header_of.items():
            if h in raw:
                name = "_raw_" + self.local(h)
                out = [re.sub(rf"\b{x}\b", name, l) for l in out]
        for n in range(dstart, len(out) - 1):
            m = re.match(r"^(\s*)if (f__\w+__v):$", out[n])
            if not m or m.group(2)[:-3].rstrip("_") not in {self.local(h) for h in raw}:
                continue
            h = next(h for h in raw if self.local(h) == m.group(2)[:-3].rstrip("_"))
            w, fl = raw[h]
            m2 = re.match(r"^(\s*)_o\.append\(\(.*\)\.to_bytes\((\d+), 'big'\)\)$", out[n + 1])
            if not m2 or int(m2.group(2)) != w:
                continue
            keep = (1 << (8 * w)) - 1
            parts = []
            for f, shift, width in fl:
                if f in written:
                    keep &= ~(((1 << width) - 1) << shift)
                    parts.append(f"({f} << {shift})" if shift else f)
            expr = "_raw_" + self.local(h)
            if parts:
                expr = f"({expr} & {keep:#x}) | " + " | ".join(parts)
            out[n + 1] = f"{m2.group(1)}_o.append(({expr}).to_bytes({w}, 'big'))"
        # field extractions nothing reads any more
        text = "\n".join(out)
        drop = set()
        for x, fs in fields.items():
            if header_of.get(x) not in raw:
                continue
            for f, _s, _w, n in fs:
                if len(re.findall(rf"\b{f}\b", text)) == sum(1 for g in fields.values() for q in g if q[0] == f):
                    drop.add(n)
        return [l for n, l in enumerate(out) if n not in drop]

    @staticmethod
    def dead_stores(body: list[str]) -> list[str]:
        """Assignments of a pure value to a field local nothing reads become ``pass``."""
        text = "\n".join(body)
        total: dict[str, int] = {}
        for name in re.findall(r"\bf__\w+", text):
            total[name] = total.get(name, 0) + 1
        stores: dict[str, list[int]] = {}
        for n, l in enumerate(body):
            m = re.match(r"^\s*(f__\w+) = (.*)$", l)
            if (m and not re.search(r"\w\s*\(", m.group(2))
                    and not re.search(r"(?<![=!<>])=(?!=)", m.group(2))
                    and m.group(1) not in re.findall(r"\bf__\w+", m.group(2))):
                stores.setdefault(m.group(1), []).append(n)
        out = list(body)
        for name, lines in stores.items():
            if len(lines) == total[name]:
                for n in lines:
                    ind = out[n][: len(out[n]) - len(out[n].lstrip())]
                    out[n] = ind + "pass"
        return [l for n, l in enumerate(out)
                if not (l.strip() == "pass" and n > 0 and not out[n - 1].rstrip().endswith(":")
                        and body[n].strip() != "pass")]

    def commit(self) -> list[str]:
        out = []
        for c, x in self.counts:
            out += [f"if {c} is not None and 0 <= {c} < {x}.size:",
                    f"    {x}.packets[{c}] += 1",
                    f"    {x}.bytes[{c}] += f__sm_packet_length"]
        return out

    def control(self, fn: str | None) -> list[str]:
        """A control's body inside ``while True: ... break`` (its ``return`` is a break)."""
        if fn is None:
            return []
        args, body = self.funcs[fn]
        if args != "st":
            raise _NoFast("control shape")
        lines = self.transform(body, {}, "control")
        if "return None" in lines:  # every packet would give up here: no fast path
            raise _NoFast("unconditional bail-out")
        return ["while True:"] + ["    " + l for l in lines] + ["    break"]

    # ---- statements -----------------------------------------------------------------
    def transform(self, body: list[str], params: dict[str, str], kind: str) -> list[str]:
        """Generated lines (relative indentation) -> fast-path lines."""
        params = dict(params)
        aliases: dict[str, tuple[str, ...]] = {}
        out: list[str] = []
        for raw in body:
            if not raw.strip():
                continue
            ind = raw[: len(raw) - len(raw.lstrip())]
            s = raw.strip()
            if s.startswith(("while ", "for ", "def ", "class ", "try:", "except", "with ",
                             "lambda", "global ", "nonlocal ")):
                raise _NoFast(s)
            if s == "L = None":
                continue
            if s.startswith("L = "):
                raise _NoFast("block locals")
            m = _PARAM.match(s)
            if m:
                params[m.group(1)] = m.group(2)
                continue
            m = _ALIAS.match(s)
            if m:
                parts = m.group(2).split(".")
                if parts[0] not in params:
                    raise _NoFast("alias")
                path = (params[parts[0]],) + tuple(parts[1:])
                aliases[m.group(1)] = path
                continue
            if s == "return":
                if kind != "control":
                    raise _NoFast("return")
                out.append(ind + "break")
                continue
            s = re.sub(r"raise ParserError\([^()]*\)$", "return None", s)
            if s == "rt_mark_to_drop(st)":
                out.append(ind + f"f__sm_egress_spec = {_DROP}")
                out.append(ind + "f__sm_mcast_grp = 0")
                continue
            s = self.refs(s, params, aliases)
            m = _COUNT.match(s)
            if m and m.group(1) in self.counters:
                # held back until the packet is sure to finish here; each line of the
                # fast path runs at most once (no loops), so one local per call site
                c = self.fresh("_cnt")
                self.counts.append((c, m.group(1)))
                s = f"{c} = {m.group(2)}"
            m = _TAPPLY.match(s)
            if m and m.group(2) in self.plain_tables:
                s = f"{m.group(1)}{m.group(2)}(None, {m.group(3)})"
            m = _ACALL.match(s)
            if m:
                out += [ind + l for l in self.action(m.group(1), m.group(2) or "")]
                continue
            calls = _TCALL.findall(s)
            if calls:
                if len(calls) != 1 or not s.startswith("if ") or not s.endswith(":"):
                    raise _NoFast("table call in an expression")
                cond = s[3:]
                before = cond[: cond.index(calls[0] + "(st, L)")]
                if not re.fullmatch(r"[\s(]*(?:not[\s(]*)*", before):
                    # anything evaluated before the apply (a short circuit, a field the
                    # action may change) would now be evaluated after it
                    raise _NoFast("table call after other terms")
                r = self.fresh("_r")
                pasted = self.table(calls[0], r)
                # the pasted helper's own i, h: nothing between them and this test
                s = s.replace(calls[0] + "(st, L)[1]", "h").replace(calls[0] + "(st, L)[0]", "i")
                if calls[0] + "(st, L)" in s:
                    s = s.replace(calls[0] + "(st, L)", r)
                else:
                    pasted = pasted[:-1]
                out += [ind + l for l in pasted]
            if _BAD.search(s):
                if s.endswith(":"):
                    raise _NoFast(s)
                out.append(ind + "return None")
                continue
            out.append(ind + s)
        return out

    def fresh(self, prefix: str) -> str:
        self.tmp += 1
        return f"{prefix}{self.tmp}"

    def refs(self, s: str, params: dict[str, str], aliases: dict[str, tuple[str, ...]]) -> str:
        def sub(m: re.Match) -> str:
            base = m.group(1)
            if base in aliases:
                path = aliases[base]
            elif base in params:
                path = (params[base],)
            else:
                return m.group(0)
            chain = m.group(2).split(".")[1:]
            full = path + tuple(chain)
            if full in self.leaves:
                end = m.end()
                if end < len(m.string) and m.string[end] in "(.":
                    return m.group(0)
                return self.local(full)
            return m.group(0)
        return _REF.sub(sub, s)

    def action(self, fn: str, argtext: str) -> list[str]:
        if fn not in self.funcs:
            raise _NoFast(fn)
        sig, body = self.funcs[fn]
        formal = [a.strip() for a in sig.split(",")][2:]
        actual = _split_args(argtext)
        if len(formal) != len(actual):
            raise _NoFast("action arguments")
        pre = [f"{f} = {a}" for f, a in zip(formal, actual)]
        if any(_BAD.search(l) for l in pre):
            raise _NoFast("action argument")
        return pre + self.transform(body, {}, "action")

    def table(self, fn: str, result: str) -> list[str]:
        sig, body = self.funcs[fn]
        if sig != "st, L" or not body or body[-1] != "return i, h":
            raise _NoFast("table helper shape")
        if any(l.strip().startswith("return") for l in body[:-1]):
            raise _NoFast("table helper return")
        return self.transform(body[:-1], {}, "action") + [f"{result} = (i, h)"]


def add_fast_path(source: str, model: M.ProgramModel) -> str:
    """``source`` with ``Pipeline.fast`` added when the program qualifies (else unchanged)."""
    if not FAST_PATH:
        return source
    try:
        b = _Builder(source, model)
        text = b.build()
    except _NoFast:
        return source
    marker = "    class Pipeline:\n"
    if source.count(marker) != 1:
        return source
    fn = "\n".join("    " + l for l in text.split("\n")) + "\n\n"
    source = source.replace(marker, fn + marker + "        fast = staticmethod(_fast)\n"
                            f"        fast_uses_clock = {b.uses_clock}\n\n", 1)
    return source
