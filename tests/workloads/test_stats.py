"""Percentiles and slowdown, against values worked out by hand."""

from __future__ import annotations

import pytest

from workloads.stats import cdf, percentile, slowdown, summary


def test_percentiles_interpolate_between_ranks() -> None:
    v = [4.0, 1.0, 3.0, 2.0, 5.0]  # sorted 1..5: rank p/100*4
    assert percentile(v, 50) == 3.0
    assert percentile(v, 99) == pytest.approx(4.96)  # rank 3.96: 4 + 0.96
    assert percentile(v, 0) == 1.0 and percentile(v, 100) == 5.0
    assert percentile([7.0], 99) == 7.0
    assert percentile([1.0, 2.0], 25) == pytest.approx(1.25)


def test_summary_and_empty() -> None:
    assert summary([]) == {"n": 0}
    s = summary([1.0, 3.0])
    assert s["p50"] == 2.0 and s["max"] == 3.0 and s["mean"] == 2.0 and s["n"] == 2
    with pytest.raises(ValueError):
        percentile([], 50)


def test_slowdown_is_fct_over_size_by_capacity() -> None:
    # 1,000,000 bytes over 8 Mb/s take 1 s alone: 2.5 s is a slowdown of 2.5
    assert slowdown(2.5, 1_000_000, 8e6) == pytest.approx(2.5)
    with pytest.raises(ValueError):
        slowdown(1.0, 10, 0.0)


def test_cdf() -> None:
    assert cdf([3.0, 1.0]) == ([1.0, 3.0], [0.5, 1.0])
