"""Direct invocation of a control or parser type: ``C.apply(args)`` (P4_16 13.8.1, 14.4).

Calling ``apply`` on a control or parser type instantiates it without constructor
arguments in the calling block. The rewrite makes that explicit, as p4c's front end
does: each call gets a new instance ``C_inst`` (``C_inst_1``, ... when the name is
taken) among the caller's locals, with ``@name("C")`` so its tables and externs get
the names p4c gives them (``MyIngress.C.t``), and the call becomes ``C_inst.apply(args)``.
The compiler then sees only instances, which it already knows how to compile.
"""

from __future__ import annotations

from p4target.frontend import ast as A


def instantiate_direct_calls(program: A.Program) -> A.Program:
    """Rewrite every ``T.apply(...)`` of a control or parser type ``T`` in place; returns ``program``."""
    types = {d.name for d in program.decls
             if isinstance(d, (A.ControlDecl, A.ParserDecl)) and not d.type_params}
    if not types:
        return program
    for d in program.decls:
        if isinstance(d, A.ControlDecl) and d.body is not None:
            _Rewriter(types, d.locals, d.params + d.ctor_params).visit([d.locals, d.body])
        elif isinstance(d, A.ParserDecl) and not d.is_type:
            _Rewriter(types, d.locals, d.params + d.ctor_params).visit([d.locals, d.states])
    return program


class _Rewriter:
    def __init__(self, types: set[str], block_locals: list[object], params: list[A.Param]) -> None:
        self.types = types
        self.block_locals = block_locals
        self.taken = {getattr(x, "name", "") for x in block_locals} | {p.name for p in params}
        self.shadowed = self.taken & types  # a parameter or local of the block named like a type wins
        self.new: list[A.Instance] = []

    def visit(self, node: object) -> None:
        for n in A.walk(node):
            if isinstance(n, A.Call):
                self._rewrite(n)
        self.block_locals.extend(self.new)

    def _rewrite(self, call: A.Call) -> None:
        func = call.func
        if not (isinstance(func, A.Member) and func.name == "apply" and isinstance(func.obj, A.Name)):
            return
        type_name = func.obj.name
        if func.obj.top or type_name not in self.types or type_name in self.shadowed:
            return
        name = f"{type_name}_inst"
        n = 0
        while name in self.taken:
            n += 1
            name = f"{type_name}_inst_{n}"
        self.taken.add(name)
        loc = func.obj.loc
        self.new.append(A.Instance(name, loc, [A.Annotation("name", f'"{type_name}"', [type_name], loc)],
                                   A.NamedType(loc, type_name), []))
        func.obj = A.Name(loc, name)
