"""Compiler of the embedded P4 target: P4_16 v1model source -> ProgramModel + Python.

``compile_file`` runs the front-end (preprocess, lex, parse), resolves and type-checks
the program while generating one specialised Python module for it, and returns a
``CompiledProgram`` (docs/target-internals.md, section 1). Any problem with the input
is a ``P4Error`` naming file:line:col, never a Python traceback.
"""

from __future__ import annotations

import logging
from pathlib import Path
from types import CodeType

from p4target.compiler.fastgen import build_fast
from p4target.compiler.program import ProgramCompiler
from p4target.errors import P4Error
from p4target.frontend.lexer import tokenize
from p4target.frontend.parser import parse_tokens
from p4target.frontend.preprocessor import preprocess
from p4target.model import ProgramModel

log = logging.getLogger(__name__)

__all__ = ["CompiledProgram", "compile_file"]


class CompiledProgram:
    """A compiled program: its model, its generated Python source and a factory of pipelines."""

    def __init__(self, model: ProgramModel, python_source: str, errors: dict[str, int],
                 path: Path) -> None:
        self.model = model
        self.python_source = python_source
        self.errors = errors
        self.path = path
        self._code: CodeType = compile(python_source, f"<p4:{path.name}>", "exec")
        self._namespace: dict[str, object] = {"__name__": f"p4gen_{path.stem}"}
        exec(self._code, self._namespace)  # noqa: S102 - our own generated code

    def instantiate(self, rt: object) -> object:
        """A new ``Pipeline`` bound to the runtime ``Bindings`` ``rt`` (tables, externs...)."""
        build = self._namespace["build"]
        return build(rt)  # type: ignore[operator]

    def __repr__(self) -> str:
        return f"CompiledProgram({self.path}, {len(self.model.tables)} tables)"


def compile_file(path: str | Path, include_dirs: tuple[str | Path, ...] | list[str | Path] = (),
                 defines: dict[str, str] | None = None) -> CompiledProgram:
    """Compile a P4_16 v1model program; raises P4Error (file:line:col) on bad input."""
    path = Path(path)
    if not path.is_file():
        raise P4Error(f"cannot read {path}: no such file; check the path")
    compiler: ProgramCompiler | None = None
    try:
        lines = preprocess(path, tuple(Path(d) for d in include_dirs), dict(defines or {}))
        program = parse_tokens(tokenize(lines))
        fast = build_fast(program, path)  # None when the program has no fast path
        compiler = ProgramCompiler(program, path)
        compiler.fast_function = fast
        source, model, errors = compiler.compile()
        try:
            compiled = CompiledProgram(model, source, errors, path)
        except SyntaxError as exc:
            if fast is None:
                raise
            # the fast path used a construct it cannot express: go without it
            log.debug("%s: no fast path (%s)", path, exc)
            compiler = ProgramCompiler(program, path)
            source, model, errors = compiler.compile()
            compiled = CompiledProgram(model, source, errors, path)
    except P4Error:
        raise
    except RecursionError:
        raise P4Error("expression or nesting too deep for the embedded target; simplify it",
                      str(path)) from None
    except Exception as exc:  # noqa: BLE001 - a compiler bug must still be one clear line
        where = compiler.last_loc if compiler is not None and compiler.last_loc else None
        log.debug("internal compiler error", exc_info=True)
        raise P4Error(f"internal error of the embedded P4 compiler ({type(exc).__name__}: {exc}); "
                      "please report it with this program", str(where or path)) from None
    log.debug("compiled %s: %d tables, %d actions", path, len(model.tables), len(model.actions))
    return compiled
