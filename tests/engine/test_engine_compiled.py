"""The compiled build (runtime/compiled.py) must give bit-identical state.

The pure engine, run from the sources, is the reference; the wheel in the compiled environment
(runtime.compiled.venv(), built by setup.py with mypyc; scripts/test makes it) must match it bit
for bit, and so must that wheel's own .py files (ADR_COMPILED=0). Skipped when the compiled
environment holds no build of the current sources.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from runtime import compiled

ROOT = Path(__file__).resolve().parents[2]

REPLAY = r"""
import random, sys, msgspec
from runtime import compiled
assert compiled.activate().startswith(sys.argv[1]), compiled.state()
import engine._book
from engine import Params, RatingBook, SeasonReset, SeasonSchedule, SeasonStart, profile_overrides
DAY = 86_400_000
rng = random.Random(20261202)
small = {"n_min": "4", "n_active": "3", "p_min": "5", "h_req": "60"}
profile = profile_overrides(sys.argv[2])  # the opt-in switches too (paper: none)
params = Params.from_overrides({**profile, **small})
ts = 1_700_000_000_000
events = []
for i in range(20_000):
    ts += rng.choice([0, 1, 700, 30_000, 59_999, 60_000, 3_600_000, 8 * DAY, 61 * DAY])
    late = rng.randrange(900_000) if rng.random() < 0.02 else 0
    a, b = rng.randrange(60), rng.randrange(60)
    events.append((str(i), f"p{a}", f"p{b}", ts - late))
seasons = SeasonSchedule((  # two season starts: the soft resets run compiled too
    SeasonStart("s2", events[6_000][3] + 1, 1003.7, SeasonReset(0.6, 85.5)),
    SeasonStart("s3", events[14_000][3] + 1, 998.1, SeasonReset(0.3, 140.0)),
), version=2)
book = RatingBook(params, calibrate_every_ms=120_000, lateness_ms=600_000, seasons=seasons)
for event in events:
    book.apply(*event)
sys.stdout.buffer.write(msgspec.msgpack.encode(
    [book.players(), book.snapshot, book.total_sigma_units,
     book.counted, book.duplicates, book.rejected_by_reason]
))
"""

STATES = r"""
import random, sys, msgspec
from runtime import compiled
assert compiled.activate().startswith(sys.argv[1]), compiled.state()
from engine import Params, initial_snapshot, new_player, profile_overrides, rate_kill, sigma_units
from redis_layout.player_codec import player_values, script_items
DAY = 86_400_000
rng = random.Random(20261204)
params = Params.from_overrides({**profile_overrides(sys.argv[2]), "n_active": "3", "window": "6"})
snapshot = initial_snapshot(params)
states = {f"p{i}": new_player(params) for i in range(40)}
total = len(states) * sigma_units(params.sigma0, params)
ts = 1_700_000_000_000
out = []
for i in range(20_000):
    ts += rng.choice([0, 1, 700, 30_000, 3_600_000, 8 * DAY])
    at = ts - (rng.randrange(900_000) if rng.random() < 0.05 else 0)  # some out of order
    a, b = rng.sample(sorted(states), 2)
    # pair_load 0 (ignored unless pair_decay is on): the profile "general" rates here too
    kill = rate_kill(states[a], states[b], at, total, len(states), snapshot, params, None, 0)
    states[a], states[b], total = kill.attacker, kill.victim, total + kill.sigma_units_delta
    out.append((kill.p_ab, msgspec.msgpack.encode(list(script_items(kill.attacker)))))
out.append([(player, state, player_values(state)) for player, state in sorted(states.items())])
sys.stdout.buffer.write(msgspec.msgpack.encode(out))
"""
"""The consumer's path: PlayerStates through `rate_kill` and the player codec's hash values."""

MODELS = r"""
import random, sys, msgspec
from runtime import compiled
assert compiled.activate().startswith(sys.argv[1]), compiled.state()
from engine import SeasonReset, SeasonSchedule, SeasonStart, Snapshot, initial_snapshot, model_named
DAY = 86_400_000
name, _, rule = sys.argv[2].partition(":")
given = {} if name == "adr" else {"tier_n_min": 5, **({"k_rule": rule} if rule else {})}
model = model_named(name, given)
snapshot = initial_snapshot(model_named("adr").params)
if name != "adr":  # boundaries around a new player's display rating: placements and moves
    mid, step = model.display(model.new_player()), model.config.tier_h_req / 8.0
    bounds = tuple(mid + step * (6.5 - k) for k in range(14))
    snapshot = Snapshot(taken_at=None, mean_mu_active=mid, boundaries=bounds, active_count=0)
rng = random.Random(20261205)
states = {f"p{i}": model.new_player() for i in range(40)}
total = sum(model.units(s) for s in states.values())
ts = 1_700_000_000_000
mu0 = float(model.to_fields(model.new_player())[0])
seasons = SeasonSchedule(tuple(  # two season starts: every model's soft reset runs compiled too
    SeasonStart(f"s{k}", ts + k * 700_000_000_000, mu0 + k,
                SeasonReset(0.5, model.default_sigma_raise())) for k in (1, 2)), version=2)
out = []
for i in range(20_000):
    ts += rng.choice([0, 1, 700, 30_000, 3_600_000, DAY + 1, 8 * DAY])
    at = ts - (rng.randrange(900_000) if rng.random() < 0.05 else 0)  # some out of order
    a, b = rng.sample(sorted(states), 2)
    sa, sb = model.season_step(states[a], at, seasons), model.season_step(states[b], at, seasons)
    total += model.units(sa) - model.units(states[a]) + model.units(sb) - model.units(states[b])
    p = model.predict(sa, sb, at, total, len(states), snapshot)
    kill = model.rate(sa, sb, at, total, len(states), snapshot)
    assert kill.p_ab == p
    states[a], states[b], total = kill.attacker, kill.victim, total + kill.sigma_units_delta
    fields = model.to_fields(kill.victim)
    assert model.from_fields(fields) == kill.victim  # the codec, seasons included, compiled
    out.append((p, model.display(kill.attacker), list(fields)))
out.append([(player, state) for player, state in sorted(states.items())])
sys.stdout.buffer.write(msgspec.msgpack.encode(out))
"""
"""Every rating model through the RatingModel seam: P, display ratings and hash fields (the
models other than ADR with tier boundaries, so their tier placement runs compiled too), with
two season starts (each model's season_step and soft reset)."""


def _replay(
    python: str,
    pythonpath: str | None,
    state: str,
    profile: str,
    cwd: Path,
    script: str = REPLAY,
    **env: str,
) -> bytes:
    base = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "ADR_COMPILED")}
    if pythonpath is not None:
        base["PYTHONPATH"] = pythonpath
    done = subprocess.run(
        [python, "-c", script, state, profile],
        cwd=cwd,  # not the repository root: "" on sys.path would shadow the installed build
        env={**base, **env},
        capture_output=True,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr.decode()
    return done.stdout


def _compiled_python() -> str:
    """The compiled environment's python; skips (fails with ADR_COMPILED=1) without a compiled
    build of these sources."""
    venv = compiled.venv()
    reason = compiled.stale_reason(venv, ROOT)
    if reason is None and not (compiled.installed(venv) or {}).get("compiled"):
        reason = f"{venv} holds a pure build"
    if reason is not None:
        (pytest.fail if compiled.required() else pytest.skip)(reason)
    return str(venv / "bin" / "python")


@pytest.mark.parametrize("script", [REPLAY, STATES], ids=["book", "states"])
@pytest.mark.parametrize("profile", ["paper", "recommended", "general"])
def test_compiled_engine_is_bit_identical_to_the_pure_one(
    tmp_path: Path, profile: str, script: str
) -> None:
    python = _compiled_python()
    source = f"pure: the sources in {ROOT} "
    pure = _replay(sys.executable, str(ROOT), source, profile, tmp_path, script)
    assert len(pure) > 10_000
    assert _replay(python, None, "compiled", profile, tmp_path, script) == pure
    off = _replay(python, None, "pure: ADR_COMPILED=0", profile, tmp_path, script, ADR_COMPILED="0")
    assert off == pure


@pytest.mark.parametrize(
    "model", ["adr", "elo", "elo:fide", "elo:uscf", "glicko2", "trueskill", "weng-lin"]
)
def test_compiled_models_are_bit_identical_to_the_pure_ones(tmp_path: Path, model: str) -> None:
    python = _compiled_python()
    source = f"pure: the sources in {ROOT} "
    pure = _replay(sys.executable, str(ROOT), source, model, tmp_path, MODELS)
    assert len(pure) > 10_000
    assert _replay(python, None, "compiled", model, tmp_path, MODELS) == pure
    off = _replay(python, None, "pure: ADR_COMPILED=0", model, tmp_path, MODELS, ADR_COMPILED="0")
    assert off == pure


def _rate_batches(python: str, pythonpath: str | None, cwd: Path, **env: str) -> dict[str, Any]:
    """bench/rate_batch_instructions.py on a small backlog: its JSON (`output_sha256`: every
    byte and float of the plans)."""
    base = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "ADR_COMPILED")}
    if pythonpath is not None:
        base["PYTHONPATH"] = pythonpath
    done = subprocess.run(
        [python, str(ROOT / "bench" / "rate_batch_instructions.py"), *RATE_BATCH_ARGS],
        cwd=cwd,
        env={**base, **env},
        capture_output=True,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr.decode()
    result: dict[str, Any] = json.loads(done.stdout)
    return result


RATE_BATCH_ARGS = ("--events", "6000", "--players", "800", "--resend-every", "20", "--seasons", "2")


def test_compiled_rate_batch_writes_the_bytes_of_the_pure_one(tmp_path: Path) -> None:
    """The consumer's rating path (decode, rate_batch with its rating-change records, content
    digests and hash values, tiers placed and moving) on a fixed backlog: the compiled build's
    plans hold the same bytes and floats as the sources', run pure."""
    python = _compiled_python()
    pure = _rate_batches(sys.executable, str(ROOT), tmp_path)
    assert pure["build"].startswith("pure") and pure["counted"] > 5000
    built = _rate_batches(python, None, tmp_path)
    assert built["build"] == "compiled"
    assert built["output_sha256"] == pure["output_sha256"]
    off = _rate_batches(python, None, tmp_path, ADR_COMPILED="0")
    assert off["build"] == "pure: ADR_COMPILED=0"
    assert off["output_sha256"] == pure["output_sha256"]
