"""DCQCN's reaction point (endpoints/dcqcn.py) against the paper's formulas worked
out by hand here (Zhu et al., SIGCOMM 2015, section 3):

    on a CNP:        RT = RC;  RC = RC x (1 - alpha/2);  alpha = (1 - g) alpha + g
    every K without: alpha = (1 - g) alpha
    rate increase (timer every T, byte counter every B bytes), stages t, b:
      max(t, b) <= F: RC = (RT + RC) / 2                      fast recovery
      min(t, b) >  F: RT += (min(t, b) - F) R_HAI; RC = (RT + RC) / 2   hyper
      otherwise:      RT += R_AI;  RC = (RT + RC) / 2          additive

Rates in Mb/s below (x 1e6 in the config); fractions kept exact where they can be.
"""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction

import pytest

from endpoints.dcqcn import PAPER, Dcqcn, DcqcnConfig

MB = 1e6
NEVER = 1000.0  # a timer that does not expire within a test
CFG = DcqcnConfig(line_rate=100 * MB, min_rate=0.001 * MB, g=1 / 256, alpha_timer=NEVER, increase_timer=NEVER,
                  byte_counter=10**12, fast_recovery=5, rate_ai=1 * MB, rate_hai=10 * MB)


def test_the_papers_parameters() -> None:
    assert PAPER.g == 1 / 256 and PAPER.fast_recovery == 5
    assert PAPER.alpha_timer == PAPER.increase_timer == 55e-6
    assert PAPER.byte_counter == 10_000_000 and PAPER.rate_ai == 40e6


def test_rate_after_three_cnps_with_alpha_decay_between() -> None:
    """CNPs at 0, 1 ms and 3 ms; K = 1 ms, so alpha decays once before the second
    CNP and twice before the third."""
    g = Fraction(1, 256)
    cc = Dcqcn(replace(CFG, alpha_timer=1e-3), now=0.0)
    # t = 0: alpha = 1.  RT = 100;  RC = 100 (1 - 1/2) = 50;  alpha = (1-g) + g = 1
    cc.on_cnp(0.0)
    assert (cc.rate, cc.target, cc.alpha) == (50 * MB, 100 * MB, 1.0)
    # t = 1 ms: one K passed: alpha = 255/256.  RT = 50;  RC = 50 (1 - 255/512) = 50 x 257/512
    cc.on_cnp(1e-3)
    rc2 = 50 * Fraction(257, 512)
    assert cc.rate == pytest.approx(float(rc2) * MB) and cc.target == 50 * MB
    alpha2 = (1 - g) * Fraction(255, 256) + g  # = 65281/65536
    assert alpha2 == Fraction(65281, 65536) and cc.alpha == pytest.approx(float(alpha2))
    # t = 3 ms: two K passed: alpha = alpha2 (255/256)^2.  RC = rc2 (1 - alpha/2)
    cc.on_cnp(3e-3)
    alpha3 = alpha2 * Fraction(255, 256) ** 2
    rc3 = rc2 * (1 - alpha3 / 2)
    assert cc.rate == pytest.approx(float(rc3) * MB, rel=1e-12)
    assert cc.target == pytest.approx(float(rc2) * MB, rel=1e-12)
    assert cc.alpha == pytest.approx(float((1 - g) * alpha3 + g), rel=1e-12)
    assert cc.cnps == 3 and cc.min_rate == cc.rate


def test_n_cnps_at_once_halve_the_rate_n_times() -> None:
    """alpha stays 1 ((1 - g) 1 + g): each CNP halves RC, RT is the rate before it."""
    cc = Dcqcn(CFG, now=0.0)
    for n in range(1, 6):
        cc.on_cnp(0.0)
        assert cc.rate == 100 * MB / 2**n and cc.target == 100 * MB / 2 ** (n - 1)


def test_fast_recovery_then_additive_increase_on_the_timer() -> None:
    """Two CNPs at 0 (RC = 25, RT = 50), T = 1 ms. Timer stages 1..5 are fast
    recovery: RC = (50 + RC) / 2 = 37.5, 43.75, 46.875, 48.4375, 49.21875. Stage 6
    is additive: RT = 51, RC = (51 + 49.21875) / 2 = 50.109375; stage 7: RT = 52,
    RC = 51.0546875."""
    cc = Dcqcn(replace(CFG, increase_timer=1e-3), now=0.0)
    cc.on_cnp(0.0)
    cc.on_cnp(0.0)
    assert (cc.rate, cc.target) == (25 * MB, 50 * MB)
    expected = [37.5, 43.75, 46.875, 48.4375, 49.21875]
    for k, rc in enumerate(expected, start=1):
        cc.advance(k * 1e-3 + 1e-9)
        assert (cc.timer_stage, cc.rate, cc.target) == (k, rc * MB, 50 * MB)
    cc.advance(6e-3 + 1e-9)
    assert (cc.rate, cc.target) == (50.109375 * MB, 51 * MB)
    cc.advance(7e-3 + 1e-9)
    assert (cc.rate, cc.target) == (51.0546875 * MB, 52 * MB)
    assert cc.increases == {"fast_recovery": 5, "additive": 2, "hyper": 0}


def test_timer_expiries_are_the_same_read_late_or_one_by_one() -> None:
    late = Dcqcn(replace(CFG, increase_timer=1e-3, alpha_timer=1e-3), now=0.0)
    step = Dcqcn(replace(CFG, increase_timer=1e-3, alpha_timer=1e-3), now=0.0)
    for cc in (late, step):
        cc.on_cnp(0.0)
        cc.on_cnp(0.0)
    for k in range(1, 8):
        step.advance(k * 1e-3 + 1e-9)
    late.advance(7e-3 + 1e-9)
    assert (late.rate, late.target) == (step.rate, step.target)
    assert late.alpha == pytest.approx(step.alpha, rel=1e-12)


def test_hyper_increase_once_both_counters_pass_f() -> None:
    """As above to timer stage 6 (RC = 50.109375, RT = 51), then B = 1000 bytes sent
    six times: byte stages 1..5 are additive (timer stage 6 > F, byte stage <= F):
    RT = 52..56; byte stage 6 is hyper (min(6, 6) - 5 = 1): RT = 56 + 10 = 66."""
    cc = Dcqcn(replace(CFG, increase_timer=1e-3, byte_counter=1000), now=0.0)
    cc.on_cnp(0.0)
    cc.on_cnp(0.0)
    cc.advance(6e-3 + 1e-9)
    rc, rt = 50.109375, 51.0
    assert (cc.rate, cc.target) == (rc * MB, rt * MB)
    for _ in range(5):
        cc.on_sent(1000)
        rt += 1
        rc = (rt + rc) / 2
        assert (cc.rate, cc.target) == pytest.approx((rc * MB, rt * MB))
    cc.on_sent(999)
    assert cc.byte_stage == 5  # 999 bytes: the counter has not expired
    cc.on_sent(1)
    rt += 10
    rc = (rt + rc) / 2
    assert (cc.rate, cc.target) == pytest.approx((rc * MB, rt * MB))
    assert cc.increases == {"fast_recovery": 5, "additive": 6, "hyper": 1}


def test_the_rates_stay_within_the_floor_and_the_line() -> None:
    cc = Dcqcn(replace(CFG, min_rate=10 * MB, increase_timer=1e-3, rate_ai=500 * MB), now=0.0)
    for _ in range(10):
        cc.on_cnp(0.0)
    assert cc.rate == 10 * MB  # 100 / 2**10 would be below the floor
    cc.advance(1.0)
    assert cc.rate == cc.target == 100 * MB


@pytest.mark.parametrize("field,value", [("line_rate", 0.0), ("min_rate", 200 * MB), ("g", 0.0), ("g", 1.5),
                                         ("alpha_timer", 0.0), ("increase_timer", float("inf")),
                                         ("byte_counter", 0), ("fast_recovery", -1), ("rate_ai", -1.0)])
def test_a_parameter_out_of_range_is_refused_by_name(field: str, value: float) -> None:
    with pytest.raises(ValueError, match="DCQCN"):
        Dcqcn(replace(CFG, **{field: value}), now=0.0)
