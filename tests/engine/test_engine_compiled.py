"""The mypyc build (runtime/compiled.py) must give bit-identical state.

Skipped when build/mypyc holds no build of the current sources for this interpreter
(runtime.compiled.stale_reason); scripts/test builds it. The pure engine is the reference.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from runtime import compiled

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "build" / "mypyc"

REPLAY = r"""
import random, sys, msgspec
import engine._book
from engine import Params, RatingBook, profile_overrides
assert engine._book.__file__.endswith(sys.argv[1]), engine._book.__file__
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


def _replay(pythonpath: str, suffix: str, cwd: Path, profile: str) -> bytes:
    env = {**os.environ, "PYTHONPATH": pythonpath}
    done = subprocess.run(
        [sys.executable, "-c", REPLAY, suffix, profile],
        cwd=cwd,  # not the repository root: "" on sys.path would shadow PYTHONPATH
        env=env,
        capture_output=True,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr.decode()
    return done.stdout


@pytest.mark.parametrize("profile", ["paper", "recommended"])
def test_compiled_engine_is_bit_identical_to_the_pure_one(tmp_path: Path, profile: str) -> None:
    reason = compiled.stale_reason(BUILD)
    if reason is not None:
        pytest.skip(reason)
    pure = _replay(str(ROOT), ".py", tmp_path, profile)
    built = _replay(f"{BUILD}{os.pathsep}{ROOT}", ".so", tmp_path, profile)
    assert len(pure) > 10_000
    assert built == pure
