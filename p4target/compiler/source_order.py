"""The first error of a program in source order, for a program the compiler refused.

The compiler checks what it compiles: the declarations, then the blocks V1Switch
names, in pipeline order. p4c type-checks every declaration in the order of the
source, also blocks no package uses, and reports the first error it finds. When the
compiler refuses a program, ``earlier_error`` checks each control and parser of the
program on its own, in source order, as an instance without constructor arguments,
and returns an error placed before the compiler's in the same file, so the error
reported is the one p4c reports first. Limits of the target (``UnsupportedError``)
met on the way are skipped when the compiler's error is a real one: they say nothing
about the program being wrong; when the compiler's error is itself such a limit, the
first problem in source order, a limit or an error, is reported. It runs only for
programs that fail, so it costs a valid program nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from p4target.compiler.program import ProgramCompiler
from p4target.errors import P4Error, UnsupportedError
from p4target.frontend import ast as A


def earlier_error(program: A.Program, path: Path, found: P4Error) -> P4Error | None:
    """A real error of ``program`` placed before ``found`` in the same file, or None."""
    where = _place(found)
    limits_too = isinstance(found, UnsupportedError)
    for exc in _errors_in_source_order(program, path):
        place = _place(exc)
        if place is None or where is None or place[0] != where[0] or place[1:] >= where[1:]:
            return None
        if limits_too or not isinstance(exc, UnsupportedError):
            return exc
    return None


def unused_block_error(program: A.Program, path: Path) -> P4Error | None:
    """The first error of a control or parser nothing refers to (p4c checks those too;
    the compiler, which compiles what V1Switch reaches, never sees them), or None."""
    blocks = [d for d in program.decls if isinstance(d, (A.ControlDecl, A.ParserDecl)) and not d.is_type]
    if not blocks:
        return None
    referred: set[str] = set()
    for d in program.decls:
        for n in A.walk(d if d not in blocks else [getattr(d, "locals", []), getattr(d, "body", None),
                                                   getattr(d, "states", [])]):
            if isinstance(n, (A.Name, A.NamedType)):
                referred.add(n.name)
    unused = [d for d in blocks if d.name not in referred]
    if not unused:
        return None
    return next((e for e in _errors_in_source_order(program, path, unused) if not isinstance(e, UnsupportedError)),
                None)


def _place(exc: P4Error) -> tuple[str, int, int] | None:
    parts = (exc.location or "").rsplit(":", 2)
    if len(parts) != 3 or not parts[1].isdigit() or not parts[2].isdigit():
        return None
    return parts[0], int(parts[1]), int(parts[2])


def _errors_in_source_order(program: A.Program, path: Path,
                            blocks: list[A.ControlDecl | A.ParserDecl] | None = None) -> Iterator[P4Error]:
    """The limits of the target the block-by-block check meets, then the first real error
    it finds (nothing after that one), in ``blocks`` (all the program's when None)."""
    compiler = ProgramCompiler(program, path)
    try:
        compiler.declare_all(require_main=False)
    except P4Error as exc:
        yield exc
        return
    except Exception:  # the compiler's own error stands
        return
    for d in program.decls if blocks is None else blocks:
        if not isinstance(d, (A.ControlDecl, A.ParserDecl)) or d.is_type or d.type_params or d.ctor_params:
            continue
        try:
            compiler.check_block(d)
        except UnsupportedError as exc:
            yield exc
        except P4Error as exc:
            if not exc.message.startswith("internal error"):
                yield exc
                return
        except Exception:  # a block the check cannot compile alone says nothing
            continue
