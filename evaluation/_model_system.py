"""An engine `RatingModel` behind the evaluation's `RatingSystem`, through the engine's own
caller side: `engine.ModelBook` (the pool's S and P, the snapshot on event time over the model's
active players, each pair's last counted time; RatingBook's states bit for bit for ADR).

`adr evaluate --events` decides once which events count, with the consumer's rules
(redis_layout/event_ids.py), and feeds a system only those; the book applies the same rules
again, so every event it is given must count there too, and one that does not is an error, not
a silent difference.
"""

from __future__ import annotations

from typing import Any

from engine import COUNTED, ModelBook, Params, RatingModel
from evaluation._errors import EvaluationError


class ModelSystem:
    """One engine model and its pool, in memory."""

    def __init__(
        self,
        model: RatingModel[Any],
        params: Params,
        calibrate_every_ms: int,
        name: str = "",
        lateness_ms: int = 3_600_000,
        *,
        strict: bool = True,
    ) -> None:
        """`strict`: every event given must count (`adr evaluate --events` has already applied
        the consumer's rules); without it the book's own rules decide, as a pool's would, and a
        repeat inside the cooldown changes nothing (the synthetic streams, as for `AdrSystem`)."""
        self.model = model
        self.strict = strict
        self.name = name or model.name
        self.book: ModelBook[Any] = ModelBook(
            model, params, calibrate_every_ms=calibrate_every_ms, lateness_ms=lateness_ms
        )
        self._new = model.new_player()

    def predict(self, a: str, b: str, ts: int) -> float:
        return self.book.predict(a, b, ts)

    def update(self, a: str, b: str, ts: int) -> None:
        verdict = self.book.apply("", a, b, ts)
        if verdict is not COUNTED and (self.strict or verdict.kind == "rejected"):
            raise EvaluationError(
                f"{self.name}: {a} kills {b} at {ts} was counted by the consumer's rules but not "
                f"by the model's book ({verdict.kind} {verdict.reason or ''}): the two disagree"
            )

    def rating(self, player: str) -> float:
        state = self.book.player(player)
        return self.model.display(self._new if state is None else state)

    def tier(self, player: str) -> int | None:
        state = self.book.player(player)
        return 0 if state is None else self.model.tier(state)
