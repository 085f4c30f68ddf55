"""The environment `make deps` builds is the one the project needs.

`.venv` (Debian's Python, system site packages, project installed editable) must import
scapy, grpc, finsy's P4Runtime bindings on protobuf's upb backend, and Debian's Mininet;
`.venv-shell` must hold p4runtime-shell with its old protobuf, apart from `.venv`.
"""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
VENV = REPO / ".venv"
VENV_SHELL = REPO / ".venv-shell"


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in text.split(".")[:3] if p.isdigit())


def _make_env() -> dict[str, str]:
    """The environment without the calling make's variables (no 'Entering directory')."""
    return {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")}


def test_tests_run_in_the_project_venv() -> None:
    assert Path(sys.prefix).resolve() == VENV.resolve(), (
        f"tests run with {sys.executable}; run them with `make test` (uses {VENV}/bin/python)"
    )
    cfg = dict(
        line.split(" = ", 1) for line in (VENV / "pyvenv.cfg").read_text().splitlines() if " = " in line
    )
    assert cfg["include-system-site-packages"] == "true"
    assert cfg["home"] == "/usr/bin", "the venv is made from Debian's /usr/bin/python3"
    assert sys.version_info >= (3, 11)


def test_project_is_installed_editable_with_its_command() -> None:
    dist = importlib.metadata.distribution("mrc-p4")
    scripts = {ep.name: ep.value for ep in dist.entry_points if ep.group == "console_scripts"}
    expected = {"p4target": "p4target.cli:main", "mrcctl": "controller.cli:main"}
    assert {k: scripts.get(k) for k in expected} == expected
    for name in scripts:
        assert (VENV / "bin" / name).exists(), name
    requires = " ".join(dist.requires or [])
    for name in ("protobuf", "grpcio", "finsy", "scapy", "pytest", "pydantic", "pyyaml", "typer", "rich"):
        assert name in requires
    import p4target

    assert Path(p4target.__file__).resolve().is_relative_to(REPO), "editable: imports come from the tree"


def test_protobuf_runs_on_the_upb_backend() -> None:
    from google.protobuf import __version__ as pb_version
    from google.protobuf.internal import api_implementation

    assert api_implementation.Type() == "upb", (
        f"protobuf backend is {api_implementation.Type()!r}; the pure-Python one is ~50x slower "
        "(is PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION set?)"
    )
    assert (6, 33, 6) <= _version(pb_version) < (7,)


def test_p4runtime_bindings_and_grpc_import_and_work() -> None:
    import grpc
    from finsy.proto.p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

    req = p4runtime_pb2.WriteRequest(device_id=3)
    update = req.updates.add(type=p4runtime_pb2.Update.INSERT)
    update.entity.table_entry.table_id = 7
    back = p4runtime_pb2.WriteRequest.FromString(req.SerializeToString())
    assert back.device_id == 3 and back.updates[0].entity.table_entry.table_id == 7
    assert hasattr(p4runtime_pb2_grpc, "P4RuntimeStub")
    assert callable(grpc.insecure_channel)


def test_scapy_builds_ipv6_srv6_packets() -> None:
    from scapy.layers.inet import UDP
    from scapy.layers.inet6 import IPv6, IPv6ExtHdrSegmentRouting
    from scapy.layers.l2 import Ether

    pkt = Ether() / IPv6(dst="fcbb:bb00:100:300:101:e001::") / IPv6ExtHdrSegmentRouting() / UDP(dport=4791)
    parsed = Ether(bytes(pkt))
    assert parsed[IPv6].dst == "fcbb:bb00:100:300:101:e001::"
    assert parsed[UDP].dport == 4791


def test_debian_mininet_is_importable_with_mnexec() -> None:
    import mininet.net

    assert Path(mininet.net.__file__).resolve().is_relative_to("/usr/lib/python3/dist-packages")
    assert shutil.which("mnexec") is not None


def test_shell_venv_holds_p4runtime_shell_apart() -> None:
    python = VENV_SHELL / "bin" / "python"
    assert python.exists(), "run `make deps` to create .venv-shell"
    res = subprocess.run(
        [str(python), "-c",
         "import p4runtime_sh.shell, google.protobuf, importlib.metadata as m;"
         "print(google.protobuf.__version__, m.version('p4runtime-shell'))"],
        capture_output=True, text=True, timeout=120,
    )
    assert res.returncode == 0, res.stderr
    pb_version, shell_version = res.stdout.split()
    assert shell_version == "0.0.6"
    assert _version(pb_version) < (3, 21), "p4runtime-shell's own old protobuf"
    cfg = (VENV_SHELL / "pyvenv.cfg").read_text()
    assert "include-system-site-packages = false" in cfg


def test_make_deps_is_quiet_when_nothing_is_missing() -> None:
    res = subprocess.run(
        ["make", "--no-print-directory", "deps"], cwd=REPO, env=_make_env(),
        capture_output=True, text=True, timeout=600,
    )
    assert res.returncode == 0, res.stderr
    if res.stdout or res.stderr:
        # something was missing (e.g. first run after a pyproject change): now it is not
        res = subprocess.run(
            ["make", "--no-print-directory", "deps"], cwd=REPO, env=_make_env(),
            capture_output=True, text=True, timeout=600,
        )
    assert (res.returncode, res.stdout, res.stderr) == (0, "", "")


DOCUMENTED_TARGETS = ["help", "clean", "distclean", "build", "native", "deps", "test", "run", "bench",
                      "experiments", "shell"]


@pytest.mark.parametrize("target", DOCUMENTED_TARGETS)
def test_makefile_defines_target(target: str) -> None:
    """`make -n` (dry run) knows every documented target, and `make help` lists it."""
    res = subprocess.run(
        ["make", "-n", "--no-print-directory", target], cwd=REPO, env=_make_env(),
        capture_output=True, text=True, timeout=60,
    )
    assert res.returncode == 0, res.stderr
    assert "No rule to make target" not in res.stderr
    assert "Nothing to be done" not in res.stdout, f"{target} has no recipe"
    shown = subprocess.run(["make", "--no-print-directory", "help"], cwd=REPO, env=_make_env(),
                           capture_output=True, text=True, timeout=60).stdout
    assert target == "help" or f"make {target} " in shown, shown


def test_make_test_names_every_skip_with_its_reason(tmp_path: Path) -> None:
    """The suite's pytest settings list each skipped test and why at the end of the run."""
    (tmp_path / "test_one_skip.py").write_text(
        "import pytest\n\n\ndef test_here() -> None:\n    pytest.skip('this kernel has no such feature')\n")
    res = subprocess.run([str(VENV / "bin" / "python"), "-m", "pytest", "-c", str(REPO / "pyproject.toml"),
                          "--rootdir", str(tmp_path), "-p", "no:cacheprovider", str(tmp_path)],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    _, _, summary = res.stdout.partition("short test summary info")
    assert "SKIPPED [1] test_one_skip.py:5: this kernel has no such feature" in summary, res.stdout
