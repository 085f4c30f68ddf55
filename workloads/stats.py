"""The figures of a job: percentiles and flow-completion slowdown (pure functions)."""

from __future__ import annotations

from collections.abc import Sequence


def percentile(values: Sequence[float], p: float) -> float:
    """The ``p``-th percentile (0..100) by linear interpolation between the closest
    ranks: rank ``p/100 * (n-1)`` of the sorted values (numpy's default)."""
    if not values:
        raise ValueError("percentile of no values")
    if not 0 <= p <= 100:
        raise ValueError(f"percentile {p}: 0..100")
    v = sorted(values)
    rank = p / 100 * (len(v) - 1)
    lo = int(rank)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (rank - lo)


def summary(values: Sequence[float]) -> dict[str, float | int]:
    """n, p50, p99, max and mean of ``values`` (n 0 and nothing else when empty)."""
    if not values:
        return {"n": 0}
    return {"n": len(values), "p50": percentile(values, 50), "p99": percentile(values, 99), "max": max(values),
            "mean": sum(values) / len(values)}


def ideal_seconds(size: int, capacity_bps: float) -> float:
    """A flow's completion time alone on its path: its bits over the path's capacity."""
    if capacity_bps <= 0:
        raise ValueError(f"path capacity {capacity_bps} b/s: give more than 0")
    return size * 8 / capacity_bps


def slowdown(fct_s: float, size: int, capacity_bps: float) -> float:
    """FCT over the ideal time (1: as fast as the path allows)."""
    return fct_s / ideal_seconds(size, capacity_bps)


def cdf(values: Sequence[float]) -> tuple[list[float], list[float]]:
    """(sorted values, fraction of values <= each), for a CDF plot."""
    v = sorted(values)
    n = len(v)
    return v, [(i + 1) / n for i in range(n)]
