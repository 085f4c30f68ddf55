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


def usage_error(stderr: str) -> str:
    """A command-line mistake: the command's usage line, then one error line (returned)."""
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    assert len(lines) == 2 and lines[0].startswith("usage: p4target "), stderr
    return lines[1]


@pytest.mark.parametrize("command", ["compile", "stf"])
def test_a_directory_as_the_program_is_named_a_directory(command, tmp_path):
    stf = [str(STF_DIR / "l3_acl.stf")] if command == "stf" else []
    r = run_cli(command, str(tmp_path), *stf)
    assert r.returncode == 1
    assert one_line_error(r.stderr) == f"p4target: {tmp_path}: error: is a directory; give the program's .p4 file"


@pytest.mark.parametrize("command", ["compile", "stf"])
def test_a_missing_include_directory_is_refused(command, tmp_path):
    stf = [str(STF_DIR / "l3_acl.stf")] if command == "stf" else []
    r = run_cli(command, str(L3), *stf, "-I", str(tmp_path / "nope"))
    assert r.returncode == 2
    assert usage_error(r.stderr) == (f"p4target {command}: error: Invalid value for '-I' / '--include': "
                                     f"'{tmp_path}/nope' is not a directory; give a directory that holds "
                                     "#include files")


NO_SUCH_PORT = "p4target: error: port 1: interface 'p4tnope' does not exist; create it first or fix -i PORT@IFACE"


def test_a_run_that_fails_to_start_creates_no_pcap_directory(tmp_path):
    r = run_cli("run", str(L3), "-i", "1@p4tnope", "--no-grpc", "--pcap", str(tmp_path / "nodir" / "a" / "b"))
    assert r.returncode == 1
    assert one_line_error(r.stderr) == NO_SUCH_PORT
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("option,error", [
    (["--device-id", "-1"], "Invalid value for '--device-id': -1: give a P4Runtime device id from 0 to "
                            "18446744073709551615"),
    (["--device-id", str(2**64)], f"Invalid value for '--device-id': {2**64}: give a P4Runtime device id "
                                  "from 0 to 18446744073709551615"),
    (["--cpu-port", "99999"], "Invalid value for '--cpu-port': 99999: give a port number from 0 to 510"),
    (["--cpu-port", "-1"], "Invalid value for '--cpu-port': -1: give a port number from 0 to 510"),
    (["--queue-rate", "1=nan"], "argument --queue-rate: '1=nan': the rate must be finite and more than 0 packets/s"),
    (["--queue-rate", "1=inf"], "argument --queue-rate: '1=inf': the rate must be finite and more than 0 packets/s"),
    (["--grpc-stall-seconds", "nan"], "argument --grpc-stall-seconds: 'nan' is not a number above 0"),
    (["--grpc-stall-seconds", "inf"], "argument --grpc-stall-seconds: 'inf' is not a number above 0"),
    (["--pid-file", "{tmp}/nodir/sw.pid"], "Invalid value for '--pid-file': '{tmp}/nodir' is not a directory; "
                                           "create it first or give a path in an existing directory"),
], ids=["device-id-1", "device-id-2**64", "cpu-port-99999", "cpu-port-1", "queue-rate-nan", "queue-rate-inf",
        "stall-nan", "stall-inf", "pid-file-dir"])
def test_a_bad_run_option_is_refused_before_any_interface(option, error, tmp_path):
    """Each is refused as the options are read: not the missing interface, nothing created."""
    r = run_cli("run", str(L3), "-i", "1@p4tnope", "--pcap", str(tmp_path / "pcap"),
                *(o.format(tmp=tmp_path) for o in option))
    assert r.returncode == 2
    assert usage_error(r.stderr) == "p4target run: error: " + error.format(tmp=tmp_path)
    assert list(tmp_path.iterdir()) == []

