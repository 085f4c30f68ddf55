"""The compiled copies of the write path's modules (``p4target.compiled_modules``).

Why: a batched Write runs ``p4target.p4runtime.write`` and ``translate`` compiled with
Cython when ``make native`` has built them; the P4Runtime tests must pass both ways,
and the import finder must never serve a copy built from another source.
"""

from __future__ import annotations

import importlib
import logging
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from p4target import compiled_modules
from p4target.compiled_modules import COMPILED, CompiledFinder, is_compiled

REPO = Path(__file__).resolve().parents[2]


def test_the_p4runtime_tests_pass_with_the_write_path_loaded_the_other_way() -> None:
    """This process runs them one way (compiled when the cache holds the modules, as
    after ``make native``); a second pytest runs them the other way."""
    here = {name: is_compiled(importlib.import_module(name)) for name in COMPILED}
    compiled_here = all(here.values())
    env = dict(os.environ)
    if compiled_here:
        env["P4TARGET_NATIVE"] = "0"
    else:
        for name in COMPILED:
            compiled_modules.build(name)
        env["P4TARGET_NATIVE"] = "1"
    env["P4TARGET_EXPECT_COMPILED"] = "0" if compiled_here else "1"
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:randomly", "-p", "no:cacheprovider",
                          "tests/p4runtime", "--ignore", "tests/p4runtime/test_compiled_modules.py"],
                         cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert " passed" in run.stdout.splitlines()[-1]


@pytest.fixture
def package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A package of its own (``cmtest.calc``) and a cache of its own, with a finder for it."""
    pkg = tmp_path / "src" / "cmtest"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "calc.py").write_text(textwrap.dedent("""
        class Refused(Exception):
            pass

        def check(width: int, value) -> int:
            # with Cython's annotation typing, ``width: int`` would take 3.0 as 3 (Python refuses it)
            if value < 0 or value >= 1 << width:
                raise Refused(f"{value} does not fit in {width} bits")
            return value * 2
    """))
    monkeypatch.setenv("P4TARGET_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("P4TARGET_NATIVE", "1")
    monkeypatch.syspath_prepend(str(tmp_path / "src"))
    finder = CompiledFinder(["cmtest.calc"])
    sys.meta_path.insert(0, finder)

    def fresh():
        sys.modules.pop("cmtest.calc", None)
        importlib.invalidate_caches()
        return importlib.import_module("cmtest.calc")

    yield pkg, fresh
    sys.meta_path.remove(finder)
    for name in ("cmtest.calc", "cmtest"):
        sys.modules.pop(name, None)


def test_a_built_copy_is_loaded_under_the_module_name_and_behaves_the_same(package) -> None:
    pkg, fresh = package
    source = fresh()
    assert not is_compiled(source)  # nothing built yet: the source
    assert (source.check(8, 255), source.check(3, True)) == (510, 2)
    path = compiled_modules.build("cmtest.calc")
    compiled = fresh()
    assert is_compiled(compiled) and compiled.__file__ == str(path)
    assert compiled.__name__ == "cmtest.calc" and compiled.Refused.__module__ == "cmtest.calc"
    assert (compiled.check(8, 255), compiled.check(3, True), compiled.check(80, 1 << 70)) == (510, 2, 1 << 71)
    with pytest.raises(compiled.Refused, match="256 does not fit in 8 bits"):
        compiled.check(8, 256)
    for module in (source, compiled):  # the same refusal as Python's, not a conversion
        with pytest.raises(TypeError, match="unsupported operand"):
            module.check(3.0, 1)


def test_an_edited_source_or_a_damaged_copy_is_imported_from_the_source(package, caplog) -> None:
    pkg, fresh = package
    path = compiled_modules.build("cmtest.calc")
    assert is_compiled(fresh())
    calc = pkg / "calc.py"
    calc.write_text(calc.read_text().replace("value * 2", "value * 3"))
    with caplog.at_level(logging.INFO, logger="p4target.compiled_modules"):
        edited = fresh()
    assert not is_compiled(edited) and edited.check(8, 5) == 15  # the stale copy is not used
    assert "no compiled copy of this source" in caplog.text
    calc.write_text(calc.read_text().replace("value * 3", "value * 2"))
    damage = path.with_name("damaged")
    damage.write_bytes(b"not an ELF file")
    os.replace(damage, path)  # the copy of this very source, damaged
    # in a process of its own: this one keeps the good copy it loaded mapped
    probe = ("import logging, sys; logging.basicConfig(level=logging.WARNING)\n"
             "from p4target.compiled_modules import CompiledFinder, is_compiled\n"
             "sys.meta_path.insert(0, CompiledFinder(['cmtest.calc']))\n"
             "import cmtest.calc as c; print(is_compiled(c), c.check(8, 5))")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join((str(pkg.parent), str(REPO))))
    run = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["False", "10"]
    assert "cannot be loaded" in run.stderr and str(path) in run.stderr


def test_native_off_imports_the_source(package, monkeypatch: pytest.MonkeyPatch) -> None:
    _, fresh = package
    compiled_modules.build("cmtest.calc")
    monkeypatch.setenv("P4TARGET_NATIVE", "0")
    assert not is_compiled(fresh())
