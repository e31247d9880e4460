"""ADR behind the evaluation interface: the engine's RatingBook, the same code the consumer runs."""

from __future__ import annotations

from dataclasses import dataclass, field

from engine import Params, RatingBook
from engine import tier_label as _engine_tier_label

# The evaluation calibrates on event time once an hour (the online tier job runs on the wall
# clock with its own --every); recorded in the report.
EVAL_CALIBRATE_EVERY_MS = 3_600_000


@dataclass
class AdrSystem:
    """ADR (engine.RatingBook): predict = the P_ab the next counted event would use; update =
    `apply`, cooldown included (duplicates change nothing); rating = stored μ; tier = ADR's own."""

    params: Params = field(default_factory=Params)
    calibrate_every_ms: int = EVAL_CALIBRATE_EVERY_MS
    name: str = "adr"
    book: RatingBook = field(init=False)

    def __post_init__(self) -> None:
        self.book = RatingBook(self.params, calibrate_every_ms=self.calibrate_every_ms)

    def predict(self, a: str, b: str, ts: int) -> float:
        return self.book.predict(a, b, ts)

    def update(self, a: str, b: str, ts: int) -> None:
        self.book.apply("", a, b, ts)

    def rating(self, player: str) -> float:
        # The protocol asks for two ratings and two tiers per event; book.player() builds a whole
        # PlayerState (rings included) each time, a fifth of an ADR run. The stored record holds
        # the same μ and tier, read without copying.
        i = self.book._store.index.get(player)
        return self.params.mu0 if i is None else self.book._store.records[i].mu

    def sigma(self, player: str) -> float:
        state = self.book.player(player)
        return self.params.sigma0 if state is None else state.sigma

    def tier(self, player: str) -> int | None:
        i = self.book._store.index.get(player)
        return 0 if i is None else self.book._store.records[i].tier

    @staticmethod
    def tier_label(tier: int) -> str:
        return _engine_tier_label(tier) or "unplaced"
