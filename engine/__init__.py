"""ADR engine: pure functions on plain data, the population snapshot and an in-memory book.

No I/O and deterministic: the same events and snapshot schedule give bit-identical state.
The algorithm is the ADR paper as docs/algorithm.md states it (its readings, and the exactness
rules: integer ms, exact σ̄, fsum means, rational quantile index; also in docs/design.md).
Public modules: params.py (`Params`: Table 9, the names `--param` takes) and profiles.py (the
named profiles); the others are private, their names re-exported here.

The rating models (docs/models.md): `RatingModel`, the typed seam a pool's rating goes through,
with ADR (`AdrModel`, the functions above unchanged) and Elo, Glicko-2, TrueSkill and Weng–Lin,
one module each, named in `MODELS` and built by `model_named`; `ModelBook` runs any of them.

Exceptions: `EngineError` (root) ← `ParamError` (also a ValueError: a bad parameter value).
"""

from engine._adr_model import AdrModel
from engine._book import COUNTED, DEFAULT_LATENESS_MS, DUPLICATE, RatingBook, Verdict
from engine._cooldown import is_duplicate, repeat_weight
from engine._decay import (
    bounded_return_decay,
    decay_mu,
    decay_sigma,
    gap_days,
    idle_days,
    is_returning,
)
from engine._elo import EloConfig, EloModel, EloOutcome, EloState
from engine._elo import expected_score as elo_expected_score
from engine._elo import k_factor as elo_k_factor
from engine._elo import reaches_top as elo_reaches_top
from engine._errors import EngineError, ParamError
from engine._glicko2 import Glicko2Config, Glicko2Model, Glicko2Outcome, Glicko2State
from engine._kill import KillOutcome, pair_sigma, predict, rate_kill
from engine._learning_rate import eta, eta_base, eta_streak, eta_trend, eta_vol, window_mean
from engine._model import HashFields, Outcome, RatingModel
from engine._model_book import ModelBook
from engine._models import MODELS, check_seasons, model_named, model_parameters
from engine._outcome import diffusion, outcome_probability, p_ab, p_ab_logistic
from engine._pair_load import leaked_load, load_after, load_weight
from engine._season import (
    NO_SEASONS,
    SeasonReset,
    SeasonSchedule,
    SeasonStart,
    ladder_of,
    season_start_ms,
    season_step,
    soft_reset,
)
from engine._sigma import sigma_mean, sigma_units
from engine._snapshot import (
    activity_time,
    boundary_targets,
    is_active,
    quantile_index,
    smoothed,
    take_snapshot,
)
from engine._state import EMPTY_SNAPSHOT, PlayerState, Snapshot, initial_snapshot, new_player
from engine._tiers import can_place, h_down_next, h_up_next, tier_of, tier_step
from engine._trueskill import (
    TrueSkillConfig,
    TrueSkillModel,
    TrueSkillOutcome,
    TrueSkillState,
)
from engine._update import (
    capped_mu,
    evidence_weight,
    phi_next,
    pool_regular,
    pool_returning,
    recent_next,
    sigma_next,
    soft_floor,
    victim_raw,
    window_next,
)
from engine._weng_lin import WengLinConfig, WengLinModel, WengLinOutcome, WengLinState
from engine.params import (
    MS_PER_DAY,
    TIER_COUNT,
    TIER_LABELS,
    Params,
    tier_label,
    tier_of_label,
)
from engine.profiles import PROFILES, profile_overrides

__all__ = [
    "COUNTED",
    "DEFAULT_LATENESS_MS",
    "DUPLICATE",
    "EMPTY_SNAPSHOT",
    "MODELS",
    "MS_PER_DAY",
    "NO_SEASONS",
    "PROFILES",
    "TIER_COUNT",
    "TIER_LABELS",
    "AdrModel",
    "EloConfig",
    "EloModel",
    "EloOutcome",
    "EloState",
    "EngineError",
    "Glicko2Config",
    "Glicko2Model",
    "Glicko2Outcome",
    "Glicko2State",
    "HashFields",
    "KillOutcome",
    "ModelBook",
    "Outcome",
    "ParamError",
    "Params",
    "PlayerState",
    "RatingBook",
    "RatingModel",
    "SeasonReset",
    "SeasonSchedule",
    "SeasonStart",
    "Snapshot",
    "TrueSkillConfig",
    "TrueSkillModel",
    "TrueSkillOutcome",
    "TrueSkillState",
    "Verdict",
    "WengLinConfig",
    "WengLinModel",
    "WengLinOutcome",
    "WengLinState",
    "activity_time",
    "boundary_targets",
    "bounded_return_decay",
    "can_place",
    "capped_mu",
    "check_seasons",
    "decay_mu",
    "decay_sigma",
    "diffusion",
    "elo_expected_score",
    "elo_k_factor",
    "elo_reaches_top",
    "eta",
    "eta_base",
    "eta_streak",
    "eta_trend",
    "eta_vol",
    "evidence_weight",
    "gap_days",
    "h_down_next",
    "h_up_next",
    "idle_days",
    "initial_snapshot",
    "is_active",
    "is_duplicate",
    "is_returning",
    "ladder_of",
    "leaked_load",
    "load_after",
    "load_weight",
    "model_named",
    "model_parameters",
    "new_player",
    "outcome_probability",
    "p_ab",
    "p_ab_logistic",
    "pair_sigma",
    "phi_next",
    "pool_regular",
    "pool_returning",
    "predict",
    "profile_overrides",
    "quantile_index",
    "rate_kill",
    "recent_next",
    "repeat_weight",
    "season_start_ms",
    "season_step",
    "sigma_mean",
    "sigma_next",
    "sigma_units",
    "smoothed",
    "soft_floor",
    "soft_reset",
    "take_snapshot",
    "tier_label",
    "tier_of",
    "tier_of_label",
    "tier_step",
    "victim_raw",
    "window_mean",
    "window_next",
]
