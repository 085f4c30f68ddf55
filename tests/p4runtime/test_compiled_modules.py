"""The compiled write path (``p4target.accel.write_path``), chosen explicitly.

Why: a batched Write runs ``p4target.p4runtime.write`` compiled with Cython when
``make native`` has built it; the choice is made by the server when it is made, never
by swapping modules on import, and the P4Runtime tests must pass both ways.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from p4target.accel import native, write_path
from p4target.p4runtime import translate, write
from p4target.p4runtime.write_choice import choose_apply_update

REPO = Path(__file__).resolve().parents[2]


def test_importing_the_server_leaves_the_import_system_alone() -> None:
    """In a fresh interpreter: no finder added, and ``write`` is the ``.py`` even
    after a server has chosen the compiled write path."""
    probe = ("import sys; before = list(sys.meta_path)\n"
             "import p4target.p4runtime.server as s\n"
             "from p4target.device import Device\n"
             "server = s.P4RuntimeServer(Device(device_id=1), '127.0.0.1:0')\n"
             "import p4target.p4runtime.write as w\n"
             "print(sys.meta_path == before, w.__file__.endswith('write.py'), server.write_path)")
    run = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, timeout=120,
                         env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert run.returncode == 0, run.stderr
    sees_meta_path, write_is_source, _kind = run.stdout.split()
    assert (sees_meta_path, write_is_source) == ("True", "True")


def test_the_choice_follows_the_build_and_the_switch(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("P4TARGET_CACHE", str(tmp_path / "cache"))  # an empty cache: nothing built
    monkeypatch.setenv(native.ENV_SWITCH, "1")
    assert choose_apply_update() == (write.apply_update, "python")
    paths = [write_path.build(name) for name in (translate.__name__, write.__name__)]
    compiled, kind = choose_apply_update()
    assert kind == "compiled" and compiled is not write.apply_update
    assert sys.modules[write.__name__] is write  # the .py keeps its name ...
    fast_translate = write_path.load_compiled(translate.__name__)
    fast_write = write_path.load_compiled(write.__name__)
    assert [fast_translate.__file__, fast_write.__file__] == [str(p) for p in paths]  # ... the copies are their own
    assert fast_write.apply_update is compiled
    assert fast_write.decode_key is fast_translate.decode_key is not translate.decode_key  # compiled calls compiled
    assert fast_translate.ActionCall is translate.ActionCall  # one class for an entry's action
    assert choose_apply_update(compiled=False) == (write.apply_update, "python")
    monkeypatch.setenv(native.ENV_SWITCH, "0")
    assert choose_apply_update() == (write.apply_update, "python")
    assert choose_apply_update(compiled=True)[1] == "compiled"  # asked for by name: the switch is not read


def test_the_p4runtime_tests_pass_with_the_write_path_chosen_the_other_way() -> None:
    """This process runs them one way (compiled when the cache holds it, as after
    ``make native``); a second pytest runs them the other way."""
    compiled_here = choose_apply_update()[1] == "compiled"
    env = dict(os.environ)
    if compiled_here:
        env["P4TARGET_NATIVE"] = "0"
    else:
        for name in write_path.COMPILED:
            write_path.build(name)
        env["P4TARGET_NATIVE"] = "1"
    env["P4TARGET_EXPECT_COMPILED"] = "0" if compiled_here else "1"
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:randomly", "-p", "no:cacheprovider",
                          "tests/p4runtime", "--ignore", "tests/p4runtime/test_compiled_modules.py",
                          "--ignore", "tests/p4runtime/hostile"],
                         cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert " passed" in run.stdout.splitlines()[-1]
