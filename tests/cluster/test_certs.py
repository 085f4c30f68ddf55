"""``mrcctl certs``: the files, their modes, what each certificate is for, and refusals.

The certificates are checked with openssl (another implementation than the one that
made them): each server's and the client's verify against ca.pem for their purpose.
"""

from __future__ import annotations

import ipaddress
import stat
import subprocess
from pathlib import Path

from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID

REPO = Path(__file__).resolve().parents[2]
MRCCTL = REPO / ".venv" / "bin" / "mrcctl"
FILES = ["ca.pem", "ca.key", "server-s1.pem", "server-s1.key", "server-sw2.pem", "server-sw2.key",
         "client.pem", "client.key"]


def certs(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(MRCCTL), "certs", *map(str, args)], capture_output=True, text=True, timeout=60)


def _cert(path: Path) -> x509.Certificate:
    return x509.load_pem_x509_certificate(path.read_bytes())


def test_certs_writes_the_files_keys_private(tmp_path: Path) -> None:
    d = tmp_path / "tls"
    r = certs(d, "--server", "s1=10.0.0.2", "--server", "sw2=sw2.example.net")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == [str(d / f) for f in FILES]
    assert sorted(p.name for p in d.iterdir()) == sorted(FILES)  # no temporary file left
    for f in FILES:
        mode = stat.S_IMODE((d / f).stat().st_mode)
        assert mode == (0o600 if f.endswith(".key") else 0o644), (f, oct(mode))


def test_each_certificate_is_for_its_purpose_and_address(tmp_path: Path) -> None:
    assert certs(tmp_path, "--server", "s1=10.0.0.2", "--server", "sw2=sw2.example.net").returncode == 0
    ca = _cert(tmp_path / "ca.pem")
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    s1 = _cert(tmp_path / "server-s1.pem")
    sans = s1.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert sans.get_values_for_type(x509.IPAddress) == [ipaddress.ip_address("10.0.0.2")]
    assert sans.get_values_for_type(x509.DNSName) == []
    sw2 = _cert(tmp_path / "server-sw2.pem").extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert sw2.get_values_for_type(x509.DNSName) == ["sw2.example.net"]
    usage = s1.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(usage) == [ExtendedKeyUsageOID.SERVER_AUTH]
    client = _cert(tmp_path / "client.pem").extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(client) == [ExtendedKeyUsageOID.CLIENT_AUTH]
    for leaf, purpose in (("server-s1.pem", "sslserver"), ("server-sw2.pem", "sslserver"),
                          ("client.pem", "sslclient")):
        ok = subprocess.run(["openssl", "verify", "-CAfile", str(tmp_path / "ca.pem"), "-purpose", purpose,
                             str(tmp_path / leaf)], capture_output=True, text=True, timeout=30)
        assert ok.returncode == 0 and ok.stdout.strip().endswith(": OK"), ok.stdout + ok.stderr
    wrong = subprocess.run(["openssl", "verify", "-CAfile", str(tmp_path / "ca.pem"), "-purpose", "sslclient",
                            str(tmp_path / "server-s1.pem")], capture_output=True, text=True, timeout=30)
    assert wrong.returncode != 0  # a server certificate does not pass as a client's


def test_an_existing_ca_is_kept_unless_force(tmp_path: Path) -> None:
    assert certs(tmp_path, "--server", "s1=127.0.0.1").returncode == 0
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    r = certs(tmp_path, "--server", "s1=127.0.0.1")
    assert r.returncode == 1
    assert r.stderr.strip() == (f"mrcctl: error: {tmp_path / 'ca.pem'} exists: a new CA would lock out every "
                                "certificate it signed; give --force to replace it, or another directory")
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before
    assert certs(tmp_path, "--server", "s1=127.0.0.1", "--force").returncode == 0
    assert (tmp_path / "ca.pem").read_bytes() != before["ca.pem"]


def test_bad_servers_are_one_line_and_write_nothing(tmp_path: Path) -> None:
    d = tmp_path / "tls"
    for args, what in ((["--server", "s1=10.0.0.2:9559"], "'10.0.0.2:9559' is neither an IP address nor a DNS name"),
                       (["--server", "s1"], "give NAME=ADDR"),
                       (["--server", "a/b=10.0.0.2"], "give NAME=ADDR"),
                       (["--server", "s1=10.0.0.2", "--server", "s1=10.0.0.3"], "--server s1=... is given twice")):
        r = certs(d, *args)
        assert r.returncode == 1, args
        assert len(r.stderr.strip().splitlines()) == 1 and what in r.stderr, (args, r.stderr)
    assert not d.exists()
    r = certs(d)
    assert r.returncode == 2 and "--server" in r.stderr  # typer: the option is required
