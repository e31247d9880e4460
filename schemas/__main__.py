"""`python -m schemas [--check]`: write (or check) the committed JSON Schema files."""

from __future__ import annotations

import argparse
import sys

from schemas._jsonschema import FORMATS, render, schema_path


def main(argv: list[str] | None = None) -> int:
    """Regenerate every format's JSON Schema; with --check, only report stale files."""
    parser = argparse.ArgumentParser(prog="python -m schemas", description=__doc__)
    parser.add_argument("--check", action="store_true", help="exit 1 if a file is stale")
    args = parser.parse_args(argv)
    stale = 0
    for name in FORMATS:
        path, text = schema_path(name), render(name)
        current = path.read_text(encoding="utf-8") if path.exists() else None
        if current == text:
            continue
        stale += 1
        if args.check:
            print(f"stale: {path}", file=sys.stderr)
        else:
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path}", file=sys.stderr)
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
