"""The P4Runtime write path (``p4target.p4runtime.write``) compiled with Cython.

Why: a batched Write spends most of its time in ``write`` (every check of every
update) and most of that is the interpreter's dispatch. Cython compiles the same
``.py`` with Python's semantics (the same objects, exceptions and calls), so the
compiled ``apply_update`` gives the same answers faster (docs/performance.md).

How: ``make native`` (``python -m p4target.accel.write_path``) compiles ``write.py``
into the native cache (``native.cache_dir``), under a key that hashes its source with
the tool versions (``native.build_key``). ``compiled_apply_update`` hands the
server the compiled ``apply_update`` only when the cache holds one built from the
``.py`` as it is now; the server asks for it explicitly when it is made
(``p4target.p4runtime.write_choice``). Nothing is put on the import system: the
module ``p4target.p4runtime.write`` stays the ``.py`` for everyone else (a debugger,
coverage, the tests), and the compiled copy is a separate module object that only
the server's write calls go through. ``translate`` stays interpreted: its classes
(``ActionCall``) are shared with the read path and the state, which a second copy of
the module would split in two.
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
PREFIX = "p4mod"
# Annotations stay documentation: with typing on, Cython would check ``x: int`` arguments
# on entry and refuse what Python accepts.
CYTHON_ARGS = ("-X", "annotation_typing=False")


def _source(name: str) -> Path:
    """The ``.py`` file of module ``name``, found without importing it."""
    parent, _, _ = name.rpartition(".")
    path = importlib.import_module(parent).__path__ if parent else None
    spec = importlib.machinery.PathFinder.find_spec(name, path)
    if spec is None or not (spec.origin or "").endswith(".py"):
        raise native.NativeError(f"{name}: no Python source to compile")
    return Path(spec.origin)


def _key(name: str, source: str, cc: str) -> str:
    return native.build_key("\0".join((name, *CYTHON_ARGS, source)), cc)


def compiled_path(name: str) -> Path:
    """Where the compiled copy of ``name``, built from its source as it is now, is kept.
    Raises ``native.NativeError`` when there can be none (no Cython, no compiler)."""
    text = _source(name).read_text()
    return native.module_path(native.cache_dir(), _key(name, text, native.c_compiler()), PREFIX)


def build(name: str = WRITE) -> Path:
    """Compile the module ``name`` from its current source into the cache (if not there
    yet); returns the compiled copy's path. Raises ``native.NativeError``."""
    text = _source(name).read_text()
    cc = native.c_compiler()
    key = _key(name, text, cc)
    native.ensure_built(text, key, cc, native.cache_dir(), name, module_name=name, prefix=PREFIX,
                        cython_args=CYTHON_ARGS, what="compiled module")
    return native.module_path(native.cache_dir(), key, PREFIX)


def load_compiled(name: str) -> ModuleType | None:
    """The compiled copy of module ``name`` (a module object of its own, not put in
    ``sys.modules``), or None, with one log line saying why, when switched off
    (``P4TARGET_NATIVE=0``), not built from the current source, or not loadable."""
    if not native.enabled():
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


def compiled_apply_update() -> Callable[..., Any] | None:
    """``apply_update`` of the compiled write path, or None (see ``load_compiled``)."""
    module = load_compiled(WRITE)
    return None if module is None else module.apply_update


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m p4target.accel.write_path [NAME...]``: build the compiled copies."""
    names = list(argv if argv is not None else sys.argv[1:]) or [WRITE]
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
