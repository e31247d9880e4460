"""Opt-in pair defence by diminishing returns (params.pair_decay = H > 0 s; the paper: 0).

Extends §2.1: instead of a fixed window, each ordered pair a→b keeps a leaky count of its recent
counted kills, held exactly as an integer load L in ms: every counted kill adds H, and the load
leaks one ms per ms of event time (so L/H is the count, each kill forgotten linearly over H).
A kill arriving with load L (after the leak) moves μ by (H/(H + L))² of the paper's change: the
first kill of a pair in a while counts in full, the k-th of a series paced well under H about
1/k², so what a farmer can take from one victim in such a series stays bounded (Σ 1/k² < 1.65
kills' worth) whatever the pace, instead of growing linearly as soon as the pace passes a
window. (The first power, 1/k, was measured too: its total grows like log k and stayed above
Glicko-2's farming gain on the lobby settings; docs/evaluation.md.) Integers and one correctly
rounded int/int division: the same weight on every platform.

The consumer does not keep L yet (its Redis layout stores only each pair's last counted time):
`rate_kill` refuses pair_decay without the pair's load (docs/evaluation.md says what the consumer
would have to store).
"""

from __future__ import annotations

from operator import truediv

from engine.params import Params


def leaked_load(load_ms: int, t_prev: int | None, ts: int) -> int:
    """The pair's load at ts: the stored load less the time since its last counted kill (none:
    0). A late kill (ts < t_prev) finds the load unleaked."""
    if t_prev is None:
        return 0
    return max(0, load_ms - max(0, ts - t_prev))


def load_weight(load_ms: int, params: Params) -> float:
    """(H/(H + L))²: the share of the paper's μ changes a kill with pair load L gets (1 when
    off). Both squares are exact ints; the one division rounds once."""
    h = params.pair_decay_ms
    if not h:
        return 1.0
    total = h + load_ms
    weight: float = truediv(h * h, total * total)
    return weight


def load_after(load_ms: int, params: Params) -> int:
    """The pair's load after a counted kill found it at `load_ms`: one more kill, H ms."""
    return load_ms + params.pair_decay_ms


class PairLoads:
    """(last counted time, load) per ordered pair of player numbers, for RatingBook.

    An entry is dropped once no acceptable event can find load in it: when its load has leaked
    away by the lateness horizon (t_last + L <= W − lateness). Swept whenever the watermark has
    moved H (at least a second) since the last sweep: O(pairs held) per sweep."""

    def __init__(self, params: Params, lateness_ms: int) -> None:
        self._params = params
        self._lateness = lateness_ms
        self._every = max(1000, params.pair_decay_ms)
        self._pairs: dict[int, tuple[int, int]] = {}
        self._swept_at: int | None = None

    def __len__(self) -> int:
        return len(self._pairs)

    def load(self, a: int, b: int, ts: int) -> int:
        """The a→b load at ts (after the leak)."""
        entry = self._pairs.get((a << 32) | b)
        return 0 if entry is None else leaked_load(entry[1], entry[0], ts)

    def put(self, a: int, b: int, ts: int, load_ms: int, watermark: int) -> None:
        """Record a counted a→b kill at ts that found `load_ms`; sweep if one is due."""
        key = (a << 32) | b
        entry = self._pairs.get(key)
        last = ts if entry is None else max(entry[0], ts)
        self._pairs[key] = (last, load_after(load_ms, self._params))
        if self._swept_at is None:
            self._swept_at = watermark
        elif watermark - self._swept_at >= self._every:
            horizon = watermark - self._lateness
            self._pairs = {k: v for k, v in self._pairs.items() if v[0] + v[1] > horizon}
            self._swept_at = watermark
