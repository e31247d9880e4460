"""Named parameter profiles: sets of `--param NAME=VALUE` overrides shipped with the engine.

`paper` is Table 9 as docs/algorithm.md reads it (no override). `recommended` turns on the opt-in
extensions the evaluation supports and sets θ for the ratings they produce; docs/evaluation.md
("Opt-in extensions") gives the measurements behind each value and when to use the profile.
`general` is `recommended` plus the pair defence by diminishing returns (pair_decay) and η
without its streak, volatility and trend factors, chosen on the tuning settings of
evaluation/_settings.py and judged on the held-out ones (docs/evaluation.md, "Streams it was
not tuned on"); the consumer cannot run it yet (it keeps no pair loads).
A profile is applied first; ADR_PARAMS and `--param` override it.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from engine._errors import ParamError

PROFILES: Mapping[str, Mapping[str, str]] = MappingProxyType(
    {
        "paper": MappingProxyType({}),
        "recommended": MappingProxyType(
            {
                "bound_return_decay": "1",  # the decay at a return moves μ by at most Δmax
                "zero_sum_update": "1",  # the victim loses what the attacker gains: no drain
                "floor_margin": "120",  # falls near μ_min shrink: nobody parks on the floor
                "repeat_window": "600",  # a pair's repeat kill weighs gap/600 s
                "decay_grace": "7",  # no §5 decay for gaps up to t_active (7 days)
                "logistic_link": "1",  # P_ab with light tails, the arctangent's slope at 1/2
                "theta": "150",  # chosen on the tuning seeds with the switches above on
            }
        ),
        "general": MappingProxyType(
            {
                "bound_return_decay": "1",
                "zero_sum_update": "1",
                "floor_margin": "120",
                "repeat_window": "600",
                "decay_grace": "7",
                "logistic_link": "1",
                "pair_decay": "86400",  # a pair's k-th kill within a day weighs about 1/k²
                "rho_s": "0",  # no streak bonus in η (§4.1)
                "rho_v": "0",  # no volatility damping in η (§4.1)
                "gamma_phi": "0",  # no trend bonus in η (§4.1)
                "theta": "150",
            }
        ),
    }
)


def profile_overrides(name: str) -> dict[str, str]:
    """The overrides of profile `name`; ParamError for an unknown name."""
    try:
        return dict(PROFILES[name])
    except KeyError:
        raise ParamError(f"unknown profile {name!r} (known: {', '.join(PROFILES)})") from None
