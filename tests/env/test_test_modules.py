"""Every test module's file name is unique across tests/.

Why: tests/ has no ``__init__.py`` files, so pytest imports each test module by its
file name alone (its folder put first on ``sys.path``); a second module of the same
name anywhere under tests/ stops the whole run at collection ("import file mismatch").
A module that moves (tests/controller/ to tests/fabric/, say) must keep its name
unique.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]


def same_names(root: Path) -> dict[str, list[str]]:
    """File name -> its paths under ``root``, for every test module name found twice."""
    where: dict[str, list[str]] = defaultdict(list)
    for path in sorted(root.rglob("test_*.py")):
        where[path.name].append(path.relative_to(root).as_posix())
    return {name: paths for name, paths in where.items() if len(paths) > 1}


def test_no_two_test_modules_share_a_name() -> None:
    assert same_names(TESTS) == {}


@pytest.mark.parametrize(("files", "expected"), [
    (["a/test_x.py", "b/test_y.py", "a/conftest.py", "b/conftest.py"], {}),
    (["controller/test_sizing.py", "fabric/test_sizing.py", "fabric/test_plan.py"],
     {"test_sizing.py": ["controller/test_sizing.py", "fabric/test_sizing.py"]}),
])
def test_a_shared_name_is_found(tmp_path: Path, files: list[str], expected: dict[str, list[str]]) -> None:
    for f in files:
        (tmp_path / f).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / f).write_text("")
    assert same_names(tmp_path) == expected
