"""Which GOOD EV the next packet goes on: round robin, or adaptive (docs/transport.md,
"Adaptive spraying").

Why its own class: the policy is the transport's first mechanism and the one the
experiments compare (``--spray rr`` against ``adaptive``); the sender only asks
``next_ev`` and reports congestion (``congested``), so a policy can change without
touching the state machine.

Adaptive: a congestion score per path (plane, spine), +1 per CE echo or trim NACK of
a packet sent on one of its EVs, at most 2, halving every ``half_life``; an EV whose
path scores 1/2 or more is passed over, but never more than ``max_skip`` turns in a
row, so no EV is starved.
"""

from __future__ import annotations

from collections.abc import Sequence

from endpoints.path_blame import path_key
from fabric.plan import EvPath


class Spray:
    """The rotation over the GOOD EVs and, when ``adaptive``, the congestion scores."""

    def __init__(self, evs: Sequence[EvPath], *, adaptive: bool, half_life: float, max_skip: int) -> None:
        self.adaptive = adaptive
        self._half_life = half_life
        self._max_skip = max_skip
        self._rr = 0
        self.adapt_until = float("-inf")  # adaptive choice only while some path's score may matter
        # The EVs of one path share its queues (an EV of a plain --ev-list is a path of its own)
        self._path_of = {e.ev: path_key(e) for e in evs}
        self._scores: dict[tuple[int, int], tuple[float, float]] = {}  # path -> (score, at)
        self._skipped = dict.fromkeys(self._path_of, 0)  # turns passed over in a row, per EV
        self.skips = 0  # turns passed over in all

    def next_rr(self, good: Sequence[int]) -> int:
        """The next EV of the plain rotation."""
        ev = good[self._rr % len(good)]
        self._rr += 1
        return ev

    def next_ev(self, good: Sequence[int], now: float) -> int:
        """The EV of the next data packet."""
        if now < self.adapt_until:
            return self._adaptive_ev(good, now)
        ev = good[self._rr % len(good)]
        self._rr += 1
        return ev

    def congested(self, ev: int, now: float) -> None:
        """A CE echo or a trim NACK about a packet sent on ``ev``: the score of its path
        goes up by one, to at most 2 (a path marked over and over is back at most two
        half-lives after its last mark)."""
        if not self.adaptive:
            return
        path = self._path_of[ev]
        self._scores[path] = (min(2.0, self.score(path, now) + 1.0), now)
        # Past 8 half-lives every score is below 1/256 of its peak: round robin again.
        self.adapt_until = max(self.adapt_until, now + 8 * self._half_life)

    def score(self, path: tuple[int, int], now: float) -> float:
        rec = self._scores.get(path)
        if rec is None:
            return 0.0
        return float(rec[0] * 0.5 ** ((now - rec[1]) / self._half_life))

    def _adaptive_ev(self, good: Sequence[int], now: float) -> int:
        """The next GOOD EV of the rotation whose path's score is under 1/2 (one CE
        echo or trim is forgotten after one half-life); an EV passed over
        ``max_skip`` turns in a row is taken anyway; when every EV is over, plain
        rotation."""
        n = len(good)
        skipped = self._skipped
        for _ in range(n):
            ev = good[self._rr % n]
            self._rr += 1
            if skipped[ev] >= self._max_skip or self.score(self._path_of[ev], now) < 0.5:
                skipped[ev] = 0
                return ev
            skipped[ev] += 1
            self.skips += 1
        ev = good[self._rr % n]
        self._rr += 1
        skipped[ev] = 0
        return ev
