"""The compiled fast path (p4target/accel/native.py): built once into the cache,
loaded from it by later processes, and when it cannot be had, the interpreted fast
path stays with the reason said. That it forwards exactly as the general path is
test_fast_path.py's differential test (test_compiled_fast_path_is_invisible)."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

from p4target import Switch
from p4target.accel import native
from p4target.compiler import compile_file

ROOT = Path(__file__).resolve().parents[3]
# a small program with a fast path: its build takes about a second
PROGRAM = ROOT / "tests/target/frontend/p4/p4c_issue4969.p4"
FRAME = bytes.fromhex("020000000002" "020000000001" "0800") + bytes(20)

LOAD_AND_SAY = f"""
import sys
from p4target import Switch
from p4target.compiler import compile_file
sw = Switch(compile_file({str(PROGRAM)!r}))
out = sw.inject(1, {FRAME!r})
print(sw.fast_kind, len(out))
"""


def modules(cache: Path) -> list[Path]:
    return sorted(cache.glob("p4fast_*.so"))


def run_python(script: str, **env: str) -> str:
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                       env={**os.environ, **env}, check=True, timeout=120)
    return r.stdout.strip()


def test_built_once_then_loaded_from_the_cache(tmp_path, monkeypatch, native_fast_path) -> None:
    monkeypatch.setenv(native.ENV_CACHE, str(tmp_path))
    sw = Switch(compile_file(PROGRAM))
    out = sw.inject(1, FRAME)  # the first frame binds the interpreted one, and starts the build
    assert sw.fast_kind in ("python", "native")
    sw.bind_fast_path(wait_native=True)
    assert sw.fast_kind == "native"
    assert not isinstance(sw._fast, types.FunctionType)  # a compiled function, not Python's
    assert sw.inject(1, FRAME) == out and len(out) == 1
    built = modules(tmp_path)
    assert len(built) == 1
    stamp = built[0].stat().st_mtime_ns
    # another process finds it: the compiled one takes its very first frame
    assert run_python(LOAD_AND_SAY, **{native.ENV_CACHE: str(tmp_path)}) == "native 1"
    assert modules(tmp_path) == built and built[0].stat().st_mtime_ns == stamp


def test_processes_that_need_it_at_once_build_it_once(tmp_path, native_fast_path) -> None:
    script = ("import logging; logging.basicConfig(level=logging.INFO)\n"
              "from p4target.compiler import compile_file\n"
              f"assert compile_file({str(PROGRAM)!r}).native_fast_path().get() is not None\n")
    env = {**os.environ, native.ENV_CACHE: str(tmp_path)}
    procs = [subprocess.Popen([sys.executable, "-c", script], env=env, stderr=subprocess.PIPE,
                              text=True) for _ in range(3)]
    logs = [p.communicate(timeout=120)[1] for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], logs
    assert sum(text.count("building the compiled fast path") for text in logs) == 1
    assert len(modules(tmp_path)) == 1 and not list(tmp_path.glob("build-*"))


def test_without_a_compiler_the_interpreted_one_stays(tmp_path, monkeypatch, native_fast_path,
                                                      caplog) -> None:
    monkeypatch.setenv(native.ENV_CACHE, str(tmp_path))
    monkeypatch.setenv("CC", str(tmp_path / "no-such-cc"))
    caplog.set_level(logging.INFO, logger="p4target.accel.native")
    prog = compile_file(PROGRAM)
    sw = Switch(prog)
    sw.bind_fast_path(wait_native=True)
    assert sw.fast_kind == "python"
    assert len(sw.inject(1, FRAME)) == 1 and sw.fast_packets == 1
    why = prog.native_fast_path().error
    assert why is not None and "no C compiler" in why and "install gcc" in why
    assert "interpreted one stays" in caplog.text
    assert not list(tmp_path.glob("*.failed"))  # a missing tool is not remembered: install it


def test_a_failed_build_is_remembered(tmp_path, monkeypatch, native_fast_path) -> None:
    monkeypatch.setenv(native.ENV_CACHE, str(tmp_path))
    monkeypatch.setenv("CC", "false")  # a C compiler that fails
    first = compile_file(PROGRAM).native_fast_path()
    assert first.get() is None and "the C compiler failed" in first.error
    assert len(list(tmp_path.glob("*.failed"))) == 1 and not modules(tmp_path)
    again = compile_file(PROGRAM).native_fast_path()
    assert again.get() is None
    assert "an earlier build failed" in again.error and "delete" in again.error


def test_a_compiler_killed_by_a_signal_is_not_remembered(tmp_path, monkeypatch, native_fast_path) -> None:
    killed = tmp_path / "killed-cc"
    killed.write_text("#!/bin/sh\nkill -TERM $$\n")
    killed.chmod(0o755)
    cache = tmp_path / "cache"
    monkeypatch.setenv(native.ENV_CACHE, str(cache))
    monkeypatch.setenv("CC", str(killed))  # as when a timeout or a cleanup kills the build
    first = compile_file(PROGRAM).native_fast_path()
    assert first.get() is None and "killed by signal 15" in first.error
    assert not list(cache.glob("*.failed")) and not modules(cache)
    monkeypatch.setenv("CC", "false")  # the next build runs (and fails on its own merits)
    again = compile_file(PROGRAM).native_fast_path()
    assert again.get() is None and "the C compiler failed" in again.error


def test_a_broken_module_in_the_cache_is_reported(tmp_path, native_fast_path) -> None:
    env = {native.ENV_CACHE: str(tmp_path)}
    build = "from p4target.compiler import compile_file\n" \
        f"assert compile_file({str(PROGRAM)!r}).native_fast_path().get() is not None\n"
    run_python(build, **env)
    (built,) = modules(tmp_path)
    built.write_bytes(b"not a shared object")
    said = run_python(LOAD_AND_SAY + "print(sw.program.native_fast_path().error)\n", **env)
    kind, why = said.split("\n", 1)
    assert kind == "python 1"  # it still forwards, on the interpreted fast path
    assert "cannot be loaded" in why and "delete it to rebuild" in why


def test_an_unwritable_cache_is_reported(tmp_path, monkeypatch, native_fast_path) -> None:
    (tmp_path / "a-file").write_text("")
    cache = tmp_path / "a-file" / "cache"  # cannot be made: its parent is a file
    monkeypatch.setenv(native.ENV_CACHE, str(cache))
    fast = compile_file(PROGRAM).native_fast_path()
    assert fast.get() is None
    assert f"cannot write in the cache directory {cache}" in fast.error
    assert native.ENV_CACHE in fast.error


def test_off_with_the_environment_variable() -> None:
    """The suite's default (tests/conftest.py) is P4TARGET_NATIVE=0."""
    prog = compile_file(PROGRAM)
    assert prog.native_fast_path() is None
    sw = Switch(prog)
    sw.bind_fast_path(wait_native=True)
    assert sw.fast_kind == "python"


def test_cli_builds_it_and_says_where(tmp_path, native_fast_path) -> None:
    env = {**os.environ, native.ENV_CACHE: str(tmp_path)}
    r = subprocess.run([sys.executable, "-m", "p4target", "compile", "--native", str(PROGRAM)],
                       capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "compiled fast path ready in " + str(tmp_path) in r.stdout
    assert len(modules(tmp_path)) == 1
    r = subprocess.run([sys.executable, "-m", "p4target", "compile", "--native", str(PROGRAM)],
                       capture_output=True, text=True, env={**env, "CC": "/no/such/cc"}, timeout=120)
    assert r.returncode == 1
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "no C compiler" in lines[0] and str(PROGRAM) in lines[0]


@pytest.mark.parametrize("text, names", [
    ("def make_fast(rt):\n    def _fast(data, p, now):\n        return ParserError, len(data)\n"
     "    return _fast\n", ("ParserError",)),
    ("def make_fast(rt):\n    x = rt.a\n    def _fast(data, p, now):\n        return x\n    return _fast\n", ()),
])
def test_the_module_takes_the_globals_the_source_reads(text: str, names: tuple[str, ...]) -> None:
    source, got = native.module_source(text, "t.p4")
    assert got == names
    assert source.splitlines()[1] == f"def make_native({', '.join(names)}):"
    ns: dict = {}
    exec(compile(source, "m", "exec"), ns)  # the wrapper is plain Python too
    make = ns["make_native"](*(object() for _ in names))
    assert callable(make(types.SimpleNamespace(a=1)))
