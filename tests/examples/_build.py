"""Build the examples/ programs once per test session, into .cache/examples (gitignored).

Each builder returns the command that runs the built program, or raises Missing naming the
toolchain that is not installed (the tests then skip with that reason; any other build failure
fails them). Builds are incremental and work offline once the dependencies were fetched once:
Go's module and build caches, npm's cache (`npm ci --prefer-offline`), CMake's build folder.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
CACHE = REPO / ".cache" / "examples"
BUILD_TIMEOUT_S = 600


class Missing(Exception):
    """A toolchain or library an example needs is not installed."""


def _need(*tools: str) -> None:
    missing = [t for t in tools if shutil.which(t) is None]
    if missing:
        raise Missing(f"{', '.join(missing)} not installed")


@contextmanager
def _locked(name: str) -> Iterator[Path]:
    """The example's cache folder, held exclusively (parallel test workers build once)."""
    folder = CACHE / name
    folder.mkdir(parents=True, exist_ok=True)
    with open(CACHE / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield folder


def _run(cmd: list[str], cwd: Path, env: dict[str, str] | None = None) -> None:
    done = subprocess.run(
        cmd, cwd=cwd, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S,
        env={**os.environ, **(env or {})},
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed in {cwd}:\n{done.stdout}\n{done.stderr}")


def build_go(program: str) -> list[str]:
    """examples/go/cmd/<program>, built with the go.sum-pinned modules."""
    _need("go")
    with _locked("go") as out:
        binary = out / program
        _run(["go", "build", "-mod=readonly", "-o", str(binary), f"./cmd/{program}"],
             EXAMPLES / "go")  # fmt: skip
    return [str(binary)]


def build_ts(program: str) -> list[str]:
    """examples/ts/src/<program>.ts: `npm ci` (when package-lock.json changed) and tsc."""
    _need("node", "npm")
    source = EXAMPLES / "ts"
    with _locked("ts") as out:
        for name in ("package.json", "package-lock.json", "tsconfig.json"):
            shutil.copy2(source / name, out / name)
        shutil.rmtree(out / "src", ignore_errors=True)
        shutil.copytree(source / "src", out / "src")
        lock_hash = hashlib.sha256((source / "package-lock.json").read_bytes()).hexdigest()
        stamp = out / "node_modules" / ".adr-lock-hash"
        if not stamp.exists() or stamp.read_text() != lock_hash:
            _run(["npm", "ci", "--prefer-offline", "--no-audit", "--no-fund"], out)
            stamp.write_text(lock_hash)
        _run(["node", "node_modules/typescript/bin/tsc", "-p", "."], out)
    return ["node", str(out / "dist" / f"{program}.js")]


def build_cpp(program: str) -> list[str]:
    """examples/cpp with CMake: librdkafka, msgpack-cxx and nlohmann/json from the system."""
    _need("cmake", "c++", "pkg-config")
    if subprocess.run(["pkg-config", "--exists", "rdkafka++"]).returncode != 0:
        raise Missing("librdkafka-dev (rdkafka++) not installed")
    for header, package in (("msgpack.hpp", "libmsgpack-cxx-dev"),
                            ("nlohmann/json.hpp", "nlohmann-json3-dev")):  # fmt: skip
        if not any((Path(d) / header).exists() for d in ("/usr/include", "/usr/local/include")):
            raise Missing(f"{package} ({header}) not installed")
    with _locked("cpp") as out:
        _run(["cmake", "-S", str(EXAMPLES / "cpp"), "-B", str(out),
              "-DCMAKE_BUILD_TYPE=Release"], REPO)  # fmt: skip
        _run(["cmake", "--build", str(out), "--target", program], REPO)
    return [str(out / program)]


PUBLISHERS: dict[str, Callable[[], list[str]]] = {
    "go": lambda: build_go("publish"),
    "ts": lambda: build_ts("publish"),
    "cpp": lambda: build_cpp("publish"),
}
READERS: dict[str, Callable[[], list[str]]] = {
    "go": lambda: build_go("leaderboard"),
    "ts": lambda: build_ts("leaderboard"),
}
