"""Which P4Runtime addresses may serve plaintext without ``--insecure``: loopback only."""

from __future__ import annotations

import pytest

from p4target.p4runtime.tls import is_loopback, missing_options, plaintext_refusal


@pytest.mark.parametrize("addr,loopback", [
    ("127.0.0.1:9559", True), ("127.3.4.5:1", True), ("[::1]:9559", True), ("localhost:9559", True),
    ("0.0.0.0:9559", False), ("[::]:9559", False), (":9559", False), ("10.0.0.2:9559", False),
    ("192.0.2.1:1", False), ("[2001:db8::1]:9559", False), ("no-such-host.invalid:1", False),
])
def test_loopback_addresses(addr: str, loopback: bool) -> None:
    assert is_loopback(addr) is loopback
    assert (plaintext_refusal(addr) is None) is loopback


def test_missing_options_name_the_ones_not_given() -> None:
    assert missing_options(None, None, None) == []
    assert missing_options("c", "k", "a") == []
    assert missing_options("c", None, None) == ["--tls-key", "--tls-ca"]
    assert missing_options(None, "k", None) == ["--tls-cert", "--tls-ca"]
