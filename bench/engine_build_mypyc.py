"""Optional: compile the engine with mypyc into build/mypyc/ (the pure engine stays the reference).

    python bench/engine_build_mypyc.py

Copies engine/*.py to build/mypyc/engine/ and compiles the modules listed below there, so that
putting build/mypyc first on sys.path (bench/engine_replay.py --engine compiled, or
PYTHONPATH=build/mypyc) uses the compiled engine while a plain `import engine` keeps using the
sources. _state.py is left interpreted: its classes are msgspec Structs. Nothing in CI needs
this build; tests/engine/test_engine_compiled.py compares it bit for bit with the pure engine
whenever it is present and built from the current sources.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "build" / "mypyc"
COMPILED = [
    "params.py",
    "_errors.py",
    "_cooldown.py",
    "_decay.py",
    "_learning_rate.py",
    "_outcome.py",
    "_sigma.py",
    "_snapshot.py",
    "_tiers.py",
    "_update.py",
    "_kill.py",
    "_pairs.py",
    "_store.py",
    "_book.py",
]


def main() -> int:
    if OUT.exists():
        shutil.rmtree(OUT)
    (OUT / "engine").mkdir(parents=True)
    for source in (ROOT / "engine").glob("*.py"):
        shutil.copy2(source, OUT / "engine" / source.name)
    command = [sys.executable, "-m", "mypyc", *(f"engine/{name}" for name in COMPILED)]
    print("+", " ".join(command), f"(in {OUT})", file=sys.stderr)
    done = subprocess.run(command, cwd=OUT, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.stderr.write(done.stdout[-4000:] + done.stderr[-4000:])
        return done.returncode
    built = sorted(p.name for p in (OUT / "engine").glob("*.so"))
    print(f"compiled {len(built)} modules into {OUT / 'engine'}", file=sys.stderr)
    return 0 if len(built) == len(COMPILED) else 1


if __name__ == "__main__":
    sys.exit(main())
