"""The distribution built from pyproject.toml holds what the issue asks for: the four
packages (p4target with its subpackages and its include/*.p4 files), and the one console
script. Built for real with pip, as an installer would."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_wheel_holds_the_packages_the_p4_includes_and_the_command(tmp_path: Path) -> None:
    # build from a copy: setuptools writes build/ and *.egg-info beside the sources
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, src / name)
    for pkg in ("p4target", "fabric", "cli_common", "controller", "topologies", "endpoints", "webview"):
        shutil.copytree(REPO / pkg, src / pkg, ignore=shutil.ignore_patterns("__pycache__"))
    res = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", str(src), "-w", str(tmp_path)],
        capture_output=True, text=True, timeout=300,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    wheels = list(tmp_path.glob("mrc_p4-*.whl"))
    assert len(wheels) == 1
    names = set(zipfile.ZipFile(wheels[0]).namelist())
    for pkg in ("p4target", "fabric", "cli_common", "controller", "topologies", "endpoints", "webview"):
        assert f"{pkg}/__init__.py" in names
    # the live view's page, served from the package (nothing from another site)
    assert {f"webview/static/{p.name}" for p in (REPO / "webview" / "static").iterdir()} <= names
    for sub in sorted(p.parent for p in (REPO / "p4target").rglob("__init__.py")):
        assert f"{sub.relative_to(REPO).as_posix()}/__init__.py" in names, f"missing subpackage {sub}"
    shipped = {n for n in names if n.startswith("p4target/include/") and n.endswith(".p4")}
    expected = {f"p4target/include/{p.name}" for p in (REPO / "p4target" / "include").glob("*.p4")}
    assert expected and shipped == expected
    assert not any(n.startswith(("tests/", "tools/", "bench/")) for n in names)
    entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    text = zipfile.ZipFile(wheels[0]).read(entry_points).decode()
    assert "p4target = p4target.cli:main" in text
