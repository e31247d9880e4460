"""Compile the engine (and the consumer's hot path) with mypyc into build/mypyc/.

    python bench/engine_build_mypyc.py

The same as `python -m runtime.compiled build` (see runtime/compiled.py), which scripts/_setup.sh
runs: putting build/mypyc first on sys.path (what `adr` does while the build is current, or
bench/engine_replay.py --engine compiled) runs the compiled modules, while a plain
`import engine` keeps using the sources. tests/engine/test_engine_compiled.py compares the two
bit for bit whenever the build is present and current.
"""

from __future__ import annotations

import sys

from runtime.compiled import main

if __name__ == "__main__":
    sys.exit(main(["build"]))
