"""The p4target command line: exit codes, one-line errors, compile and stf commands."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from p4target.cli import main

REPO = Path(__file__).resolve().parents[3]
STF_DIR = REPO / "tests" / "target" / "stf"
L3 = STF_DIR / "p4" / "l3_acl.p4"
MCAST = STF_DIR / "p4" / "mcast_clone.p4"


def run_cli(*args: str) -> subprocess.CompletedProcess:
    """The real command, as a user runs it (python -m p4target)."""
    return subprocess.run([sys.executable, "-m", "p4target", *args], cwd=REPO,
                          capture_output=True, text=True, timeout=120)


def one_line_error(stderr: str) -> str:
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr
    return lines[0]


def test_help_lists_the_commands(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    for cmd in ("compile", "stf", "run"):
        assert cmd in out


def test_no_command_is_usage_error(capsys):
    assert main([]) == 2


@pytest.mark.parametrize("argv,what", [
    (["run", "x.p4"], "give at least one port"),
    (["run", "-i", "1@p4tx"], "PROGRAM.p4 is required"),
    (["run", "x.p4", "--no-p4", "-i", "1@p4tx"], "either PROGRAM.p4 or --no-p4"),
    (["run", "x.p4", "-i", "1@p4tx", "-i", "1@p4ty"], "port 1 is given twice"),
    (["run", "x.p4", "-i", "1@p4tx", "--cpu-port", "1"], "also an interface port"),
])
def test_run_usage_errors_exit_2(argv, what, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert what in err and "usage:" in err


@pytest.mark.parametrize("spec", ["1", "x@p4ta", "1@", "600@p4ta", "1@averyveryverylongname"])
def test_bad_port_spec_is_usage_error(spec, capsys):
    with pytest.raises(SystemExit) as e:
        main(["run", "x.p4", "-i", spec])
    assert e.value.code == 2
    assert "PORT@IFACE" in capsys.readouterr().err or "port" in capsys.readouterr().err


def test_missing_program_is_one_line():
    r = run_cli("compile", "/nonexistent/prog.p4")
    assert r.returncode == 1
    assert one_line_error(r.stderr) == ("p4target: /nonexistent/prog.p4: error: no such program "
                                        "file; check the path")


def test_bad_stf_is_one_line_naming_the_place(tmp_path):
    stf = tmp_path / "bad.stf"
    stf.write_text("# fine\npacket 0 01 02 zz\n")
    r = run_cli("stf", str(MCAST), str(stf))
    assert r.returncode == 1
    assert one_line_error(r.stderr).startswith(f"p4target: {stf}:2:16: error: invalid packet data")


def test_compile_error_is_one_line_with_location(tmp_path):
    bad = tmp_path / "bad.p4"
    bad.write_text("#include <core.p4>\n#include <v1model.p4>\nheader h_t { bit<8> f; }\n"
                   "this is not P4;\n")
    r = run_cli("compile", str(bad))
    assert r.returncode == 1
    line = one_line_error(r.stderr)
    assert line.startswith(f"p4target: {bad}:4:")
    assert ": error: " in line


def test_compile_writes_p4info(tmp_path):
    out = tmp_path / "l3.p4info.txtpb"
    r = run_cli("compile", str(L3), "--p4info", str(out))
    assert r.returncode == 0, r.stderr
    from google.protobuf import text_format
    from finsy.proto.p4.config.v1 import p4info_pb2

    info = text_format.Parse(out.read_text(), p4info_pb2.P4Info())
    assert {t.preamble.name for t in info.tables} == {"MyIngress.ipv6_lpm", "MyIngress.acl"}
    assert {c.preamble.name for c in info.counters} == {"MyIngress.port_in"}


def test_stf_command_passes_and_fails():
    ok = run_cli("stf", str(L3), str(STF_DIR / "l3_acl.stf"))
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.startswith("PASS ")
    bad = run_cli("stf", str(MCAST), str(STF_DIR / "fails.stf"))
    assert bad.returncode == 1
    assert "FAIL" in bad.stdout and "port 2: expected 0 packet(s), received 1" in bad.stderr
    assert "Traceback" not in bad.stderr


@pytest.mark.parametrize("command,options", [
    ("compile", ["--p4info", "--native", "-I", "-D"]),
    ("stf", ["--ordered", "--seed"]),
    ("run", ["-i", "--grpc-addr", "--no-grpc", "--cpu", "--rx-ring-frames", "--grpc-max-streams",
             "--grpc-stall-seconds", "--tls-cert", "--tls-key", "--tls-ca", "--insecure", "--log-level"]),
    ("group", ["--grpc-addr", "--pid-file", "--cpu", "--tls-cert", "--tls-key", "--tls-ca", "--insecure"]),
])
def test_each_command_help_explains_its_options(command, options):
    r = run_cli(command, "--help")
    assert r.returncode == 0, r.stderr
    assert f"Usage: p4target {command}" in r.stdout
    for opt in options:
        assert f" {opt} " in r.stdout or f" {opt}\n" in r.stdout, (opt, r.stdout)


def test_log_level_before_or_after_the_command(tmp_path):
    for argv in (["--log-level", "info", "compile", str(L3)], ["compile", str(L3), "--log-level", "info"]):
        assert run_cli(*argv).returncode == 0
    bad = run_cli("compile", str(L3), "--log-level", "loud")
    assert bad.returncode == 2
    assert "invalid choice: 'loud'" in bad.stderr and "Traceback" not in bad.stderr
