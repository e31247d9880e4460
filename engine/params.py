"""The ADR parameters (Table 9), named as in docs/algorithm.md#s9, validated once."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from engine._errors import ParamError

MS_PER_SECOND = 1000
MS_PER_DAY = 86_400_000
TIER_COUNT = 15
TIER_LABELS: tuple[str, ...] = (
    "1H", "1M", "1L", "2H", "2M", "2L", "3H", "3M", "3L", "4H", "4M", "4L", "5H", "5M", "5L",
)  # fmt: skip

_LABEL_BY_TIER: tuple[str, ...] = ("", *TIER_LABELS)
_TIER_BY_LABEL: dict[str, int] = {label: k for k, label in enumerate(TIER_LABELS, start=1)}


def tier_label(tier: int) -> str:
    """'1H'..'5L' for a placed tier index 1..15, '' for unplaced (0) (§6)."""
    return _LABEL_BY_TIER[tier]


def tier_of_label(label: str) -> int:
    """The tier index of '1H'..'5L' (1..15), 0 for '' (unplaced); KeyError for anything else."""
    return 0 if label == "" else _TIER_BY_LABEL[label]


INT_FIELDS: frozenset[str] = frozenset({"s_max", "n_min", "n_active", "p_min", "window"})
_UNIFORM_SHARES: tuple[Fraction, ...] = (Fraction(1, TIER_COUNT),) * TIER_COUNT


@dataclasses.dataclass(frozen=True, slots=True)
class Params:
    """All ADR parameters; defaults are the paper's Table 9 (§9)."""

    mu0: float = 1000.0
    mu_min: float = 0.0
    mu_max: float = 4000.0
    sigma0: float = 350.0
    sigma_min: float = 10.0
    sigma_max: float = 400.0
    gamma: float = 100.0
    sigma_peak: float = 200.0
    eta_min: float = 4.0
    eta_max: float = 40.0
    rho_s: float = 0.15
    s_max: int = 5
    rho_v: float = 0.3
    w_ref: float = 20.0
    gamma_phi: float = 0.3
    lambda_phi: float = 0.2
    c_loss: float = 0.8
    t_cooldown: float = 60.0  # seconds
    theta: float = 400.0
    lambda_sigma: float = 0.5
    tau: float = 30.0  # days
    sigma_drift: float = 5.0  # per day
    t_return: float = 60.0  # days
    alpha: float = 0.7
    lambda_pool: float = 0.2
    nu_min: float = -60.0
    nu_max: float = 60.0
    delta_max: float = 60.0
    n_min: int = 15
    sigma_place: float = 180.0
    t_active: float = 7.0  # days
    n_active: int = 5
    p_min: int = 20
    h_req: float = 400.0
    beta: float = 0.2
    window: int = 20
    tier_shares: tuple[Fraction, ...] = _UNIFORM_SHARES
    # Opt-in extensions beyond the paper (issue 18 item 6); 0 = off = the paper, bit for bit.
    bound_return_decay: float = 0.0  # 1: the decay at a return moves μ by at most Δmax
    zero_sum_update: float = 0.0  # 1: the victim's raw change is −(the attacker's)
    floor_margin: float = 0.0  # > 0: a fall at d above μ_min is scaled by min(1, d/floor_margin)
    repeat_window: float = 0.0  # seconds; > 0: a pair's repeat kill moves μ by min(1, gap/window)
    decay_grace: float = 0.0  # days; > 0: §5 decay and σ drift act on max(0, gap − decay_grace)
    logistic_link: float = 0.0  # 1: P_ab = 1/(1 + e^−z), z = (4/π)(μ_a − μ_b)/D, not the arctan
    # Issue 29 (docs/evaluation.md, "Streams it was not tuned on"); 0 = off = the paper.
    own_sigma: float = 0.0  # 1: D = θ + λ·(σ_a + σ_b)/2, the two players' own σ, not σ̄
    pair_decay: float = 0.0  # seconds H; > 0: a pair's kill weighs (H/(H + L))², L its leaky load

    # Derived once (exact integers / fractions), never set by callers.
    cooldown_ms: int = dataclasses.field(init=False, repr=False, compare=False)
    repeat_window_ms: int = dataclasses.field(init=False, repr=False, compare=False)
    pair_decay_ms: int = dataclasses.field(init=False, repr=False, compare=False)
    # How long a pair's last counted time matters: max(cooldown, repeat window), in ms.
    pair_memory_ms: int = dataclasses.field(init=False, repr=False, compare=False)
    active_ms: int = dataclasses.field(init=False, repr=False, compare=False)
    sigma_k: int = dataclasses.field(init=False, repr=False, compare=False)
    sigma_scale: float = dataclasses.field(init=False, repr=False, compare=False)  # 2.0**sigma_k
    quantile_ps: tuple[Fraction, ...] = dataclasses.field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        _validate(self)
        for f in dataclasses.fields(self):
            if not f.init or f.name in INT_FIELDS:
                continue
            value = getattr(self, f.name)
            if isinstance(value, int):
                object.__setattr__(self, f.name, float(value))  # one float type for every formula
        object.__setattr__(
            self, "cooldown_ms", _whole_ms(self.t_cooldown, MS_PER_SECOND, "t_cooldown")
        )
        object.__setattr__(self, "active_ms", _whole_ms(self.t_active, MS_PER_DAY, "t_active"))
        repeat_ms = _whole_ms(self.repeat_window, MS_PER_SECOND, "repeat_window")
        object.__setattr__(self, "repeat_window_ms", repeat_ms)
        object.__setattr__(self, "pair_memory_ms", max(self.cooldown_ms, repeat_ms))
        object.__setattr__(
            self, "pair_decay_ms", _whole_ms(self.pair_decay, MS_PER_SECOND, "pair_decay")
        )
        # floor(log2(sigma_min)) exactly: frexp gives sigma_min = m * 2**e with m in [0.5, 1).
        object.__setattr__(self, "sigma_k", 52 - (math.frexp(self.sigma_min)[1] - 1))
        object.__setattr__(self, "sigma_scale", math.ldexp(1.0, self.sigma_k))
        cumulative = Fraction(0)
        ps: list[Fraction] = []
        for share in self.tier_shares[:-1]:
            cumulative += share
            ps.append(1 - cumulative)
        object.__setattr__(self, "quantile_ps", tuple(ps))

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """The parameter names accepted by `from_overrides` and `--param` (docs/algorithm.md#s9)."""
        return tuple(f.name for f in dataclasses.fields(cls) if f.init)

    @classmethod
    def from_overrides(cls, overrides: Mapping[str, Any]) -> Params:
        """Table 9 defaults with `overrides` (name -> value or text) applied; ParamError if bad."""
        return cls().with_overrides(overrides)

    def with_overrides(self, overrides: Mapping[str, Any]) -> Params:
        """A copy with `overrides` applied; ParamError on an unknown name or a bad value."""
        known = self.names()
        values = {name: getattr(self, name) for name in known}
        for name, raw in overrides.items():
            if name not in values:
                raise ParamError(f"unknown parameter {name!r} (known: {', '.join(known)})")
            values[name] = _parse(name, raw)
        return Params(**values)

    def refuse_pair_decay(self, without_loads: str) -> None:
        """The one check of `pair_decay` (set by `--profile general`) against what cannot apply
        it: ParamError where it is set. The pair defence weighs each counted kill by the pair's
        leaky load (§2.1, engine/_pair_load.py), which only ADR's own book keeps (RatingBook).
        A model other than ADR has no such weight, ModelBook (every `--model`, `adr evaluate
        --events`) keeps no loads (ADR's rate_kill raised at its first counted kill), nor does
        the consumer: each refuses it when built (engine.model_named, ModelBook, consumer.cli;
        `adr rebuild` through consumer.cli, since no consumer could continue its pool), so
        every entry point exits 2 at start instead of rating without the defence asked for
        or failing midway. `without_loads` names what was asked to run it."""
        if self.pair_decay_ms:
            raise ParamError(
                f"pair_decay={self.pair_decay:g} (the pair defence of --profile general) needs "
                f"each pair's load, which {without_loads} does not keep: only adr's own book "
                "applies it (adr replay of the model adr, adr evaluate's synthetic streams); "
                "drop it (e.g. --profile recommended, --param pair_decay=0) "
                "to run this"
            )


def _parse(name: str, raw: Any) -> Any:
    """One override value, from its text (CLI/env) or an already typed value."""
    try:
        if name == "tier_shares":
            items = raw.split(",") if isinstance(raw, str) else list(raw)
            return tuple(
                Fraction(str(x).strip()) if isinstance(x, str) else Fraction(x) for x in items
            )
        if name in INT_FIELDS:
            if isinstance(raw, bool) or (not isinstance(raw, int | str)):
                raise ValueError("not an integer")
            return int(raw)
        if isinstance(raw, bool):
            raise ValueError("not a number")
        value = float(raw)
    except (ValueError, TypeError, ZeroDivisionError) as exc:
        raise ParamError(f"bad value for {name}: {raw!r} ({exc})") from exc
    return value


def _whole_ms(value: float, unit_ms: int, name: str) -> int:
    exact = Fraction(value) * unit_ms
    if exact.denominator != 1:
        raise ParamError(f"{name}={value!r} is not a whole number of milliseconds")
    return int(exact)


def _validate(p: Params) -> None:
    for f in dataclasses.fields(p):
        if not f.init or f.name == "tier_shares":
            continue
        value = getattr(p, f.name)
        if f.name in INT_FIELDS:
            if not isinstance(value, int) or isinstance(value, bool):
                raise ParamError(f"{f.name} must be an integer, got {value!r}")
        elif not isinstance(value, int | float) or isinstance(value, bool):
            raise ParamError(f"{f.name} must be a number, got {value!r}")
        elif not math.isfinite(value):
            raise ParamError(f"{f.name} must be finite, got {value!r}")
    rules: list[tuple[bool, str]] = [
        (p.mu_min < p.mu_max, "mu_min < mu_max"),
        (p.mu_min <= p.mu0 <= p.mu_max, "mu_min <= mu0 <= mu_max"),
        (0 < p.sigma_min <= p.sigma0 <= p.sigma_max, "0 < sigma_min <= sigma0 <= sigma_max"),
        (p.gamma > 0, "gamma > 0"),
        (p.sigma_peak > 0, "sigma_peak > 0"),
        (0 <= p.eta_min <= p.eta_max, "0 <= eta_min <= eta_max"),
        (p.rho_s >= 0, "rho_s >= 0"),
        (p.s_max >= 0, "s_max >= 0"),
        (p.rho_v >= 0, "rho_v >= 0"),
        (p.w_ref > 0, "w_ref > 0"),
        (p.gamma_phi >= 0, "gamma_phi >= 0"),
        (0 <= p.lambda_phi <= 1, "0 <= lambda_phi <= 1"),
        (0 < p.c_loss <= 1, "0 < c_loss <= 1"),
        (p.t_cooldown >= 0, "t_cooldown >= 0"),
        (p.theta > 0, "theta > 0"),
        (p.lambda_sigma >= 0, "lambda_sigma >= 0"),
        (p.tau > 0, "tau > 0"),
        (p.sigma_drift >= 0, "sigma_drift >= 0"),
        (p.t_return >= 0, "t_return >= 0"),
        (0 <= p.alpha <= 1, "0 <= alpha <= 1"),
        (0 < p.lambda_pool <= 1, "0 < lambda_pool <= 1"),
        (p.nu_min <= 0 <= p.nu_max, "nu_min <= 0 <= nu_max"),
        (p.delta_max >= 0, "delta_max >= 0"),
        (p.n_min >= 0, "n_min >= 0"),
        (p.sigma_place > 0, "sigma_place > 0"),
        (p.t_active > 0, "t_active > 0"),
        (p.n_active >= 1, "n_active >= 1"),
        (p.p_min >= 1, "p_min >= 1"),
        (p.h_req > 0, "h_req > 0"),
        (0 < p.beta <= 1, "0 < beta <= 1"),
        (p.window >= 1, "window >= 1"),
        (p.bound_return_decay in (0, 1), "bound_return_decay is 0 or 1"),
        (p.zero_sum_update in (0, 1), "zero_sum_update is 0 or 1"),
        # Above Δmax, one event can never take a player above μ_min down to it (see soft_floor).
        (p.floor_margin == 0 or p.floor_margin > p.delta_max, "floor_margin 0 or > delta_max"),
        (p.repeat_window >= 0, "repeat_window >= 0"),
        (p.decay_grace >= 0, "decay_grace >= 0"),
        (p.logistic_link in (0, 1), "logistic_link is 0 or 1"),
        (p.own_sigma in (0, 1), "own_sigma is 0 or 1"),
        (p.pair_decay >= 0, "pair_decay >= 0"),
    ]
    for ok, rule in rules:
        if not ok:
            raise ParamError(f"parameter rule violated: {rule}")
    shares = p.tier_shares
    if not isinstance(shares, tuple) or not all(isinstance(s, Fraction) for s in shares):
        raise ParamError("tier_shares must be a tuple of Fractions")
    # A zero share would make an empty tier and a tier-boundaries message the decoder refuses.
    if len(shares) != TIER_COUNT or any(s <= 0 for s in shares) or sum(shares) != 1:
        raise ParamError(f"tier_shares must be {TIER_COUNT} positive shares summing to 1")
