"""Dump what the embedded compiler makes of many programs, to compare two versions of it.

``python -m tests.target.compiler.codegen_snapshot OUT [P4C_TESTDATA]`` writes, for every
.p4 file of the repository (and of p4c's p4_16_samples and p4_16_errors when their
folder is given), one file under OUT: the general module's Python source or the error
line, then the fast path's source or why it has none. Generate OUT at one commit and
at another and compare the folders (``diff -r``): a refactoring of the compiler that
must not change its output shows none. Nothing here is committed output.
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]


def programs(testdata: Path | None) -> list[Path]:
    found = [p for p in sorted(REPO.rglob("*.p4")) if ".venv" not in p.parts and p.is_file()]
    if testdata is not None:
        for sub in ("p4_16_samples", "p4_16_errors"):
            found += [p for p in sorted((testdata / sub).rglob("*.p4")) if p.is_file()]
    return found


def dump(path: Path) -> str:
    """The general module (or error) and the fast path (or why none) of ``path``."""
    from p4target.compiler import compile_file
    from p4target.compiler.fast_errors import NoFast
    from p4target.compiler.fastgen import generate_fast
    from p4target.errors import P4Error
    from p4target.frontend.parser import parse_tokens
    from p4target.frontend.preprocessor import preprocess
    from p4target.frontend.lexer import tokenize

    try:
        compiled = compile_file(path)
    except P4Error as exc:
        return f"ERROR {exc}\n"
    except Exception as exc:  # recorded, as any other outcome
        return f"CRASH {type(exc).__name__}: {exc}\n"
    out = [compiled.python_source]
    try:
        program = parse_tokens(tokenize(preprocess(path, (), {})))
        out.append(generate_fast(program, path).text)
    except NoFast as exc:
        out.append(f"NOFAST {exc}")
    except Exception as exc:  # a generator bug: recorded, to compare
        out.append(f"FASTCRASH {type(exc).__name__}: {exc}")
    return "\n#### fast path\n".join(out) + "\n"


def one(args: tuple[Path, Path]) -> None:
    path, out = args
    name = str(path.resolve()).strip("/").replace("/", "__")
    (out / name).write_text(dump(path))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.target.compiler.codegen_snapshot",
                                 description="Dump the compiler's output for every program, to compare two versions.")
    ap.add_argument("out", type=Path, help="folder for the dump, outside the repository (created if missing)")
    ap.add_argument("testdata", type=Path, nargs="?", help="p4c's testdata folder (its p4_16_samples and p4_16_errors)")
    args = ap.parse_args(argv)
    out = args.out.resolve()
    if out == REPO or REPO in out.parents:
        ap.error(f"{args.out}: inside the repository, where the dumps would be taken for programs; give a folder "
                 "outside it, e.g. /tmp/snapshot")
    out.mkdir(parents=True, exist_ok=True)
    sys.setrecursionlimit(10000)
    with multiprocessing.Pool(2) as pool:
        pool.map(one, [(p, out) for p in programs(args.testdata)], chunksize=4)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
