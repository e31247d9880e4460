"""The pure rating step (step 3 of consumer/_lifecycle.py): one batch rated on the view read for
it, with the pool's rating model and the settings the step uses.

Which loop rates the batch is the model's business: ADR by consumer/_batch.py's `rate_batch`,
compiled and typed with ADR's classes; any other model (`adr consume --model`) by
consumer/_model_batch.py's `rate_model_batch`, the same rules in the same order. Both return the
batch's `Plan` with its rejected events as a value. Why there are two loops, not one: see
consumer/_model_batch.py.
"""

from __future__ import annotations

from typing import Any

from consumer._batch import Plan, View, rate_batch
from consumer._decoding import Batch
from consumer._model_batch import rate_model_batch
from consumer._stages import NO_STAGES, StageTimer
from engine import DEFAULT_LATENESS_MS, AdrModel, Params, RatingModel
from redis_layout import Keys


class Rating:
    """The pure rating step with the settings it uses: the pool's rating model, the key names,
    the lateness and the pool's bound on players (consumer.Config).

    ADR is rated by `rate_batch`, typed with ADR's class (compiled calls are native); any other
    model by consumer/_model_batch.py's generic loop, the same rules. `params` gives the pool's
    rules the model does not own (the cooldown of §2.1): ADR's own Params for ADR."""

    __slots__ = ("adr", "keys", "lateness_ms", "max_players", "model", "params")

    def __init__(
        self,
        model: RatingModel[Any],
        keys: Keys,
        lateness_ms: int = DEFAULT_LATENESS_MS,
        max_players: int | None = None,
        params: Params | None = None,
    ) -> None:
        self.model = model
        self.adr: AdrModel | None = model if isinstance(model, AdrModel) else None
        if self.adr is not None:
            self.params = self.adr.params
        else:
            self.params = params if params is not None else Params()
        self.keys = keys
        self.lateness_ms = lateness_ms
        self.max_players = max_players

    def rate(self, batch: Batch, view: View, stages: StageTimer = NO_STAGES) -> Plan:
        """`batch` rated on `view` (`rate_batch`); the events it leaves out are in
        `Plan.rejected`, and those dead-lettered by an earlier attempt stay refused."""
        adr = self.adr
        if adr is None:
            return rate_model_batch(
                batch.accepted,
                batch.next_offsets,
                view,
                self.keys,
                self.params,
                self.model,
                self.lateness_ms,
                self.max_players,
                batch.dead_lettered,
                stages,
            )
        return rate_batch(
            batch.accepted,
            batch.next_offsets,
            view,
            self.keys,
            self.params,
            self.lateness_ms,
            self.max_players,
            batch.dead_lettered,
            stages,
            adr,
        )
