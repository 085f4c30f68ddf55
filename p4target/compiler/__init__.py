"""Compiler of the embedded P4 target: P4_16 v1model source -> ProgramModel + Python.

``compile_file`` runs the front-end (preprocess, lex, parse), resolves and type-checks
the program while generating one specialised Python module for it, and returns a
``CompiledProgram`` (docs/target-internals.md, section 1). Any problem with the input
is a ``P4Error`` naming file:line:col, never a Python traceback.
"""

from __future__ import annotations

import logging
from functools import partial
from pathlib import Path
from types import CodeType
from typing import TYPE_CHECKING, Callable, cast

from p4target import optional_accel
from p4target.compiler import fastgen
from p4target.compiler.fastgen import FastSource, build_fast
from p4target.compiler.program import ProgramCompiler
from p4target.compiler.source_order import earlier_error, unused_block_error
from p4target.errors import P4Error
from p4target.frontend.lexer import tokenize
from p4target.frontend.parser import parse_tokens
from p4target.frontend.preprocessor import preprocess
from p4target.model import ProgramModel

if TYPE_CHECKING:
    from p4target.optional_accel import NativeFastPath

log = logging.getLogger(__name__)

__all__ = ["CompiledProgram", "compile_file"]


class CompiledProgram:
    """A compiled program: its model, its generated Python source and a factory of pipelines.

    The fused fast path (p4target/compiler/fast_compiler.py) is generated on first use
    (``fast_factory``, called by ``Switch`` for its first frame), once per program:
    loading a program costs no more than the general code, and a program that
    never forwards a frame never pays for it. Its compiled form (``native_fast_path``,
    p4target/accel/native.py) is built from the same source, also once.
    """

    def __init__(self, model: ProgramModel, python_source: str, errors: dict[str, int],
                 path: Path, fast: Callable[[], FastSource | None] | FastSource | None = None) -> None:
        self.model = model
        self.python_source = python_source
        self.errors = errors
        self.path = path
        self._code: CodeType = compile(python_source, f"<p4:{path.name}>", "exec")
        self._namespace: dict[str, object] = {"__name__": f"p4gen_{path.stem}"}
        exec(self._code, self._namespace)  # our own generated code
        self._fast_builder = fast if callable(fast) else None
        self._fast: FastSource | None = fast if isinstance(fast, FastSource) else None
        self._fast_done = not callable(fast)
        self._make_fast: Callable[[object], Callable] | None = None
        self._native: NativeFastPath | None = None

    def instantiate(self, rt: object) -> object:
        """A new ``Pipeline`` bound to the runtime ``Bindings`` ``rt`` (tables, externs...)."""
        build = self._namespace["build"]
        return build(rt)  # type: ignore[operator]  # build is the generated module's build(rt)

    @property
    def may_have_fast_path(self) -> bool:
        """False when it is known that there is none (switched off, or built and absent)."""
        return not self._fast_done or self._fast is not None

    def fast_source(self) -> FastSource | None:
        """The fast path's source (generated now if it was not yet), or None."""
        if not self._fast_done:
            self._fast_done = True
            self._fast = self._fast_builder() if self._fast_builder else None
        return self._fast

    def fast_factory(self) -> tuple[Callable[[object], Callable], bool] | None:
        """``(make_fast, uses_clock)``: ``make_fast(rt)`` is the fast path of a pipeline
        bound to ``rt``; None when the program has none."""
        src = self.fast_source()
        if src is None:
            return None
        if self._make_fast is None:
            try:
                code = compile(src.text, f"<p4-fast:{self.path.name}>", "exec")
                exec(code, self._namespace)  # our own generated code
            except SyntaxError as exc:  # a generator bug (or a limit of Python's): none
                log.warning("%s: no fast path: its generated source does not compile (%s); every frame "
                            "takes the general path; please report this with the program", self.path, exc)
                self._fast = None
                return None
            self._make_fast = cast(Callable[[object], Callable], self._namespace["make_fast"])
        return self._make_fast, src.uses_clock

    def native_fast_path(self) -> NativeFastPath | None:
        """The compiled fast path of the program (one for all its switches), or None
        when the program has no fast path, ``P4TARGET_NATIVE=0`` or ``p4target/accel/``
        is absent: the interpreted fast path then stays."""
        if self._native is None:
            native = optional_accel.part("native")
            if native is None or not native.enabled():
                return None
            src = self.fast_source()
            if src is not None and self.fast_factory() is not None:
                self._native = native.NativeFastPath(src.text, self._namespace, self.path.name)
        return self._native

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
        compiler = ProgramCompiler(program, path)
        try:
            source, model, errors = compiler.compile()
        except P4Error as exc:
            raise (earlier_error(program, path, exc) or exc) from None
        unused = unused_block_error(program, path)
        if unused is not None:
            raise unused
        # the fast path is generated when the first switch needs it (FAST_PATH is read now)
        fast = partial(build_fast, program, path) if fastgen.FAST_PATH else None
        compiled = CompiledProgram(model, source, errors, path, fast)
    except P4Error:
        raise
    except RecursionError:
        raise P4Error("expression or nesting too deep for the embedded target; simplify it",
                      str(path)) from None
    except Exception as exc:  # a compiler bug must still be one clear line
        where = compiler.last_loc if compiler is not None and compiler.last_loc else None
        log.debug("internal compiler error", exc_info=True)
        raise P4Error(f"internal error of the embedded P4 compiler ({type(exc).__name__}: {exc}); "
                      "please report it with this program", str(where or path)) from None
    log.debug("compiled %s: %d tables, %d actions", path, len(model.tables), len(model.actions))
    return compiled
