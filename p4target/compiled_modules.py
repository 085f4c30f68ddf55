"""Compiled copies of the pure-Python modules on the P4Runtime write path.

Why: a batched Write spends most of its time in ``p4target.p4runtime.write`` and
``translate`` (every check of every update, the key and argument decoders), and most
of that is the interpreter's dispatch. Compiled with Cython, which keeps Python's
semantics (the same objects, exceptions and calls), the same modules apply a batch
of 1,000 exact entries about 17% faster (docs/p4runtime.md).

How: ``make native`` (``python -m p4target.compiled_modules``) compiles each module of
``COMPILED`` from its ``.py`` into the native cache (``native.cache_dir``), under a key
that hashes the module's source with the tool versions (``native.build_key``). The
finder that ``install`` puts on ``sys.meta_path`` (``p4target.p4runtime`` does, before
any of its modules is imported) loads the compiled copy under the module's own name,
so the module is the same object for everyone, but only when the cache holds one
built from the ``.py`` as it is now: a module edited since is imported from its
source until it is built again. ``P4TARGET_NATIVE=0`` turns the compiled copies off;
without Cython or a C compiler, or with a cached copy that cannot be loaded, the
``.py`` is imported and one log line says why.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import logging
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Sequence

log = logging.getLogger(__name__)

COMPILED = ("p4target.p4runtime.translate", "p4target.p4runtime.write")
PREFIX = "p4mod"
# Annotations stay documentation: with typing on, Cython would check ``x: int`` arguments
# on entry and refuse what Python accepts.
CYTHON_ARGS = ("-X", "annotation_typing=False")


def _native() -> ModuleType:
    """``p4target.compiler.native``, imported when first needed: that package is the whole
    P4 compiler, which a program using ``p4target.p4runtime`` only for its wire helpers
    (``mrcctl``) would otherwise load at start-up just for the finder."""
    from p4target.compiler import native

    return native


def _key(name: str, source: str, cc: str) -> str:
    native = _native()
    return native.build_key("\0".join((name, *CYTHON_ARGS, source)), cc)


def _source_spec(name: str, path: Sequence[str] | None) -> importlib.machinery.ModuleSpec | None:
    spec = importlib.machinery.PathFinder.find_spec(name, path)
    if spec is None or not (spec.origin or "").endswith(".py"):
        return None
    return spec


def compiled_path(name: str, source_file: Path) -> Path:
    """Where the compiled copy of ``name``, built from ``source_file`` as it is now, is
    kept. Raises ``native.NativeError`` when there can be none (no Cython, no compiler)."""
    native = _native()
    return native.module_path(native.cache_dir(), _key(name, source_file.read_text(), native.c_compiler()), PREFIX)


class _CompiledLoader(importlib.abc.Loader):
    """Loads the extension; if that fails (a damaged cache file), the source instead."""

    def __init__(self, compiled: Path, source: importlib.machinery.ModuleSpec) -> None:
        self.compiled = compiled
        self.source = source
        self._extension: importlib.machinery.ExtensionFileLoader | None = None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        extension = importlib.machinery.ExtensionFileLoader(spec.name, str(self.compiled))
        try:
            module = extension.create_module(spec)
        except ImportError as e:
            log.warning("%s: the compiled copy %s cannot be loaded (%s); importing the source. "
                        "Delete the file to have it rebuilt", spec.name, self.compiled, e)
            return None  # a plain module, filled from the source below
        self._extension = extension
        return module

    def exec_module(self, module: ModuleType) -> None:
        if self._extension is not None:
            self._extension.exec_module(module)
            return
        module.__file__ = self.source.origin
        module.__spec__ = self.source
        module.__loader__ = self.source.loader
        self.source.loader.exec_module(module)


class CompiledFinder(importlib.abc.MetaPathFinder):
    """Finds the compiled copy of the modules it is given, when the cache has a current one."""

    def __init__(self, names: Sequence[str]) -> None:
        self.names = frozenset(names)

    def find_spec(self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
                  ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in self.names:
            return None
        native = _native()
        if not native.enabled():
            return None
        source = _source_spec(fullname, path)
        if source is None:
            return None
        try:
            compiled = compiled_path(fullname, Path(source.origin))
        except (native.NativeError, OSError) as e:
            log.info("%s: no compiled copy, the source is imported: %s", fullname, e)
            return None
        if not compiled.exists():
            log.info("%s: no compiled copy of this source in %s (make native builds it)", fullname, compiled.parent)
            return None
        spec = importlib.machinery.ModuleSpec(fullname, _CompiledLoader(compiled, source), origin=str(compiled))
        spec.submodule_search_locations = None
        spec.has_location = True
        return spec


def install(names: Sequence[str] = COMPILED) -> None:
    """Put a finder for ``names`` first on ``sys.meta_path`` (once per set of names)."""
    if not any(isinstance(f, CompiledFinder) and f.names == frozenset(names) for f in sys.meta_path):
        sys.meta_path.insert(0, CompiledFinder(names))


def is_compiled(module: ModuleType) -> bool:
    """Whether ``module`` was loaded from its compiled copy."""
    loader = getattr(module.__spec__, "loader", None)
    return isinstance(loader, _CompiledLoader) and loader._extension is not None


def build(name: str, path: Sequence[str] | None = None) -> Path:
    """Compile the module ``name`` from its current source into the cache (if not there
    yet); returns the compiled copy's path. Raises ``native.NativeError``."""
    native = _native()
    parent = name.rpartition(".")[0]
    if path is None and parent:
        path = importlib.import_module(parent).__path__
    source = _source_spec(name, path)
    if source is None:
        raise native.NativeError(f"{name}: no Python source to compile")
    text = Path(source.origin).read_text()
    cc = native.c_compiler()
    key = _key(name, text, cc)
    native.ensure_built(text, key, cc, native.cache_dir(), name, module_name=name, prefix=PREFIX,
                        cython_args=CYTHON_ARGS, what="compiled module")
    return native.module_path(native.cache_dir(), key, PREFIX)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m p4target.compiled_modules [NAME...]``: build the compiled copies."""
    names = list(argv if argv is not None else sys.argv[1:]) or list(COMPILED)
    native = _native()
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
