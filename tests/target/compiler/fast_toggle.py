"""Compile a program with the fast path generated or not (``fastgen.FAST_PATH``), for
the tests that run the same frames through both and compare; ``program`` compiles
a program of the repository once per test session for each of the two."""

from __future__ import annotations

from pathlib import Path

from p4target.compiler import CompiledProgram, compile_file, fastgen

ROOT = Path(__file__).resolve().parents[3]


def compiled(path: Path, fast: bool) -> CompiledProgram:
    """``path`` compiled with its fast path (``fast``) or with the general path only."""
    saved = fastgen.FAST_PATH
    fastgen.FAST_PATH = fast
    try:
        return compile_file(path)
    finally:
        fastgen.FAST_PATH = saved


_CACHE: dict[tuple[str, bool], object] = {}


def program(rel: str, fast: bool):
    if (rel, fast) not in _CACHE:
        _CACHE[rel, fast] = compiled(ROOT / rel, fast)
    return _CACHE[rel, fast]
