"""The packages import one way only: an AST walk over every module of the project.

The layers (docs/architecture.md, "Layers"): ``fabric`` (the pure model) imports
nothing else of the project and no command-line library (typer, rich, click);
``cli_common`` (what every command line shares) only ``fabric``, and every package
with a command line may import it; ``endpoints`` only ``fabric``; ``controller`` (the
P4Runtime client, with a running network's state file and cable cuts) only ``fabric``
and the target's public API ``p4target.api``, except ``mrcctl`` itself
(``controller/cli.py``), which may also use the web view for ``mrcctl web``, and
``mrcctl probe/locate/guard`` (``controller/ops_cli.py``), which may also use
``topologies.transfer`` (is a host's receiver listening); the web view (``webview``)
may use ``fabric`` and ``controller``, and nothing below it imports it; the Mininet
package (``topologies``) may use ``fabric``, ``controller``, ``endpoints`` and
``p4target.api``; ``p4target`` imports none of them, and inside it only
``p4target/optional_accel.py`` reaches the optional speed machinery
``p4target/accel/``; the experiments and tools sit on top and may use everything but
the target's internals (the workloads, a package like the experiments, under them:
the experiments may use it, it may not use them), except ``tools/cleanup.py`` and
``tools/ns_cluster.py``, which run on the system Python and import the standard
library only. Every import counts: at the top, inside a function, under
``TYPE_CHECKING``, and ``importlib.import_module`` of a literal name.

The checks of `make lint` cover the layers too: mypy checks the model, the command-line
helpers, the client, the transport, the Mininet package, the web view and the
workloads strictly, and ruff exempts none of their files from a rule.
"""

from __future__ import annotations

import ast
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("fabric", "cli_common", "controller", "topologies", "endpoints", "webview", "experiments", "workloads",
            "tools", "p4target")
TARGET_API = "p4target.api"
CLI = "cli_common"  # what every command line shares (options, the runner): any package with one may use it

# package -> the packages or exact modules (p4target.api) it may import besides itself
ALLOWED: dict[str, frozenset[str]] = {
    "fabric": frozenset(),
    "cli_common": frozenset({"fabric"}),
    "endpoints": frozenset({"fabric", CLI}),
    "controller": frozenset({"fabric", CLI, TARGET_API}),
    "topologies": frozenset({"fabric", CLI, "controller", "endpoints", TARGET_API}),
    "webview": frozenset({"fabric", "controller"}),
    "experiments": frozenset({"fabric", CLI, "controller", "endpoints", "topologies", "webview", "workloads",
                              TARGET_API}),
    "workloads": frozenset({"fabric", CLI, "controller", "endpoints", "topologies", TARGET_API}),
    "tools": frozenset({"fabric", CLI, "controller", "endpoints", "topologies", "webview", "workloads", "experiments",
                        TARGET_API}),
    "p4target": frozenset(),
}
# package -> the libraries it may not import: the fabric model computes, it draws and parses no command line
NO_LIBRARIES: dict[str, frozenset[str]] = {
    "fabric": frozenset({"typer", "rich", "click"}),
}
# single modules with another rule than their package's, and why
EXCEPTIONS: dict[str, frozenset[str]] = {
    # mrcctl: `mrcctl web` serves the web view
    "controller/cli.py": ALLOWED["controller"] | {"webview"},
    # mrcctl probe/locate/guard: whether a host's MRC-lite receiver is listening
    "controller/ops_cli.py": ALLOWED["controller"] | {"topologies.transfer"},
    # run on the system Python, with or without .venv: nothing of the project (and see STDLIB_ONLY)
    "tools/cleanup.py": frozenset(),
    "tools/ns_cluster.py": frozenset(),
}
# modules that import the standard library only: `make clean` runs cleanup.py on the system Python,
# the README runs ns_cluster.py with the system python3
STDLIB_ONLY = frozenset({"tools/cleanup.py", "tools/ns_cluster.py"})
# p4target's optional speed machinery: only optional_accel.py (a lookup by name) and the machinery
# itself reach it, so that deleting the folder changes speed, never behaviour
ACCEL = "p4target.accel"
ACCEL_GATE = "p4target/optional_accel.py"


def imported(tree: ast.AST, module: str) -> Iterator[tuple[int, str]]:
    """(line, absolute module name) of every import in ``tree``; ``module`` is the
    importing module's dotted name (for relative imports). ``from a import b`` yields
    ``a.b`` as well as ``a``'s own use, so ``from p4target import api`` is ``p4target.api``."""
    package = module.rsplit(".", 1)[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[: len(parts) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            for alias in node.names:
                yield node.lineno, f"{base}.{alias.name}" if alias.name != "*" else base


def allowed(target: str, own: str, rule: frozenset[str]) -> bool:
    """May a module of package ``own`` under ``rule`` import ``target``? A rule names a
    package (any of its modules) or one module (it, or a name from it)."""
    top = target.split(".")[0]
    if top not in PACKAGES or top == own:
        return True
    return any(target == r or target.startswith(r + ".") for r in rule)


def imported_by_name(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """(line, module) of every ``import_module("...")`` or ``__import__("...")`` of a
    module named by a literal."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if name in ("import_module", "__import__") and isinstance(node.args[0].value, str):
                yield node.lineno, node.args[0].value


def problem(rel: str, package: str, rule: frozenset[str], target: str) -> str | None:
    """What is wrong with module ``rel`` of ``package`` importing ``target`` (None: nothing)."""
    top = target.split(".")[0]
    if not allowed(target, package, rule):
        return f"{package} imports {target}"
    if top in NO_LIBRARIES.get(package, ()):
        return f"{package} imports {target}, a library it may not use"
    if rel in STDLIB_ONLY and top not in sys.stdlib_module_names:
        return f"{package} imports {target}, not of the standard library"
    if (target == ACCEL or target.startswith(ACCEL + ".")) and rel != ACCEL_GATE and not rel.startswith("p4target/accel/"):
        return f"{package} imports {target}: only {ACCEL_GATE} reaches p4target/accel/"
    return None


def violations(root: Path) -> list[str]:
    """``path:line: package imports module[, why]`` for every import against the rules."""
    out: list[str] = []
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            rel = path.relative_to(root).as_posix()
            module = rel[:-3].replace("/", ".")
            rule = EXCEPTIONS.get(rel, ALLOWED[package])
            tree = ast.parse(path.read_text(), filename=rel)
            for line, target in sorted({*imported(tree, module), *imported_by_name(tree)}):
                said = problem(rel, package, rule, target)
                if said:
                    out.append(f"{rel}:{line}: {said}")
    return out


def test_every_import_goes_the_allowed_way() -> None:
    assert violations(REPO) == []


# The packages the type checker must check in strict mode (pyproject.toml, [tool.mypy]).
STRICT = ("fabric", "cli_common", "controller", "endpoints", "topologies", "webview", "workloads")
# What an override may still change for a strict package: Mininet's classes are Any.
STRICT_OVERRIDE_KEYS = frozenset({"module", "disallow_subclassing_any"})


def strictness_problems(mypy: dict[str, object]) -> list[str]:
    """What in a ``[tool.mypy]`` table leaves a STRICT package, or p4target, unchecked
    or less than strict (p4target may be relaxed to basic mode)."""
    packages = mypy.get("packages", [])
    assert isinstance(packages, list)
    out = [f"{p}: not in [tool.mypy] packages" for p in (*STRICT, "p4target") if p not in packages]
    if mypy.get("strict") is not True:
        out.append("[tool.mypy] strict is not true")
    overrides = mypy.get("overrides", [])
    assert isinstance(overrides, list)
    for o in overrides:
        modules = [o["module"]] if isinstance(o["module"], str) else o["module"]
        hit = sorted({m.split(".")[0] for m in modules} & set(STRICT))
        extra = sorted(set(o) - STRICT_OVERRIDE_KEYS)
        if hit and extra:
            out.append(f"override of {', '.join(hit)} relaxes {', '.join(extra)}")
    return out


def test_the_type_checker_checks_the_layers_strictly() -> None:
    mypy = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["mypy"]
    assert strictness_problems(mypy) == []


@pytest.mark.parametrize(("mypy", "expected"), [
    ({"packages": ["fabric", "cli_common", "controller", "p4target"], "strict": True},
     ["endpoints: not in [tool.mypy] packages", "topologies: not in [tool.mypy] packages",
      "webview: not in [tool.mypy] packages", "workloads: not in [tool.mypy] packages"]),
    ({"packages": [*STRICT, "p4target"]}, ["[tool.mypy] strict is not true"]),
    ({"packages": [*STRICT, "p4target"], "strict": True,
      "overrides": [{"module": ["controller.cli"], "disallow_untyped_defs": False}]},
     ["override of controller relaxes disallow_untyped_defs"]),
    ({"packages": [*STRICT, "p4target"], "strict": True,
      "overrides": [{"module": "p4target.*", "strict": False}, {"module": ["topologies.*"], "disallow_subclassing_any": False}]},
     []),
])
def test_a_less_strict_configuration_is_found(mypy: dict[str, object], expected: list[str]) -> None:
    assert strictness_problems(mypy) == expected


def test_the_strict_packages_are_exempt_from_no_ruff_rule() -> None:
    ignores = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["ruff"]["lint"].get("per-file-ignores", {})
    assert [glob for glob in ignores if glob.split("/")[0] in STRICT] == []


def test_every_package_is_walked() -> None:
    for package in PACKAGES:
        assert (REPO / package / "__init__.py").is_file(), package
    assert len(list((REPO / "p4target").rglob("*.py"))) > 50  # its subpackages too


@pytest.mark.parametrize(("where", "line", "expected"), [
    ("fabric/x.py", "from controller import codec", "fabric/x.py:1: fabric imports controller.codec"),
    ("fabric/x.py", "import p4target.api", "fabric/x.py:1: fabric imports p4target.api"),
    ("endpoints/x.py", "from controller.targets import SwitchTarget",
     "endpoints/x.py:1: endpoints imports controller.targets.SwitchTarget"),
    ("controller/x.py", "from p4target.runtime.entries import Exact",
     "controller/x.py:1: controller imports p4target.runtime.entries.Exact"),
    ("controller/x.py", "from p4target import Switch", "controller/x.py:1: controller imports p4target.Switch"),
    ("controller/x.py", "def f():\n    from topologies import fabric_net",
     "controller/x.py:2: controller imports topologies.fabric_net"),
    ("controller/cli.py", "from topologies.run import main", "controller/cli.py:1: controller imports topologies.run.main"),
    ("controller/ops_cli.py", "from topologies import demo", "controller/ops_cli.py:1: controller imports topologies.demo"),
    ("controller/ops_cli.py", "import topologies", "controller/ops_cli.py:1: controller imports topologies"),
    ("topologies/x.py", "from p4target.p4runtime import placement",
     "topologies/x.py:1: topologies imports p4target.p4runtime.placement"),
    ("p4target/sub/x.py", "from fabric import plan", "p4target/sub/x.py:1: p4target imports fabric.plan"),
    ("topologies/x.py", "from webview.server import serve", "topologies/x.py:1: topologies imports webview.server.serve"),
    ("controller/x.py", "import webview", "controller/x.py:1: controller imports webview"),
    ("webview/x.py", "from endpoints import sender", "webview/x.py:1: webview imports endpoints.sender"),
    ("webview/x.py", "from topologies import fabric_net", "webview/x.py:1: webview imports topologies.fabric_net"),
    ("workloads/x.py", "from experiments import common", "workloads/x.py:1: workloads imports experiments.common"),
    ("fabric/x.py", "from cli_common.options import TopologyOpt",
     "fabric/x.py:1: fabric imports cli_common.options.TopologyOpt"),
    ("cli_common/x.py", "from controller import targets", "cli_common/x.py:1: cli_common imports controller.targets"),
    ("webview/x.py", "from cli_common import command", "webview/x.py:1: webview imports cli_common.command"),
    ("fabric/x.py", "import typer", "fabric/x.py:1: fabric imports typer, a library it may not use"),
    ("fabric/x.py", "def f():\n    from rich.table import Table",
     "fabric/x.py:2: fabric imports rich.table.Table, a library it may not use"),
    ("fabric/x.py", "import click.types", "fabric/x.py:1: fabric imports click.types, a library it may not use"),
    ("tools/soak.py", "from p4target.runtime.switch import Switch",
     "tools/soak.py:1: tools imports p4target.runtime.switch.Switch"),
    ("tools/cleanup.py", "from controller.cable_cuts import CUT_TABLE_PREFIX",
     "tools/cleanup.py:1: tools imports controller.cable_cuts.CUT_TABLE_PREFIX"),
    ("tools/cleanup.py", "import yaml", "tools/cleanup.py:1: tools imports yaml, not of the standard library"),
    ("tools/ns_cluster.py", "def f():\n    import typer",
     "tools/ns_cluster.py:2: tools imports typer, not of the standard library"),
    ("p4target/compiler/x.py", "from p4target.accel.native import NativeFastPath",
     "p4target/compiler/x.py:1: p4target imports p4target.accel.native.NativeFastPath: "
     "only p4target/optional_accel.py reaches p4target/accel/"),
    ("p4target/x.py", "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from p4target import accel",
     "p4target/x.py:3: p4target imports p4target.accel: only p4target/optional_accel.py reaches p4target/accel/"),
    ("p4target/p4runtime/x.py", "from .. import accel",
     "p4target/p4runtime/x.py:1: p4target imports p4target.accel: only p4target/optional_accel.py reaches p4target/accel/"),
    ("p4target/x.py", "import importlib\nw = importlib.import_module('p4target.accel.write_path')",
     "p4target/x.py:2: p4target imports p4target.accel.write_path: only p4target/optional_accel.py reaches "
     "p4target/accel/"),
])
def test_a_forbidden_import_is_found(tmp_path: Path, where: str, line: str, expected: str) -> None:
    assert violations(_tree(tmp_path, where, line)) == [expected]


@pytest.mark.parametrize(("where", "line"), [
    ("controller/x.py", "from p4target import api"),
    ("controller/x.py", "from p4target.api import varint"),
    ("controller/cli.py", "from controller.cable_cuts import set_link"),
    ("controller/ops_cli.py", "from topologies.transfer import udp_listening\nfrom topologies import transfer"),
    ("topologies/x.py", "from controller.targets import SwitchTarget"),
    ("p4target/sub/x.py", "from . import y\nfrom ..runtime import entries"),
    ("endpoints/x.py", "import json\nfrom fabric import plan"),
    ("controller/cli.py", "from webview.server import serve"),
    ("endpoints/x.py", "from cli_common.command import run_command\nimport typer"),
    ("cli_common/x.py", "from fabric.resolve import Shape\nimport typer\nfrom rich.console import Console"),
    ("controller/x.py", "from rich.table import Table\nfrom cli_common import options"),
    ("fabric/x.py", "import yaml\nfrom pydantic import BaseModel"),
    ("tools/soak.py", "import json\nfrom experiments import common\nfrom topologies.transfer import run_transfer"),
    ("tools/cleanup.py", "from __future__ import annotations\nimport argparse\nfrom pathlib import Path"),
    ("tools/x.py", "from webview import server\nimport typer"),
    ("p4target/optional_accel.py", "import importlib\nm = importlib.import_module('p4target.accel.native')"),
    ("p4target/accel/write_path.py", "from p4target.accel import native\nfrom . import h2_server"),
    ("p4target/compiler/x.py", "from p4target import optional_accel\nfrom p4target.optional_accel import part"),
    ("webview/x.py", "from controller.network_state import load\nfrom controller import counters"),
])
def test_an_allowed_import_passes(tmp_path: Path, where: str, line: str) -> None:
    assert violations(_tree(tmp_path, where, line)) == []


def _tree(root: Path, where: str, line: str) -> Path:
    """A project of empty packages under ``root`` with one module ``where`` holding ``line``."""
    for package in PACKAGES:
        (root / package).mkdir()
        (root / package / "__init__.py").write_text("")
    (root / where).parent.mkdir(parents=True, exist_ok=True)
    (root / where).write_text(line + "\n")
    return root
