"""Binaries the local stack needs: Kafka jars from Maven Central, java, redis-server.

Everything lands in a git-ignored cache folder and is fetched once; a second call is a stat.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

from stack._errors import StackError

POM = Path(__file__).with_name("pom.xml")
_COMPLETE = ".complete"
_REDIS_CANDIDATES = (
    "/usr/bin/redis-server",
    "/usr/sbin/redis-server",
    "/usr/local/bin/redis-server",
)


def cache_root() -> Path:
    """``$ADR_CACHE_DIR``, else ``.cache/`` of a source checkout, else ``~/.cache/adr-stream``."""
    env = os.environ.get("ADR_CACHE_DIR")
    if env:
        return Path(env)
    checkout = Path(__file__).resolve().parent.parent
    if (checkout / "pyproject.toml").is_file():
        return checkout / ".cache"
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "adr-stream"


def kafka_version() -> str:
    """The Kafka release pinned in stack/pom.xml."""
    text = POM.read_text()
    start = text.index("<kafka.version>") + len("<kafka.version>")
    return text[start : text.index("</kafka.version>", start)].strip()


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """Hold an exclusive flock on ``path`` (created if missing) for the block."""
    # Several test sessions may provision at once; one downloads, the others wait and reuse.
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def kafka_lib_dir() -> Path:
    """The folder of broker jars for the pinned release, resolving them with mvn on first use."""
    digest = hashlib.sha256(POM.read_bytes()).hexdigest()[:12]
    base = cache_root() / "kafka"
    lib = base / f"kafka-{kafka_version()}-{digest}" / "lib"
    if (lib / _COMPLETE).is_file():
        return lib
    with file_lock(base / ".lock"):
        if (lib / _COMPLETE).is_file():
            return lib
        mvn = shutil.which("mvn") or _install_and_find("mvn", ["maven"])
        staging = Path(tempfile.mkdtemp(prefix="lib-", dir=base))
        argv = [
            mvn, "-B", "-q", "-Dstyle.color=never", "-f", str(POM),
            "dependency:copy-dependencies", f"-DoutputDirectory={staging}",
            "-DincludeScope=runtime",
        ]  # fmt: skip
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
        if done.returncode != 0 or not any(staging.glob("kafka_2.13-*.jar")):
            shutil.rmtree(staging, ignore_errors=True)
            raise StackError(
                f"could not resolve Kafka {kafka_version()} from Maven Central "
                f"(mvn exit {done.returncode}):\n{done.stdout[-3000:]}{done.stderr[-3000:]}"
            )
        (staging / _COMPLETE).write_text(kafka_version() + "\n")
        shutil.rmtree(lib, ignore_errors=True)
        lib.parent.mkdir(parents=True, exist_ok=True)
        staging.rename(lib)
    return lib


def kafka_classpath(lib: Path) -> str:
    """The broker's class path: its jars in a fixed order (a CDS archive must see the same)."""
    return ":".join(str(jar) for jar in sorted(lib.glob("*.jar")))


def cds_archive_path(lib: Path) -> Path:
    """Where the broker's class-data-sharing archive for this JVM and these jars lives.

    A dynamic CDS archive (JDK 13+) holds the parsed classes of one training run; it is only
    valid for the exact JVM build and class path it was dumped with, hence the key.
    """
    java = Path(java_bin()).resolve()
    key = hashlib.sha256(f"{java}:{java.stat().st_mtime_ns}:{lib}".encode()).hexdigest()[:12]
    return lib.parent / f"kafka-{key}.jsa"


def java_bin() -> str:
    """The java launcher: ``$JAVA_HOME/bin/java``, else java on PATH (installed when missing)."""
    home = os.environ.get("JAVA_HOME")
    if home and os.access(Path(home) / "bin" / "java", os.X_OK):
        return str(Path(home) / "bin" / "java")
    return shutil.which("java") or _install_and_find("java", ["openjdk-17-jre-headless"])


def redis_server_bin() -> str:
    """The redis-server binary, installing Debian's package when it is missing."""
    found = shutil.which("redis-server") or next(
        (p for p in _REDIS_CANDIDATES if os.access(p, os.X_OK)), None
    )
    return found or _install_and_find("redis-server", ["redis-server"])


def _install_and_find(program: str, packages: Sequence[str]) -> str:
    apt_install(packages)
    found = shutil.which(program) or next(
        (p for p in _REDIS_CANDIDATES if program == "redis-server" and os.access(p, os.X_OK)), None
    )
    if not found:
        raise StackError(f"{program} is still missing after installing {' '.join(packages)}")
    return found


def apt_install(packages: Sequence[str]) -> None:
    """``apt-get update && apt-get install -y PACKAGES`` (root on Debian/Ubuntu only)."""
    apt = shutil.which("apt-get")
    if apt is None or os.geteuid() != 0:
        raise StackError(
            f"{' '.join(packages)} is not installed and cannot be installed automatically "
            f"(needs root and apt-get); install it, or point KAFKA_BOOTSTRAP_SERVERS / REDIS_URL "
            f"at servers you already run"
        )
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    with file_lock(cache_root() / "apt.lock"):
        for argv in (
            [apt, "-qq", "update"],
            [apt, "-qq", "install", "-y", "--no-install-recommends", *packages],
        ):
            done = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
            if done.returncode != 0:
                raise StackError(
                    f"{' '.join(argv)} failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}"
                )
