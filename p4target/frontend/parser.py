"""Recursive-descent parser for the supported P4_16 subset.

Like p4c's grammar, P4 needs to know which identifiers name types to tell a
declaration from an expression statement, so the parser records type names as it
declares them (in the order the program declares them).
"""

from __future__ import annotations

from typing import cast

from p4target.frontend import ast as A
from p4target.frontend.direct_calls import instantiate_direct_calls
from p4target.frontend.lexer import Token
from p4target.frontend.source import Loc, error, unsupported
from p4target.frontend.translation_annotation import NAME as TRANSLATION
from p4target.frontend.translation_annotation import check_translation
from p4target.frontend.v1model_version import check_v1model_version

# A number token's value: (width or None, signed, value), as lexer.parse_number gives it.
NumberValue = tuple[int | None, bool, int]

_BASE_TYPES = {"bit", "int", "varbit", "bool", "error", "void", "string", "match_kind"}

# Binary operator precedence, lowest first, as in p4c's grammar.
_COMPOUND = frozenset(("+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", "|+|=", "|-|="))

_BINARY_LEVELS: list[tuple[str, ...]] = [
    ("||",),
    ("&&",),
    ("==", "!="),
    ("<", ">", "<=", ">="),
    ("|",),
    ("^",),
    ("&",),
    ("<<", ">>"),
    ("++", "+", "-", "|+|", "|-|"),
    ("*", "/", "%"),
]


class Parser:
    def __init__(self, tokens: list[Token]):
        self.toks = tokens
        self.inline_decls: list[A.StructLike | A.EnumDecl] = []  # declared inside a typedef
        self.pos = 0
        self.type_names: set[str] = set()

    # ------------------------------------------------------------ helpers
    @property
    def tok(self) -> Token:
        t = self.toks[self.pos]
        if t.kind == "bad":  # only an annotation's free-form body may hold it
            raise error(t.loc, f"unexpected character {t.text!r}; remove it")
        return t

    def peek(self, k: int = 1) -> Token:
        return self.toks[min(self.pos + k, len(self.toks) - 1)]

    def at(self, text: str) -> bool:
        t = self.tok
        return t.text == text and t.kind in ("op", "kw", "ident")

    def accept(self, text: str) -> Token | None:
        if self.at(text):
            t = self.tok
            self.pos += 1
            return t
        return None

    def expect(self, text: str, what: str = "") -> Token:
        if self.at(text):
            t = self.tok
            self.pos += 1
            return t
        raise error(self.tok.loc, f"expected '{text}'{' ' + what if what else ''} but found "
                    f"'{self.tok.text}'")

    def ident(self, what: str = "a name") -> Token:
        t = self.tok
        # P4 lets some keywords-like words be names (key, actions, entries, priority...)
        if t.kind == "ident" or (t.kind == "kw" and t.text in ("apply", "state", "type", "list",
                                                                "entries", "priority")):
            self.pos += 1
            return t
        raise error(t.loc, f"expected {what} but found '{t.text}'")

    def at_gt_pair(self, second: str) -> bool:
        """``>`` immediately followed by ``second`` (the lexer never joins ``>>``/``>=``)."""
        t, n = self.tok, self.peek()
        return (t.text == ">" and t.kind == "op" and n.kind == "op" and n.text == second
                and n.loc.line == t.loc.line and n.loc.col == t.loc.col + 1)

    # ------------------------------------------------------------ annotations
    def annotations(self) -> list[A.Annotation]:
        out: list[A.Annotation] = []
        while self.at("@"):
            at = self.expect("@")
            name = self.tok.text
            self.pos += 1
            body, args = "", []
            if (self.at("(") or self.at("[")) and self.tok.loc.line == at.loc.line:
                parts = self.annotation_body(name)
                if name == TRANSLATION:
                    check_translation(parts, at.loc)
                body = " ".join(p.text for p in parts)
                for p in parts:
                    if p.kind == "str":
                        args.append(p.value)
                    elif p.kind == "num":
                        args.append(p.value[2])  # type: ignore[index]  # a number token's value is (width, signed, value)
            out.append(A.Annotation(name, body, args, at.loc))
        return out

    def annotation_body(self, name: str) -> list[Token]:
        """The tokens between an annotation's parentheses (free form, P4_16 18.1) or
        brackets (a structured annotation, kept as text), nested brackets balanced."""
        start = self.expect(self.tok.text)
        close = ")" if start.text == "(" else "]"
        depth = 1
        parts: list[Token] = []
        while True:
            t = self.toks[self.pos]  # not self.tok: the body may hold any character
            if t.kind == "eof":
                raise error(start.loc, f"unterminated annotation @{name}; add '{close}'")
            if t.text in ("(", "[", "{") and t.kind == "op":
                depth += 1
            elif t.text in (")", "]", "}") and t.kind == "op":
                depth -= 1
                if depth == 0:
                    self.pos += 1
                    return parts
            parts.append(t)
            self.pos += 1

    # ------------------------------------------------------------ program
    def program(self) -> A.Program:
        decls: list[object] = []
        while self.tok.kind != "eof":
            if self.accept(";"):
                continue
            d = self.declaration()
            decls.extend(self.inline_decls)  # a typedef's inline type comes before it
            self.inline_decls.clear()
            decls.append(d)
        return A.Program(decls)

    def declaration(self) -> object:
        annos = self.annotations()
        t = self.tok
        kw = t.text if t.kind == "kw" else ""
        if kw in ("header", "header_union", "struct"):
            return self.struct_like(annos)
        if kw == "enum":
            return self.enum_decl(annos)
        if kw == "error":
            self.pos += 1
            return A.ErrorDecl("error", t.loc, annos, self.id_list())
        if kw == "match_kind":
            self.pos += 1
            return A.MatchKindDecl("match_kind", t.loc, annos, self.id_list())
        if kw in ("typedef", "type"):
            self.pos += 1
            if self.tok.kind == "kw" and self.tok.text in ("header", "header_union", "struct", "enum"):
                inline = self.enum_decl([]) if self.tok.text == "enum" else self.struct_like([])
                self.inline_decls.append(inline)
                ty: A.TypeRef = A.NamedType(inline.loc, inline.name)
            else:
                ty = self.type_ref()
            name = self.ident("a type name")
            self.expect(";")
            self.type_names.add(name.text)
            return A.TypedefDecl(name.text, name.loc, annos, ty, kw == "type")
        if kw == "const":
            return self.const_decl(annos)
        if kw == "extern":
            return self.extern_decl(annos)
        if kw == "action":
            return self.action_decl(annos)
        if kw == "parser":
            return self.parser_decl(annos)
        if kw == "control":
            return self.control_decl(annos)
        if kw == "package":
            self.pos += 1
            name = self.ident()
            self.type_names.add(name.text)
            tps = self.type_params()
            params = self.params()
            self.expect(";")
            return A.PackageDecl(name.text, name.loc, annos, tps, params)
        if self.starts_type():
            return self.instance_or_function(annos, top=True)
        raise error(t.loc, f"expected a declaration but found '{t.text}'")

    def id_list(self) -> list[tuple[str, Loc]]:
        self.expect("{")
        out = []
        while not self.at("}"):
            n = self.ident()
            out.append((n.text, n.loc))
            if not self.accept(","):
                break
        self.expect("}")
        return out

    def struct_like(self, annos: list[A.Annotation]) -> A.StructLike:
        kind = self.tok.text
        self.pos += 1
        name = self.ident("a type name")
        self.type_names.add(name.text)
        tps = self.type_params()
        self.expect("{")
        fields = []
        while not self.at("}"):
            fa = self.annotations()
            ty = self.type_ref()
            fname = self.ident("a field name")
            self.expect(";")
            fields.append(A.FieldDecl(ty, fname.text, fa, fname.loc))
        self.expect("}")
        return A.StructLike(name.text, name.loc, annos, kind, fields, tps)

    def enum_decl(self, annos: list[A.Annotation]) -> A.EnumDecl:
        self.expect("enum")
        under = None
        if not (self.tok.kind == "ident" and self.peek().text == "{"):
            under = self.type_ref()
        name = self.ident("an enum name")
        self.type_names.add(name.text)
        self.expect("{")
        members = []
        while not self.at("}"):
            m = self.ident("an enum member")
            val = None
            if self.accept("="):
                val = self.expression()
            members.append((m.text, val, m.loc))
            if not self.accept(","):
                break
        self.expect("}")
        return A.EnumDecl(name.text, name.loc, annos, under, members)

    def const_decl(self, annos: list[A.Annotation]) -> A.ConstDecl:
        self.expect("const")
        ty = self.type_ref()
        name = self.ident()
        self.expect("=")
        val = self.expression()
        self.expect(";")
        return A.ConstDecl(name.text, name.loc, annos, ty, val)

    def type_params(self) -> list[str]:
        out: list[str] = []
        if self.accept("<"):
            while True:
                n = self.ident("a type parameter")
                out.append(n.text)
                self.type_names.add(n.text)
                if not self.accept(","):
                    break
            self.expect(">")
        return out

    def params(self) -> list[A.Param]:
        self.expect("(")
        out: list[A.Param] = []
        while not self.at(")"):
            annos = self.annotations()
            loc = self.tok.loc
            direction = ""
            if self.tok.text in ("in", "out", "inout") and self.tok.kind == "kw":
                direction = self.tok.text
                self.pos += 1
            ty = self.type_ref()
            name = self.ident("a parameter name")
            if direction and isinstance(ty, A.BitsType) and ty.width is None and ty.kind == "int":
                raise error(name.loc, f"{name.text}: parameters with type int must be directionless; "
                            f"remove '{direction}' or give it a width (int<W>, bit<W>)")
            default = None
            if self.accept("="):
                default = self.expression()
            out.append(A.Param(direction, ty, name.text, annos, loc, default))
            if not self.accept(","):
                break
        self.expect(")")
        return out

    def extern_decl(self, annos: list[A.Annotation]) -> object:
        self.expect("extern")
        # extern function: `extern T name<..>(...)`; extern object: `extern Name<..> {`
        if self.tok.kind == "ident" and (self.peek().text == "{" or (
                self.peek().text == "<" and self.after_type_args(1).text == "{")):
            name = self.ident()
            self.type_names.add(name.text)
            tps = self.type_params()
            self.expect("{")
            methods = []
            while not self.at("}"):
                ma = self.annotations()
                self.accept("abstract")
                mloc = self.tok.loc
                if self.tok.text == name.text and self.peek().text == "(":
                    self.pos += 1
                    params = self.params()
                    self.expect(";")
                    methods.append(A.Method(name.text, A.NamedType(mloc, "void"), [], params, mloc, ma))
                    continue
                ret = self.type_ref()
                mname = self.ident("a method name")
                mtps = self.type_params()
                params = self.params()
                self.expect(";")
                methods.append(A.Method(mname.text, ret, mtps, params, mname.loc, ma))
            self.expect("}")
            return A.ExternDecl(name.text, name.loc, annos, tps, methods)
        ret = self.type_ref()
        name = self.ident("a function name")
        tps = self.type_params()
        params = self.params()
        self.expect(";")
        return A.ExternFunc(name.text, name.loc, annos, ret, tps, params)

    def after_type_args(self, k: int) -> Token:
        """The token after the type arguments ``<...>`` that start ``k`` tokens ahead."""
        depth = 0
        while True:
            text = self.peek(k).text
            depth += {"<": 1, ">": -1, ">>": -2}.get(text, 0)
            k += 1
            if depth <= 0 or text in (";", "{", "") or self.pos + k >= len(self.toks):
                return self.peek(k)

    def action_decl(self, annos: list[A.Annotation]) -> A.ActionDecl:
        self.expect("action")
        name = self.ident("an action name")
        params = self.params()
        body = self.block()
        return A.ActionDecl(name.text, name.loc, annos, params, body)

    def parser_decl(self, annos: list[A.Annotation]) -> A.ParserDecl:
        self.expect("parser")
        name = self.ident("a parser name")
        self.type_names.add(name.text)
        tps = self.type_params()
        params = self.params()
        if self.accept(";"):
            return A.ParserDecl(name.text, name.loc, annos, tps, params, [], [], [], True)
        ctor = self.params() if self.at("(") else []
        self.expect("{")
        locals_: list[object] = []
        states: list[A.ParserState] = []
        while not self.at("}"):
            la = self.annotations()
            if self.at("state"):
                states.append(self.parser_state(la))
            elif self.at("const"):
                locals_.append(self.const_decl(la))
            elif self.at("value_set"):
                locals_.append(self.value_set(la))
            else:
                locals_.append(self.local_decl(la))
        self.expect("}")
        return A.ParserDecl(name.text, name.loc, annos, tps, params, ctor, locals_, states)

    def value_set(self, annos: list[A.Annotation]) -> A.ValueSetDecl:
        loc = self.expect("value_set").loc
        self.expect("<")
        ty = self.type_ref()
        self.expect(">")
        self.expect("(")
        size = self.expression()
        self.expect(")")
        name = self.ident()
        self.expect(";")
        return A.ValueSetDecl(name.text, name.loc or loc, annos, ty, size)

    def parser_state(self, annos: list[A.Annotation]) -> A.ParserState:
        self.expect("state")
        name = self.ident("a state name")
        self.expect("{")
        stmts: list[A.Stmt] = []
        trans = None
        while not self.at("}"):
            if self.at("transition"):
                tloc = self.expect("transition").loc
                if self.accept("select"):
                    self.expect("(")
                    exprs = self.expr_list(")")
                    self.expect(")")
                    self.expect("{")
                    cases = []
                    while not self.at("}"):
                        kloc = self.tok.loc
                        ks = self.keyset()
                        self.expect(":")
                        st = self.ident("a state name")
                        self.expect(";")
                        cases.append(A.SelectCase(ks, st.text, kloc))
                    self.expect("}")
                    trans = A.Transition(tloc, None, exprs, cases)
                else:
                    st = self.ident("a state name")
                    self.expect(";")
                    trans = A.Transition(tloc, st.text)
                if not self.at("}"):
                    raise error(self.tok.loc, "transition must be the last statement of a state")
                break
            stmts.append(self.statement())
        end = self.expect("}").loc
        if trans is None:  # P4_16 13.5: a state without a transition statement goes to reject
            trans = A.Transition(end, "reject")
        return A.ParserState(name.text, name.loc, annos, stmts, trans)

    def keyset(self) -> A.Expr:
        loc = self.tok.loc
        if self.at("(") and self._tuple_keyset_ahead():
            self.expect("(")
            items = []
            while True:
                items.append(self.simple_keyset())
                if not self.accept(","):
                    break
            self.expect(")")
            return A.ListExpr(loc, items)
        return self.simple_keyset()

    def _tuple_keyset_ahead(self) -> bool:
        depth = 0
        i = self.pos
        while i < len(self.toks):
            t = self.toks[i]
            if t.kind == "op" and t.text in "([{":
                depth += 1
            elif t.kind == "op" and t.text in ")]}":
                depth -= 1
                if depth == 0:
                    return False
            elif t.kind == "op" and t.text == "," and depth == 1:
                return True
            elif t.text == ":" and depth == 0:
                return False
            i += 1
        return False

    def simple_keyset(self) -> A.Expr:
        loc = self.tok.loc
        if self.accept("default") or self.accept("_"):
            return A.DefaultExpr(loc)
        e = self.expression()
        if self.accept("&&&"):
            return A.Mask(loc, e, self.expression())
        if self.accept(".."):
            return A.Range(loc, e, self.expression())
        return e

    def control_decl(self, annos: list[A.Annotation]) -> A.ControlDecl:
        self.expect("control")
        name = self.ident("a control name")
        self.type_names.add(name.text)
        tps = self.type_params()
        params = self.params()
        if self.accept(";"):
            return A.ControlDecl(name.text, name.loc, annos, tps, params, [], [], None, True)
        ctor = self.params() if self.at("(") else []
        self.expect("{")
        locals_: list[object] = []
        body = None
        while not self.at("}"):
            la = self.annotations()
            if self.at("apply"):
                self.pos += 1
                body = self.block()
                break
            if self.at("action"):
                locals_.append(self.action_decl(la))
            elif self.at("table"):
                locals_.append(self.table_decl(la))
            elif self.at("const"):
                locals_.append(self.const_decl(la))
            else:
                locals_.append(self.local_decl(la))
        self.expect("}")
        if body is None:
            raise error(name.loc, f"control {name.text} has no apply block; add apply {{ }}")
        return A.ControlDecl(name.text, name.loc, annos, tps, params, ctor, locals_, body)

    def local_decl(self, annos: list[A.Annotation]) -> object:
        t = self.tok
        if t.kind == "ident" and self.peek().kind == "ident" and t.text not in self.type_names:
            raise error(t.loc, f"unknown type '{t.text}'; declare it before use")
        if not self.starts_type():
            raise error(self.tok.loc, f"expected a declaration but found '{self.tok.text}'")
        return self.instance_or_function(annos, top=False)

    def instance_or_function(self, annos: list[A.Annotation], top: bool) -> object:
        loc = self.tok.loc
        ty = self.type_ref()
        if self.at("("):
            args = self.args()
            name = self.ident("an instance name")
            if self.at("{"):
                raise unsupported(self.tok.loc, "an extern instance with abstract methods",
                                  "use a plain extern instance")
            self.expect(";")
            return A.Instance(name.text, name.loc, annos, ty, args)
        name = self.ident("a name")
        if self.at("(") or self.at("<"):
            if not top:
                raise error(self.tok.loc, "expected ';' after a variable declaration")
            self.type_params()
            params = self.params()
            body = self.block()
            return A.FunctionDecl(name.text, name.loc, annos, ty, params, body)
        init = None
        if self.accept("="):
            init = self.expression()
        self.expect(";")
        return A.VarDecl(loc, ty, name.text, init, annos)

    def table_decl(self, annos: list[A.Annotation]) -> A.TableDecl:
        self.expect("table")
        name = self.ident("a table name")
        self.expect("{")
        props: list[A.TableProp] = []
        while not self.at("}"):
            pa = self.annotations()
            is_const = bool(self.accept("const"))
            pt = self.tok
            pname = pt.text
            self.pos += 1
            ploc = pt.loc
            if pname == "key":
                self.expect("=")
                self.expect("{")
                keys = []
                while not self.at("}"):
                    kloc = self.tok.loc
                    e = self.expression()
                    self.expect(":")
                    mk = self.ident("a match kind")
                    ka = self.annotations()
                    self.expect(";")
                    keys.append(A.KeyElem(e, mk.text, ka, kloc))
                self.expect("}")
                props.append(A.TableProp("key", keys, is_const, pa, ploc))
            elif pname == "actions":
                self.expect("=")
                self.expect("{")
                items = []
                while not self.at("}"):
                    ia = self.annotations()
                    iloc = self.tok.loc
                    e = self.expression()
                    self.expect(";")
                    items.append(A.ActionListItem(e, ia, iloc))
                self.expect("}")
                props.append(A.TableProp("actions", items, is_const, pa, ploc))
            elif pname == "entries":
                self.expect("=")
                self.expect("{")
                entries = []
                while not self.at("}"):
                    ea = self.annotations()
                    eloc = self.tok.loc
                    self.accept("const")
                    prio = None
                    if self.tok.text == "priority" and self.peek().text == "=":
                        self.pos += 2
                        prio = self.primary()
                        self.expect(":")
                    ks = self.keyset()
                    entry_keys = ks.items if isinstance(ks, A.ListExpr) else [ks]
                    self.expect(":")
                    act = self.postfix()
                    ea += self.annotations()  # an entry's annotations may also follow its action
                    self.expect(";")
                    entries.append(A.EntryDecl(entry_keys, act, prio, ea, eloc))
                self.expect("}")
                props.append(A.TableProp("entries", entries, is_const, pa, ploc))
            else:
                self.expect("=", f"after table property {pname}")
                e = self.expression()
                self.expect(";")
                props.append(A.TableProp(pname, e, is_const, pa, ploc))
        self.expect("}")
        return A.TableDecl(name.text, name.loc, annos, props)

    # ------------------------------------------------------------ types
    def starts_type(self) -> bool:
        t = self.tok
        if t.kind == "kw" and t.text in ("bit", "int", "varbit", "bool", "error", "void",
                                         "string", "tuple", "match_kind"):
            return True
        if t.kind == "op" and t.text == "." and self.peek().kind == "ident":
            return self.peek().text in self.type_names
        return t.kind == "ident" and t.text in self.type_names

    def type_ref(self) -> A.TypeRef:
        t = self.tok
        loc = t.loc
        if t.kind == "kw" and t.text in ("bit", "int", "varbit"):
            self.pos += 1
            width: A.Expr | None = None
            if self.accept("<"):
                if self.at("("):
                    self.pos += 1
                    width = self.expression()
                    self.expect(")")
                else:
                    wt = self.tok
                    if wt.kind == "num":
                        self.pos += 1
                        w, s, v = cast(NumberValue, wt.value)
                        width = A.IntLit(wt.loc, v, w, s, wt.text)
                    else:
                        width = A.Name(wt.loc, self.ident("a width").text)
                self.expect(">")
            elif t.text == "bit":
                width = A.IntLit(loc, 1, None, False, "1")
            elif t.text == "varbit":
                raise error(loc, "varbit needs a maximum width: varbit<W>")
            ty: A.TypeRef = A.BitsType(loc, t.text, width)
        elif t.kind == "kw" and t.text == "tuple":
            self.pos += 1
            self.expect("<")
            elems = [self.type_ref()]
            while self.accept(","):
                elems.append(self.type_ref())
            self.expect(">")
            ty = A.TupleType(loc, elems)
        elif t.kind == "kw" and t.text in ("bool", "error", "void", "string", "match_kind"):
            self.pos += 1
            ty = A.NamedType(loc, t.text)
        elif t.kind == "ident" and t.text == "_":
            self.pos += 1
            ty = A.DontCareType(loc)
        else:
            self.accept(".")
            name = self.ident("a type")
            args: list[A.TypeRef] = []
            if self.at("<"):
                self.pos += 1
                args.append(self.type_ref())
                while self.accept(","):
                    args.append(self.type_ref())
                self.expect(">")
            ty = A.NamedType(loc, name.text, args)
        while self.at("[") :
            self.pos += 1
            size = self.expression()
            self.expect("]")
            ty = A.StackType(loc, ty, size)
        return ty

    # ------------------------------------------------------------ statements
    def block(self) -> A.Block:
        loc = self.expect("{").loc
        stmts = []
        while not self.at("}"):
            if self.tok.kind == "eof":
                raise error(loc, "unterminated block; add '}'")
            stmts.append(self.statement())
        self.expect("}")
        return A.Block(loc, stmts)

    def statement(self) -> A.Stmt:
        annos = self.annotations()
        t = self.tok
        loc = t.loc
        if t.kind == "op" and t.text == "{":
            return self.block()
        if t.kind == "op" and t.text == ";":
            self.pos += 1
            return A.Empty(loc)
        if t.kind == "ident" and self.peek().kind == "ident" and t.text not in self.type_names:
            raise error(loc, f"unknown type '{t.text}'; declare it before use")
        if t.kind == "kw":
            if t.text == "if":
                self.pos += 1
                self.expect("(")
                cond = self.expression()
                self.expect(")")
                then = self.statement()
                other = self.statement() if self.accept("else") else None
                return A.If(loc, cond, then, other)
            if t.text == "switch":
                return self.switch_stmt()
            if t.text == "exit":
                self.pos += 1
                self.expect(";")
                return A.Exit(loc)
            if t.text == "return":
                self.pos += 1
                val = None if self.at(";") else self.expression()
                self.expect(";")
                return A.Return(loc, val)
            if t.text == "const":
                self.pos += 1
                ty = self.type_ref()
                name = self.ident()
                self.expect("=")
                val = self.expression()
                self.expect(";")
                return A.VarDecl(loc, ty, name.text, val, annos, True)
            if t.text == "for":
                return self.for_stmt()
            if t.text in ("break", "continue"):
                self.pos += 1
                self.expect(";")
                return A.Break(loc) if t.text == "break" else A.Continue(loc)
        st = self.simple_statement(annos)
        self.expect(";")
        return st

    def simple_statement(self, annos: list[A.Annotation]) -> A.Stmt:
        """A variable declaration, assignment or call, without its terminator (also
        the parts of a ``for`` header)."""
        loc = self.tok.loc
        if self.starts_type() and self._decl_ahead():
            ty = self.type_ref()
            name = self.ident("a variable name")
            init = None
            if self.accept("="):
                init = self.expression()
            return A.VarDecl(loc, ty, name.text, init, annos)
        e = self.expression()
        if self.accept("="):
            val = self.expression()
            return A.Assign(loc, e, val)
        op = self.compound_op()
        if op is not None:
            return A.Assign(loc, e, self.expression(), op)
        if not isinstance(e, A.Call):
            raise error(loc, "expected an assignment or a call statement")
        return A.CallStmt(loc, e)

    def for_stmt(self) -> A.Stmt:
        """``for (init; cond; update) body`` or ``for (T x in lo .. hi / {list}) body``."""
        loc = self.expect("for").loc
        self.expect("(")
        if self.tok.kind == "ident" and self.peek().kind == "kw" and self.peek().text == "in":
            raise error(self.peek().loc, f"a for-in loop declares its variable: for (bit<W> {self.tok.text} in ...)")
        if self.starts_type() and self._decl_ahead():
            save = self.pos
            ty = self.type_ref()
            name = self.ident("a variable name")
            if self.accept("in"):
                it = self.expression()
                if self.accept(".."):
                    it = A.Range(it.loc, it, self.expression())
                self.expect(")")
                return A.ForIn(loc, ty, name.text, it, self.statement())
            self.pos = save
        init = self.for_list(";")
        self.expect(";")
        cond = None if self.at(";") else self.expression()
        self.expect(";")
        update = self.for_list(")")
        self.expect(")")
        return A.For(loc, init, cond, update, self.statement())

    def for_list(self, end: str) -> list[A.Stmt]:
        out: list[A.Stmt] = []
        while not self.at(end):
            out.append(self.simple_statement([]))
            if not self.accept(","):
                break
        return out

    def compound_op(self) -> str | None:
        """The operator of a compound assignment (``+=`` ... ``|-|=``, ``>>=``) at the
        current token, consumed; None when there is none."""
        t = self.tok
        if t.kind == "op" and t.text in _COMPOUND:
            self.pos += 1
            return t.text[:-1]
        if self.at_gt_pair(">") and self.gt_then_eq(1):
            self.pos += 3
            return ">>"
        return None

    def gt_then_eq(self, k: int) -> bool:
        """The token ``k`` ahead is ``>`` and ``=`` follows it immediately (``>>=``)."""
        a, b = self.peek(k), self.peek(k + 1)
        return (a.text == ">" and b.kind == "op" and b.text == "="
                and b.loc.line == a.loc.line and b.loc.col == a.loc.col + 1)

    def _decl_ahead(self) -> bool:
        """After a type name: a declaration has ``name`` next (or a type's ``<``/``[``)."""
        save = self.pos
        try:
            self.type_ref()
            return self.tok.kind == "ident"
        except Exception:  # lookahead only
            return False
        finally:
            self.pos = save

    def switch_stmt(self) -> A.Switch:
        loc = self.expect("switch").loc
        self.expect("(")
        e = self.expression()
        self.expect(")")
        self.expect("{")
        cases: list[A.SwitchCase] = []
        while not self.at("}"):
            cloc = self.tok.loc
            label: A.Expr | None
            if self.accept("default"):
                if any(c.labels == [None] for c in cases):
                    raise error(loc, "switch has multiple 'default' labels; keep one")
                label = None
            else:
                label = self.expression()
            self.expect(":")
            body = self.block() if self.at("{") else None
            cases.append(A.SwitchCase([label], body, cloc))
        self.expect("}")
        return A.Switch(loc, e, cases)

    # ------------------------------------------------------------ expressions
    def expr_list(self, end: str) -> list[A.Expr]:
        out: list[A.Expr] = []
        while not self.at(end):
            out.append(self.expression())
            if not self.accept(","):
                break
        return out

    def expression(self) -> A.Expr:
        cond = self.binary(0)
        if self.at("?"):
            loc = self.expect("?").loc
            then = self.expression()
            self.expect(":")
            other = self.expression()
            return A.Ternary(loc, cond, then, other)
        return cond

    def _binop(self, level: int) -> str | None:
        t = self.tok
        if t.kind != "op":
            return None
        ops = _BINARY_LEVELS[level]
        if ">>" in ops and self.at_gt_pair(">"):
            return None if self.gt_then_eq(1) else ">>"
        if ">=" in ops and self.at_gt_pair("="):
            return ">="
        if t.text in ops:
            if t.text == ">" and (self.at_gt_pair(">") or self.at_gt_pair("=")):
                return None
            return t.text
        return None

    def binary(self, level: int) -> A.Expr:
        if level == len(_BINARY_LEVELS):
            return self.unary()
        left = self.binary(level + 1)
        while True:
            op = self._binop(level)
            if op is None:
                return left
            loc = self.tok.loc
            self.pos += 2 if op in (">>", ">=") else 1
            right = self.binary(level + 1)
            left = A.Binary(loc, op, left, right)

    def unary(self) -> A.Expr:
        t = self.tok
        if t.kind == "op" and t.text in ("!", "~", "-", "+"):
            self.pos += 1
            operand = self.unary()
            if t.text == "+":
                return operand
            return A.Unary(t.loc, t.text, operand)
        if t.kind == "op" and t.text == "(" and self._cast_ahead():
            self.pos += 1
            ty = self.type_ref()
            self.expect(")")
            return A.Cast(t.loc, ty, self.unary())
        return self.postfix()

    def _cast_ahead(self) -> bool:
        save = self.pos
        self.pos += 1
        try:
            if not self.starts_type():
                return False
            self.type_ref()
            return self.at(")")
        except Exception:  # lookahead only
            return False
        finally:
            self.pos = save

    def postfix(self) -> A.Expr:
        e = self.primary()
        while True:
            t = self.tok
            if t.kind == "op" and t.text == ".":
                self.pos += 1
                n = self.tok
                if n.kind not in ("ident", "kw"):
                    raise error(n.loc, f"expected a member name after '.' but found '{n.text}'")
                self.pos += 1
                e = A.Member(e.loc, e, n.text)
            elif t.kind == "op" and t.text == "[":
                self.pos += 1
                a = self.expression()
                if self.accept(":"):
                    b = self.expression()
                    self.expect("]")
                    e = A.Slice(e.loc, e, a, b)
                elif self.at("+:"):  # [lo +: w] is [lo + w - 1 : lo]
                    self.pos += 1
                    w = self.expression()
                    self.expect("]")
                    one = A.IntLit(w.loc, value=1, width=None, signed=False, text="1")
                    e = A.Slice(e.loc, e, A.Binary(w.loc, "+", a, A.Binary(w.loc, "-", w, one)), a)
                else:
                    self.expect("]")
                    e = A.Index(e.loc, e, a)
            elif t.kind == "op" and t.text == "(":
                e = A.Call(e.loc, e, [], self.args())
            elif t.kind == "op" and t.text == "<" and self._type_args_ahead():
                self.pos += 1
                targs = [self.type_ref()]
                while self.accept(","):
                    targs.append(self.type_ref())
                self.expect(">")
                e = A.Call(e.loc, e, targs, self.args())
            else:
                return e

    def _type_args_ahead(self) -> bool:
        save = self.pos
        self.pos += 1
        try:
            self.type_ref()
            while self.accept(","):
                self.type_ref()
            return self.at(">") and self.peek().text == "("
        except Exception:  # lookahead only
            return False
        finally:
            self.pos = save

    def args(self) -> list[A.Arg]:
        self.expect("(")
        out = []
        while not self.at(")"):
            loc = self.tok.loc
            name = None
            if self.tok.kind == "ident" and self.peek().text == "=" and self.peek(2).text != "=":
                name = self.tok.text
                self.pos += 2
            if self.tok.text == "_" and self.peek().text in (",", ")"):
                self.pos += 1
                out.append(A.Arg(name, None, loc))
            else:
                out.append(A.Arg(name, self.expression(), loc))
            if not self.accept(","):
                break
        self.expect(")")
        return out

    def primary(self) -> A.Expr:
        t = self.tok
        loc = t.loc
        if t.kind == "num":
            self.pos += 1
            w, s, v = cast(NumberValue, t.value)
            return A.IntLit(loc, v, w, s, t.text)
        if t.kind == "str":
            self.pos += 1
            return A.StrLit(loc, t.value)  # type: ignore[arg-type]  # a string token's value is its text
        if t.kind == "kw" and t.text in ("true", "false"):
            self.pos += 1
            return A.BoolLit(loc, t.text == "true")
        if t.kind == "op" and t.text == "(":
            self.pos += 1
            e = self.expression()
            self.expect(")")
            return e
        if t.kind == "op" and t.text == "{":
            self.pos += 1
            if self.tok.kind == "ident" and self.peek().text == "=" :
                fields: list[tuple[str, A.Expr]] = []
                while not self.at("}"):
                    n = self.ident("a field name")
                    if any(name == n.text for name, _ in fields):
                        raise error(n.loc, f"field '{n.text}' is given twice in this structure expression; "
                                    "keep one")
                    self.expect("=")
                    fields.append((n.text, self.expression()))
                    if not self.accept(","):
                        break
                self.expect("}")
                return A.StructExpr(loc, fields)
            items = self.expr_list("}")
            self.expect("}")
            return A.ListExpr(loc, items)
        if t.kind == "op" and t.text == ".":
            self.pos += 1
            n = self.ident()
            return A.Name(n.loc, n.text, top=True)
        if t.kind == "kw" and t.text in ("error",):
            self.pos += 1
            return A.TypeNameExpr(loc, t.text)
        if t.kind == "kw" and t.text in ("bit", "int", "varbit", "bool", "tuple"):
            # a type used as value, e.g. in `bit<8>` constructors: not supported
            raise error(loc, f"expected an expression but found type '{t.text}'")
        if t.kind == "ident":
            self.pos += 1
            return A.Name(loc, t.text)
        if t.kind == "kw" and t.text in ("apply", "type", "state", "key", "actions"):
            self.pos += 1
            return A.Name(loc, t.text)
        raise error(loc, f"expected an expression but found '{t.text}'")


def parse_tokens(tokens: list[Token]) -> A.Program:
    """The program's AST, direct ``C.apply(...)`` calls made into instances (direct_calls.py),
    its v1model version checked (v1model_version.py)."""
    program = Parser(tokens).program()
    check_v1model_version(program)
    return instantiate_direct_calls(program)
