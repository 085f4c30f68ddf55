"""Compile a program with the fast path generated or not (``fastgen.FAST_PATH``), for
the tests that run the same frames through both and compare."""

from __future__ import annotations

from pathlib import Path

from p4target.compiler import CompiledProgram, compile_file, fastgen


def compiled(path: Path, fast: bool) -> CompiledProgram:
    """``path`` compiled with its fast path (``fast``) or with the general path only."""
    saved = fastgen.FAST_PATH
    fastgen.FAST_PATH = fast
    try:
        return compile_file(path)
    finally:
        fastgen.FAST_PATH = saved
