"""Headless Chromium (Debian's chromium and chromium-driver, through selenium) and
`mrcctl web` started as a user starts it, for the web view's tests.

``make deps`` installs both browser packages; a machine where they cannot be
installed skips the browser tests with that reason.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from topologies.web_process import stop

REPO = Path(__file__).resolve().parents[2]


def chromium_paths() -> tuple[str, str]:
    """The browser and its driver, or a skip naming what is missing."""
    browser, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if not browser or not driver:
        missing = " and ".join(n for n, p in (("chromium", browser), ("chromedriver", driver)) if not p)
        pytest.skip(f"{missing} not found: `make deps` installs Debian's chromium and chromium-driver")
    return browser, driver


@contextmanager
def chromium(width: int = 1500, height: int = 1000) -> Iterator[Any]:
    """A headless Chromium driven by selenium, closed at the end."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    browser, driver = chromium_paths()
    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                f"--window-size={width},{height}", "--disable-extensions", "--no-first-run"):
        options.add_argument(arg)
    d = webdriver.Chrome(service=Service(driver), options=options)
    try:
        yield d
    finally:
        d.quit()


@contextmanager
def web_server(args: list[str], env: dict[str, str] | None = None) -> Iterator[str]:
    """``mrcctl ARGS web --port 0`` as a process; its URL, from the first line it prints.
    Stopped (Ctrl-C, as a person stops it) at the end."""
    cmd = [sys.executable, "-m", "controller.cli", *args, "web", "--port", "0"]
    errors = tempfile.TemporaryFile("w+")
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=errors, text=True, cwd=REPO,
                            env={**os.environ, **(env or {})})
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if not line.startswith("web: http"):
            proc.kill()
            proc.wait()
            errors.seek(0)
            pytest.fail(f"mrcctl web printed {line!r}; stderr: {errors.read()}")
        yield line.split()[1]
        if proc.poll() is not None:
            errors.seek(0)
            pytest.fail(f"mrcctl web ended by itself (exit status {proc.returncode}): {errors.read()}")
    finally:
        stop(proc)
        errors.close()


def get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as r:
        body: bytes = r.read()
    return body.decode()


def wait_for(what: str, check: Callable[[], Any], timeout: float = 30.0) -> Any:
    """``check()`` once it is true (polled every 0.1 s); a failure naming ``what``
    after ``timeout`` seconds (a bound against hanging, not a measured speed)."""
    end = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > end:
            pytest.fail(f"{what}: not within {timeout:.0f} s")
        time.sleep(0.1)


def row_cells(d: Any, css: str) -> list[str] | None:
    """The words of the element ``css`` as drawn (its innerText), read in one script
    call: the page redraws its rows, and an element found in one call may be gone in
    the next (selenium's stale element)."""
    text: str | None = d.execute_script(
        "const e = document.querySelector(arguments[0]); return e ? e.innerText : null", css)
    return None if text is None else text.split()


def page_ready(d: Any) -> bool:
    """The page drew the fabric and applied at least one reading."""
    return bool(d.execute_script("return document.body.dataset.switches && Number(document.body.dataset.seq) > 0"))


def switches_drawn(d: Any) -> set[str]:
    names: list[str] = d.execute_script(
        "return [...document.querySelectorAll('g.node[data-switch]')].map(g => g.dataset.switch)")
    return set(names)


def link_states(d: Any) -> dict[str, set[str]]:
    """Each link's state as the page shows it (a set: a link drawn in several places
    must show one state everywhere)."""
    pairs: list[list[str]] = d.execute_script(
        "return [...document.querySelectorAll('line.link')].map(l => [l.dataset.link, l.dataset.state])")
    out: dict[str, set[str]] = {}
    for name, state in pairs:
        out.setdefault(name, set()).add(state)
    return out
