"""bench/redis_write_cost.py measures apply.lua with parts of it cut out, each cut found by its
text. A change to the script that moves one of those texts left the bench crashing before it
measured anything (five of its eleven cuts matched nothing from e40f1ad to 83aa8fd, unnoticed:
no test ran the bench). This runs the bench's own cutting, no server needed, in a subprocess
(the bench activates a build at import, which must not change this test process's)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

_CUTS = """
import json, sys
sys.path.insert(0, "bench")
import redis_write_cost as bench
variants = bench._variants()
print(json.dumps({name: source != bench.SCRIPT for name, source in variants.items()}))
"""


def test_every_cut_of_the_write_cost_bench_still_finds_its_text_in_apply_lua() -> None:
    env = {**os.environ, "ADR_COMPILED": "0"}
    done = subprocess.run(
        [sys.executable, "-c", _CUTS],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    changed = json.loads(done.stdout.strip().splitlines()[-1])
    assert changed.pop("script") is False  # the shipped script, as it is
    assert len(changed) == 11 and all(changed.values()), changed  # each variant cuts something
