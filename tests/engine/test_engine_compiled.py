"""The compiled build (runtime/compiled.py) must give bit-identical state.

The pure engine, run from the sources, is the reference; the wheel in the compiled environment
(runtime.compiled.venv(), built by setup.py with mypyc; scripts/test makes it) must match it bit
for bit, and so must that wheel's own .py files (ADR_COMPILED=0). Skipped when the compiled
environment holds no build of the current sources.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from runtime import compiled

ROOT = Path(__file__).resolve().parents[2]

REPLAY = r"""
import random, sys, msgspec
from runtime import compiled
assert compiled.activate().startswith(sys.argv[1]), compiled.state()
import engine._book
from engine import Params, RatingBook, profile_overrides
DAY = 86_400_000
rng = random.Random(20261202)
small = {"n_min": "4", "n_active": "3", "p_min": "5", "h_req": "60"}
profile = profile_overrides(sys.argv[2])  # the opt-in switches too (paper: none)
params = Params.from_overrides({**profile, **small})
book = RatingBook(params, calibrate_every_ms=120_000, lateness_ms=600_000)
ts = 1_700_000_000_000
for i in range(20_000):
    ts += rng.choice([0, 1, 700, 30_000, 59_999, 60_000, 3_600_000, 8 * DAY, 61 * DAY])
    late = rng.randrange(900_000) if rng.random() < 0.02 else 0
    a, b = rng.randrange(60), rng.randrange(60)
    book.apply(str(i), f"p{a}", f"p{b}", ts - late)
sys.stdout.buffer.write(msgspec.msgpack.encode(
    [book.players(), book.snapshot, book.total_sigma_units,
     book.counted, book.duplicates, book.rejected_by_reason]
))
"""


def _replay(
    python: str, pythonpath: str | None, state: str, profile: str, cwd: Path, **env: str
) -> bytes:
    base = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "ADR_COMPILED")}
    if pythonpath is not None:
        base["PYTHONPATH"] = pythonpath
    done = subprocess.run(
        [python, "-c", REPLAY, state, profile],
        cwd=cwd,  # not the repository root: "" on sys.path would shadow the installed build
        env={**base, **env},
        capture_output=True,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr.decode()
    return done.stdout


@pytest.mark.parametrize("profile", ["paper", "recommended"])
def test_compiled_engine_is_bit_identical_to_the_pure_one(tmp_path: Path, profile: str) -> None:
    venv = compiled.venv()
    reason = compiled.stale_reason(venv, ROOT)
    if reason is None and not (compiled.installed(venv) or {}).get("compiled"):
        reason = f"{venv} holds a pure build"
    if reason is not None:
        (pytest.fail if compiled.required() else pytest.skip)(reason)
    python = str(venv / "bin" / "python")
    pure = _replay(sys.executable, str(ROOT), f"pure: the sources in {ROOT} ", profile, tmp_path)
    assert len(pure) > 10_000
    assert _replay(python, None, "compiled", profile, tmp_path) == pure
    off = _replay(python, None, "pure: ADR_COMPILED=0", profile, tmp_path, ADR_COMPILED="0")
    assert off == pure
