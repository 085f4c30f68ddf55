"""The P4Runtime write path (``p4target.p4runtime.write`` and ``translate``) compiled
with Cython.

Why: a batched Write spends most of its time in ``write`` and ``translate`` (every
check of every update, the key and argument decoders), and most of that is the
interpreter's dispatch. Cython compiles the same ``.py`` files with Python's
semantics (the same objects, exceptions and calls), so the compiled ``apply_update``
gives the same answers faster (docs/performance.md).

How: ``make native`` (``python -m p4target.accel.write_path``) compiles each module of
``COMPILED`` into the native cache (``native.cache_dir``), under a key that hashes
its source with the tool versions (``native.build_key``). ``compiled_apply_update``
hands the server the compiled ``apply_update`` only when the cache holds one built
from the ``.py`` as it is now; the server asks for it explicitly when it is made
(``p4target.p4runtime.write_choice``). Nothing is put on the import system: the
modules keep their ``.py`` under their names for everyone else (a debugger,
coverage, the read path, the tests); the compiled copies are module objects of their
own that only the server's writes go through. ``_wire`` joins them: the compiled
``write`` calls the compiled ``translate``, and the classes the compiled
``translate`` would define (``ActionCall``) are the ``.py``'s, so an entry's action
is the same type whichever path wrote it.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import logging
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, Sequence

from p4target.accel import native

log = logging.getLogger(__name__)

WRITE = "p4target.p4runtime.write"
TRANSLATE = "p4target.p4runtime.translate"
COMPILED = (TRANSLATE, WRITE)
PREFIX = "p4mod"
# Annotations stay documentation: with typing on, Cython would check ``x: int`` arguments
# on entry and refuse what Python accepts.
CYTHON_ARGS = ("-X", "annotation_typing=False")


def _source(name: str) -> Path:
    """The ``.py`` file of module ``name``, found without importing it."""
    parent, _, _ = name.rpartition(".")
    path = importlib.import_module(parent).__path__ if parent else None
    spec = importlib.machinery.PathFinder.find_spec(name, path)
    if spec is None or spec.origin is None or not spec.origin.endswith(".py"):
        raise native.NativeError(f"{name}: no Python source to compile")
    return Path(spec.origin)


def _key(name: str, source: str, cc: str) -> str:
    return native.build_key("\0".join((name, *CYTHON_ARGS, source)), cc)


def compiled_path(name: str) -> Path:
    """Where the compiled copy of ``name``, built from its source as it is now, is kept.
    Raises ``native.NativeError`` when there can be none (no Cython, no compiler)."""
    text = _source(name).read_text()
    return native.module_path(native.cache_dir(), _key(name, text, native.c_compiler()), PREFIX)


def build(name: str) -> Path:
    """Compile the module ``name`` from its current source into the cache (if not there
    yet); returns the compiled copy's path. Raises ``native.NativeError``."""
    text = _source(name).read_text()
    cc = native.c_compiler()
    key = _key(name, text, cc)
    native.ensure_built(text, key, cc, native.cache_dir(), name, module_name=name, prefix=PREFIX,
                        cython_args=CYTHON_ARGS, what="compiled module")
    return native.module_path(native.cache_dir(), key, PREFIX)


def load_compiled(name: str, asked: bool = False) -> ModuleType | None:
    """The compiled copy of module ``name`` (a module object of its own, not put in
    ``sys.modules``), or None, with one log line saying why, when switched off
    (``P4TARGET_NATIVE=0``, unless ``asked``), not built from the current source, or
    not loadable."""
    if not asked and not native.enabled():
        return None
    importlib.import_module(name)  # the .py first: sys.modules keeps it under its name
    try:
        path = compiled_path(name)
    except (native.NativeError, OSError) as e:
        log.info("%s: no compiled copy, the source is used: %s", name, e)
        return None
    if not path.exists():
        log.info("%s: no compiled copy of this source in %s (make native builds it)", name, path.parent)
        return None
    try:
        return native.load(path, name)
    except native.NativeError as e:
        log.warning("%s: the compiled copy is not used: %s", name, e)
        return None


def _wire(write: ModuleType, translate: ModuleType | None) -> None:
    """Point the compiled ``write`` at the compiled ``translate`` (for each function it
    took from the ``.py``), and that one's own classes back at the ``.py``'s."""
    source = sys.modules[TRANSLATE]
    if translate is None:
        return
    for name, value in list(vars(translate).items()):
        mine = getattr(source, name, None)
        if isinstance(value, type) and isinstance(mine, type) and value is not mine:
            setattr(translate, name, mine)
    for name, value in list(vars(write).items()):
        if value is getattr(source, name, None) and callable(value) and not isinstance(value, type):
            setattr(write, name, getattr(translate, name))


def compiled_apply_update(asked: bool = False) -> Callable[..., Any] | None:
    """``apply_update`` of the compiled write path, or None (see ``load_compiled``).
    With ``write`` compiled and ``translate`` not, the compiled ``write`` calls the
    ``.py`` one."""
    write = load_compiled(WRITE, asked)
    if write is None:
        return None
    _wire(write, load_compiled(TRANSLATE, asked))
    return write.apply_update


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m p4target.accel.write_path [NAME...]``: build the compiled copies."""
    names = list(argv if argv is not None else sys.argv[1:]) or list(COMPILED)
    failed = 0
    for name in names:
        t0 = time.monotonic()
        try:
            where = build(name)
        except native.NativeError as e:
            print(f"{name}: not compiled, the source stays in use: {e}", file=sys.stderr)
            failed += 1
            continue
        print(f"{name}: compiled ({where}, {time.monotonic() - t0:.1f} s)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
