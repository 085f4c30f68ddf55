"""Every experiment's command line: the shared options reach the runner, bad options
are one ``error:`` line and exit status 2, before any network exists.

Why without a network: what is checked is the wiring (``--target``, its
``$MRC_P4_TARGET`` default, ``--out-dir``, ``--prefix``) from each module's command
line to ``experiments.common.main``; the runs themselves are the other tests of this
directory.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from experiments import common as C

ON_MAIN = ("adaptive", "ecmp", "failure", "incast", "loss_reordering", "spraying", "tcp", "trimming")


class Called(Exception):
    """What a stand-in raises once it has recorded its arguments."""


@pytest.fixture(autouse=True)
def _as_a_user() -> None:  # the directory's fixture wants the compiled fast path; nothing runs here
    pass


@pytest.mark.parametrize("name", ON_MAIN)
@pytest.mark.parametrize(("argv", "env", "target"), [(["--target", "bmv2"], None, "bmv2"),
                                                      ([], "auto", "auto"), ([], None, "embedded")])
def test_the_runner_gets_the_shared_options(name: str, argv: list[str], env: str | None, target: str,
                                            tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mod = importlib.import_module(f"experiments.{name}")
    got: list[tuple[C.Experiment, C.Options]] = []
    monkeypatch.setattr(C, "main", lambda exp, opts, run, given=None: got.append((exp, opts)) or 7)
    if env is None:
        monkeypatch.delenv(C.TARGET_ENV, raising=False)
    else:
        monkeypatch.setenv(C.TARGET_ENV, env)
    assert mod.main([*argv, "--out-dir", str(tmp_path), "--prefix", "mrcx1"]) == 7
    ((exp, opts),) = got
    assert exp.name == name
    assert opts == C.Options(out_dir=tmp_path, prefix="mrcx1", target=target, verbose=False)


@pytest.mark.parametrize("name", ON_MAIN)
@pytest.mark.parametrize(("argv", "env", "says"), [(["--target", "tofino"], None, "--target"),
                                                   ([], "tofino", "MRC_P4_TARGET"),
                                                   (["--bytes", "0"], None, "--bytes")])
def test_a_bad_option_is_one_error_line_and_status_2(name: str, argv: list[str], env: str | None, says: str,
                                                     monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    mod = importlib.import_module(f"experiments.{name}")
    monkeypatch.setattr(C, "main", lambda *a: pytest.fail("the runner must not start on a bad option"))
    if env is not None:
        monkeypatch.setenv(C.TARGET_ENV, env)
    assert mod.main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and says in err[0], err


@pytest.mark.parametrize(("name", "argv"), [
    ("spraying", ["--rate", "inf"]), ("tcp", ["--rate", "inf"]), ("trimming", ["--port-rate", "inf"]),
    ("incast", ["--port-rate", "inf"]), ("ecmp", ["--link-rate", "inf"]), ("failure", ["--down-for", "inf"]),
    ("failure", ["--nack-delay", "inf"]), ("failure", ["--rto-min", "inf"]),
    ("loss_reordering", ["--delay", "inf"]), ("loss_reordering", ["--jitter", "inf"])])
def test_an_infinite_rate_or_time_is_one_error_line_and_status_2(name: str, argv: list[str],
                                                                 monkeypatch: pytest.MonkeyPatch,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """Each would run for ever (a cable down for ever, pacing that never waits) or write
    Infinity into its JSON; the option's minimum alone lets inf through."""
    mod = importlib.import_module(f"experiments.{name}")
    monkeypatch.setattr(C, "main", lambda *a: pytest.fail("the runner must not start on a bad option"))
    assert mod.main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"error: Invalid value for '{argv[0]}': inf: give a finite number "
                   f"(see python -m experiments.{name} --help)"], err


@pytest.mark.parametrize(("argv", "says"), [(["--links", "p0-leaf0:p9-spine0"], "p9-spine0"),
                                            (["--seeds", "1,x"], "'1,x'"),
                                            (["--roce-down-for", "0.5,-1"], "'0.5,-1'"),
                                            (["--roce-down-for", "inf"], "'inf'")])
def test_failure_refuses_links_and_seeds_it_cannot_use(argv: list[str], says: str, monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    from experiments import failure

    monkeypatch.setattr(C, "main", lambda *a: pytest.fail("the runner must not start on a bad option"))
    assert failure.main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and says in err[0] and argv[0] in err[0], err


def test_bmv2_asked_for_without_it_on_the_path_is_one_error_line_and_status_2(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import os

    from experiments import trimming

    if os.geteuid() != 0:
        pytest.skip("the runner refuses to start as another user first")
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # no simple_switch_grpc, no p4c-bm2-ss
    monkeypatch.setattr(C, "programmed_fabric", lambda *a, **k: pytest.fail("no network may start"))
    assert trimming.main(["--target", "bmv2"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: --target: target bmv2: ") and "not on the PATH" in err[0], err


RUNNER = {"failure": "run_all"}  # the function each experiment's command line runs (else ``run``)


@pytest.mark.parametrize("name", ON_MAIN)
@pytest.mark.parametrize(("argv", "target"), [(["--target", "bmv2"], "bmv2"), ([], "embedded"),
                                              (["--target", "bmv2", "--bytes", "1234"], "bmv2")])
def test_an_option_not_given_takes_the_targets_default(name: str, argv: list[str], target: str,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """What ``make experiments TARGET=bmv2`` runs: with ``--target bmv2`` and no size
    option, the experiment's BMv2 defaults (``DEFAULTS``, what
    tests/experiments/test_bmv2_experiments.py runs) on BMv2's fabric; an option given
    wins; embedded, the embedded defaults."""
    import os

    import topologies.p4switch

    mod = importlib.import_module(f"experiments.{name}")
    got: list[dict[str, Any]] = []

    @contextmanager
    def fabric(topo: Any, prefix: str | None = None, run_dir: Path | None = None,
               target: str = "embedded") -> Iterator[Any]:
        got.append({"planes": topo.planes, "hosts": len(topo.hosts), "target": target})
        yield None

    def runner(fn: Any, workdir: Path, **kw: Any) -> dict[str, Any]:
        got.append(kw)
        raise Called

    monkeypatch.delenv(C.TARGET_ENV, raising=False)
    monkeypatch.setattr(os, "geteuid", lambda: 0)  # nothing starts: the runner stops first
    monkeypatch.setattr(topologies.p4switch, "choose_target", lambda t: t)  # BMv2 on the PATH or not
    monkeypatch.setattr(C, "programmed_fabric", fabric)
    monkeypatch.setattr(mod, RUNNER.get(name, "run"), runner)
    with pytest.raises(Called):
        mod.main(argv)
    started, kw = got
    defaults: C.Defaults = mod.DEFAULTS
    shape = C.topology(**defaults.fabric_shape(target))
    assert started == {"planes": shape.planes, "hosts": len(shape.hosts), "target": target}
    want = {**(defaults.bmv2 if target == "bmv2" else defaults.embedded), **({"nbytes": 1234} if "--bytes" in argv
                                                                                  else {})}
    if name == "tcp":  # its rate 0 is "window only"; its MTU is no size
        want["rate"] = want["rate"] or None
        kw.pop("mtu")
    if name == "adaptive":
        kw.pop("ecn_threshold")
    assert kw == want


@pytest.mark.parametrize("name", ON_MAIN)
def test_the_help_says_each_default_that_differs_on_bmv2(name: str, capsys: pytest.CaptureFixture[str],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "300")  # typer cuts a long word at the width
    mod = importlib.import_module(f"experiments.{name}")
    defaults: C.Defaults = mod.DEFAULTS
    assert mod.main(["--help"]) == 0
    out = " ".join(re.sub("[│╭╮╰╯─]", " ", capsys.readouterr().out).split())  # typer's boxes, its wrapping
    assert "On BMv2 (--target bmv2" in out and C.shape_text(defaults.bmv2_shape) in out, out
    differ = [k for k in defaults.bmv2 if defaults.bmv2[k] != defaults.embedded[k]]
    assert differ and out.count("; on bmv2 ") == len(differ), out


def test_the_bmv2_defaults_fit_the_bmv2_fabric() -> None:
    """The failure experiment's links on BMv2 are links of BMv2's fabric; the bad one
    is said before anything starts."""
    from experiments import failure

    d = failure.DEFAULTS
    assert failure.fabric_links(",".join(d.bmv2["links"]), d.fabric_shape("bmv2")) == d.bmv2["links"]
    with pytest.raises(Exception, match="p2-leaf0:p2-spine1"):
        failure.fabric_links("p2-leaf0:p2-spine1", d.fabric_shape("bmv2"))


# Each experiment's timers, (NACK delay, RTO floor) on the embedded target and on
# BMv2, as docs/experiments.md "The transport's timers" gives them (None: the transport's).
TIMERS = {"failure": ((None, None), (0.1, 0.4)), "spraying": ((None, None), (None, None)),
          "tcp": ((None, None), (None, None)), "loss_reordering": ((None, None), (None, None)),
          "trimming": ((0.15, None), (0.3, 0.3)), "incast": ((None, None), (0.3, 0.3)), "fleet": ((None, None), (0.1, 0.4))}


@pytest.mark.parametrize("name", sorted(TIMERS))
@pytest.mark.parametrize(("argv", "target"), [([], "embedded"), (["--target", "bmv2"], "bmv2"),
                                              (["--nack-delay", "0.02", "--rto-min", "0.25"], "embedded"),
                                              (["--target", "bmv2", "--nack-delay", "0.005"], "bmv2")])
def test_the_timers_are_the_targets_default_or_the_options(name: str, argv: list[str], target: str,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    mod = importlib.import_module(f"experiments.{name}")
    got: list[dict[str, Any]] = []
    monkeypatch.delenv(C.TARGET_ENV, raising=False)
    monkeypatch.setattr(C, "main", lambda exp, opts, run, given=None: got.append(
        exp.defaults.sizes(opts.target, given)) or 7)
    if name == "fleet":  # its own runner, given the sizes
        monkeypatch.setattr(mod, "run_all", lambda opts, **kw: got.append(kw) or 7)
    assert mod.main(argv) == 7
    nack, rto = TIMERS[name][target == "bmv2"]
    if "--nack-delay" in argv:
        nack = float(argv[argv.index("--nack-delay") + 1])
    if "--rto-min" in argv:
        rto = float(argv[argv.index("--rto-min") + 1])
    assert (got[0]["nack_delay"], got[0]["rto_min"]) == (nack, rto)


@pytest.mark.parametrize("argv", [["--nack-delay", "-0.1"], ["--rto-min", "-1"], ["--rto-min", "x"]])
def test_a_negative_or_unreadable_timer_is_one_error_line_and_status_2(argv: list[str],
                                                                       monkeypatch: pytest.MonkeyPatch,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    from experiments import failure

    monkeypatch.setattr(C, "main", lambda *a: pytest.fail("the runner must not start on a bad option"))
    assert failure.main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and argv[0] in err[0], err


def test_a_timer_not_given_is_left_to_the_transport() -> None:
    """mrc-send takes --rto-min, mrc-recv --nack-delay (endpoints/cli.py); None: no
    option at all, so the endpoint's own default holds."""
    assert C.timer_args(None, None) == ([], [])
    assert C.timer_args(0.1, 0.4) == (["--rto-min", "0.4"], ["--nack-delay", "0.1"])
    assert C.timer_args(None, 0.3) == (["--rto-min", "0.3"], [])


def test_fleet_counts_the_healthy_evs_a_sender_retired() -> None:
    """A retired EV whose path avoids the cut cable is healthy. h1 -> h7 (leaf 0 to
    leaf 1) has 64 EVs over 8 paths, EV k on plane k mod 4 and spine k div 4 mod 2
    (fabric/plan.py): 0x1000 + 8k cross p0-leaf0:p0-spine0, 0x1001 (plane 1) does not,
    and an EV counts once however often it is retired."""
    from types import SimpleNamespace

    from experiments import fleet
    from topologies.transfer import TransferResult

    assert fleet.CUT == "p0-leaf0:p0-spine0" and ("h1", "h7") in fleet.FIRST
    events = [{"t": 0.1, "ev": 0x1000, "event": "retired", "cause": "nack"},
              {"t": 0.1, "ev": 0x1008, "event": "retired", "cause": "nack"},
              {"t": 0.2, "ev": 0x1001, "event": "retired", "cause": "nack"},
              {"t": 0.3, "ev": 0x1001, "event": "restored", "cause": "late"},
              {"t": 0.4, "ev": 0x1001, "event": "retired", "cause": "nack"}]
    res = TransferResult("h1", "h7", 1000, [0], 0, [{"ok": True, "started_at_unix": 100.0, "ev_events": events}], {}, [])
    row = fleet._transfer_figures(SimpleNamespace(topo=C.topology(**fleet.FLEET_SHAPE)), res, "h1", "h7", None)
    assert (row["evs_crossing"], row["crossing_retired"], row["healthy_retired"]) == (8, 2, 1)
